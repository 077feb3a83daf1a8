"""Figures of "why this word and not that one?" (core.attribution.Contrast): pure builders, data in, Plotly out.

One strip per row over the same words: what each word pushed towards one word or the other (red towards the
model's word, blue towards the other, white nothing), and the attention of the same step beside it, so that a
word looked at but deciding nothing, or deciding much but barely looked at, shows at once.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures.tokens import safe

PUSH = [[0.0, "#2166ac"], [0.5, "#f7f7f7"], [1.0, "#b2182b"]]      # towards other, nothing, towards chosen
LOOK = "Blues"
METHOD_LABELS = {"erasure": "leave a word out", "gradient": "gradient × input", "integrated": "integrated gradients",
                 "alti_logit": "ALTI-Logit"}
ROW_PX, CAPTION_PX, TICKS_PX = 56, 24, 78      # a strip, the caption over it, the words under it (at -45°)


def _unique(words: list) -> list:
    """Labels made unique by invisible suffixes, so that a word used twice keeps two cells on a category axis."""
    seen, out = {}, []
    for w in words:
        w = safe(w)
        seen[w] = seen.get(w, 0) + 1
        out.append(w + "\u200b" * (seen[w] - 1))
    return out


def contrast_figure(src_words: list, scores: np.ndarray, attention: np.ndarray, chosen: str, other: str,
                    method: str, attention_label: str, tgt_words=(), tgt_scores=(), title: str = "",
                    numbers: bool = True) -> go.Figure:
    """Strips over the source words: each word's push towards `chosen` (+) or `other` (-) by `method` (a key of
    core.attribution.METHODS), and under it
    the step's attention (one head or a mean, `attention_label`) over the same words, labelled once below both; a
    third strip for the earlier target words if any, on the pushes' colour scale. numbers: each cell's value written
    in it (leave them out where the cells are narrow: a projector's column)."""
    scores, attention = np.asarray(scores, dtype=float), np.asarray(attention, dtype=float)
    tgt_scores = np.asarray(tgt_scores, dtype=float)
    top = max(float(np.abs(scores).max(initial=0)), float(np.abs(tgt_scores).max(initial=0)), 1e-6)
    x = _unique(src_words)
    pushes = f"{METHOD_LABELS.get(method, method)}: + '{safe(chosen)}', − '{safe(other)}'"
    rows = [(pushes, _strip(x, scores, PUSH, -top, top, "push", numbers), False),
            (attention_label, _strip(x, attention, LOOK, 0, max(float(attention.max(initial=0)), 1e-6), "look",
                                     numbers), True)]
    if len(tgt_words):
        rows.append(("earlier target words", _strip(_unique(tgt_words), tgt_scores, PUSH, -top, top, "push",
                                                    numbers), True))
    # pixels from the top of the plotting area: a row's caption, its strip, then its words if it shows them
    spans, y = [], 0
    for _, _, ticks in rows:
        spans.append((y + CAPTION_PX, y + CAPTION_PX + ROW_PX))
        y += CAPTION_PX + ROW_PX + (TICKS_PX if ticks else 8)
    fig = go.Figure()
    for k, ((name, trace, ticks), (a, b)) in enumerate(zip(rows, spans), start=1):
        trace.update(xaxis=f"x{k}", yaxis=f"y{k}")
        fig.add_trace(trace)
        words = list(trace.x)                                  # every word labelled, none skipped for room
        fig.update_layout({f"xaxis{k}": dict(anchor=f"y{k}", type="category", tickangle=-45, showticklabels=ticks,
                                             tickmode="array", tickvals=words, ticktext=words,
                                             matches="x1" if k == 2 else None),
                           f"yaxis{k}": dict(anchor=f"x{k}", domain=[1 - b / y, 1 - a / y], showticklabels=False)})
        fig.add_annotation(text=name, x=0.5, y=1 - (a - 4) / y, xref="paper", yref="paper", showarrow=False,
                           yanchor="bottom", font=dict(size=13))
    top_px = 50 if title else 10
    fig.update_layout(title=dict(text=safe(title), x=0.0), height=y + top_px + 10, plot_bgcolor="white",
                      margin=dict(l=10, r=10, t=top_px, b=10))
    return fig


def _strip(x: list, z: np.ndarray, colors, zmin: float, zmax: float, what: str, numbers: bool) -> go.Heatmap:
    text = [f"{v:+.2f}" if what == "push" else f"{v:.2f}" for v in z]
    return go.Heatmap(z=z[None, :], x=x, y=[""], zmin=zmin, zmax=zmax, colorscale=colors, showscale=False,
                      text=[text], texttemplate="%{text}" if numbers else "", xgap=1,
                      hovertemplate="%{x}: %{z:.3f}" + (" (log-odds)" if what == "push" else "") + "<extra></extra>")


def attention_of(cross: np.ndarray, layer: int | None = None, head: int | None = None) -> tuple[np.ndarray, str]:
    """(one row over the source words, its label) from a Contrast's cross (N_dec, h, W): a layer and head counted
    from 0, or None for the mean of all."""
    x = cross.mean(0) if layer is None else cross[layer]
    x = x.mean(0) if head is None else x[head]
    where = ("mean of all layers" if layer is None else f"layer {layer + 1}") + (
        ", mean of the heads" if head is None else f", head {head + 1}")
    return x, f"attention of this step ({where})"

