"""Figures of the "Which pronoun?" page: the model's probability of each German form, and where it looked.

Pure builders: a FormChoice table or an AttendResult in, Plotly figures and arrays out; no Streamlit.
Layers and heads are labelled from 1, as on every other page.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.figures.attention import heatmap_figure
from app.figures.tokens import safe
from core.studies.pronouns import is_feminine_form
from core.views import AttentionView

COLORS = {True: "#d95f02", False: "#1b9e77"}      # feminine forms (ihr-, sie) / masculine-neuter (sein-, er, es)


def form_figure(table: pd.DataFrame, written: str | None = None, feminine_antecedent: bool | None = None,
                title: str = "") -> go.Figure:
    """One bar per form (columns form, probability, chosen): P(the decoder writes it next), coloured by gender.

    The chosen (most probable) form has a black outline. written: the form the German has there (its label
    says so). feminine_antecedent: None when unknown, else the forms that agree with the antecedent get a ✓.
    """
    fem = table.form.map(is_feminine_form)
    def agree(is_f):
        return " ✓" if feminine_antecedent is not None and is_f == feminine_antecedent else ""
    def here(f):
        return "<br>▲ in the German" if written is not None and f.lower() == written.lower() else ""
    labels = [f"{f}{agree(is_f)}{here(f)}" for f, is_f in zip(table.form, fem)]
    fig = go.Figure()
    for is_f, name in ((False, "forms for a masculine / neuter antecedent"), (True, "forms for a feminine antecedent")):
        sel = (fem == is_f).to_numpy()
        rows = table[sel]
        fig.add_trace(go.Bar(
            x=np.array(labels)[sel], y=rows.probability, name=name, marker_color=COLORS[is_f],
            marker_line=dict(color=["black" if c else COLORS[is_f] for c in rows.chosen], width=3),
            text=[f"{p:.1%}" for p in rows.probability], textposition="outside", cliponaxis=False,
            hovertemplate="%{x}: %{y:.2%}<extra></extra>"))
    top = float(table.probability.max()) if len(table) else 1.0
    top = min(1.0, top * 1.25 + 0.02) if np.isfinite(top) else 1.0          # room for the labels above the bars
    fig.update_layout(title=dict(text=safe(title), x=0.0), barmode="group", bargap=0.25, plot_bgcolor="white",
                      height=420, margin=dict(l=60, r=10, t=90, b=80),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0.0))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels, title="German form")
    fig.update_yaxes(title="probability", range=[0, top], **percent_ticks(top))
    return fig


def percent_ticks(top: float, n: int = 5) -> dict:
    """Ticks from 0 to `top` every 1, 2 or 5 x 10^k (about n of them), written with as many decimals as that step
    needs: Plotly's own ticks on a short axis, every 0.5%, printed as ".0%" would read 0%, 1%, 1%, 2%, 2%."""
    raw = max(top, 1e-6) / n
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-9))
    decimals = max(0, -math.floor(math.log10(step * 100) + 1e-9))        # 0.5% -> 1 decimal, 2% -> none
    return dict(tickmode="linear", tick0=0, dtick=step, tickformat=f".{decimals}%")


def encoder_rows(view: AttentionView, word: int, layer: int):
    """(attn [h, W], row labels, source words): encoder self-attention from source word `word` in one layer.

    view: the word view of an AttendResult's encoder self-attention (result.view("enc_self", words=True))."""
    attn = view.maps[layer, :, word, :]                                   # (h, W)
    return attn, [f"head {k + 1}" for k in range(attn.shape[0])], view.cols


def writing_rows(view: AttentionView, out_word: int):
    """(attn [N_dec * h, W], row labels, source words): the cross-attention of every decoder layer and head
    while the decoder writes target word `out_word` (row `out_word` of the word view result.view("cross",
    words=True): decoder rows are the words written)."""
    attn = view.maps[:, :, out_word, :]                                   # (N_dec, h, W)
    L, H, W = attn.shape
    rows = [f"layer {layer + 1} · head {h + 1}" for layer in range(L) for h in range(H)]
    return attn.reshape(L * H, W), rows, view.cols


def attention_from_figure(attn: np.ndarray, rows: list[str], cols: list[str], marks: dict[int, str] | None = None,
                          title: str = "") -> go.Figure:
    """One word's attention as a heatmap (a row per head, a column per source word), marked columns boxed.

    marks: {column: label}, e.g. {1: "antecedent", 3: "its"}: a box around the column and the label above it.
    """
    fig = heatmap_figure(attn, rows, cols, title=title, zmax=1.0, row_title="", col_title="source word")
    for j, label in (marks or {}).items():
        if 0 <= j < len(cols):
            # category axes place column j at j and row i at i, so shapes use positions
            fig.add_shape(type="rect", x0=j - 0.5, x1=j + 0.5, y0=-0.5, y1=len(rows) - 0.5,
                          line=dict(color="crimson", width=2))
            fig.add_annotation(x=j, y=-0.5, yref="y", text=safe(label), showarrow=False, yshift=12,
                               font=dict(size=11, color="crimson"))
    return fig
