"""The sinusoidal positional encoding (section 3.5) as Plotly figures; the table itself is core.sinusoidal_table.
And a T5 model's positions, which are no table: each head's learned bias over relative distance (bias_figure)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from core import sinusoidal_table


def pe_table(n_positions: int, d_model: int, layout: str = "interleaved") -> np.ndarray:
    """The (n_positions, d_model) encoding as numpy, exactly the table the model adds to its embeddings."""
    return sinusoidal_table(n_positions, d_model, layout).numpy()


def dimension_label(dim: int, d_model: int, layout: str) -> str:
    """'sin, i=3' for the dimension that holds the sine (or cosine) of frequency i, in either layout."""
    half = (d_model + 1) // 2
    if layout == "interleaved":
        return f"dim {dim}: {'sin' if dim % 2 == 0 else 'cos'}, i={dim // 2}"
    return f"dim {dim}: {'sin' if dim < half else 'cos'}, i={dim % half}"


def default_dims(d_model: int, layout: str = "interleaved") -> list[int]:
    """The sine dimensions of frequencies i = 0, d/32, d/8, d/4: fast to slow waves, whatever d_model."""
    freqs = sorted({0, d_model // 32, d_model // 8, d_model // 4})
    return [2 * i if layout == "interleaved" else i for i in freqs]


def waves_figure(pe: np.ndarray, dims: list[int], layout: str = "interleaved") -> go.Figure:
    """PE(pos, dim) against pos for the chosen dimensions: each a sinusoid, slower for higher i."""
    P, d_model = pe.shape
    fig = go.Figure()
    for d in dims:
        fig.add_trace(go.Scatter(x=np.arange(P), y=pe[:, d], mode="lines", name=dimension_label(d, d_model, layout)))
    fig.update_layout(title="Some dimensions of the encoding, over positions", height=380,
                      xaxis_title="position", yaxis_title="PE(position, dim)", yaxis_range=[-1.1, 1.1],
                      legend=dict(orientation="h", y=-0.2), margin=dict(l=10, r=10, t=50, b=10))
    return fig


def display_order(d_model: int, layout: str = "interleaved", grouped: bool = True) -> list[int]:
    """Dimensions in the order the matrix draws them: grouped, every sine (by frequency i) then every cosine."""
    dims = list(range(d_model))
    if not grouped or layout != "interleaved":          # the concat layout is grouped already
        return dims
    return dims[0::2] + dims[1::2]


def pe_heatmap(pe: np.ndarray, layout: str = "interleaved", grouped: bool = True) -> go.Figure:
    """The whole table: positions down, dimensions across, -1 blue to +1 red.

    grouped: sines on the left, cosines on the right. Drawn as stored in the paper's interleaved layout,
    neighbouring columns alternate between a sine and a cosine of the same slow wave (near 0 and near
    1 for every position at high i), which a screen shows as fine stripes that look like a rendering fault.
    """
    P, d_model = pe.shape
    order = display_order(d_model, layout, grouped)
    names = [dimension_label(d, d_model, layout) for d in order]      # hover names the stored dimension
    fig = go.Figure(go.Heatmap(z=pe[:, order], x=names, colorscale="RdBu", zmin=-1, zmax=1, reversescale=True,
                               colorbar=dict(title="value", thickness=12),
                               hovertemplate="position %{y}, %{x}<br>%{z:.3f}<extra></extra>"))
    grouped_view = grouped or layout == "concat"
    ticks = ([0, d_model // 4, (d_model + 1) // 2, 3 * d_model // 4] if grouped_view
             else list(range(0, d_model, max(1, d_model // 8))))
    order = "sines then cosines" if grouped_view else "as stored"
    fig.update_layout(title="The positional encoding matrix, " + order,
                      height=420, margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(type="category", tickmode="array", tickvals=[names[t] for t in ticks],
                     title="dimension: " + ("every sine (slower to the right), then every cosine" if grouped_view
                                            else "as stored, sin, cos, sin, cos, …"))
    fig.update_yaxes(title="position", autorange="reversed")
    return fig


def dot_products(pe: np.ndarray) -> np.ndarray:
    """PE PE^T: entry (p, q) is the dot product of the encodings of positions p and q."""
    return pe @ pe.T


def dot_heatmap(pe: np.ndarray) -> go.Figure:
    """PE PE^T as a heatmap: constant along every diagonal, because it depends on q - p only."""
    dots = dot_products(pe)
    fig = go.Figure(go.Heatmap(z=dots, colorscale="Viridis", colorbar=dict(title="dot", thickness=12),
                               hovertemplate="PE(%{y}) · PE(%{x}) = %{z:.2f}<extra></extra>"))
    fig.update_layout(title="Dot products between positions, PE · PEᵀ", height=420,
                      margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(title="position q", constrain="domain")
    fig.update_yaxes(title="position p", autorange="reversed", scaleanchor="x")
    return fig


def offset_dots(pe: np.ndarray, start: int, max_k: int) -> np.ndarray:
    """PE(start) · PE(start + k) for k = 0..max_k (cut where the table ends)."""
    ks = np.arange(0, min(max_k, pe.shape[0] - 1 - start) + 1)
    return pe[start + ks] @ pe[start]


def offset_figure(pe: np.ndarray, starts: list[int], max_k: int) -> go.Figure:
    """PE(p) · PE(p+k) against k for a few p: the curves lie on top of each other."""
    fig = go.Figure()
    dashes = ["solid", "dash", "dot", "dashdot", "longdash"]
    for n, p in enumerate(starts):
        y = offset_dots(pe, p, max_k)
        fig.add_trace(go.Scatter(x=np.arange(len(y)), y=y, mode="lines", name=f"p = {p}",
                                 line=dict(dash=dashes[n % len(dashes)], width=2 + 2 * (len(starts) - 1 - n))))
    fig.update_layout(title="PE(p) · PE(p + k) against the distance k, for several p", height=380,
                      xaxis_title="distance k", yaxis_title="dot product",
                      legend=dict(orientation="h", y=-0.2), margin=dict(l=10, r=10, t=50, b=10))
    return fig


def bias_figure(distances: list[int], bias: np.ndarray, title: str) -> go.Figure:
    """Each head's learned bias b(j - i) against the distance j - i from the query to the key: one line per head
    (bias: (h, len(distances)), as core.model.position_bias.learned_bias gives it). Steps, not curves: distances
    that share a bucket share one number."""
    fig = go.Figure()
    for head, row in enumerate(np.asarray(bias)):
        fig.add_trace(go.Scatter(x=list(distances), y=row, mode="lines", line_shape="hv", name=f"head {head + 1}"))
    fig.add_vline(x=0, line_dash="dot", line_color="grey")
    fig.update_layout(title=title, height=380, xaxis_title="distance j − i from the query to the key (0: itself)",
                      yaxis_title="bias added to the score", legend=dict(orientation="h", y=-0.25),
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig
