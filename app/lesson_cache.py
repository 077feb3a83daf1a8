"""The lesson page's cached computations, under app.cache's key convention (a CheckpointKey first, here None for a
figure that is the same for every checkpoint): each step's question side and answer, built once per process and
shared read-only by every session (a class opening the same step at once builds it once), and the tiny model of
"Watch it learn", trained in the background from the moment the lesson opens.
"""
from __future__ import annotations

import streamlit as st

from app.cache import load_model
from app.checkpoints import CheckpointKey
from app.figures.style import PRESENTER, readable
from app.lesson_figures import FIGURES, Answer, Before, toy_config, toy_trained
from core.studies import toy_task


def _options(options: dict) -> tuple:
    """A step's options as a hashable cache key."""
    return tuple(sorted(options.items()))


def _sized(fig, presenter: bool, height: int | None):
    """A figure just built, readable for the presenter setting and at most `height` pixels tall (None: as built).
    A Plotly figure made shorter keeps its proportions of margin (its title and legend stay on it), and takes the
    width of its column."""
    if fig is None:
        return None
    if not hasattr(fig, "to_plotly_json"):
        return readable(fig.properties(height=max(120, height - 130)) if height else fig, presenter)   # plot area
    fig = readable(fig, presenter)                    # built for this cache entry: changed in place
    built = fig.layout.height or 450
    if height and built > height:
        m, ratio = fig.layout.margin, height / built
        title = 40 * (PRESENTER if presenter else 1) if fig.layout.title.text else 10
        fig.update_layout(height=height, margin=dict(t=max((m.t or 0) * ratio, title), b=(m.b or 0) * ratio))
    fig.layout.width = None
    return fig


def before(key: CheckpointKey, kind: str, options: dict, presenter: bool, height: int | None = None) -> Before:
    """What the class sees with the question of a step (app.lesson_figures)."""
    return _before(key if FIGURES[kind].uses_checkpoint else None, kind, _options(options), presenter, height)


@st.cache_resource(max_entries=64, show_spinner=False)
def _before(key: CheckpointKey | None, kind: str, options: tuple, presenter: bool, height: int | None) -> Before:
    b = FIGURES[kind].before(load_model(key) if key else None, dict(options))
    return Before(b.text, _sized(b.fig, presenter, height))


def answer(key: CheckpointKey, kind: str, options: dict, presenter: bool, height: int | None = None) -> Answer:
    """The model's answer to a step's question (app.lesson_figures); ValueError worded for the reader."""
    return _answer(key if FIGURES[kind].uses_checkpoint else None, kind, _options(options), presenter, height)


@st.cache_resource(max_entries=64, show_spinner="The model is drawing its answer…")
def _answer(key: CheckpointKey | None, kind: str, options: tuple, presenter: bool, height: int | None) -> Answer:
    if kind == "watch_it_learn":                     # the lesson's run, started when the lesson opened
        cfg = toy_config(dict(options))
        run = toy_run(cfg)
        run.join()
        _, result, error = run.view()
        if error or result is None:
            raise ValueError(f"the tiny model's training failed ({error or 'it ended without a result'})")
        a = toy_trained(cfg, result)
    else:
        a = FIGURES[kind].answer(load_model(key) if key else None, dict(options))
    return Answer(_sized(a.fig, presenter, height), a.fact)


@st.cache_resource(max_entries=4, show_spinner=False)
def _toy_runs(cfg: toy_task.ToyConfig) -> toy_task.OneRunAtATime:
    return toy_task.OneRunAtATime()            # it stops its run's thread when the server exits


def toy_run(cfg: toy_task.ToyConfig) -> toy_task.LiveRun:
    """The lesson's own run of the tiny model of cfg (not the Watch it learn page's, which a class may be using):
    started on a background thread at the first call, the same run for every session afterwards."""
    runs = _toy_runs(cfg)
    if runs.run is None:
        runs.start(cfg, "the lesson")
    return runs.run
