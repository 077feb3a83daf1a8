"""What heads do: find heads by their behaviour, their entropy, attention rollout, switching heads off,
and two checkpoints compared. The math is in core.analysis, core.ablation and core.compare; the figures
in app.figures.heads. Layers and heads are shown from 1; core counts from 0.
"""
import pandas as pd
import streamlit as st

from app.common import UNTRAINED, checkpoint_names, get_attention, get_model, model_or_stop, plain, show_figure
from app.demo import default_sentence, domain
from app.figures import heads as figs
from core import CheckpointError
from core import ablation, analysis, compare
from core.tokenizer import merge_attention, merge_words, word_ids

KIND_NAMES = {"enc_self": "encoder self-attention", "dec_self": "decoder self-attention",
              "cross": "encoder-decoder attention"}
SHORT = {"enc_self": "encoder", "dec_self": "decoder self", "cross": "cross"}
NEWS_SENTENCE = "The Commission presented its report yesterday, but the Council rejected it."   # has a pronoun


@st.cache_data(show_spinner="Scoring every head on the probe sentences…", max_entries=8)
def head_table(name: str, model_id: int, _tm) -> pd.DataFrame:
    return analysis.head_scores(_tm)


@st.cache_data(show_spinner="Translating…", max_entries=64)
def translations(name: str, model_id: int, _tm, texts: tuple, heads: tuple) -> list:
    return ablation.translate_without(_tm, texts, heads)


@st.cache_data(show_spinner=False, max_entries=8)
def dev(name: str, model_id: int, _tm, n: int):
    return ablation.dev_slice(_tm, n, name=name)


@st.cache_data(show_spinner="Running both models…", max_entries=16)
def comparison(a: str, a_id: int, _ma, b: str, b_id: int, _mb, sentence: str) -> compare.Comparison:
    return compare.compare_results(*compare.attend_both(_ma, _mb, sentence))


# The scores of core.analysis in plain words: a column title, and what a high value means.
COLUMNS = {"previous": "previous token", "next": "next token", "self": "itself", "punctuation": "punctuation",
           "eos": "end token </s>", "bos": "start token <s>", "distance": "distance", "anaphora": "pronoun → noun",
           "entropy": "entropy (bits)", "entropy_norm": "spread (0-1)"}
PLAIN = {
    "previous": "The share of each word's attention that goes to the word just before it. Near 1: the head "
                "always looks one step back.",
    "next": "The share that goes to the word just after it (the encoder only: the decoder cannot look ahead).",
    "self": "The share a word keeps on itself.",
    "punctuation": "The share that goes to commas, full stops and other punctuation.",
    "eos": "The share that goes to </s>, the token that ends the sentence. Heads with nothing to do often "
           "park their attention there.",
    "bos": "The share that goes to <s>, the decoder's start token: the decoder's place to park attention.",
    "distance": "How far away, in tokens, the words a head looks at are on average. High: a long-distance head.",
    "anaphora": "The share of a pronoun's attention (it, she, they …) that goes to the noun it stands for, on "
                "sentences where people marked that noun.",
    "entropy": "How spread out the attention is, in bits: 0 means one token gets it all, higher means it is "
               "shared among many.",
    "entropy_norm": "The entropy divided by the most a row can have, so that short and long sentences compare: "
                    "0 = all on one token, 1 = spread evenly over every token.",
}


def one_based(df: pd.DataFrame) -> pd.DataFrame:
    """Layers and heads numbered from 1 for people (and in the CSV files)."""
    return df.assign(layer=df["layer"] + 1, head=df["head"] + 1)


def csv_button(df: pd.DataFrame, label: str, file: str, key: str) -> None:
    st.download_button(label, one_based(df).to_csv(index=False).encode("utf-8"), file_name=file,
                       mime="text/csv", key=key)


def head_label(h) -> str:
    kind, layer, head = h
    return f"{SHORT[kind]} layer {layer + 1}, head {head + 1}"


