"""Watch it learn, Learn to copy: a GPT's training loss and its induction head forming, and that head's map.

Pure builders: core.studies.copy_task snapshots in, Plotly figures out, no Streamlit. The map's rows are the
queries and its columns the keys of one held-out sequence [<s>] + r + r, labelled by their tokens; the cells an
induction head picks (the token after the previous occurrence of the query's token) are outlined, so that a class
sees the head's stripe fill in when the phase change comes.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.figures.style import sizes
from app.figures.tokens import COLORSCALE, safe
from core.studies.copy_task import induction_cells, phase_change, token_name

LOSS_COLOR, SCORE_COLOR, MARK_COLOR = "#1f77b4", "#2ca02c", "#d62728"


def training_figure(snapshots: list, threshold: float, total_steps: int, height: int = 380) -> go.Figure:
    """Two panels over the steps: the training loss above, the best head's induction score below with the
    threshold of a formed head; the phase change (core.studies.copy_task.phase_change) marked once reached."""
    fig = make_subplots(2, 1, shared_xaxes=True, vertical_spacing=0.14,
                        subplot_titles=["Training loss", "Best head's induction score"])
    fig.update_annotations(font_size=sizes()["base"])
    trained = [s for s in snapshots if s.loss is not None]
    fig.add_trace(go.Scatter(x=[s.step for s in trained], y=[s.loss for s in trained], mode="lines+markers",
                             marker_size=4, line_color=LOSS_COLOR, name="training loss",
                             hovertemplate="step %{x}: loss %{y:.3f}<extra></extra>"), 1, 1)
    fig.add_trace(go.Scatter(x=[s.step for s in snapshots], y=[s.best_induction for s in snapshots],
                             mode="lines+markers", marker_size=4, line_color=SCORE_COLOR, name="induction score",
                             hovertemplate="step %{x}: best induction score %{y:.2f}<extra></extra>"), 2, 1)
    fig.add_hline(y=threshold, line_dash="dash", line_color="gray", row=2, col=1,
                  annotation_text="a formed induction head", annotation_position="top left")
    change = phase_change(snapshots, threshold)
    if change is not None:
        fig.add_vline(x=change.step, line_color=MARK_COLOR, line_width=2)
        fig.add_annotation(x=change.step, y=1.0, xref="x2", yref="y2", text=f"phase change: step {change.step}",
                           showarrow=False, xanchor="left", yanchor="top", xshift=4, font_color=MARK_COLOR)
    top = max([s.loss for s in trained] + [4.0])
    fig.update_xaxes(range=[0, total_steps], showgrid=False)
    fig.update_xaxes(title="step", row=2, col=1)
    fig.update_yaxes(title="loss (nats)", range=[0, top * 1.05], row=1, col=1)
    fig.update_yaxes(title="score", range=[0, 1.05], row=2, col=1)
    fig.update_layout(height=height, showlegend=False, margin=dict(l=10, r=10, t=40, b=10))
    return fig


def token_labels(ids: list) -> list[str]:
    """A map's tick labels: each token's name (tiny-copy's tokenizer names), escaped for Plotly."""
    return [safe(token_name(int(i))) for i in ids]


def outline(L: int, cell: float) -> go.Scatter:
    """Open red squares on the cells an induction head picks (queries of the second copy, the key after the
    previous occurrence)."""
    queries, keys = induction_cells(L)
    return go.Scatter(x=keys, y=queries, mode="markers", hoverinfo="skip", showlegend=False, name="induction cells",
                      marker=dict(symbol="square-open", size=max(cell - 3, 3), color=MARK_COLOR, line_width=1.5))


def head_map(attn: np.ndarray, ids: list, layer: int, head: int, score: float, step: int,
             cell: int = 13) -> go.Figure:
    """One head's map (T, T) on the sequence `ids` ([<s>] + r + r), the induction cells outlined, titled with its
    layer and head (from 0 here, from 1 on the figure) and induction score."""
    T = attn.shape[-1]
    L = (T - 1) // 2
    labels = token_labels(ids)
    fig = go.Figure(go.Heatmap(z=attn, zmin=0, zmax=1, colorscale=COLORSCALE, showscale=False,
                               hovertemplate="query %{y} looks at key %{x}: %{z:.2f}<extra></extra>"))
    fig.add_trace(outline(L, cell))
    fig.add_hline(y=L + 0.5, line_color="gray", line_width=1, line_dash="dot")      # where the second copy starts
    fig.add_vline(x=L + 0.5, line_color="gray", line_width=1, line_dash="dot")
    s = sizes()
    fig.update_xaxes(tickvals=list(range(T)), ticktext=labels, title="key (the token looked at)", side="bottom",
                     showgrid=False, zeroline=False, constrain="domain", tickangle=0, tickfont_size=s["tick"] - 2)
    fig.update_yaxes(tickvals=list(range(T)), ticktext=labels, title="query (the current token)",
                     autorange="reversed", showgrid=False, zeroline=False, constrain="domain", scaleanchor="x",
                     tickfont_size=s["tick"] - 2)
    title = f"Layer {layer + 1}, head {head + 1} at step {step}: induction score {score:.2f}"
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=T * cell + 130,
                      margin=dict(l=10, r=10, t=50, b=10), plot_bgcolor="white")
    return fig


def heads_grid(example: np.ndarray, induction: np.ndarray, cell: int = 7) -> go.Figure:
    """Every head's map (N, h, T, T) as small multiples, a row per layer, each titled with its induction score and
    the induction cells outlined (positions from 0, as on the best head's map)."""
    N, h, T, _ = example.shape
    L = (T - 1) // 2
    names = [f"layer {layer + 1}, head {hd + 1}: {induction[layer, hd]:.2f}" for layer in range(N) for hd in range(h)]
    fig = make_subplots(N, h, subplot_titles=names, horizontal_spacing=0.04, vertical_spacing=0.12)
    fig.update_annotations(font_size=sizes()["base"] - 2)
    for layer in range(N):
        for hd in range(h):
            fig.add_trace(go.Heatmap(z=example[layer, hd], zmin=0, zmax=1, colorscale=COLORSCALE, showscale=False,
                                     hovertemplate="query %{y} looks at key %{x}: %{z:.2f}<extra></extra>"),
                          layer + 1, hd + 1)
            fig.add_trace(outline(L, cell), layer + 1, hd + 1)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False, constrain="domain")
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, constrain="domain", autorange="reversed")
    for i in range(N * h):                   # square cells: each y axis with its own x axis
        fig.layout[f"yaxis{i + 1 if i else ''}"].scaleanchor = f"x{i + 1 if i else ''}"
    fig.update_layout(height=N * (T * cell + 60) + 30, margin=dict(l=10, r=10, t=40, b=10), plot_bgcolor="white")
    return fig
