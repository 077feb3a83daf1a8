"""Watch it learn's second task, Learn to copy: a GPT (the paper's decoder alone) trained live until an induction
head forms.

Drawn by app/screens/watch_it_learn.py when "Learn to copy" is picked; the run is the server's one copy run
(app.cache.copy_runs: core.studies.copy_task on a background thread, one torch thread), watched by every session,
its figures built once per snapshot for all of them (app.cache.copy_figures). No model math here.
"""
from __future__ import annotations

import functools

import streamlit as st

from app import cache, live_run
from app.figures.toy import done_text
from app.sidebar import presenter_mode
from core.studies import copy_task

STEPS = 600                            # the shipped tiny-copy's budget: the head forms about half way
SPEEDS = {"slow": ("Slow (about 60 s)", 10.0), "full": ("Full speed", 0.0)}     # label, steps a second (0: all)


def config(speed: str) -> copy_task.CopyConfig:
    """The page's run at a speed (read through the module, so that a test can shorten it)."""
    return copy_task.CopyConfig(steps=STEPS, pace=SPEEDS[speed][1])


@functools.lru_cache(maxsize=4)
def parameter_count(cfg: copy_task.CopyConfig) -> int:
    return sum(p.numel() for p in copy_task.build_model(cfg).parameters())


def intro(cfg: copy_task.CopyConfig) -> None:
    example = " ".join(copy_task.token_name(i) for i in copy_task.held_out(cfg)[0, 1:7].tolist())
    st.write(f"A GPT (the paper's decoder alone: {cfg.N} layers, {cfg.h} heads, d_model = {cfg.d_model}, attention "
             f"only, {parameter_count(cfg):,} parameters) starts from random weights and reads random letters and "
             f"digits written twice: {example} …, then {example} … again. It cannot guess the first copy. It can "
             "learn to guess the second by **copying** what came after the same letter the first time: watch the "
             "head that does it form.")


def how_to_read() -> None:
    st.caption("How to read the map: each row is a position of the sequence (the current token), each column a "
               "token it can look at (only earlier ones: a GPT cannot look ahead). The red squares are where an "
               "**induction head** looks: it finds the current token earlier on, looks at the token right after it, "
               "and copies it as its guess of what comes next. Its score is the share of attention on those squares "
               "(0 to 1). For a long time no head does this, then, within a few dozen steps, one does: the score "
               "jumps and the loss falls, a *phase change*. It needs a partner in layer 1 that looks one token back "
               "(a previous-token head): open *Every head* to find it.")


def controls(runs, running: bool, me: str) -> None:
    """Name, speed, Start, and Stop for the session that started the run going, in one row."""
    c1, c2, c3, c4 = st.columns([3, 3, 2, 1], vertical_alignment="bottom")
    name = c1.text_input("Your name (shown to everyone)", key="copy_name", max_chars=30, placeholder=f"session {me}")
    speed = c2.radio("Speed", list(SPEEDS), key="copy_speed", horizontal=True, format_func=lambda s: SPEEDS[s][0],
                     help="Slow motion waits between steps, so that a class sees the phase change come (about half "
                          "way); full speed takes a few seconds.")
    live_run.start_and_stop(c3, c4, runs, running, me, name, lambda: config(speed), "copy", "within two minutes")


def draw_run(run) -> None:
    """One run as it is now: progress, the best head's map, loss, induction score and loss gap."""
    so_far = live_run.run_so_far(run)
    if so_far is None:
        return
    snapshots, result = so_far
    cfg, last = run.cfg, snapshots[-1]
    training, best, every = cache.copy_figures(run.id, last.step, presenter_mode(), run, tuple(snapshots))
    layer, head = last.best
    left, right = st.columns([1, 1])
    with left:
        st.plotly_chart(best, key="copy_map", theme=None)
    with right:
        m1, m2, m3 = st.columns(3)
        m1.metric("loss", "–" if last.loss is None else f"{last.loss:.2f}",
                  help="Mean next-token loss of the training steps since the last measurement, in nats.")
        m2.metric(f"induction, L{layer + 1} H{head + 1}", f"{last.best_induction:.2f}",
                  help=f"The best head's induction score (layer {layer + 1}, head {head + 1}) on held-out "
                       f"sequences; {cfg.threshold} or more counts as a formed induction head.")
        m3.metric("loss gap", f"{last.loss_gap:+.2f}",
                  help="Loss on the second copy minus on the first, on held-out sequences: about 0 while the "
                       "model cannot copy, well below 0 once it does.")
        st.plotly_chart(training, key="copy_training", theme=None)
    change = copy_task.phase_change(snapshots, cfg.threshold)
    if change is not None:
        st.caption(f"The induction head formed at step {change.step} ({change.seconds:.0f} s into the run): its "
                   f"score passed {cfg.threshold}.")
    with st.expander("Every head"):
        st.plotly_chart(every, key="copy_heads", theme=None)
    if result is not None:
        st.success(done_text(result.steps, result.seconds))
