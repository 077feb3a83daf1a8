"""What heads do: find heads by their behaviour, their entropy, which follow syntax (against gold dependency
parses), attention rollout, switching heads off, and two checkpoints compared. The math is in core.studies
(analysis, syntax, ablation and compare); the figures in app.figures.heads and app.figures.syntax. The tabs that
read every head's scores (Head finder, Entropy) are in app/heads_tabs/scores.py, the Syntax and Beyond attention
tabs in app/heads_tabs/syntax.py and beyond_attention.py; the others are one function each below.
Only the open tab runs (lazy tabs, at the bottom). Layers and heads are shown from 1; core counts from 0.
"""
import streamlit as st

from app import cache, url_state
from app.checkpoints import UNTRAINED, checkpoint_key, checkpoint_names, is_language_model, page_problem
from app.demo import default_sentence, domain
from app.display import show_figure
from app.figures import heads as figs
from app.heads_tabs.atlas import atlas_tab
from app.heads_tabs.beyond_attention import contributions_tab
from app.heads_tabs.common import KEEP, csv_button, head_name, layer_name
from app.heads_tabs.scores import SCORED, entropy_tab, head_finder
from app.heads_tabs.syntax import syntax_tab
from app.lm import heads as lm_heads
from core import CheckpointError
from core.studies import ablation, analysis
from core.views import DECODER_ROWS, KINDS, SHORT

NEWS_SENTENCE = "The Commission presented its report yesterday, but the Council rejected it."   # has a pronoun


def head_label(h) -> str:
    """A head of the ablation tab, (kind, layer, head) counted from 0, as a student reads it."""
    kind, layer, head = h
    return f"{SHORT[kind]}, layer {layer + 1}, head {head + 1}"


def rollout_tab(ckpt, cfg, default: str) -> None:
    """Tab: attention rollout through the encoder beside one layer's raw attention."""
    sentence = st.text_input("Sentence", default, key="heads_roll_src", persist_state=KEEP)
    try:
        res = cache.attend(ckpt, sentence)
    except ValueError as e:
        st.warning(str(e))
        return
    c1, c2 = st.columns(2)
    layer = c1.selectbox("Up to layer", range(cfg.N), index=cfg.N - 1, format_func=layer_name,
                         key="heads_roll_layer", persist_state=KEEP)
    head = c2.selectbox("Raw attention of that layer", [-1, *range(cfg.h)], format_func=head_name,
                        key="heads_roll_head", persist_state=KEEP)
    words = st.checkbox("Whole words (merge each word's pieces)", key="heads_roll_words", persist_state=KEEP)
    (roll, raw), labels = analysis.rollout_maps(res, layer, None if head < 0 else head, words)
    show_figure(figs.maps_side_by_side(roll, raw, labels, labels,
                                       (f"rollout through layers 1–{layer + 1}", f"raw attention, layer {layer + 1}"),
                                       "Encoder: attention rollout beside raw attention"),
                f"rollout_layer{layer + 1}", key="heads_rollout")
    st.caption("Rollout (Abnar & Zuidema 2020) follows attention through the layers, counting the residual "
               "connection as attention to oneself: row i shows which input words position i has mixed in.")


def ablation_tab(ckpt, model, default: str) -> None:
    """Tab: translations and BLEU with chosen heads switched off, and a sweep over one layer's heads."""
    cfg = model.cfg
    everything = [(kind, layer, head) for kind, n_layers in (("enc_self", cfg.N), ("dec_self", cfg.N_dec),
                                                             ("cross", cfg.N_dec))
                  for layer in range(n_layers) for head in range(cfg.h)]
    chosen = st.multiselect("Heads to switch off", everything, format_func=head_label, key="heads_off",
                            persist_state=KEEP, placeholder=f"Pick heads, e.g. {head_label(everything[0])}")
    sentence = st.text_input("Sentence", default, key="heads_abl_src", persist_state=KEEP)
    try:
        normal, without = (cache.translations_without(ckpt, (sentence,), tuple(hs))[0] for hs in ((), chosen))
    except ValueError as e:
        st.warning(str(e))
    else:
        c1, c2 = st.columns(2)
        c1.markdown("**Every head on**")
        c1.text(normal)
        c2.markdown(f"**Without {len(chosen)} head{'s' * (len(chosen) != 1)}**")
        c2.text(without if chosen else "(pick heads above to switch them off)")
    if problem := page_problem("ablation_bleu", model.card):       # an imported model of other languages
        st.info(problem.replace("This page needs", "The BLEU change needs"))
        return
    bleu_change(ckpt, model, chosen)