name, tm = model_or_stop()
DEFAULT_SENTENCE = NEWS_SENTENCE if domain(tm.card) == "news" else default_sentence(tm.card)   # the model's domain
cfg, mid = tm.cfg, id(tm)
st.title("What heads do")
st.caption("Each layer has several attention heads. Here they are scored on probe sentences, switched off "
           "one by one, and compared between checkpoints.")
if name == UNTRAINED:
    st.info("This model is untrained, so every score below describes random attention. "
            "Pick a trained checkpoint in the sidebar to see real heads.")

table = head_table(name, mid, tm)
finder, ent_tab, roll_tab, abl_tab, cmp_tab = st.tabs(
    ["Head finder", "Entropy", "Rollout", "Switch heads off", "Compare checkpoints"])

with finder:
    n = table.attrs.get("sentences", {})
    c1, c2 = st.columns(2)
    kind = c1.selectbox("Attention", ["enc_self", "dec_self"], format_func=KIND_NAMES.get, key="heads_kind")
    scores = [s for s in analysis.SCORES if table.loc[table.attention == kind, s].notna().any()]
    score = c2.selectbox("Score", scores, format_func=lambda s: f"{COLUMNS[s]}: {analysis.SCORES[s]}",
                         key="heads_score")
    grid = analysis.score_grid(table, score, kind)
    # colours from 0 to the largest score of the grid: shares rarely come near 1, and on a fixed 0-1
    # scale a grid whose best head scores 0.3 would be all one dark colour
    show_figure(figs.head_grid(grid, f"{KIND_NAMES[kind]}: {analysis.SCORES[score]}", COLUMNS[score], zmin=0),
                f"heads_{kind}_{score}", key="heads_grid")
    where = (f"{n.get('anaphora', 0)} annotated pronoun sentences" if score == "anaphora" else
             f"{n.get(kind, 0)} probe sentences" + (" (teacher-forced on our German translations)"
                                                   if kind == "dec_self" else ""))
    top = float(pd.Series(grid.ravel()).max())
    st.caption(plain(PLAIN[score]) + f" Each cell is the mean over {where}. The colours run from 0 to the "
               f"largest value here, {top:.2f}.")
    st.subheader("Heads ranked by " + plain(COLUMNS[score]))
    ranked = analysis.rank_heads(table, score, kind, top=10)
    others = [s for s in scores if s != score]
    st.dataframe(one_based(ranked)[["layer", "head", score, *others]].rename(columns=COLUMNS), hide_index=True)
    with st.expander("What the columns mean"):
        st.markdown("\n".join(f"- **{plain(COLUMNS[s])}**: {plain(PLAIN[s])}" for s in scores))
    csv_button(table, "Download every head's scores (CSV)", f"head_scores_{name}.csv", "heads_csv")

with ent_tab:
    c1, c2 = st.columns(2)
    ekind = c1.selectbox("Attention", ["enc_self", "dec_self"], format_func=KIND_NAMES.get, key="heads_ent_kind")
    norm = c2.radio("Entropy", ["entropy", "entropy_norm"], horizontal=True, key="heads_ent_norm",
                    format_func=lambda s: "in bits" if s == "entropy" else "normalised (0 to 1)")
    show_figure(figs.head_grid(analysis.score_grid(table, norm, ekind), f"{KIND_NAMES[ekind]}: entropy",
                               "bits" if norm == "entropy" else "of maximum",
                               zmin=0, zmax=1 if norm == "entropy_norm" else None, colorscale="Magma"),
                f"entropy_{ekind}_{norm}", key="heads_entropy")
    st.caption("Low entropy: the head looks at one or two tokens. High: it spreads its attention evenly. "
               "Normalised entropy divides by the most a row can have, log2(number of tokens it sees), "
               "so short and long sentences compare.")

