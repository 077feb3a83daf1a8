"""The "Beyond attention" tab of "What heads do": attention weights beside norm-based maps and ALTI+ contributions."""
import streamlit as st

from app import cache
from app import weights as show_weights
from app.display import show_figure
from app.figures import heads as figs
from app.figures.attention import heatmap_figure
from app.figures.contributions import faithfulness_figure, faithfulness_frame, source_share_figure
from app.heads_tabs.common import KEEP, head_name, layer_name
from app.text import md_escape
from core.studies import contributions as contrib_study
from core.studies import faithfulness as fa
from core.views import DECODER_ROWS, KINDS, attention_view


def contribution_maps(ckpt, model, sentence: str, show: str) -> contrib_study.Contributions | None:
    """A kind, layer and head of one sentence: attention weights beside the chosen view; None after a message."""
    try:
        c = cache.contributions(ckpt, sentence)
    except ValueError as e:
        st.warning(str(e))
        return None
    cfg = model.cfg
    c1, c2, c3 = st.columns(3)
    kind = c1.selectbox("Attention", list(KINDS), format_func=KINDS.get, key="heads_ctb_kind", persist_state=KEEP)
    n_layers = cfg.N if kind == "enc_self" else cfg.N_dec
    layer = c2.selectbox("Layer", range(n_layers), index=n_layers - 1, format_func=layer_name,
                         key=f"heads_ctb_layer_{kind}", persist_state=KEEP)
    whole = "all heads summed as vectors" if show == "norm" else "mean of all heads"
    head = c3.selectbox("Head", [-1, *range(cfg.h)], key="heads_ctb_head", persist_state=KEEP, disabled=show == "alti",
                        format_func=lambda k: whole if k < 0 else head_name(k),
                        help="Contributions (ALTI+) are measured for a whole layer." if show == "alti" else None)
    words = st.checkbox("Whole words (merge each word's pieces)", key="heads_ctb_words", persist_state=KEEP)
    raw = cache.contribution_view(ckpt, sentence, None, 1, kind, "attention", words, True)
    left = raw.maps[layer].mean(0) if head < 0 else raw.maps[layer, head]
    what = whole if head < 0 else head_name(head)
    name = f"{show}_{kind}_layer{layer + 1}"
    if show == "attention":
        show_figure(heatmap_figure(left, raw.rows, raw.cols, f"{KINDS[kind]}, layer {layer + 1}, {what}"), name,
                    key="heads_ctb_maps")
    else:
        if show == "norm" and head < 0:      # the layer: heads' vectors summed before the norm (Kobayashi 4.2)
            layer_maps = contrib_study.row_shares(c.norm_layer[kind])[:, None]                # (L, 1, R, C)
            right = attention_view(c.result, kind, words=words, maps=layer_maps).maps[layer, 0]
        else:
            right = cache.contribution_view(ckpt, sentence, None, 1, kind, show, words, True).maps[
                layer, 0 if show == "alti" else head]
        titles = (f"attention weights, {'mean of all heads' if show == 'alti' else what}",
                  f"{show_weights.WEIGHTS[show]}, {'whole layer' if show == 'alti' else what}")
        fig = figs.maps_side_by_side(left, right, raw.rows, raw.cols, titles, f"{KINDS[kind]}, layer {layer + 1}")
        show_figure(fig, name, key="heads_ctb_maps")
    if kind != "enc_self":
        st.caption(DECODER_ROWS)
    return c


def faithfulness_section(model) -> None:
    """The saved erasure test of scripts/evaluate_faithfulness.py, or how to make it."""
    st.subheader("Which view is faithful?")
    try:
        result = fa.read_result(model.folder)
    except ValueError as e:
        st.warning(str(e))
        return
    if result is None:
        st.info("This checkpoint has no faithfulness measurement yet. Make one with "
                f"`python scripts/evaluate_faithfulness.py checkpoints/{md_escape(model.card.name)}` "
                "(200 dev sentences, a minute or so).")
        return
    show_figure(faithfulness_figure(result["table"], "Drop in log P(word) when each method's top source word is "
                                                     "removed"), "faithfulness", key="heads_faith_chart")
    st.dataframe(faithfulness_frame(result["table"]), hide_index=True)
    st.caption(f"For each word the model wrote in {result.get('sentences', '?')} dev sentences, the source word "
               "each method ranks highest was removed from attention and the word's log-probability measured "
               "again: the larger the drop, the more the method's top word really mattered. A random source word "
               f"is the baseline. Most faithful here: **{md_escape(str(result.get('most_faithful')))}**.")


def contributions_tab(ckpt, model, default: str) -> None:
    """Tab: attention weights beside norm-based maps or ALTI+ contributions, where each translated word's prediction
    came from, and which view is faithful (core.studies.contributions and faithfulness)."""
    st.caption("Does a large attention weight mean that the word mattered? Two answers that look inside the same "
               "layer: the size of what each word sends (Kobayashi et al. 2020), and what each word contributes "
               "through the whole layer, residual connection and LayerNorm included (ALTI+, Ferrando et al. 2022).")
    sentence = st.text_input("Sentence", default, key="heads_ctb_src", persist_state=KEEP)
    show = show_weights.show_control("heads_ctb_show", persist_state=KEEP)
    show_weights.explain(show)
    c = contribution_maps(ckpt, model, sentence, show)
    if c is not None and c.result.tgt:
        st.subheader("Where each translated word came from")
        words, share = contrib_study.word_shares(c)
        show_figure(source_share_figure(words, share, f"The model's translation: {c.result.tgt}"),
                    "source_share", key="heads_ctb_share")
        st.caption(md_escape(show_weights.share_sentence(words, share)))
    faithfulness_section(model)
