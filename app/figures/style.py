"""Readable figures: dark text big enough for a screen, and bigger still for a projector ("presenter").

One place decides the type sizes of every figure. For Plotly that is a template, installed as Plotly's
default by app.startup.set_up_process, so a figure gets it when it is built, at no cost per figure (setting fonts on a
figure afterwards goes through Plotly's validation: hundreds of milliseconds on a busy machine).
The app draws Plotly figures with theme=None, as Streamlit's own theme would replace these defaults
with its ~12 px grey text. Presenter mode returns a copy with every size, and every trace's line, x1.5
(slower; only when asked).
Pure: figures in, figures out, no Streamlit here.
"""
from __future__ import annotations

import functools
import textwrap

import plotly.graph_objects as go
import plotly.io as pio

INK = "#1a1a1a"                  # near-black: grey text fades on a projector
FONT = '"Source Sans", "Source Sans Pro", "Helvetica Neue", Arial, sans-serif'   # Streamlit's, then look-alikes
SIZES = {"base": 14, "tick": 13, "title": 17}        # pixels, for a laptop screen
PRESENTER = 1.5                  # presenter mode multiplies every font size, and the figure's size, by this
TEMPLATE = "attention_explorer"


def sizes(presenter: bool = False) -> dict[str, int]:
    """Base, tick and title font sizes in pixels, for the screen or (presenter) for the back of a room."""
    scale = PRESENTER if presenter else 1.0
    return {k: round(v * scale) for k, v in SIZES.items()}


@functools.lru_cache(maxsize=2)
def template(presenter: bool = False) -> go.layout.Template:
    """Plotly's white template with dark text of our sizes on every axis, legend, colour bar and title."""
    s = sizes(presenter)
    def text(size):
        return dict(size=size, color=INK)
    axis = dict(tickfont=text(s["tick"]), title=dict(font=text(s["base"])), automargin=True,
                gridcolor="#e6e6e6", zerolinecolor="#d0d0d0")
    colorbar = dict(tickfont=text(s["tick"]), title=dict(font=text(s["base"])))
    t = go.layout.Template(pio.templates["plotly_white"])
    t.layout.update(font=dict(family=FONT, **text(s["base"])), title=dict(font=text(s["title"]), pad=dict(l=10)),
                    xaxis=axis, yaxis=axis, legend=dict(font=text(s["base"]), title=dict(font=text(s["base"]))),
                    coloraxis=dict(colorbar=colorbar), hoverlabel=dict(font=dict(size=s["base"])))
    t.data.heatmap = [go.Heatmap(colorbar=colorbar)]
    return t


def install() -> None:
    """Make our template Plotly's default for every figure built from now on (Streamlit sets its own on import)."""
    if TEMPLATE not in pio.templates:
        pio.templates[TEMPLATE] = template()
    if pio.templates.default != TEMPLATE:      # setting it validates a copy of the template: ~60 ms every rerun
        pio.templates.default = TEMPLATE


def fit_title(text: str, width: int, size: int = SIZES["title"]) -> str:
    """A title broken into lines (Plotly's <br>) that fit `width` pixels, so that a fixed-size figure never cuts it.

    The text is already escaped for Plotly; lines break at spaces only, never inside an entity like &lt;."""
    chars = max(20, int((width - 20) / (0.58 * size)))  # 0.58 em: a generous mean glyph width of sans-serif text
    return "<br>".join(textwrap.wrap(text, chars, break_long_words=False)) or text


def readable(fig, presenter: bool = False):
    """The figure to show: Plotly figures as built (the template did it) or, presenter, an enlarged copy;
    Altair charts configured with the same sizes (a configured copy)."""
    if hasattr(fig, "to_plotly_json"):
        return _presenter(fig) if presenter else fig
    return _altair(fig, presenter)


def _scale_fonts(node, factor: float) -> None:
    """Multiply every explicit font size in a Plotly figure dict (font, tickfont, textfont, title.font …) in place."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key.endswith("font") and isinstance(value, dict) and isinstance(value.get("size"), (int, float)):
                value["size"] = round(value["size"] * factor, 1)
            if isinstance(value, (dict, list)):
                _scale_fonts(value, factor)
    elif isinstance(node, list):
        for item in node:
            if isinstance(item, (dict, list)):
                _scale_fonts(item, factor)


def _presenter(fig: go.Figure) -> go.Figure:
    """A copy with the presenter template, every size a builder set x1.5, and room for it (height, margins); the
    lines of traces x1.5 too (the head view's links would look thinner on a figure grown by half)."""
    data = fig.to_dict()
    layout = data.setdefault("layout", {})
    layout.pop("template", None)
    _scale_fonts(data, PRESENTER)
    for trace in data.get("data", []):
        line = trace.get("line")
        if isinstance(line, dict) and isinstance(line.get("width"), (int, float)):
            line["width"] = round(line["width"] * PRESENTER, 2)
    for side in ("height", "width"):
        if isinstance(layout.get(side), (int, float)):
            layout[side] = int(layout[side] * PRESENTER)
    margin = layout.get("margin") or {}
    layout["margin"] = {k: (v * PRESENTER if k in "tblr" and isinstance(v, (int, float)) else v)
                        for k, v in margin.items()}
    layout["template"] = template(presenter=True)
    return go.Figure(data)


def _altair(chart, presenter: bool):
    """Altair's config for axes, legends and titles (a configured copy; the chart given is not changed)."""
    s = sizes(presenter)
    return (chart.configure_axis(labelFontSize=s["tick"], titleFontSize=s["base"], labelColor=INK, titleColor=INK)
            .configure_legend(labelFontSize=s["base"], titleFontSize=s["base"], labelColor=INK, titleColor=INK,
                              labelLimit=0)
            .configure_title(fontSize=s["title"], color=INK, subtitleFontSize=s["base"], subtitleColor="#444"))
