"""Figure of How it writes on a language model: the next-token candidates of one step (core.lm_writing.WriteStep).

A pure builder: a step in, a Plotly figure out; no Streamlit. The bars are the translation page's
(app.figures.decoding): one per candidate, likeliest on top, one for every other token together, the token taken
outlined and coloured by how it was taken.
"""
from __future__ import annotations

import plotly.graph_objects as go

from app.figures.decoding import FATE_COLORS, OTHER, _unique
from app.figures.tokens import safe
from core.lm_writing import FORCED, GREEDY, SAMPLED

HOW_COLORS = {GREEDY: "#1f77b4", SAMPLED: FATE_COLORS[SAMPLED], FORCED: FATE_COLORS[FORCED]}
HOW_WORDS = {GREEDY: "the likeliest: taken (greedy)", SAMPLED: "drawn at random", FORCED: "forced (your choice)"}
NOT_TAKEN = "#b0b0b0"


def next_token_figure(step, number: int, labels: list, drawn: bool = False, title: str | None = None
                      ) -> go.Figure:
    """One horizontal bar per candidate of `step` (a WriteStep; `number` from 0), labelled by `labels` (one per
    candidate, as the page shows tokens), likeliest on top, and one for every other token; the token taken
    coloured by how it was taken and outlined, the others grey. drawn: the probabilities it was drawn from (the
    sampling's temperature and cut) instead of the model's own."""
    cands = step.candidates
    probs = [c.drawn if drawn else c.prob for c in cands]
    other = max(0.0, 1.0 - sum(probs))
    labels = _unique(list(labels))
    taken = [c.token == step.token for c in cands]
    colors = [HOW_COLORS[step.how] if t else NOT_TAKEN for t in taken]
    hover = [f"{safe(lab)}: {p:.1%}" + (f"<br>{HOW_WORDS[step.how]}" if t else "")
             for lab, p, t in zip(labels, probs, taken)] + [f"{OTHER}: {other:.1%}"]
    ys, xs = labels + [OTHER], probs + [other]
    fig = go.Figure(go.Bar(
        y=ys, x=xs, orientation="h", marker_color=colors + ["#e8e8e8"],
        marker_line=dict(color=["black" if t else "rgba(0,0,0,0)" for t in taken] + ["rgba(0,0,0,0)"], width=2),
        text=[f"{p:.1%}" for p in xs], textposition="outside", cliponaxis=False, hovertext=hover,
        hoverinfo="text"))
    fig.update_layout(title=dict(text=safe(title or f"Step {number + 1}: which token next?"), x=0.0),
                      height=max(300, 28 * len(ys) + 110), margin=dict(l=10, r=60, t=60, b=40), showlegend=False,
                      plot_bgcolor="white", bargap=0.2)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=ys[::-1], automargin=True)
    fig.update_xaxes(title="probability it was drawn from" if drawn else "probability (the model's own)",
                     range=[0, min(1.0, max(xs) * 1.2 + 0.05)], tickformat=".0%")
    return fig