with roll_tab:
    sentence = st.text_input("Sentence", DEFAULT_SENTENCE, key="heads_roll_src")
    try:
        res = get_attention(name, sentence)
    except ValueError as e:
        st.warning(str(e))
    else:
        c1, c2 = st.columns(2)
        layer = c1.selectbox("Up to layer", range(cfg.N), index=cfg.N - 1, format_func=lambda l: f"layer {l + 1}",
                             key="heads_roll_layer")
        head = c2.selectbox("Raw attention of that layer", [-1, *range(cfg.h)], key="heads_roll_head",
                            format_func=lambda h: "mean of all heads" if h < 0 else f"head {h + 1}")
        raw = res.enc_self[layer].mean(0) if head < 0 else res.enc_self[layer, head]
        roll, labels = analysis.rollout(res.enc_self)[layer], res.src_tokens
        if st.checkbox("Whole words (merge each word's pieces)", key="heads_roll_words"):
            ids = word_ids(labels)
            roll, raw, labels = merge_attention(roll, ids, ids), merge_attention(raw, ids, ids), merge_words(labels)
        show_figure(figs.maps_side_by_side(roll, raw, labels, labels,
                                           (f"rollout through layers 1–{layer + 1}", f"raw attention, layer {layer + 1}"),
                                           "Encoder: attention rollout beside raw attention"),
                    f"rollout_layer{layer + 1}", key="heads_rollout")
        st.caption("Rollout (Abnar & Zuidema 2020) follows attention through the layers, counting the residual "
                   "connection as attention to oneself: row i shows which input words position i has mixed in.")

with abl_tab:
    everything = [(k, l, h) for k, L in (("enc_self", cfg.N), ("dec_self", cfg.n_dec), ("cross", cfg.n_dec))
                  for l in range(L) for h in range(cfg.h)]
    chosen = st.multiselect("Heads to switch off", everything, format_func=head_label, key="heads_off",
                            placeholder="Pick heads, e.g. encoder layer 1, head 1")
    sentence = st.text_input("Sentence", DEFAULT_SENTENCE, key="heads_abl_src")
    try:
        normal, without = (translations(name, mid, tm, (sentence,), tuple(hs))[0] for hs in ((), chosen))
    except ValueError as e:
        st.warning(str(e))
    else:
        c1, c2 = st.columns(2)
        c1.markdown("**Every head on**")
        c1.text(normal)
        c2.markdown(f"**Without {len(chosen)} head{'s' * (len(chosen) != 1)}**")
        c2.text(without if chosen else "(pick heads above to switch them off)")
    n_dev = st.number_input("Sentences for BLEU", 4, 200, 30, step=2, key="heads_dev_n",
                            help="More sentences: a more reliable BLEU, and a slower measurement.")
    sources, references, origin = dev(name, mid, tm, int(n_dev))
    st.caption(f"BLEU is measured with greedy decoding on {origin}. On a few dozen sentences, "
               "a change of a point or two is noise.")
    if st.button("Measure the BLEU change", key="heads_measure", disabled=not chosen):
        with st.spinner("Translating the sentences twice…"):
            st.session_state.heads_ablation = ((name, mid, tuple(chosen), int(n_dev)),
                                               ablation.ablation_bleu(tm, sources, references, chosen))
    saved = st.session_state.get("heads_ablation")
    if saved and saved[0] == (name, mid, tuple(chosen), int(n_dev)):
        result = saved[1]
        st.metric("BLEU without these heads", f"{result.bleu:.1f}", f"{result.delta:+.1f}",
                  help=f"With every head on: {result.base_bleu:.1f}")

    st.subheader("Sweep: switch off each head of one layer in turn")
    c1, c2 = st.columns(2)
    skind = c1.selectbox("Attention", list(KIND_NAMES), format_func=KIND_NAMES.get, key="heads_sweep_kind")
    slayer = c2.selectbox("Layer", range(cfg.N if skind == "enc_self" else cfg.n_dec),
                          format_func=lambda l: f"layer {l + 1}", key="heads_sweep_layer")
    skey = (name, mid, skind, slayer, int(n_dev))
    if st.button(f"Sweep the {cfg.h} heads", key="heads_sweep_go"):
        bar = st.progress(0.0, text="Starting…")
        sweep = ablation.sweep_layer(tm, sources, references, skind, slayer,
                                     progress=lambda done, total, msg: bar.progress(done / total, text=msg))
        st.session_state.heads_sweep = (skey, sweep)
    saved = st.session_state.get("heads_sweep")
    if saved and saved[0] == skey:
        sweep = saved[1]
        show_figure(figs.sweep_bars(sweep, f"BLEU change without each head: {KIND_NAMES[skind]}, layer {slayer + 1}"),
                    f"sweep_{skind}_layer{slayer + 1}", key="heads_sweep_chart")
        csv_button(sweep, "Download the sweep (CSV)", f"sweep_{name}_{skind}_layer{slayer + 1}.csv", "heads_sweep_csv")

