"""What both of Watch it learn's tasks share: Start and Stop of the server's one run of a task, and the first lines
of a run as it is now (an error, "building the model", the progress bar). Streamlit only; no model math."""
from __future__ import annotations

import streamlit as st

from app.figures.toy import progress_text


def start_and_stop(start_col, stop_col, runs, running: bool, me: str, name: str, make_cfg, prefix: str,
                   ends_in: str) -> None:
    """Start (a run of make_cfg(), named `name` or after this session) and Stop, for the session that started the
    run going; `prefix` names the buttons' keys, `ends_in` says when a run ends by itself."""
    if start_col.button("Start training", key=f"{prefix}_start", type="primary", disabled=running,
                        help="One run at a time on this server: everyone watches the same one."):
        _, started = runs.start(make_cfg(), name.strip() or f"session {me}", owner=me)
        if not started:
            st.info("Someone else started a run a moment ago: you are watching theirs.")
        st.rerun()
    run = runs.run
    mine = run is not None and run.owner == me
    if stop_col.button("Stop", key=f"{prefix}_stop", disabled=not (running and mine),
                       help=f"Only the session that started a run can stop it; it ends by itself {ends_in}."):
        run.stop()


def run_so_far(run):
    """(snapshots, result) of `run` after its progress bar, or None after a line saying why there is nothing to draw
    (an error, or no snapshot yet)."""
    snapshots, result, error = run.view()
    if error:
        st.error(f"The training stopped with an error: {error}. Press Start to try again.")
        return None
    if not snapshots:
        st.info(f"{run.started_by} started a run: building the model…")
        return None
    last = snapshots[-1]
    st.progress(last.step / run.cfg.steps, text=progress_text(last.step, run.cfg.steps, last.seconds, run.started_by,
                                                              run.running, result and result.stopped_by))
    return snapshots, result
