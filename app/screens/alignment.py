"""Alignment: does a cross-attention head link each German word with the English word it translates?

The math is in core.studies.alignment (cached by app.cache), the figures in app.figures.alignment. Gold pairs are
read in place from the data folder (core.paths; `scripts/get_data.py eval` fetches them) or
ATTN_EXPLORER_ALIGNMENT_GOLD, never copied.
"""
import os

import numpy as np
import streamlit as st

from app import cache, url_state
from app.checkpoints import page_problem
from app.data_notice import offer_download
from app.display import show_figure
from app.figures import alignment as figs
from app.lm.common import translation_or_stop
from core.studies import alignment as al
from core.studies import alignment_gold as ag

AER_TEXT = ("**AER** (alignment error rate, Och & Ney 2003) compares the links a head proposes with the links "
            "human annotators drew, each marked *sure* (S) or only *possible* (P): "
            "AER = 1 − (|A∩S| + |A∩P|) / (|A| + |S|). It is 0 when every proposed link is at least possible and "
            "every sure link is found, so lower is better.")
OWN = "Your own sentence"
OWN_SENTENCE = "The Commission presented its report yesterday."


def gold_folder() -> str:
    return os.environ.get("ATTN_EXPLORER_ALIGNMENT_GOLD") or str(ag.default_gold())


def label(layer, head) -> str:
    if layer == "all":
        return "all layers, mean of all heads"
    return f"layer {layer}, " + ("mean of its heads" if head == "mean" else f"head {head}")


def pct(x) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:.1f}%"


def live_report(model, pairs: list, as_tokenized: bool) -> dict:
    """Every head scored on these pairs, with a progress bar (the card's figures come from the script)."""
    bar = st.progress(0.0, text="Scoring every head on the gold pairs…")
    ev = al.evaluate(model, pairs, as_tokenized,
                     progress=lambda done, total: bar.progress(done / total, text=f"pair {done} of {total}"))
    bar.empty()
    return al.report(ev)


def link_params(cfg, n_pairs: int) -> list[url_state.Param]:
    """What a link to this page holds: ?pair=12&layer=4&head=2&shift=read&links=argmax, or an own sentence."""
    layers = {str(i): i for i in range(1, cfg.N_dec + 1)} | {"all": "all"}
    heads = {str(i): i for i in range(1, cfg.h + 1)} | {"mean": "mean"}
    return [url_state.choice("mode", "al_mode", ["gold", "own"], "gold", "sentence pair"),
            url_state.number("pair", "al_pair", max(n_pairs, 1), 1, "pair", first=1),
            url_state.flag("tokenized", "al_tokenized", False),
            url_state.text("text", "al_src", OWN_SENTENCE), url_state.text("tgt", "al_tgt"),
            url_state.choice("layer", "al_layer", layers, None, "layer"),
            url_state.choice("head", "al_head", heads, None, "head"),
            url_state.choice("shift", "al_shift", list(al.SHIFTS), None, "shift"),
            url_state.choice("links", "al_method", list(al.METHODS), list(al.METHODS)[0], "way to draw links")]


def start_on_best_head(name: str, cfg, best: dict) -> None:
    """A checkpoint (newly) picked: start on the head its card chose; keep the layer and head within its sizes."""
    if st.session_state.get("al_for") != name:
        st.session_state.update(al_for=name, al_layer=best.get("layer", 1), al_head=best.get("head", 1),
                                al_shift=best.get("shift", "read"))
    if st.session_state.al_layer not in (*range(1, cfg.N_dec + 1), "all"):      # another checkpoint, fewer layers
        st.session_state.al_layer = 1
    if st.session_state.al_head not in (*range(1, cfg.h + 1), "mean"):
        st.session_state.al_head = 1


def sentence_pair(pairs, why):
    """(gold pair or None, its number (0-based) or None, English, German or None, tokenised?): a gold pair or the
    reader's own sentences."""
    sources = ["gold", "own"] if pairs else ["own"]
    if st.session_state.get("al_mode") not in sources:
        st.session_state.al_mode = sources[0]
    mode = st.radio("Sentence pair", sources, horizontal=True, key="al_mode",
                    format_func=lambda m: "A pair with human gold links (RWTH German-English)" if m == "gold" else OWN)
    if not pairs:
        st.info(f"No gold alignments found, so only your own sentences can be aligned here. {why}")
        offer_download("eval", "al_fetch")
    if mode != "gold":
        c1, c2 = st.columns(2)
        st.session_state.setdefault("al_src", OWN_SENTENCE)
        src = c1.text_input("English sentence", key="al_src")
        tgt = c2.text_input("German translation (empty: the model's own)", key="al_tgt").strip() or None
        return None, None, src, tgt, False
    c1, c2 = st.columns([1, 3])
    st.session_state.al_pair = min(st.session_state.get("al_pair", 1), len(pairs))
    k = c1.number_input(f"Pair (1 to {len(pairs)})", 1, len(pairs), key="al_pair")
    tokenized = c2.toggle("Feed the gold's tokenised text (spaces around punctuation)", key="al_tokenized",
                          help="Off: the text is detokenised ('end.'), as the model saw text in training.")
    pair = pairs[int(k) - 1]
    src, tgt = ag.model_text(pair, tokenized)
    st.markdown(f"**English:** {' '.join(pair.src_words)}  \n**German:** {' '.join(pair.tgt_words)}")
    st.caption("The model translates English → German, so English is its source and the German sentence is "
               "fed to the decoder (teacher forcing).")
    return pair, int(k) - 1, src, tgt, tokenized