def bleu_change(ckpt, model, chosen: list) -> None:
    """The ablation tab's measurements: BLEU without the chosen heads, and a sweep over one layer's heads."""
    cfg = model.cfg
    n_dev = int(st.number_input("Sentences for BLEU", 4, 200, 30, step=2, key="heads_dev_n", persist_state=KEEP,
                                help="More sentences: a more reliable BLEU, and a slower measurement."))
    sources, references, origin = cache.dev_slice(ckpt, n_dev)
    st.caption(f"BLEU is measured with greedy decoding on {origin}. On a few dozen sentences, "
               "a change of a point or two is noise.")
    akey = (ckpt, tuple(chosen), n_dev)                 # a result shows only for what it was measured on
    if st.button("Measure the BLEU change", key="heads_measure", disabled=not chosen):
        with st.spinner("Translating the sentences twice…"):
            st.session_state.heads_ablation = (akey, ablation.ablation_bleu(model, sources, references, chosen))
    saved = st.session_state.get("heads_ablation")
    if saved and saved[0] == akey:
        result = saved[1]
        st.metric("BLEU without these heads", f"{result.bleu:.1f}", f"{result.delta:+.1f}",
                  help=f"With every head on: {result.base_bleu:.1f}")

    st.subheader("Sweep: switch off each head of one layer in turn")
    c1, c2 = st.columns(2)
    kind = c1.selectbox("Attention", list(KINDS), format_func=KINDS.get, key="heads_sweep_kind", persist_state=KEEP)
    layer = c2.selectbox("Layer", range(cfg.N if kind == "enc_self" else cfg.N_dec), format_func=layer_name,
                         key="heads_sweep_layer", persist_state=KEEP)
    skey = (ckpt, kind, layer, n_dev)
    if st.button(f"Sweep the {cfg.h} heads", key="heads_sweep_go"):
        bar = st.progress(0.0, text="Starting…")
        sweep = ablation.sweep_layer(model, sources, references, kind, layer,
                                     progress=lambda done, total, msg: bar.progress(done / total, text=msg))
        st.session_state.heads_sweep = (skey, sweep)
    saved = st.session_state.get("heads_sweep")
    if saved and saved[0] == skey:
        sweep = saved[1]
        show_figure(figs.sweep_bars(sweep, f"BLEU change without each head: {KINDS[kind]}, layer {layer + 1}"),
                    f"sweep_{kind}_layer{layer + 1}", key="heads_sweep_chart")
        csv_button(sweep, "Download the sweep (CSV)", f"sweep_{ckpt.name}_{kind}_layer{layer + 1}.csv",
                   "heads_sweep_csv")


