"""Watch it learn: a tiny Transformer trained live, from scratch, to reverse a string of digits; or (Learn to copy,
app/learn_to_copy.py) a tiny GPT until an induction head forms.

One run at a time per server and task (app.cache.toy_runs, app.cache.copy_runs): it trains on a background thread
of its own, one torch thread, and every session watches the same run through a fragment that redraws itself every
second. The digits' loop is core.studies.toy_task.train (our Transformer, loss and schedule); its figures come from
app.figures.toy and are built once per snapshot for all sessions (app.cache.toy_figures).
"""
import time
import uuid

import streamlit as st

from app import cache, learn_to_copy, live_run
from app.figures.toy import done_text, guess_text
from app.run_log import log_run
from app.sidebar import presenter_mode
from core.studies.toy_task import TASKS, ToyConfig, best_head, parameter_count

POLL_S, IDLE_POLL_S = 1.0, 3.0        # redraw while a run goes; look for someone else's new run when none goes
REDRAW = "watch_it_learn/redraw"       # how a redraw is named in the run log
SPEEDS = {"slow": ("Slow (about 30 s)", 20.0), "full": ("Full speed", 0.0)}     # label, steps a second (0: all)
WHAT = {"digits": "Reverse digits (the paper's encoder-decoder)", "copy": "Learn to copy (a GPT, the decoder alone)"}


def session_label() -> str:
    """This session's short random id: names a run started without a name, and lets only its starter stop it."""
    return st.session_state.setdefault("toy_session", uuid.uuid4().hex[:4])


def intro(cfg: ToyConfig) -> None:
    st.write(f"A Transformer ({cfg.N} + {cfg.N} layers, {cfg.h} heads, d_model = {cfg.d_model}, "
             f"{parameter_count(cfg):,} parameters; our own model, loss and schedule) starts from random weights and "
             f"learns to **reverse** {cfg.min_len} to {cfg.max_len} digits: 31859264 → 46295813.")


def how_to_read() -> None:
    st.caption("How to read the maps: each row is a step of the decoder, labelled by the digit it writes; each "
               "column a digit of the source. At first every step looks everywhere. As the model learns, the step "
               "that writes a digit looks at that digit in the source: for a reversal the last one first, so the "
               "dark cells line up along the anti-diagonal (the red squares; the diagonal for a copy).")


def controls(runs, running: bool) -> None:
    """Name, task, speed, Start, and Stop for the session that started the run going, in one row."""
    me = session_label()
    c1, c2, c3, c4, c5 = st.columns([3, 3, 3, 2, 1], vertical_alignment="bottom")
    name = c1.text_input("Your name (shown to everyone)", key="toy_name", max_chars=30, placeholder=f"session {me}")
    task = c2.radio("Task", list(TASKS), key="toy_task", horizontal=True, format_func=str.capitalize,
                    help=" · ".join(f"{t.capitalize()}: {what}" for t, what in TASKS.items()))
    speed = c3.radio("Speed", list(SPEEDS), key="toy_speed", horizontal=True, format_func=lambda s: SPEEDS[s][0],
                     help="Slow motion waits between steps, so that a class can follow and the server stays quick "
                          "for everyone else; full speed takes a few seconds.")
    live_run.start_and_stop(c4, c5, runs, running, me, name, lambda: ToyConfig(task=task, pace=SPEEDS[speed][1]),
                            "toy", "within a minute")


def live_view(runs, shown_id: str, draw) -> None:
    """The fragment while a run goes, redrawn every POLL_S: the run, or a full rerun once it has ended (or another
    began). Each redraw is logged like a script run (app.run_log, for scripts/bench/bench_class.py), as REDRAW."""
    started = time.perf_counter()
    try:
        if runs.run.id != shown_id or not runs.run.running:
            st.rerun(scope="app")
        draw(runs.run)
    finally:
        log_run(started, REDRAW)


def look_for_a_run(runs, shown_id: str | None) -> None:
    """The fragment while no run goes, every IDLE_POLL_S: draws nothing; a full rerun once someone starts one."""
    run = runs.run
    if run is not None and (run.id != shown_id or run.running):
        st.rerun(scope="app")


def draw_run(run) -> None:
    """One run as it is now: progress, the cross-attention maps, loss and accuracy."""
    so_far = live_run.run_so_far(run)
    if so_far is None:
        return
    snapshots, result = so_far
    last = snapshots[-1]
    loss_fig, grid_fig = cache.toy_figures(run.id, last.step, presenter_mode(), run, tuple(snapshots))
    left, right = st.columns([3, 2])
    with left:
        st.plotly_chart(grid_fig, key="toy_grid", theme=None)
        layer, head = best_head(last.hits)
        st.caption(f"{guess_text(run.cfg.task, run.cfg.example, last.guess)}. Clearest head now: layer {layer + 1}, "
                   f"head {head + 1}.")
    with right:
        m1, m2 = st.columns(2)
        m1.metric("loss", "–" if last.loss is None else f"{last.loss:.3f}")
        m2.metric("digits right", "–" if last.accuracy is None else f"{last.accuracy:.0%}",
                  help="Of the digits written in the last training steps, teacher-forced.")
        st.plotly_chart(loss_fig, key="toy_loss", theme=None)
    if result is not None:
        st.success(done_text(result.steps, result.seconds))


st.title("Watch it learn")
what = st.radio("What it learns", list(WHAT), key="watch_task", horizontal=True, format_func=WHAT.get)
me = session_label()
if what == "copy":
    runs, draw, read = cache.copy_runs(), learn_to_copy.draw_run, learn_to_copy.how_to_read
    learn_to_copy.intro(learn_to_copy.config("full"))
else:
    runs, draw, read = cache.toy_runs(), draw_run, how_to_read
    intro(ToyConfig())
current = runs.run
running = current is not None and current.running
if what == "copy":
    learn_to_copy.controls(runs, running, me)
else:
    controls(runs, running)
if running:
    st.fragment(run_every=POLL_S)(live_view)(runs, current.id, draw)
else:
    if current is None:
        st.info("No run yet on this server. Press **Start training**: everyone on this page will watch it.")
    else:
        draw(current)                            # the last run, as it ended
    st.fragment(run_every=IDLE_POLL_S)(look_for_a_run)(runs, None if current is None else current.id)
read()
