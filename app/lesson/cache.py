"""The lesson page's cached computations, under app.cache's key convention (a CheckpointKey first, here None for a
figure that is the same for every checkpoint): each step's question side and answer, built once per process and
shared read-only by every session (a class opening the same step at once builds it once), and the tiny model of
"Watch it learn", trained in the background from the moment the lesson opens.
"""
from __future__ import annotations

import streamlit as st

from app.cache import load_model
from app.checkpoints import CheckpointKey
from app.figures.style import PRESENTER, fit_title, readable, sizes
from app.lesson import figures_gpt
from app.lesson.figures import FIGURES, Answer, Before, toy_config, toy_trained
from core.studies import toy_task


WIDTH = 480      # px: the figure's column beside the sidebar in a 1280 px window (app/screens/lesson.py)


def _options(options: dict, kind: str | None = None) -> tuple:
    """A step's options as a hashable cache key; for a step of the tiny GPT, with the version of its weights (it is
    drawn whatever the class's checkpoint is: a retrained one is drawn afresh)."""
    if kind in figures_gpt.FIGURES:
        options = {**options, "_gpt_version": figures_gpt.gpt_version()}
    return tuple(sorted(options.items()))


def _sized(fig, presenter: bool, height: int | None, width: int = WIDTH):
    """A figure just built, readable for the presenter setting, at most `height` pixels tall (None: as built) and
    drawn to fit `width`: a Plotly figure made shorter keeps its share of margin, and its title and subplot titles
    wrap onto more lines where they are wider than their room (presenter text is half as large again)."""
    if fig is None:
        return None
    if not hasattr(fig, "to_plotly_json"):
        return readable(_fit_altair(fig, presenter, height, width), presenter)
    fig = readable(fig, presenter)                    # built for this cache entry: changed in place
    built = fig.layout.height or 450
    if height and built > height:
        m, ratio = fig.layout.margin, height / built
        title = 40 * (PRESENTER if presenter else 1) if fig.layout.title.text else 10
        fig.update_layout(height=height, margin=dict(t=max((m.t or 0) * ratio, title), b=(m.b or 0) * ratio))
    fig.layout.width = None
    size = sizes(presenter)
    _wrap_title(fig, width, fig.layout.title.font.size or size["title"])
    _wrap_subplot_titles(fig, width, size["base"])
    return fig


def _wrap(text: str, width: float, size: float) -> str:
    """Text on as many lines as `width` needs at this font size: first at its colon ("layer 1, head 2:<br>8 of 8 on
    target"), then at spaces (app.figures.style.fit_title)."""
    if 0.58 * size * len(text) + 20 <= width:
        return text
    return "<br>".join(fit_title(part, width, size) for part in text.replace(": ", ":\n", 1).split("\n"))


def _fit_altair(chart, presenter: bool, height: int | None, width: int):
    """An Altair chart `height` pixels tall in all (Streamlit fits title, axes and legend in it), its title on as
    many lines as `width` needs (Vega-Lite would cut it short with an ellipsis)."""
    if height:
        chart = chart.properties(height=height)
    if isinstance(chart.title, str) and chart.title:
        lines = _wrap(chart.title, width, sizes(presenter)["title"]).split("<br>")
        chart = chart.properties(title=lines if len(lines) > 1 else chart.title)
    return chart


def _wrap_title(fig, width: int, size: float) -> None:
    """The figure's title on as many lines as `width` needs, the top margin grown to hold them."""
    text = fig.layout.title.text
    if not text:
        return
    wrapped = _wrap(text.replace("<br>", " "), width, size)     # a builder's lines were cut for a wider figure
    if wrapped == text:
        return
    lines = wrapped.count("<br>") + 1
    # in a top margin grown to hold its lines, its middle pinned half their height below the top (Plotly places a
    # title of several lines anchored at its "top" a line too high, cutting the first)
    height = fig.layout.height or 450
    fig.layout.title.update(text=wrapped, yref="container", yanchor="middle", y=1 - (8 + 0.65 * size * lines) / height)
    added = 1.3 * size * (lines - text.count("<br>") - 1)          # what the lines added take (subplot titles below)
    fig.layout.margin.t = max((fig.layout.margin.t or 80) + added, 1.3 * size * lines + 20)


def _wrap_subplot_titles(fig, width: int, size: float) -> None:
    """Subplot titles (annotations above a subplot) that are wider than their share of a row, on two lines or more;
    the subplots below them are made shorter by the lines added."""
    rows = {}
    for a in fig.layout.annotations:
        if a.xref == "paper" and a.yref == "paper" and a.yanchor == "bottom" and a.text and "<br>" not in a.text:
            rows.setdefault(round(a.y, 6), []).append(a)
    m = fig.layout.margin
    plot = (fig.layout.height or 450) - (m.t or 0) - (m.b or 0)
    for y, notes in rows.items():
        font = notes[0].font.size or size
        wrapped = [_wrap(a.text, width / len(notes), font) for a in notes]
        lines = max(w.count("<br>") for w in wrapped)
        if not lines or plot <= 0:
            continue
        drop = 1.3 * font * lines / plot                      # in the paper's units: a fraction of the plot's height
        for name in [k for k in fig.layout.to_plotly_json() if k.startswith("yaxis")]:
            low, high = fig.layout[name].domain or (0, 1)
            if abs(high - y) < 1e-6:
                fig.layout[name].domain = (low, high - drop)
        for a, text in zip(notes, wrapped):
            a.text, a.y = text, y - drop


def _presenter(kind: str, presenter: bool) -> bool:
    """Presenter text for this kind of figure: not for a grid of small maps, which has no room for it beside the
    lesson's text (its labels would overlap)."""
    return presenter and not FIGURES[kind].small_multiples


def before(key: CheckpointKey, kind: str, options: dict, presenter: bool, height: int | None = None) -> Before:
    """What the class sees with the question of a step (app.lesson.figures)."""
    return _before(key if FIGURES[kind].uses_checkpoint else None, kind, _options(options, kind),
                   _presenter(kind, presenter), height)


@st.cache_resource(max_entries=64, show_spinner=False)
def _before(key: CheckpointKey | None, kind: str, options: tuple, presenter: bool, height: int | None) -> Before:
    b = FIGURES[kind].before(load_model(key) if key else None, dict(options))
    return Before(b.text, _sized(b.fig, presenter, height))


def answer(key: CheckpointKey, kind: str, options: dict, presenter: bool, height: int | None = None) -> Answer:
    """The model's answer to a step's question (app.lesson.figures); ValueError worded for the reader."""
    return _answer(key if FIGURES[kind].uses_checkpoint else None, kind, _options(options, kind),
                   _presenter(kind, presenter), height)


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
    return Answer(_sized(a.fig, presenter, height), a.fact, a.for_class)


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