def compare_tab(ckpt, default: str) -> None:
    """Tab: two checkpoints' maps of one sentence side by side, their difference, and how differently each head
    attends."""
    names = checkpoint_names()
    c1, c2 = st.columns(2)
    a_name = c1.selectbox("Checkpoint A", names, index=names.index(ckpt.name) if ckpt.name in names else 0,
                          key="heads_cmp_a", persist_state=KEEP)
    b_name = c2.selectbox("Checkpoint B", names, index=min(1, len(names) - 1), key="heads_cmp_b", persist_state=KEEP)
    if len(names) < 2:
        st.info("Only one model is available, so it is compared with itself. "
                "Put another checkpoint into the checkpoints folder to compare two.")
    elif a_name == b_name:
        st.info("A and B are the same checkpoint: pick another one as B to see differences.")
    sentence = st.text_input("Sentence", default, key="heads_cmp_src", persist_state=KEEP)
    try:
        cmp = cache.comparison(*(ckpt if n == ckpt.name else checkpoint_key(n) for n in (a_name, b_name)), sentence)
    except CheckpointError as e:
        st.error(f"A checkpoint cannot be loaded: {e}")
        return
    except ValueError as e:
        st.warning(str(e))
        return
    for note in cmp.notes:
        st.info(note)
    c1, c2, c3 = st.columns(3)
    kind = c1.selectbox("Attention", list(cmp.maps), format_func=KINDS.get, key="heads_cmp_kind", persist_state=KEEP)
    n_layers, h = cmp.maps[kind][0].shape[:2]
    layer = c2.selectbox("Layer", range(n_layers), format_func=layer_name, key="heads_cmp_layer", persist_state=KEEP)
    head = c3.selectbox("Head", [-1, *range(h)], format_func=head_name, key="heads_cmp_head", persist_state=KEEP)
    words = cmp.level[kind] == "pieces" and st.checkbox("Whole words (merge each word's pieces)",
                                                        key="heads_cmp_words", persist_state=KEEP)
    (a_map, b_map), rows, cols = analysis.compared_maps(cmp, kind, layer, None if head < 0 else head, words)
    show_figure(figs.comparison_maps(a_map, b_map, rows, cols, (f"A: {a_name}", f"B: {b_name}"),
                                     f"{KINDS[kind]}, layer {layer + 1}"),
                f"compare_{kind}_layer{layer + 1}", key="heads_cmp_maps")
    if kind != "enc_self":
        st.caption(DECODER_ROWS)
    show_figure(figs.head_grid(cmp.js[kind], "How differently each head attends (Jensen-Shannon, bits)",
                               "JS", zmin=0, zmax=1, colorscale="Reds"), f"compare_js_{kind}", key="heads_cmp_js")
    st.caption("0: the same attention, 1: no overlap at all. Separately trained models number their heads "
               "arbitrarily, so 'head 3' of one need not match 'head 3' of the other; the mean of the heads "
               "per layer compares in any case: "
               + ", ".join(f"{layer_name(i)}: {v:.2f}" for i, v in enumerate(cmp.js_layers[kind])) + ".")


def introduction(name: str) -> None:
    st.title("What heads do")
    st.caption("Each layer has several attention heads. Here they are scored on probe sentences, switched off "
               "one by one, and compared between checkpoints.")
    if name == UNTRAINED:
        st.info("This model is untrained, so every score below describes random attention. "
                "Pick a trained checkpoint in the sidebar to see real heads.")


ckpt, model = cache.model_or_stop()
if is_language_model(model):            # GPT-2, Llama, BERT: their own roles (app/lm/heads.py)
    lm_heads.page(ckpt, model)
    st.stop()
default = NEWS_SENTENCE if domain(model.card) == "news" else default_sentence(model.card)   # the model's domain
introduction(ckpt.name)
# Lazy tabs: opening a tab reruns the page (on_change="rerun"), and only the open tab's function runs, so opening
# the page computes no syntax grid, rollout or contributions. On a session's first run the default tab is open.
# A closed tab's widgets keep their values through persist_state=KEEP (app/heads_tabs/common.py).
tabs = ["Head finder", "Entropy", "Syntax", "Rollout", "Beyond attention", "Switch heads off", "Compare checkpoints",
        "Atlas"]
# A link names the open tab (?tab=head-finder) and the head finder's kind and score (?kind=enc_self&score=previous)
link = [url_state.choice("tab", "heads_tab", {url_state.slug(t): t for t in tabs}, tabs[0], "tab"),
        url_state.choice("kind", "heads_kind", SCORED, SCORED[0], "kind of attention"),
        url_state.choice("score", "heads_score", list(analysis.SCORES), None, "score")]
url_state.restore("heads", link)
finder, ent, syn, roll, ctb, abl, cmp_tab, atl = st.tabs(tabs, default="Head finder", key="heads_tab",
                                                         on_change="rerun")
url_state.publish("heads", link)
if finder.open:
    with finder:
        head_finder(ckpt.name, cache.head_scores(ckpt))
if ent.open:
    with ent:
        entropy_tab(cache.head_scores(ckpt))
if syn.open:
    with syn:
        syntax_tab(ckpt, model.cfg, model.card.syntax)
if roll.open:
    with roll:
        rollout_tab(ckpt, model.cfg, default)
if ctb.open:
    with ctb:
        contributions_tab(ckpt, model, default)
if abl.open:
    with abl:
        ablation_tab(ckpt, model, default)
if cmp_tab.open:
    with cmp_tab:
        compare_tab(ckpt, default)
if atl.open:
    with atl:
        atlas_tab(ckpt, model)
