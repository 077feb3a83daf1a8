"""Figures of the Syntax tab (What heads do) and of Figure 5: pure builders, data in, Plotly figure out.

A heads x relations grid of held-out accuracy minus the fixed-offset baseline (core.studies.syntax.SyntaxReport),
and one sentence's gold dependency arcs beside the arcs one head draws. Layers and heads are shown from 1; the
arrays and word indices are 0-based.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.figures.tokens import safe

FOLLOWED, MISSED, OTHER = "#1e8449", "#b03a2e", "#7f8c8d"


def relation_label(row: dict) -> str:
    """'nsubj dep->head' for a report row."""
    return f"{row['relation']} {row['direction']}"


def syntax_grid(heldout: dict, rows: list[dict], title: str = "") -> go.Figure:
    """Heads (layer, head: one row each) x relation-directions (the report's rows, in order): held-out accuracy
    minus the row's held-out baseline, in points. Red: better than the baseline, blue: worse; the head chosen
    on the first half is boxed, and a star marks a syntactic one (Voita's rule)."""
    if not rows:
        raise ValueError("no relation has enough arcs to score: use more sentences")
    grids = [np.asarray(heldout[r["relation"], r["direction"]], dtype=float) - r["baseline"] for r in rows]
    n_layers, n_heads = grids[0].shape
    z = np.stack([g.ravel() for g in grids], axis=1)               # (N*h, relations)
    ys = [f"L{i + 1} H{j + 1}" for i in range(n_layers) for j in range(n_heads)]
    xs = [safe(relation_label(r)) for r in rows]
    lim = float(max(np.nanmax(np.abs(z)), 1.0))
    text = [[f"{v:+.0f}" for v in row] for row in z]
    fig = go.Figure(go.Heatmap(
        z=z, x=xs, y=ys, text=text, texttemplate="%{text}", colorscale="RdBu_r", zmin=-lim, zmax=lim, zmid=0.0,
        colorbar=dict(title="points over<br>baseline", thickness=12),
        hovertemplate="%{y}, %{x}: %{z:+.1f} points over the baseline<extra></extra>"))
    for layer in range(1, n_layers):                      # a line between layers
        fig.add_hline(y=layer * n_heads - 0.5, line=dict(color="white", width=3))
    for k, r in enumerate(rows):
        y = (r["layer"] - 1) * n_heads + (r["head"] - 1)
        fig.add_shape(type="rect", x0=k - 0.5, x1=k + 0.5, y0=y - 0.5, y1=y + 0.5,
                      line=dict(color="black", width=3 if r["syntactic"] else 1))
    fig.update_xaxes(title="relation and direction (a word's row points at its partner)", tickangle=-45,
                     showgrid=False)
    fig.update_yaxes(title="layer and head", autorange="reversed", showgrid=False)
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=min(180 + 16 * len(ys), 1400),
                      width=max(420, 46 * len(xs) + 200), margin=dict(l=80, r=10, t=60, b=140),
                      plot_bgcolor="white")
    return fig


def _arc(fig, a: int, b: int, color: str, width: float, label: str, hover: str, row: int, dash: str = "solid"):
    """A curve from word a up and over to word b (an arrowhead dot at b) in subplot `row`."""
    t = np.linspace(0.0, 1.0, 25)
    x = a + (b - a) * t
    y = 0.25 + (0.35 + 0.22 * abs(b - a)) * np.sin(np.pi * t)
    fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line=dict(color=color, width=width, dash=dash),
                             hoverinfo="text", hovertext=hover, showlegend=False), row=row, col=1)
    fig.add_trace(go.Scatter(x=[b], y=[0.25], mode="markers", marker=dict(color=color, size=7, symbol="circle"),
                             hoverinfo="skip", showlegend=False), row=row, col=1)
    if label:
        fig.add_trace(go.Scatter(x=[(a + b) / 2], y=[y.max() + 0.12], mode="text", text=[safe(label)],
                                 textfont=dict(size=10, color=color), hoverinfo="skip", showlegend=False),
                      row=row, col=1)


def arcs_figure(words: list[str], gold: list[tuple[int, int, str]], drawn: list[tuple[int, int]],
                relation: str | None = None, direction: str = "dep->head", head_name: str = "the head",
                title: str = "") -> go.Figure:
    """One sentence twice: its gold dependency arcs above, the arcs one head draws below.

    gold: (dependent, head, relation) per word but the root; drawn: (word, the other word it attends most).
    relation (and direction): the arcs to look at; gold arcs of it are drawn bold, and the head's arcs from
    those query words green when they land on the gold partner, red when not (its other arcs faint grey).
    relation None: every gold arc bold, every head arc green when it follows some gold arc in either direction.
    """
    if not words:
        raise ValueError("a sentence without words has no arcs to draw")
    pairs = {(d, h) for d, h, _ in gold} | {(h, d) for d, h, _ in gold}
    wanted = {}                                            # query word -> its gold partner, for the relation
    for d, h, rel in gold:
        if relation is None or rel == relation:
            q, p = (d, h) if direction == "dep->head" else (h, d)
            wanted.setdefault(q, set()).add(p)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("gold parse (Universal Dependencies): dependent → head",
                                        f"{head_name}: each word → the other word it attends most"))
    for d, h, rel in gold:
        bold = relation is None or rel == relation
        _arc(fig, d, h, "#1f4e79" if bold else "#b3c6e0", 2.5 if bold else 1.0, rel if bold else "",
             f"{words[d]} → {words[h]} ({rel})", row=1)
    followed = 0
    for q, p in drawn:
        if relation is None:
            hit, mine = (q, p) in pairs, True
        else:
            mine, hit = q in wanted, p in wanted.get(q, ())
        followed += bool(mine and hit)
        color = (FOLLOWED if hit else MISSED) if mine else "#d5d8dc"
        _arc(fig, q, p, color, 2.2 if mine else 0.8, "", f"{words[q]} → {words[p]}"
             + (" (follows the gold arc)" if mine and hit else " (not the gold partner)" if mine else ""), row=2)
    span = max(0.25 + 0.35 + 0.22 * max([abs(a - b) for a, b, *_ in [*gold, *drawn]] or [1]) + 0.3, 1.0)
    for row in (1, 2):
        fig.add_trace(go.Scatter(x=list(range(len(words))), y=[0.0] * len(words), mode="text",
                                 text=[safe(w) for w in words], textfont=dict(size=12), hoverinfo="skip",
                                 showlegend=False), row=row, col=1)
        fig.update_yaxes(visible=False, range=[-0.3, span], row=row, col=1)
        fig.update_xaxes(visible=False, range=[-0.8, len(words) - 0.2], row=row, col=1)
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=min(420 + 14 * len(words), 900),
                      width=max(640, 58 * len(words) + 80), margin=dict(l=10, r=10, t=80, b=10),
                      plot_bgcolor="white")
    fig.layout.meta = {"followed": followed, "asked": sum(1 for q, _ in drawn if q in wanted)}
    return fig
