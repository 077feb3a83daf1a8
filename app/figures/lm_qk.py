"""One head's scores q·k / √d_k on one text as a heatmap (the Queries and keys page on a language model)."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures.tokens import safe


def scores_figure(scores: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """(T, T) scores, query tokens down, key tokens across, blue below 0 and red above; NaN cells (masked: a
    decoder may not look ahead) left blank."""
    bound = max(float(np.nanmax(np.abs(scores), initial=0.0)), 1e-9)
    z = np.where(np.isnan(scores), None, scores).tolist()                # None: a gap Plotly leaves blank
    fig = go.Figure(go.Heatmap(z=z, x=list(range(len(tokens))), y=list(range(len(tokens))), colorscale="RdBu",
                               reversescale=True, zmin=-bound, zmax=bound, colorbar=dict(title="score", thickness=12),
                               customdata=[[[r, c] for c in tokens] for r in tokens],
                               hovertemplate="%{customdata[0]} → %{customdata[1]}: %{z:.3f}<extra></extra>"))
    ticks = dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=[safe(t) for t in tokens])
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=min(720, 140 + 22 * len(tokens)),
                      margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(title="key", **ticks)
    fig.update_yaxes(title="query", autorange="reversed", **ticks)
    return fig
