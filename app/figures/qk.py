"""Figures of the "Queries and keys" page: one head's queries and keys over many sentences as points in 2-D,
and every head of a layer as small multiples. Pure builders: points and coordinates in, Plotly figure out.

Points come from core.studies.qk (HeadPoints, 2-D coordinates). Each point carries customdata [sentence, position,
is_query] (0-based), so that a click can open that sentence's map. WebGL (Scattergl): thousands of points.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.figures.tokens import safe
from core.studies.qk import HeadPoints
from core.tokenizer import WORD_START

ROLE_COLORS = {"query": "#2ca02c", "key": "#d62780"}        # AttentionViz: queries green, keys pink
ROLE_SYMBOLS = {"query": "circle", "key": "diamond"}
ROLE_NAMES = {"query": "queries", "key": "keys"}
COLOR_BY = {"role": "query / key", "position": "position", "word": "word"}
WORD_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
               "#bcbd22", "#7f7f7f"]
OTHER = "#d9d9d9"                                          # words not picked: light grey, drawn underneath
POSITION_SCALE = "Viridis"


def word_label(token: str) -> str:
    """A token as a legend names it: without the ▁ that marks a word's start ('▁in' -> 'in')."""
    return token[1:] if token.startswith(WORD_START) and len(token) > 1 else token


def frequent_words(points: HeadPoints, n: int = 8) -> list[str]:
    """The n most frequent tokens among the points, most frequent first."""
    return [w for w, _ in Counter(points.tokens).most_common(n)]


def hover_texts(points: HeadPoints) -> np.ndarray:
    """Per point: 'query 4 of sentence 12' and the token in its sentence, bracketed (escaped for Plotly).
    A numpy array: Plotly checks a list of thousands of strings one by one (a second here), an array at once."""
    return np.array([f"{'query' if is_q else 'key'} {p + 1} of sentence {s + 1}<br>{safe(text)}"
                     for is_q, s, p, text in zip(points.is_query, points.sentence, points.position, points.context)])


def _customdata(points: HeadPoints, sel: np.ndarray) -> np.ndarray:
    return np.column_stack([points.sentence[sel], points.position[sel], points.is_query[sel].astype(int)])


def _position_axis(cmax: int) -> dict:
    """One colour scale for positions 1..cmax, shared by queries and keys."""
    return dict(colorscale=POSITION_SCALE, cmin=1, cmax=max(cmax, 2), colorbar=dict(title="position", thickness=12))


def _role_traces(points, coords, color_by, words, hover, size, showlegend=True, coloraxis=None) -> list:
    """Scattergl traces of the points: one per role (role, position) or per word and role (word)."""
    traces, is_q, shown = [], points.is_query, points.tokens
    hoverinfo = "text" if hover is not None else "skip"
    for role, mask in (("query", is_q), ("key", ~is_q)):
        if color_by == "word":
            groups = [(w, np.array([t == w for t in shown]) & mask, WORD_COLORS[i % len(WORD_COLORS)])
                      for i, w in enumerate(words)]
            groups.insert(0, ("other", np.array([t not in words for t in shown]) & mask, OTHER))
        else:
            groups = [(role, mask, ROLE_COLORS[role])]
        for name, sel, colour in groups:
            if not sel.any():
                continue
            marker = dict(size=size, symbol=ROLE_SYMBOLS[role], color=colour, opacity=0.75 if name != "other" else 0.5)
            if color_by == "position":
                marker.update(color=points.position[sel] + 1, coloraxis=coloraxis or "coloraxis")
            label = f"{safe(word_label(name))} ({role})" if color_by == "word" else ROLE_NAMES[role]
            group = safe(name) if color_by == "word" else label      # a legend click hides a word's both roles
            traces.append(go.Scattergl(
                x=coords[sel, 0], y=coords[sel, 1], mode="markers", marker=marker, name=label,
                legendgroup=group, showlegend=showlegend, customdata=_customdata(points, sel),
                hovertext=None if hover is None else hover[sel], hoverinfo=hoverinfo))
    return traces


def qk_scatter(points: HeadPoints, coords: np.ndarray, color_by: str = "role",
               words: list[str] | None = None, title: str = "", axis_titles=("axis 1", "axis 2"),
               mark: int | None = None) -> go.Figure:
    """One head's queries (circles) and keys (diamonds) at their 2-D coordinates, coloured by role, by
    position (1 = first) or by word (the given words, else the most frequent; the rest grey).

    Hover names the point and shows its token in its sentence; mark: index of a point to ring (the clicked one).
    Both axes have the same scale, so that distances in the picture are not stretched one way.
    """
    coords = np.asarray(coords, dtype=np.float32)
    words = list(words) if words is not None else frequent_words(points)
    fig = go.Figure(_role_traces(points, coords, color_by, words, hover_texts(points), size=6))
    if mark is not None and 0 <= mark < len(coords):
        fig.add_trace(go.Scatter(x=[coords[mark, 0]], y=[coords[mark, 1]], mode="markers", hoverinfo="skip",
                                 marker=dict(size=18, color="rgba(0,0,0,0)", line=dict(color="black", width=2)),
                                 name="clicked", showlegend=False))
    if color_by == "position":
        fig.update_layout(coloraxis=_position_axis(int(points.position.max(initial=0)) + 1))
    fig.update_xaxes(title=axis_titles[0], zeroline=False)
    fig.update_yaxes(title=axis_titles[1], zeroline=False, scaleanchor="x", scaleratio=1)
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=640, hovermode="closest",
                      clickmode="event+select", legend=dict(itemsizing="constant"), margin=dict(l=60, r=10, t=60, b=50))
    return fig


def small_multiples(embeddings: list[tuple], color_by: str = "role", title: str = "", columns: int = 4,
                    selected: int | None = None) -> go.Figure:
    """Every head of a layer at once: embeddings[k] = (HeadPoints, coords (P, 2), ...) of head k (core.studies.qk).

    A teacher can point at the heads whose queries and keys draw lines ordered by position. No hover text
    (tens of thousands of points); customdata [head] on every point, so that a click opens that head.
    color_by: "role" or "position" (words need the large view's legend).
    """
    H = len(embeddings)
    n_rows = max(1, -(-H // columns))
    fig = make_subplots(rows=n_rows, cols=columns, subplot_titles=[f"head {k + 1}" for k in range(H)],
                        horizontal_spacing=0.03, vertical_spacing=0.08 if n_rows > 1 else 0.0)
    cmax = max((int(p.position.max(initial=0)) + 1 for p, *_ in embeddings), default=1)
    for k, (points, coords, *_) in enumerate(embeddings):
        by = "position" if color_by == "position" else "role"
        for trace in _role_traces(points, np.asarray(coords, dtype=np.float32), by, [], None, size=3,
                                  showlegend=k == 0):
            trace.update(customdata=np.full((len(trace.x), 1), k), hoverinfo=None,
                         hovertemplate=f"head {k + 1}: click to open it large<extra></extra>")
            fig.add_trace(trace, row=k // columns + 1, col=k % columns + 1)
        suffix = "" if k == 0 else str(k + 1)
        fig.layout[f"yaxis{suffix}"].update(scaleanchor=f"x{suffix}", scaleratio=1, constrain="domain")
        fig.layout[f"xaxis{suffix}"].update(constrain="domain")
    fig.update_xaxes(showticklabels=False, zeroline=False, showgrid=False)
    fig.update_yaxes(showticklabels=False, zeroline=False, showgrid=False)
    if selected is not None and 0 <= selected < H:
        fig.layout.annotations[selected].update(text=f"<b>head {selected + 1} ◀</b>")
    if color_by == "position":
        fig.update_layout(coloraxis=_position_axis(cmax))
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=60 + 230 * n_rows, hovermode="closest",
                      clickmode="event+select", legend=dict(itemsizing="constant", orientation="h", y=-0.02),
                      margin=dict(l=10, r=10, t=80, b=40))
    return fig


def mark_token(fig: go.Figure, row: int | None = None, col: int | None = None) -> go.Figure:
    """Ring one row (a query) or one column (a key) of a heatmap_figure: the token that was clicked."""
    line = dict(color="crimson", width=3)
    if row is not None:
        fig.add_shape(type="rect", xref="x domain", x0=0, x1=1, y0=row - 0.5, y1=row + 0.5, line=line)
    if col is not None:
        fig.add_shape(type="rect", yref="y domain", y0=0, y1=1, x0=col - 0.5, x1=col + 0.5, line=line)
    return fig