with cmp_tab:
    names = checkpoint_names()
    c1, c2 = st.columns(2)
    a_name = c1.selectbox("Checkpoint A", names, index=names.index(name) if name in names else 0, key="heads_cmp_a")
    b_name = c2.selectbox("Checkpoint B", names, index=min(1, len(names) - 1), key="heads_cmp_b")
    if len(names) < 2:
        st.info("Only one model is available, so it is compared with itself. "
                "Put another checkpoint into the checkpoints folder to compare two.")
    elif a_name == b_name:
        st.info("A and B are the same checkpoint: pick another one as B to see differences.")
    sentence = st.text_input("Sentence", DEFAULT_SENTENCE, key="heads_cmp_src")
    try:
        ma, mb = get_model(a_name), get_model(b_name)
        cmp = comparison(a_name, id(ma), ma, b_name, id(mb), mb, sentence)
    except CheckpointError as e:
        st.error(f"A checkpoint cannot be loaded: {e}")
    except ValueError as e:
        st.warning(str(e))
    else:
        for note in cmp.notes:
            st.info(note)
        kinds = list(cmp.maps)
        c1, c2, c3 = st.columns(3)
        ckind = c1.selectbox("Attention", kinds, format_func=KIND_NAMES.get, key="heads_cmp_kind")
        A, B = cmp.maps[ckind]
        clayer = c2.selectbox("Layer", range(A.shape[0]), format_func=lambda l: f"layer {l + 1}", key="heads_cmp_layer")
        chead = c3.selectbox("Head", [-1, *range(A.shape[1])], key="heads_cmp_head",
                             format_func=lambda h: "mean of all heads" if h < 0 else f"head {h + 1}")
        pick = (lambda M: M[clayer].mean(0)) if chead < 0 else (lambda M: M[clayer, chead])
        rows, cols = cmp.labels[ckind]
        a_map, b_map = pick(A), pick(B)
        if cmp.level[ckind] == "pieces" and st.checkbox("Whole words (merge each word's pieces)", key="heads_cmp_words"):
            r_ids, c_ids = word_ids(rows), word_ids(cols)
            a_map, b_map = merge_attention(a_map, r_ids, c_ids), merge_attention(b_map, r_ids, c_ids)
            rows, cols = merge_words(rows), merge_words(cols)
        show_figure(figs.comparison_maps(a_map, b_map, rows, cols, (f"A: {a_name}", f"B: {b_name}"),
                                         f"{KIND_NAMES[ckind]}, layer {clayer + 1}"),
                    f"compare_{ckind}_layer{clayer + 1}", key="heads_cmp_maps")
        show_figure(figs.head_grid(cmp.js[ckind], "How differently each head attends (Jensen-Shannon, bits)",
                                   "JS", zmin=0, zmax=1, colorscale="Reds"), f"compare_js_{ckind}", key="heads_cmp_js")
        st.caption("0: the same attention, 1: no overlap at all. Separately trained models number their heads "
                   "arbitrarily, so 'head 3' of one need not match 'head 3' of the other; the mean of the heads "
                   "per layer compares in any case: "
                   + ", ".join(f"layer {l + 1}: {v:.2f}" for l, v in enumerate(cmp.js_layers[ckind])) + ".")
