"""Scaled dot-product attention (section 3.2.1) step by step, and why it divides by sqrt(d_k).

The maths is core.scaled_dot_product_attention (the toy example) and core.studies.step_by_step (a real head);
this module only feeds them and draws what comes out.
"""
from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots
import torch

from app.figures.style import fit_title
from app.figures.tokens import safe
from core import scaled_dot_product_attention
from core.tokenizer import display_pieces
from core.views import position

SCALED, UNSCALED = "scaled: softmax(q·k / √d_k)", "unscaled: softmax(q·k)"
TITLE_PX = 15              # the matrices' titles: four figures share a row
CAP_SHIFT = 0.7            # em: Plotly's baseline offset of a top-anchored line of text (its alignment constant)


def attention_steps(q, k, v) -> dict[str, np.ndarray]:
    """Q (Tq, d_k), K (Tk, d_k), V (Tk, d_v) -> every intermediate: scores, scaled, weights, output."""
    q, k, v = (torch.tensor(np.array(x, dtype=np.float64)) for x in (q, k, v))
    if q.ndim != 2 or k.ndim != 2 or v.ndim != 2 or q.shape[1] != k.shape[1] or k.shape[0] != v.shape[0]:
        raise ValueError(f"Q and K need the same number of columns (d_k) and K and V the same number of rows; "
                         f"got Q {tuple(q.shape)}, K {tuple(k.shape)}, V {tuple(v.shape)}.")
    out, weights = scaled_dot_product_attention(q, k, v)
    scores = q @ k.T                          # shown before scaling; the weights above come from core
    return {"scores": scores.numpy(), "scaled": scores.numpy() / math.sqrt(q.shape[1]),
            "weights": weights.numpy(), "output": out.numpy()}


def matrix_figure(m: np.ndarray, title: str, rows: list[str], cols: list[str], colorscale: str = "RdBu",
                  zero_centered: bool = True) -> go.Figure:
    """A small matrix as a heatmap with its numbers written in the cells."""
    m = np.asarray(m, dtype=float)
    bound = max(float(np.abs(m).max(initial=0.0)), 1e-9)
    zmin, zmax = (-bound, bound) if zero_centered else (0.0, max(bound, 1e-9))
    fig = go.Figure(go.Heatmap(z=m, x=cols, y=rows, colorscale=colorscale, zmin=zmin, zmax=zmax, showscale=False,
                               reversescale=colorscale == "RdBu", text=np.round(m, 2), texttemplate="%{text}",
                               hovertemplate="%{y}, %{x}: %{z:.4f}<extra></extra>"))
    # the column labels sit on top (like a matrix written on paper), so the title goes above them: pinned
    # to the top of the figure, wrapped to a quarter of a page, with the top margin grown to hold both
    title = fit_title(title, 220, size=TITLE_PX)
    lines = title.count("<br>") + 1
    top = 45 + 22 * lines                       # 22 px a line of 15 px type (Plotly spaces them 1.3 em: 19.5)
    height = top + 20 + 38 * len(rows)
    fig.update_layout(title=dict(text=title, font_size=TITLE_PX, yref="container", y=1.0 - title_drop(lines) / height,
                                 yanchor="top", pad=dict(t=10)),
                      height=height, margin=dict(l=10, r=10, t=top, b=10))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", side="top")
    return fig


def title_drop(lines: int, size: float = TITLE_PX) -> float:
    """Pixels to lower a top-anchored title of `lines` lines so that its first line sits where a one-line title does.

    Plotly puts a one-line title's baseline 0.7 em (its cap height) below the anchor, but gives each line of a
    multi-line title its own y at the anchor itself: the first line's letters would stick out above the figure.
    Given as a share of the height, the drop grows with the fonts and the height in presenter mode."""
    return CAP_SHIFT * size if lines > 1 else 0.0


def random_query_keys(d_k: int, n_keys: int = 10, seed: int = 0, trials: int = 1):
    """q (trials, 1, d_k) and k (trials, n_keys, d_k) with independent unit-variance entries, seeded."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(trials, 1, d_k, generator=g, dtype=torch.float64),
            torch.randn(trials, n_keys, d_k, generator=g, dtype=torch.float64))


def scaled_and_unscaled(q, k) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention weights of q over k with and without the 1/sqrt(d_k), both through core's function.

    Without scaling: multiply q by sqrt(d_k) first, which cancels the division inside.
    """
    d_k = q.shape[-1]
    _, scaled = scaled_dot_product_attention(q, k, k)
    _, unscaled = scaled_dot_product_attention(q * math.sqrt(d_k), k, k)
    return scaled, unscaled


