"""Rotary positions (RoPE) as Plotly figures: every pair's angle over positions, and a query-key score against the
distance m - n. The numbers are core.studies.rotary's."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go


def angle_heatmap(angles: np.ndarray) -> go.Figure:
    """angles (P, pairs) in [0, 2 pi): positions down, pairs across, on a cyclic colour scale (0 and 2 pi alike)."""
    P, pairs = angles.shape
    fig = go.Figure(go.Heatmap(z=angles, x=np.arange(pairs), y=np.arange(P), colorscale="Twilight", zmin=0,
                               zmax=2 * math.pi, colorbar=dict(title="angle", thickness=12, tickvals=[0, math.pi,
                                                               2 * math.pi], ticktext=["0", "π", "2π"]),
                               hovertemplate="position %{y}, pair %{x}<br>angle %{z:.2f} rad<extra></extra>"))
    fig.update_layout(title="The angle of each pair of dimensions, position × θᵢ (mod 2π)", height=420,
                      margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(title="pair i (left: fast, one radian per position; right: slow)")
    fig.update_yaxes(title="position", autorange="reversed")
    return fig


def pair_circles(angles: np.ndarray, pairs: list[int], positions: int = 12) -> go.Figure:
    """A few pairs as unit vectors on a circle, one dot per position 0 .. positions - 1: the fast pair jumps round,
    the slow one barely moves."""
    fig = go.Figure()
    ring = np.linspace(0, 2 * math.pi, 100)
    fig.add_trace(go.Scatter(x=np.cos(ring), y=np.sin(ring), mode="lines", line=dict(color="lightgrey"),
                             hoverinfo="skip", showlegend=False))
    for i in pairs:
        a = angles[:positions, i]
        fig.add_trace(go.Scatter(x=np.cos(a), y=np.sin(a), mode="lines+markers+text", name=f"pair {i}",
                                 text=[str(p) for p in range(len(a))], textposition="top center",
                                 hovertemplate=f"pair {i}, position %{{text}}<extra></extra>"))
    fig.update_layout(title=f"Pairs turned at positions 0 to {positions - 1}", height=420,
                      margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.1))
    fig.update_xaxes(range=[-1.3, 1.3], zeroline=False, showticklabels=False)
    fig.update_yaxes(range=[-1.3, 1.3], zeroline=False, showticklabels=False, scaleanchor="x", scaleratio=1)
    return fig


def score_heatmap(scores: np.ndarray) -> go.Figure:
    """(P, P) scores q_m · k_n: query position down, key position across; equal along every diagonal."""
    fig = go.Figure(go.Heatmap(z=scores, colorscale="RdBu", reversescale=True, zmid=0,
                               colorbar=dict(title="q·k", thickness=12),
                               hovertemplate="query at %{y}, key at %{x}<br>%{z:.3f}<extra></extra>"))
    fig.update_layout(title="q turned to position m · k turned to position n", height=420,
                      margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(title="key position n", constrain="domain")
    fig.update_yaxes(title="query position m", autorange="reversed", scaleanchor="x")
    return fig


def distance_figure(scores: np.ndarray, starts: list[int]) -> go.Figure:
    """The score of a key at n = m - d against the distance d, for queries at a few positions m: one curve each,
    lying on top of each other."""
    fig = go.Figure()
    dashes = ["solid", "dash", "dot", "dashdot"]
    for j, m in enumerate(starts):
        d = np.arange(m + 1)
        fig.add_trace(go.Scatter(x=d, y=scores[m, m - d], mode="lines", name=f"query at m = {m}",
                                 line=dict(dash=dashes[j % len(dashes)], width=2 + 2 * (len(starts) - 1 - j))))
    fig.update_layout(title="The score against the distance m − n, for queries at several m", height=420,
                      xaxis_title="distance m − n (the key that many tokens back)", yaxis_title="q·k",
                      legend=dict(orientation="h", y=-0.2), margin=dict(l=10, r=10, t=50, b=10))
    return fig
