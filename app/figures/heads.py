"""Figures of the "What heads do" page: pure builders, data in, Plotly figure out (no Streamlit here).

Layers and heads are shown numbered from 1 ("layer 5 of 6", as in the paper); the arrays are 0-based.
Token axes use positions with token text as tick labels, so that a word seen twice keeps two rows.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.figures.tokens import label_font, tick_angle, tick_labels, token_axes, token_heatmap

PAGE_WIDTH = 1100     # px a wide-layout page gives a figure on a 1280 px screen (the side-by-side maps share it)


def one_based(table: pd.DataFrame) -> pd.DataFrame:
    """A table of heads as people read it (and the CSV files hold it): layers and heads counted from 1."""
    return table.assign(layer=table["layer"] + 1, head=table["head"] + 1)


def head_grid(grid: np.ndarray, title: str, label: str, zmin=None, zmax=None,
              colorscale: str = "Viridis", fmt: str = ".2f") -> go.Figure:
    """A layers × heads heatmap of one number per head (NaN cells stay blank), values written in the cells."""
    L, h = grid.shape
    text = [[("" if not np.isfinite(v) else format(v, fmt)) for v in row] for row in grid]
    fig = go.Figure(go.Heatmap(
        z=grid, x=[f"head {j + 1}" for j in range(h)], y=[f"layer {i + 1}" for i in range(L)],
        text=text, texttemplate="%{text}", colorscale=colorscale, zmin=zmin, zmax=zmax,
        colorbar=dict(title=label), hovertemplate="%{y}, %{x}: %{z:.3f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig.update_xaxes(automargin=True)
    fig.update_layout(title=title, height=150 + 42 * L, margin=dict(l=70, r=10, t=60, b=40))
    return fig


def _token_axes(fig, rows, cols, n_panels, width: float = PAGE_WIDTH):
    # column labels level where they fit a panel (about an n-th of the page), slanted or upright where not
    angle = tick_angle(tick_labels(cols), (width - 120) / n_panels, label_font(len(cols)))
    for k in range(1, n_panels + 1):
        token_axes(fig, rows, cols, x=dict(tickangle=angle), y=dict(showticklabels=k == 1), row=1, col=k)
    size = max(len(rows), 6)
    fig.update_layout(height=min(300 + 18 * size, 1200), margin=dict(l=80, r=10, t=80, b=40 if angle == 0 else 80))


def _map(z, rows, cols, zmax, **options) -> go.Heatmap:
    """One map of a side-by-side figure: the token heatmap, hover naming the tokens, no colour bar title."""
    return token_heatmap(z, rows, cols, zmax=zmax, colorbar=None, hover="tokens", **options)


def maps_side_by_side(left: np.ndarray, right: np.ndarray, rows: list[str], cols: list[str],
                      titles: tuple[str, str], title: str = "") -> go.Figure:
    """Two attention maps over the same tokens, on one colour scale (e.g. rollout beside raw attention)."""
    zmax = float(max(left.max(), right.max(), 1e-9))
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.06)
    fig.add_trace(_map(left, rows, cols, zmax), row=1, col=1)
    fig.add_trace(_map(right, rows, cols, zmax, showscale=False), row=1, col=2)
    _token_axes(fig, rows, cols, 2)
    fig.update_layout(title=title)
    return fig


def comparison_maps(a: np.ndarray, b: np.ndarray, rows: list[str], cols: list[str],
                    names: tuple[str, str], title: str = "") -> go.Figure:
    """Model A's map, model B's map and their difference B − A (red: B attends more, blue: less)."""
    zmax = float(max(a.max(), b.max(), 1e-9))
    diff = b - a
    dmax = float(max(np.abs(diff).max(), 0.01))          # a floor, so that "no difference" reads as 0, not noise
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.05,
                        subplot_titles=(names[0], names[1], f"difference: {names[1]} − {names[0]}"))
    fig.add_trace(_map(a, rows, cols, zmax, showscale=False), row=1, col=1)
    fig.add_trace(_map(b, rows, cols, zmax, showscale=False), row=1, col=2)
    fig.add_trace(_map(diff, rows, cols, dmax, colorscale="RdBu_r", zmin=-dmax, zmid=0.0), row=1, col=3)
    _token_axes(fig, rows, cols, 3)
    fig.update_layout(title=title)
    return fig


def sweep_bars(sweep: pd.DataFrame, title: str) -> go.Figure:
    """BLEU change when each head of a layer is switched off: one bar per head, red where BLEU drops."""
    heads = [f"head {h + 1}" for h in sweep["head"]]
    delta = sweep["delta"].to_numpy(dtype=float)
    fig = go.Figure(go.Bar(x=heads, y=delta, marker_color=np.where(delta < 0, "#c0392b", "#2e86c1"),
                           text=[f"{d:+.1f}" for d in delta], textposition="outside",
                           hovertemplate="%{x}: BLEU %{y:+.2f}<extra></extra>"))
    base = float(sweep["base_bleu"].iloc[0]) if len(sweep) else 0.0
    fig.update_layout(title=title, height=400, margin=dict(l=70, r=10, t=60, b=50),
                      yaxis_title=f"BLEU change (all heads on: {base:.1f})", xaxis_title="head switched off")
    fig.add_hline(y=0, line_color="black", line_width=1)
    return fig
