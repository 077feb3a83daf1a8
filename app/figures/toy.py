"""Watch it learn: the loss curve and the cross-attention of one example while a tiny Transformer trains.

Pure builders: core.studies.toy_task snapshots in, Plotly figures out, no Streamlit. Rows are the decoder steps
(labelled by the digit each writes), columns the source digits; the cells a perfect alignment would pick are
outlined, so that a class sees the anti-diagonal (or diagonal) fill in.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.figures.style import sizes
from app.figures.tokens import COLORSCALE, safe
from core.studies.toy_task import encode, expected_columns, target_digits, tokens

LINE_SPACING = 1.3         # em: Plotly's distance between the lines of a text
GLYPH = 0.6                # em: the width of a character of tick labels, generously
GAP = 8                    # px between a text and the next one


def example_tokens(task: str, digits: str) -> tuple[list[str], list[str]]:
    """(row labels: what each decoder step writes, column labels: the source), for the example's maps."""
    src, tgt = encode(task, digits)
    return tokens(tgt[1:]), tokens(src)


def loss_figure(steps: list, losses: list, floor: float, total_steps: int, height: int = 300) -> go.Figure:
    """Training loss against step, with the loss of a perfect model (label smoothing keeps it above 0)."""
    fig = go.Figure(go.Scatter(x=steps, y=losses, mode="lines+markers", marker_size=4, name="training loss",
                               hovertemplate="step %{x}: loss %{y:.3f}<extra></extra>"))
    fig.add_hline(y=floor, line_dash="dash", line_color="gray",
                  annotation_text="a perfect model (label smoothing)", annotation_position="bottom left")
    top = max([v for v in losses if v is not None] + [3.0])
    fig.update_layout(title=dict(text="Training loss", x=0.0), height=height, showlegend=False,
                      margin=dict(l=10, r=10, t=50, b=10), xaxis=dict(title="step", range=[0, total_steps]),
                      yaxis=dict(title="loss (nats)", range=[0, top * 1.05]))
    return fig


def cross_grid(cross: np.ndarray, task: str, digits: str, hits: np.ndarray, title: str,
               cell: int = 21) -> go.Figure:
    """Every cross-attention head (N_dec, h, T, S) of the example as small heatmaps, one row of heads per decoder
    layer, titled with how many digit rows find their source digit; the expected cells outlined."""
    n_layers, h, T, S = cross.shape
    rows, cols = example_tokens(task, digits)
    n = len(digits)
    # two short lines a head: side by side in a page's column, one line each would run into the next head's
    names = [f"layer {layer + 1}, head {head + 1}:<br>{round(hits[layer, head] * n)} of {n} on target"
             for layer in range(n_layers) for head in range(h)]
    room = grid_room(max(len(c) for c in cols))
    plot = n_layers * T * cell + (n_layers - 1) * room["between"]          # px: the maps and the gaps between rows
    fig = make_subplots(n_layers, h, subplot_titles=names, horizontal_spacing=0.1,
                        vertical_spacing=room["between"] / plot if n_layers > 1 else 0.0)
    fig.update_annotations(font_size=sizes()["base"])        # explicit: presenter mode scales it with the room
    want = expected_columns(task, n)
    for layer in range(n_layers):
        for head in range(h):
            fig.add_trace(go.Heatmap(z=cross[layer, head], zmin=0, zmax=1, colorscale=COLORSCALE, showscale=False,
                                     hovertemplate="writes %{y}, looks at source %{x}: %{z:.2f}<extra></extra>"),
                          layer + 1, head + 1)
            fig.add_trace(go.Scatter(x=want, y=np.arange(n), mode="markers", hoverinfo="skip", showlegend=False,
                                     marker=dict(symbol="square-open", size=cell - 4, color="#d62728",
                                                 line_width=1.5)),
                          layer + 1, head + 1)
    fig.update_xaxes(tickvals=list(range(S)), ticktext=[safe(t) for t in cols], side="bottom", showgrid=False,
                     zeroline=False, constrain="domain")
    fig.update_yaxes(tickvals=list(range(T)), ticktext=[safe(t) for t in rows], autorange="reversed",
                     showgrid=False, zeroline=False, constrain="domain")
    for i in range(n_layers * h):            # each y axis keeps square cells with its own x axis
        fig.layout[f"yaxis{i + 1 if i else ''}"].scaleanchor = f"x{i + 1 if i else ''}"
    fig.update_layout(title=dict(text=safe(title), x=0.0, yref="container", y=1.0, yanchor="top", pad=dict(t=10)),
                      height=round(room["top"] + plot + 10), margin=dict(l=10, r=10, t=room["top"], b=10),
                      plot_bgcolor="white")
    return fig


def grid_room(label_chars: int, title_lines: int = 2) -> dict[str, float]:
    """Pixels the grid keeps for text, from the type sizes (presenter mode multiplies fonts, margins and height
    alike, so these hold there too): "between", a row's tick labels, then the heads' titles of the row below; "top",
    the figure's one-line title, then the first row's titles. The tick labels may stand on end when a narrow map has
    no room for them side by side: label_chars, the longest one's length, sets their room."""
    s = sizes()
    heads = title_lines * LINE_SPACING * s["base"]
    labels = max(LINE_SPACING, GLYPH * label_chars) * s["tick"] + GAP
    return {"between": labels + heads + GAP, "top": 10 + LINE_SPACING * s["title"] + heads + GAP}


def progress_text(step: int, total: int, seconds: float, started_by: str, running: bool, stopped_by: str | None) -> str:
    """One line for the progress bar: who started it, how far it is, how long it has run."""
    state = ("training" if running else {"steps": "finished", "time": "stopped at its time limit",
                                         "stop": "stopped"}.get(stopped_by or "", "ended"))
    return f"Started by {started_by} · step {step:,} of {total:,} · {seconds:.0f} s · {state}"


def guess_text(task: str, digits: str, guess: str) -> str:
    """'31859264 → 46295813 (model: 46295·13, 7 of 8 right)' for the caption under the maps."""
    want = target_digits(task, digits)
    right = sum(a == b for a, b in zip(want, guess))
    return (f"{digits} → {want} · the model writes {guess} ({right} of {len(want)} right, each from the right "
            "ones before it)")


def done_text(steps: int, seconds: float) -> str:
    """The line at the end of a run (scripts/bench/bench_class.py reads the training's speed from it)."""
    return f"Done: {steps:,} steps in {seconds:.0f} s ({steps / max(seconds, 1e-9):.0f} steps a second on this server)."
