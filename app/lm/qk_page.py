"""Queries and keys on a language model: one head's queries and keys of the text typed, from the model's own pass
(LanguageModel.attend(vectors=True): after the rotation where the model turns them), as one 2-D picture, then its
scores q·k / √d_k next to the map they make. Grouped-query models: which query heads share the key head."""
from __future__ import annotations

import numpy as np
import streamlit as st

from app.checkpoints import DECODER_ONLY, CheckpointKey, model_family
from app.display import show_figure
from app.figures.attention import heatmap_figure
from app.figures.qk import COLOR_BY, qk_scatter
from app.figures.lm_qk import scores_figure
from app.lm import views
from app.lm.explorer import default_text
from app.text import md_escape
from core.studies import qk

LM_COLORS = {k: v for k, v in COLOR_BY.items() if k != "word"}       # one text: too few points to colour by word


@st.cache_resource(max_entries=16, show_spinner="Reading the text…")
def _vectors(key: CheckpointKey, text: str, _model):
    """The pass over the text with every head's queries and keys (one per checkpoint version and text)."""
    return _model.attend(text, vectors=True)


def head_points(q: np.ndarray, k: np.ndarray, tokens: list[str]) -> qk.HeadPoints:
    """One head's queries (T, d_k) then keys (T, d_k) of one text as HeadPoints (sentence 0)."""
    T = len(tokens)
    context = qk.sentence_contexts(tokens)
    return qk.HeadPoints(np.concatenate([q, k]).astype(np.float32), T, np.zeros(2 * T, dtype=int),
                         np.concatenate([np.arange(T), np.arange(T)]), list(tokens) * 2, context * 2)


def scaled_scores(q: np.ndarray, k: np.ndarray, causal: bool) -> np.ndarray:
    """q k^T / sqrt(d_k) of one head, (T, T), NaN right of the diagonal for a masked (decoder-only) model."""
    s = q.astype(np.float64) @ k.astype(np.float64).T / np.sqrt(q.shape[-1])
    return np.where(np.tril(np.ones(s.shape, bool)), s, np.nan) if causal else s


def shared_keys_line(model, head: int) -> str | None:
    """Grouped-query attention: which query heads read the same key head as `head` (counted from 1)."""
    groups = model.kv_groups() if hasattr(model, "kv_groups") else None
    if not groups or all(len(g) == 1 for g in groups):
        return None
    j = next(n for n, g in enumerate(groups) if head in g)
    others = [h + 1 for h in groups[j] if h != head]
    return (f"Grouped-query attention: query head {head + 1} reads key/value head {j + 1} of {len(groups)}, shared "
            f"with query head{'s' if len(others) > 1 else ''} {', '.join(map(str, others))}: their keys (diamonds) "
            "are the same points, their queries differ.")


def page(ckpt: CheckpointKey, model) -> None:
    """The whole page for a decoder-only or encoder-only model."""
    cfg, causal = model.cfg, model_family(model) == DECODER_ONLY
    st.caption("Every head turns each token into a **query** (what it looks for, q = x W^Q) and a **key** (what it "
               "offers, k = x W^K); a query gives its attention to the keys it scores highest, q·k / √d_k. Here are "
               "one head's queries and keys of the text below, as points of one picture (AttentionViz, Yeh et al. "
               "2023), then the scores themselves next to the map they make.")
    if st.session_state.get("qk_lm_text") in (None, ""):
        st.session_state.qk_lm_text = st.session_state.get("lm_text") or default_text(model)
    text = st.text_area("Text for the model to read", key="qk_lm_text", height=68)
    c1, c2, c3 = st.columns([1, 1, 2])
    layer = c1.selectbox("Layer", range(cfg.N), key="qk_lm_layer", format_func=lambda i: f"{i + 1} of {cfg.N}")
    head = c2.selectbox("Head", range(cfg.h), key="qk_lm_head", format_func=lambda i: f"{i + 1} of {cfg.h}")
    color_by = c3.segmented_control("Colour by", list(LM_COLORS), key="qk_lm_color", format_func=LM_COLORS.get,
                                    default="position", required=True)
    try:
        res = _vectors(ckpt, text, model)
    except ValueError as e:                                  # an empty text and the like, in core's words
        st.warning(str(e))
        st.stop()
    for notice in res.notices:
        st.caption(md_escape(notice))
    tokens = views.labels(model, res)
    q, k = res.vectors[0][layer, head], res.vectors[1][layer, head]           # (T, d_k) each
    where = f"layer {layer + 1} of {cfg.N}, head {head + 1} of {cfg.h}"
    shared = shared_keys_line(model, head)
    if shared:
        st.caption(shared)
    if getattr(cfg, "positions", None) == "rotary":
        st.caption("This model turns its queries and keys by their positions (rotary, the Positional encoding page "
                   "draws it): the points are the turned vectors, the ones the scores are made of.")
    points, _ = qk.normalise(head_points(q, k, tokens))
    coords, kept = qk.pca_2d(points.vectors)
    axes = tuple(f"PCA axis {i + 1} ({kept[i]:.0%} of the spread)" for i in range(2))
    fig = qk_scatter(points, coords, color_by, title=f"{where}: {len(tokens)} queries and keys", axis_titles=axes)
    show_figure(fig, f"qk_lm_layer{layer + 1}_head{head + 1}", key="qk_lm_chart")
    st.caption("Keys moved and scaled as a group to sit over the queries (the expander on the translation models' "
               "version of this page says why that changes no ranking).")
    st.subheader("The scores, and the map they make")
    scores = scaled_scores(q, k, causal)
    c1, c2 = st.columns(2)
    with c1:
        fig = scores_figure(scores, tokens, "Scores q·k / √d_k" + (" (blank: masked)" if causal else ""))
        show_figure(fig, f"qk_lm_scores_layer{layer + 1}_head{head + 1}", key="qk_lm_scores")
    with c2:
        fig = heatmap_figure(res.self_attn[layer, head], tokens, tokens, title=f"The model's map, {where}", zmax=1.0)
        show_figure(fig, f"qk_lm_map_layer{layer + 1}_head{head + 1}", key="qk_lm_map")
    weights = np.exp(np.nan_to_num(scores - np.nanmax(scores, -1, keepdims=True), nan=-np.inf))
    gap = float(np.abs(weights / weights.sum(-1, keepdims=True) - res.self_attn[layer, head]).max())
    st.caption(md_escape("Each row of the map is the softmax of the same row of scores"
                         + (", over the tokens up to the query's own (the model may not look ahead)" if causal else "")
                         + f": computed from these vectors, it differs from the model's own map by at most {gap:.0e}."))