def collapse_table(d_ks, n_keys: int = 10, trials: int = 200, seed: int = 0) -> pd.DataFrame:
    """For each d_k, the mean largest weight and mean entropy (bits) of scaled and unscaled softmax."""
    rows = []
    for d_k in d_ks:
        q, k = random_query_keys(int(d_k), n_keys, seed, trials)
        for name, w in zip((SCALED, UNSCALED), scaled_and_unscaled(q, k)):
            w = w[:, 0].numpy()                                          # (trials, n_keys)
            entropy = -(w * np.log2(np.clip(w, 1e-300, None))).sum(-1)
            rows.append({"d_k": int(d_k), "softmax": name, "max weight": w.max(-1).mean(),
                         "entropy (bits)": entropy.mean()})
    return pd.DataFrame(rows)


def collapse_chart(table: pd.DataFrame, measure: str, d_k: int | None = None) -> alt.Chart:
    """Largest weight (or entropy) against d_k, log scale, for scaled and unscaled softmax."""
    lines = alt.Chart(table).mark_line(point=True).encode(
        x=alt.X("d_k:Q", scale=alt.Scale(type="log", base=2), title="d_k (log scale)"),
        y=alt.Y(f"{measure}:Q", title=measure),
        color=alt.Color("softmax:N", title=None, legend=alt.Legend(orient="bottom", direction="vertical")),
        tooltip=["softmax:N", "d_k:Q", alt.Tooltip(f"{measure}:Q", format=".3f")])
    if d_k is None:
        return lines.properties(height=300)
    rule = alt.Chart(pd.DataFrame({"d_k": [d_k]})).mark_rule(strokeDash=[4, 4], color="gray").encode(x="d_k:Q")
    return (lines + rule).properties(height=300)


def weights_chart(scaled: np.ndarray, unscaled: np.ndarray, d_k: int) -> alt.Chart:
    """One query's weights over the keys, scaled beside unscaled, as grouped bars."""
    data = pd.concat([pd.DataFrame({"key": np.arange(1, len(w) + 1), "weight": w, "softmax": name})
                      for name, w in (("scaled", scaled), ("unscaled", unscaled))])
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("key:O", title="key", axis=alt.Axis(labelAngle=0)), xOffset="softmax:N",
        y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("softmax:N", title=None, legend=alt.Legend(orient="bottom")),
        tooltip=["softmax:N", "key:O", alt.Tooltip("weight:Q", format=".3f")],
    ).properties(title=f"One random query over 10 keys, d_k = {d_k}", height=300)


def example_qkv(n_q: int = 2, n_k: int = 3, d_k: int = 2, d_v: int = 2, seed: int = 0) -> dict[str, pd.DataFrame]:
    """Small editable Q, K, V: a hand-picked example in the top-left corner, small seeded integers elsewhere.

    In the example, query 1 matches key 1 (q·k = 1) and opposes key 2 (q·k = -1).
    """
    rng = np.random.default_rng(seed)
    hand = {"Q": [[1, 0], [0, 1]], "K": [[1, 0], [-1, 0], [0, 2]], "V": [[1, 0], [0, 1], [1, 1]]}
    out = {}
    for name, (rows, cols, row_name) in {"Q": (n_q, d_k, "query"), "K": (n_k, d_k, "key"),
                                         "V": (n_k, d_v, "key")}.items():
        m = rng.integers(-2, 3, size=(rows, cols)).astype(float)
        ex = np.array(hand[name], dtype=float)[:rows, :cols]
        m[: ex.shape[0], : ex.shape[1]] = ex
        out[name] = pd.DataFrame(m, index=[f"{row_name} {i + 1}" for i in range(rows)],
                                 columns=[f"{'v' if name == 'V' else 'd'}{j + 1}" for j in range(cols)])
    return out


# ---- the same steps in a real head (core.studies.step_by_step) ----

