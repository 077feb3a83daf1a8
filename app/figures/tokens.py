"""Tokens on a figure, and the one token heatmap: an attention map with a row per query token and a column per key
token, as every page draws it (the explorer, heads, alignment, pronouns, queries and keys, checkpoint pages).

Pure builders, no Streamlit. Labels are escaped for Plotly, byte-fallback pieces shown as the characters they stand
for (core.tokenizer.display_pieces); positions count from 1 (core.views.position). Each row and column is a
category "token (position)", so that a token seen twice keeps two rows and hover can name both tokens without a
per-cell array of strings (slow to build and to send for long sentences).
"""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from core.tokenizer import display_pieces
from core.views import is_prompt, position

COLORSCALE = "Blues"                       # white at 0: a weight of zero is invisible, as it should be
COLORBAR = dict(title="weight", thickness=12)
PROMPT_GREY = "#8a8a8a"                     # a prompt's tick labels: there, read by the model, not the sentence
HOVER = {   # how a cell names itself: its tokens with their positions, or (per-cell text) the tokens alone
    "positions": "%{y} → %{x}<br>weight %{z:.3f}<extra></extra>",
    "tokens": "%{customdata}: %{z:.3f}<extra></extra>",
}


def safe(text: str) -> str:
    """Escape a label for Plotly, which reads <b>, <br>, <s>… in text as markup (and would hide '</s>')."""
    return html.escape(str(text), quote=False)


def tick_labels(tokens: list[str]) -> list[str]:
    """Escaped labels, one per position; byte-fallback pieces ("<0x39>") as the characters they stand for."""
    return [safe(t) for t in display_pieces(tokens)]


def label_font(n: int) -> int:
    """Smaller tick labels for longer sentences, so that they do not overlap."""
    return 13 if n <= 25 else 11 if n <= 45 else 10


def label_width(label: str, font_size: float) -> float:
    """A generous estimate of a label's width in pixels (0.6 em a character, as for the titles of app.figures.style)."""
    return 0.6 * font_size * len(html.unescape(label)) + 6


def tick_angle(labels: list[str], plot_width: float, font_size: float) -> int:
    """The angle for column labels: 0 (level, easiest to read from the back of a room) when every label fits the
    width of its column, -45 when they fit slanted, -90 (upright) otherwise. Labels are escaped, as tick_labels
    gives them."""
    room = plot_width / max(len(labels), 1)
    widest = max((label_width(t, font_size) for t in labels), default=0.0)
    if widest <= room:
        return 0
    return -45 if font_size * 1.6 <= room else -90        # slanted labels need about 1.6 em of width apiece


def top_of_scale(attn: np.ndarray, zmax: float | None) -> float:
    """The top of the colour scale: zmax, or (None) the largest weight of this map."""
    return float(zmax) if zmax else max(float(attn.max(initial=0.0)), 1e-6)


def token_keys(labels: list[str]) -> list[str]:
    """The category of each position: "label (position)" (labels already escaped, as tick_labels gives them)."""
    return [f"{t} ({position(i)})" for i, t in enumerate(labels)]


def token_heatmap(attn: np.ndarray, rows: list[str], cols: list[str], zmax: float | None = None, zmin: float = 0.0,
                  colorscale: str = COLORSCALE, colorbar: dict | None = COLORBAR, zmid: float | None = None,
                  showscale: bool | None = None, hover: str = "positions") -> go.Heatmap:
    """One [R, C] map over row and column tokens as a heatmap trace, its colours from zmin to zmax (None: the largest
    weight of the map). hover "positions": both tokens with their positions and the weight; "tokens": both tokens
    and the value, from per-cell text. Label its axes with token_axes."""
    attn = np.asarray(attn, dtype=np.float32)
    rl, cl = tick_labels(rows), tick_labels(cols)
    cells = [[f"{r} → {c}" for c in cl] for r in rl] if hover == "tokens" else None
    return go.Heatmap(z=attn, x=token_keys(cl), y=token_keys(rl), colorscale=colorscale, zmin=zmin,
                      zmax=top_of_scale(attn, zmax), zmid=zmid, showscale=showscale, colorbar=colorbar,
                      customdata=cells, hovertemplate=HOVER[hover])


def greyed(labels: list[str]) -> list[str]:
    """Escaped tick labels with a prompt's (T5's "translate English to German:", core.views.is_prompt) in grey: read
    by the model, but not the sentence."""
    return [f'<span style="color:{PROMPT_GREY}">{t}</span>' if is_prompt(html.unescape(t)) else t for t in labels]


def token_axes(fig: go.Figure, rows: list[str], cols: list[str], x: dict | None = None, y: dict | None = None,
               row: int | None = None, col: int | None = None) -> go.Figure:
    """Label the axes of a token heatmap (of one subplot: row, col): a category per position with the token as its
    tick label, rows top to bottom (unless y gives a range), a prompt's labels greyed. x, y: more settings of each
    axis (angle, fonts, titles)."""
    y = dict(y or {})
    if "range" not in y:
        y["autorange"] = "reversed"
    for labels, update, extra in ((tick_labels(cols), fig.update_xaxes, x or {}),
                                  (tick_labels(rows), fig.update_yaxes, y)):
        keys = token_keys(labels)
        update(type="category", categoryorder="array", categoryarray=keys, tickmode="array", tickvals=keys,
               ticktext=greyed(labels), automargin=True, **extra, row=row, col=col)
    return fig
