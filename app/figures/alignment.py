"""Figures of the "Alignment" page: pure builders, data in, Plotly figure out (no Streamlit here).

A map is word-level cross-attention (W_tgt, W_src): rows are German (target) words, columns English
(source) words. Links are (t, s) pairs, 0-based; layers and heads are shown from 1.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.figures.tokens import tick_labels, token_axes, token_heatmap, token_keys

# how each kind of link is drawn: (legend name, marker symbol, colour)
LINK_STYLE = {
    "model": ("link of this head", "circle", "#1b2631"),
    "correct": ("correct: a sure gold link", "circle", "#1e8449"),
    "possible": ("acceptable: a possible gold link", "circle-open", "#1e8449"),
    "wrong": ("wrong: not in the gold", "x", "#c0392b"),
    "missed": ("missed: a sure gold link not found", "square-open", "#e67e22"),
    "sure": ("gold: sure", "square", "#1b2631"),
    "gold_possible": ("gold: possible only", "square-open", "#7f8c8d"),
}


def _links_trace(links, kind: str, rows, cols, size: int) -> go.Scatter:
    """Markers on the cells of a set of (t, s) links, with both words in the hover text (rows, cols: tick labels)."""
    name, symbol, colour = LINK_STYLE[kind]
    links = sorted(links)
    x, y = token_keys(cols), token_keys(rows)                 # the heatmap's categories
    return go.Scatter(
        x=[x[s] for _, s in links], y=[y[t] for t, _ in links], mode="markers", name=name,
        marker=dict(symbol=symbol, color=colour, size=size, line=dict(width=2, color=colour)),
        hovertext=[f"{rows[t]} ↔ {cols[s]}: {name}" for t, s in links], hoverinfo="text")


def alignment_figure(attn: np.ndarray, rows: list[str], cols: list[str], links: dict,
                     gold: dict | None = None, title: str = "") -> go.Figure:
    """The chosen head's word-level map with its links drawn over it; with gold, the gold links beside it.

    links: {"model": set} without gold, or core.studies.alignment.classify's {"correct", "possible", "wrong",
    "missed"} with it. gold: {"sure": set, "possible": set (possible only)} or None.
    """
    attn = np.asarray(attn, dtype=np.float32)
    R, C = attn.shape
    rl, cl = tick_labels(rows), tick_labels(cols)
    panels = 2 if gold is not None else 1
    fig = make_subplots(rows=1, cols=panels, horizontal_spacing=0.08, subplot_titles=(
        ("attention and this head's links", "human gold links") if panels == 2 else None))
    fig.add_trace(token_heatmap(attn, rows, cols, hover="tokens"), row=1, col=1)
    size = int(np.clip(300 / max(R, C, 1), 6, 14))
    for kind, found in links.items():
        if found:
            fig.add_trace(_links_trace(found, kind, rl, cl, size), row=1, col=1)
    if gold is not None:
        for kind, found in (("sure", gold["sure"]), ("gold_possible", gold["possible"])):
            if found:
                fig.add_trace(_links_trace(found, kind, rl, cl, size), row=1, col=panels)
    for k in range(1, panels + 1):
        token_axes(fig, rows, cols, row=1, col=k,
                   x=dict(tickangle=-60, range=[-0.5, C - 0.5], showgrid=k == 2, gridcolor="#eee",
                          title_text="English (source)"),
                   y=dict(range=[R - 0.5, -0.5], showgrid=k == 2, gridcolor="#eee", showticklabels=k == 1,
                          title_text="German (target)" if k == 1 else None))
    # the legend between the title and the panels: below them it would cover the rotated word labels
    fig.update_layout(title=dict(text=tick_labels([title])[0], x=0.0, y=0.995, yref="container", yanchor="top"),
                      plot_bgcolor="white", height=min(320 + 22 * max(R, 6), 1360),
                      margin=dict(l=90, r=10, t=150, b=90),
                      legend=dict(orientation="h", yanchor="bottom", y=1.09, x=0.0))
    return fig


def aer_grid_figure(grid: dict, title: str = "", selected: dict | None = None) -> go.Figure:
    """AER of every head (columns 1..h, then the layer average) by layer (rows), one panel per shift.

    grid: {shift: [[AER of head 1..h, layer average] for each layer]} (core.studies.alignment.report's "grid").
    selected: {"layer", "head", "shift"} to outline, e.g. the head chosen on the first half of the pairs.
    """
    shifts = list(grid)
    fig = make_subplots(rows=1, cols=len(shifts), horizontal_spacing=0.06,
                        subplot_titles=[f"shift '{s}'" for s in shifts])
    for k, shift in enumerate(shifts, 1):
        z = np.asarray(grid[shift], dtype=float)                    # (layers, h + 1)
        L, n = z.shape
        x = [f"head {j + 1}" for j in range(n - 1)] + ["mean"]
        y = [f"layer {i + 1}" for i in range(L)]
        fig.add_trace(go.Heatmap(
            z=z * 100, x=x, y=y, coloraxis="coloraxis",
            text=[[f"{v:.0f}" for v in row] for row in z * 100], texttemplate="%{text}",
            hovertemplate=f"shift '{shift}', " + "%{y}, %{x}: AER %{z:.1f}%<extra></extra>"), row=1, col=k)
        fig.update_yaxes(autorange="reversed", showticklabels=k == 1, row=1, col=k)
        if selected and selected.get("shift") == shift and selected.get("layer") in range(1, L + 1):
            col = n - 1 if selected["head"] == "mean" else selected["head"] - 1
            fig.add_shape(type="rect", x0=col - 0.5, x1=col + 0.5, y0=selected["layer"] - 1.5,
                          y1=selected["layer"] - 0.5, line=dict(color="crimson", width=3), row=1, col=k)
    fig.update_layout(title=dict(text=title, x=0.0), height=170 + 45 * len(grid[shifts[0]]),
                      coloraxis=dict(colorscale="Viridis_r", cmin=0, cmax=100, colorbar=dict(title="AER %")),
                      margin=dict(l=70, r=10, t=80, b=40))
    return fig