def token_labels(tokens: list[str]) -> list[str]:
    """One unique label per piece, 'man (2)': its position keeps a word seen twice apart (and the ▁ that marks
    a word's first piece is left out, as the position says where the piece is)."""
    return [f"{t.removeprefix('▁') or t} ({position(i)})" for i, t in enumerate(display_pieces(list(tokens)))]


def vector_summary(name: str, x: np.ndarray, shown: list) -> str:
    """'q = (0.12, -1.30, …), and 28 more numbers from -2.10 to 3.00; length |q| = 5.43' for a d_k-vector."""
    head = ", ".join(f"{x[i]:.2f}" for i in shown)
    rest = np.delete(x, shown)
    more = (f", … ) and {len(rest)} more numbers, from {rest.min():.2f} to {rest.max():.2f}" if len(rest)
            else ")")
    return f"{name} = ({head}{more}; its length |{name}| = {np.linalg.norm(x):.2f}"


def keys_table(w, cols: list[str], score: str | None = None) -> pd.DataFrame:
    """One row per key the query may look at: the key's first dimensions, q·k split into the part from the shown
    dimensions and the rest, the scaled score and the softmax weight (core.studies.step_by_step.QueryWalk).
    score: the scaled score's column, when the model's is not q·k / √d_k (a T5 model: q·k + its position bias)."""
    d_k, n = len(w.q), len(w.shown)
    data = {"key": cols}
    for i in w.shown:
        data[f"k{i + 1}"] = w.k[:, i]
    data[f"q·k from dims 1-{n}"] = w.dots_shown
    if d_k > n:
        data[f"+ dims {n + 1}-{d_k}"] = w.dots - w.dots_shown
    data["= q·k"] = w.dots
    data[score or f"÷ √{d_k}"] = w.scaled
    data["softmax weight"] = w.weights
    return pd.DataFrame(data)[w.allowed].reset_index(drop=True)


def values_table(w, cols: list[str], top: int = 5) -> pd.DataFrame:
    """The output as the weighted sum of the values: the `top` heaviest keys, the rest together, and the sum."""
    order = [int(i) for i in np.argsort(-w.weights) if w.allowed[i]]
    head, rest = order[:top], order[top:]
    def row(key, weight, parts):
        return {"key": key, "weight": weight, **{f"weight × v{j + 1}": float(p) for j, p in zip(w.shown, parts)}}
    rows = [row(cols[i], w.weights[i], w.weights[i] * w.v[i, w.shown]) for i in head]
    if rest:
        rows.append(row(f"the other {len(rest)} keys", w.weights[rest].sum(), w.weights[rest] @ w.v[rest][:, w.shown]))
    rows.append(row("= output (sum)", w.weights.sum(), w.output[w.shown]))
    return pd.DataFrame(rows)


def walk_figure(w, cols: list[str], title: str, score: str | None = None) -> go.Figure:
    """One query's scaled scores (top) and softmax weights (bottom) over the keys it may look at; score: what the
    top row is, when not q·k / √d_k (a T5 model's q·k + its position bias)."""
    keep = np.flatnonzero(w.allowed)
    x = [safe(cols[i]) for i in keep]                 # Plotly reads "</s>" as markup
    d_k = len(w.q)
    fig = make_subplots(2, 1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=[score or f"scores q·k / √{d_k}", "softmax: the weights (they sum to 1)"])
    best = int(keep[np.argmax(w.weights[keep])])
    colors = ["#d62728" if i == best else "#1f77b4" for i in keep]
    fig.add_trace(go.Bar(x=x, y=w.scaled[keep], marker_color=colors, hovertemplate="%{x}: %{y:.3f}<extra></extra>"),
                  1, 1)
    fig.add_trace(go.Bar(x=x, y=w.weights[keep], marker_color=colors, text=[f"{v:.2f}" for v in w.weights[keep]],
                         textposition="outside", hovertemplate="%{x}: %{y:.4f}<extra></extra>"), 2, 1)
    fig.update_yaxes(range=[0, 1.15], row=2, col=1)
    fig.update_xaxes(type="category", tickangle=0 if len(x) <= 10 else -45)
    title = fit_title(safe(title), 800)
    fig.update_layout(title=dict(text=title, x=0.0), showlegend=False, height=460 + 22 * title.count("<br>"),
                      margin=dict(l=10, r=10, t=80 + 22 * title.count("<br>"), b=10))
    return fig
