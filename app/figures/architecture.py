"""The paper's Figure 1 as boxes, with what GPT drops greyed out, and two attention maps of different texts side by
side (the Lesson's "GPT is the decoder alone").

Pure builders: no Streamlit, no model; Plotly shapes and annotations on a 10 x 12 drawing of the two stacks.
"""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.figures.tokens import safe

ATTENTION, FEED_FORWARD, EMBED = "#fce0b2", "#c7e9f7", "#f4d4dc"      # the paper's Figure 1 colours, lighter
DROPPED, DROPPED_TEXT, LINE = "#eeeeee", "#9e9e9e", "#444444"

# (x0, y0, x1, y1, text, colour, part): part "encoder" and "cross" are what a decoder-only model drops; short lines,
# for presenter mode's larger text in the lesson's narrow column
BOXES = [
    (0.3, 0.3, 4.5, 1.9, "Input words<br>+ positions", EMBED, "encoder"),
    (0.7, 3.0, 4.1, 4.6, "Self-<br>attention", ATTENTION, "encoder"),
    (0.7, 5.4, 4.1, 7.0, "Feed<br>forward", FEED_FORWARD, "encoder"),
    (5.5, 0.3, 9.7, 1.9, "Words so far<br>+ positions", EMBED, "decoder"),
    (5.9, 3.0, 9.3, 4.6, "<b>Masked</b><br>self-attention", ATTENTION, "decoder"),
    (5.9, 5.4, 9.3, 7.0, "Cross-<br>attention", ATTENTION, "cross"),
    (5.9, 7.8, 9.3, 9.4, "Feed<br>forward", FEED_FORWARD, "decoder"),
    (5.5, 11.0, 9.7, 12.6, "Next word<br>(softmax)", EMBED, "decoder"),
]
STACKS = [(0.3, 2.5, 4.5, 7.5, "encoder", "Encoder, N×"), (5.5, 2.5, 9.7, 9.9, "decoder", "Decoder, N×")]
# (from, to, part): arrows between the boxes, the encoder's into the cross-attention
ARROWS = [((2.4, 1.9), (2.4, 3.0), "encoder"), ((2.4, 4.6), (2.4, 5.4), "encoder"),
          ((7.6, 1.9), (7.6, 3.0), "decoder"), ((7.6, 4.6), (7.6, 5.4), "decoder"),
          ((7.6, 7.0), (7.6, 7.8), "decoder"), ((7.6, 9.4), (7.6, 11.0), "decoder"),
          ((2.4, 7.0), (5.9, 6.2), "cross")]


def transformer_diagram(drop: bool = True, title: str = "") -> go.Figure:
    """The encoder and decoder stacks of "Attention Is All You Need" (Figure 1) as boxes and arrows; with `drop`, the
    encoder and the decoder's cross-attention (what GPT leaves out) greyed and dashed, the rest in colour."""
    def gone(part: str) -> bool:
        return drop and part in ("encoder", "cross")

    fig = go.Figure()
    for x0, y0, x1, y1, part, label in STACKS:
        fig.add_shape(type="rect", x0=x0, y0=y0, x1=x1, y1=y1, line=dict(color=DROPPED_TEXT if gone(part) else LINE,
                      width=1.5, dash="dash" if gone(part) else "solid"), fillcolor="rgba(0,0,0,0)", layer="below")
        fig.add_annotation(x=x0 + 0.1, y=y1, text=label, showarrow=False, xanchor="left", yanchor="bottom",
                           font=dict(color=DROPPED_TEXT if gone(part) else LINE))
    for x0, y0, x1, y1, text, colour, part in BOXES:
        fig.add_shape(type="rect", x0=x0, y0=y0, x1=x1, y1=y1, fillcolor=DROPPED if gone(part) else colour,
                      line=dict(color=DROPPED_TEXT if gone(part) else LINE, width=1, dash="dot" if gone(part) else
                                "solid"))
        fig.add_annotation(x=(x0 + x1) / 2, y=(y0 + y1) / 2, text=text, showarrow=False,
                           font=dict(color=DROPPED_TEXT if gone(part) else LINE))
    for (x0, y0), (x1, y1), part in ARROWS:
        fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                           showarrow=True, arrowhead=2, arrowwidth=1.5, arrowcolor=DROPPED if gone(part) else LINE)
    if drop:
        fig.add_annotation(x=2.4, y=9.6, text="<b>dropped<br>by GPT</b>", showarrow=False,
                           font=dict(color="#b71c1c"))
    fig.update_xaxes(range=[0, 10], visible=False, fixedrange=True)
    fig.update_yaxes(range=[0, 12.8], visible=False, fixedrange=True)
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=520, margin=dict(l=10, r=10, t=60, b=10),
                      plot_bgcolor="white", showlegend=False)
    return fig


def side_by_side(left: go.Figure, right: go.Figure, title: str = "") -> go.Figure:
    """Two one-map figures (app.figures.attention.heatmap_figure), each with its own tokens, as one figure: their
    traces and axes unchanged, their titles above them, one colour scale from 0 to 1 (no bar: the room is theirs)."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.2,
                        subplot_titles=[safe(f.layout.title.text or "") for f in (left, right)])
    for k, one in enumerate((left, right), 1):
        trace = one.data[0]
        trace.update(zmin=0.0, zmax=1.0, showscale=False)
        fig.add_trace(trace, row=1, col=k)
        for axis, update in (("xaxis", fig.update_xaxes), ("yaxis", fig.update_yaxes)):
            settings = {key: v for key, v in one.layout[axis].to_plotly_json().items()
                        if key not in ("domain", "anchor")}
            if axis == "xaxis":
                settings["title"] = dict(text="attended (key)")
            elif k == 2:
                settings["title"] = dict(text="")
            update(**settings, row=1, col=k)
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=max(left.layout.height or 450,
                                                                      right.layout.height or 450),
                      margin=dict(l=60, r=10, t=90, b=60), plot_bgcolor="white")
    return fig