def head_controls(cfg) -> tuple:
    """(layer, head, shift, method, threshold) of the candidate to draw."""
    c1, c2, c3, c4 = st.columns(4)
    layer = c1.selectbox("Layer", [*range(1, cfg.N_dec + 1), "all"], key="al_layer",
                         format_func=lambda v: "all layers" if v == "all" else f"{v} of {cfg.N_dec}")
    head = c2.selectbox("Head", [*range(1, cfg.h + 1), "mean"], key="al_head", disabled=layer == "all",
                        format_func=lambda h: "mean of the heads" if h == "mean" else f"{h} of {cfg.h}")
    shift = c3.radio("Shift", list(al.SHIFTS), key="al_shift",
                     help=" · ".join(f"{k}: {v}" for k, v in al.SHIFTS.items()))
    method = c4.radio("Links", list(al.METHODS), key="al_method",
                      help=" · ".join(f"{k}: {v}" for k, v in al.METHODS.items()))
    threshold = st.slider("Threshold", 0.05, 0.95, 0.5, 0.05, key="al_threshold") if method == "threshold" else 0.5
    return layer, "mean" if layer == "all" else head, shift, method, threshold


def head_map(maps: al.SentenceMaps, pair, choice: tuple) -> None:
    """The candidate's map with its links, and with gold its scores on this pair."""
    layer, head, shift, method, threshold = choice
    found = al.head_links(maps, layer, head, shift, method, threshold, pair)
    title = f"{label(layer, head)}, shift '{shift}', {method}"
    # the map first, so that it starts on the first screen of a 1280 x 720 projector; its scores below it
    show_figure(figs.alignment_figure(found.attn, maps.rows, maps.cols, found.links, found.gold, title),
                f"alignment_{layer}_{head}_{shift}", key="al_map")
    st.caption(f"Shift '{shift}': {al.SHIFTS[shift]}. Rows are German words, columns English words; a word's row is "
               "the mean of its pieces' rows, its column the sum of its pieces' columns, renormalised without </s>.")
    if found.scores is not None:
        m1, m2, m3 = st.columns(3)
        m1.metric("AER of this pair", pct(found.scores["aer"]), help="Lower is better.")
        m2.metric("Precision", pct(found.scores["precision"]),
                  help="Share of its links that are sure or possible gold links.")
        m3.metric("Recall", pct(found.scores["recall"]), help="Share of the sure gold links it found.")
    st.markdown(AER_TEXT)


def every_head(name: str, model, card: dict, pairs, tokenized: bool) -> None:
    """Every head's AER on the gold pairs: from the card, or scored here on demand."""
    st.subheader("Every head, scored on the gold pairs")
    result = card if card.get("grid") else st.session_state.get(f"al_live_{name}")
    if not card.get("grid"):
        st.info("This checkpoint's card has no alignment scores yet (scripts/evaluate_alignment.py writes them)."
                + (" You can score its heads here on the first gold pairs." if pairs else ""))
        if pairs:
            n = st.number_input("Pairs to score", 2, len(pairs), min(50, len(pairs)), key="al_live_n")
            if st.button("Score every head", key="al_live_go"):
                result = live_report(model, pairs[: int(n)], tokenized)
                st.session_state[f"al_live_{name}"] = result
    if not (result and result.get("grid")):
        return
    s, b, d = result["selected"], result["best_layer"], result["diagonal"]
    show_figure(figs.aer_grid_figure(result["grid"], f"AER of every head on {result['scored']} pairs (%)", s),
                "alignment_aer_grid", key="al_grid")
    st.markdown(
        f"Chosen on the first {result['halves']['first']} pairs and scored on the other {result['halves']['second']}: "
        f"**{label(s['layer'], s['head'])}, shift '{s['shift']}': AER {pct(s['aer_second_half'])}** (outlined). "
        f"Best layer: **{label(b['layer'], b['head'])}**, shift '{b['shift']}': AER {pct(b['aer_second_half'])}. "
        f"Diagonal baseline (each German word linked to the English word at the same relative position): "
        f"{pct(d['aer_second_half'])}.")


ckpt, model = cache.model_or_stop()
translation_or_stop("alignment", model)      # a language model: one line why not
if problem := page_problem("alignment", model.card):       # an imported model of other languages
    st.info(problem)
    st.stop()
st.title("Alignment")
st.caption("Does a head of the encoder-decoder attention link each German word with the English word it "
           "translates? Its links are compared with links drawn by people (their AER is explained below the map).")
folder = gold_folder()
pairs, why = cache.gold_pairs(folder)
card = model.card.alignment or {}
link = link_params(model.cfg, len(pairs or []))
if url_state.restore("alignment", link) & {"layer", "head", "shift"}:      # a link's head, not the card's
    st.session_state.al_for = ckpt.name
start_on_best_head(ckpt.name, model.cfg, card.get("selected") or {})
pair, number, src, tgt, tokenized = sentence_pair(pairs, why)
try:
    maps = cache.sentence_maps(ckpt, src, tgt, folder, number)
except ValueError as e:                      # AlignmentError included: worded for the reader
    st.warning(f"This pair cannot be aligned: {e}.")
    st.stop()
if pair is None and tgt is None:
    st.markdown(f"**The model's translation:** {maps.translation}")
choice = head_controls(model.cfg)
url_state.publish("alignment", link)
head_map(maps, pair, choice)
every_head(ckpt.name, model, card, pairs, tokenized)
