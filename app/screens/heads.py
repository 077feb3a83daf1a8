"""What heads do: find heads by their behaviour, their entropy, which follow syntax (against gold dependency
parses), attention rollout, switching heads off, and two checkpoints compared. The math is in core.studies
(analysis, syntax, ablation and compare); the figures in app.figures.heads and app.figures.syntax; one function
per tab below. Layers and heads are shown from 1; core counts from 0.
"""
import pandas as pd
import streamlit as st

from app import cache
from app.checkpoints import UNTRAINED, checkpoint_key, checkpoint_names
from app.demo import default_sentence, domain
from app.display import show_figure
from app import weights as show_weights
from app.figures import heads as figs
from app.figures.attention import heatmap_figure
from app.figures.contributions import faithfulness_figure, faithfulness_frame, source_share_figure
from app.figures.syntax import arcs_figure, relation_label, syntax_grid
from app.text import md_escape
from core import CheckpointError
from core.paths import shared_eval
from core.studies import ablation, analysis
from core.studies import contributions as contrib_study
from core.studies import faithfulness as fa
from core.studies import syntax as sx
from core.views import DECODER_ROWS, KINDS, SHORT, attention_view

NEWS_SENTENCE = "The Commission presented its report yesterday, but the Council rejected it."   # has a pronoun
SCORED = ["enc_self", "dec_self"]            # the kinds core.studies.analysis.head_scores scores

# The scores of core.studies.analysis in plain words: a column title, and what a high value means.
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


def csv_button(df: pd.DataFrame, label: str, file: str, key: str) -> None:
    st.download_button(label, figs.one_based(df).to_csv(index=False).encode("utf-8"), file_name=file,
                       mime="text/csv", key=key)


def layer_name(layer: int) -> str:
    return f"layer {layer + 1}"


def head_name(head: int) -> str:
    """A head from 1, or -1: the mean of the layer's heads."""
    return "mean of all heads" if head < 0 else f"head {head + 1}"


def head_label(h) -> str:
    kind, layer, head = h
    return f"{SHORT[kind]}, layer {layer + 1}, head {head + 1}"


def head_finder(name: str, table: pd.DataFrame) -> None:
    """Tab: one score of every head as a layers × heads grid, and the heads ranked by it."""
    n = table.attrs.get("sentences", {})
    c1, c2 = st.columns(2)
    kind = c1.selectbox("Attention", SCORED, format_func=KINDS.get, key="heads_kind")
    scores = [s for s in analysis.SCORES if table.loc[table.attention == kind, s].notna().any()]
    score = c2.selectbox("Score", scores, format_func=lambda s: f"{COLUMNS[s]}: {analysis.SCORES[s]}",
                         key="heads_score")
    grid = analysis.score_grid(table, score, kind)
    # colours from 0 to the largest score of the grid: shares rarely come near 1, and on a fixed 0-1
    # scale a grid whose best head scores 0.3 would be all one dark colour
    show_figure(figs.head_grid(grid, f"{KINDS[kind]}: {analysis.SCORES[score]}", COLUMNS[score], zmin=0),
                f"heads_{kind}_{score}", key="heads_grid")
    where = (f"{n.get('anaphora', 0)} annotated pronoun sentences" if score == "anaphora" else
             f"{n.get(kind, 0)} probe sentences" + (" (teacher-forced on our German translations)"
                                                   if kind == "dec_self" else ""))
    top = float(pd.Series(grid.ravel()).max())
    st.caption(md_escape(PLAIN[score]) + f" Each cell is the mean over {where}. The colours run from 0 to the "
               f"largest value here, {top:.2f}.")
    st.subheader("Heads ranked by " + md_escape(COLUMNS[score]))
    ranked = analysis.rank_heads(table, score, kind, top=10)
    others = [s for s in scores if s != score]
    st.dataframe(figs.one_based(ranked)[["layer", "head", score, *others]].rename(columns=COLUMNS), hide_index=True)
    with st.expander("What the columns mean"):
        st.markdown("\n".join(f"- **{md_escape(COLUMNS[s])}**: {md_escape(PLAIN[s])}" for s in scores))
    csv_button(table, "Download every head's scores (CSV)", f"head_scores_{name}.csv", "heads_csv")


def entropy_tab(table: pd.DataFrame) -> None:
    """Tab: every head's entropy, in bits or normalised."""
    c1, c2 = st.columns(2)
    kind = c1.selectbox("Attention", SCORED, format_func=KINDS.get, key="heads_ent_kind")
    norm = c2.radio("Entropy", ["entropy", "entropy_norm"], horizontal=True, key="heads_ent_norm",
                    format_func=lambda s: "in bits" if s == "entropy" else "normalised (0 to 1)")
    show_figure(figs.head_grid(analysis.score_grid(table, norm, kind), f"{KINDS[kind]}: entropy",
                               "bits" if norm == "entropy" else "of maximum",
                               zmin=0, zmax=1 if norm == "entropy_norm" else None, colorscale="Magma"),
                f"entropy_{kind}_{norm}", key="heads_entropy")
    st.caption("Low entropy: the head looks at one or two tokens. High: it spreads its attention evenly. "
               "Normalised entropy divides by the most a row can have, log2(number of tokens it sees), "
               "so short and long sentences compare.")


def rollout_tab(ckpt, cfg, default: str) -> None:
    """Tab: attention rollout through the encoder beside one layer's raw attention."""
    sentence = st.text_input("Sentence", default, key="heads_roll_src")
    try:
        res = cache.attend(ckpt, sentence)
    except ValueError as e:
        st.warning(str(e))
        return
    c1, c2 = st.columns(2)
    layer = c1.selectbox("Up to layer", range(cfg.N), index=cfg.N - 1, format_func=layer_name,
                         key="heads_roll_layer")
    head = c2.selectbox("Raw attention of that layer", [-1, *range(cfg.h)], format_func=head_name,
                        key="heads_roll_head")
    words = st.checkbox("Whole words (merge each word's pieces)", key="heads_roll_words")
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
                            placeholder=f"Pick heads, e.g. {head_label(everything[0])}")
    sentence = st.text_input("Sentence", default, key="heads_abl_src")
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
    n_dev = int(st.number_input("Sentences for BLEU", 4, 200, 30, step=2, key="heads_dev_n",
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
    kind = c1.selectbox("Attention", list(KINDS), format_func=KINDS.get, key="heads_sweep_kind")
    layer = c2.selectbox("Layer", range(cfg.N if kind == "enc_self" else cfg.N_dec), format_func=layer_name,
                         key="heads_sweep_layer")
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
                          key="heads_cmp_a")
    b_name = c2.selectbox("Checkpoint B", names, index=min(1, len(names) - 1), key="heads_cmp_b")
    if len(names) < 2:
        st.info("Only one model is available, so it is compared with itself. "
                "Put another checkpoint into the checkpoints folder to compare two.")
    elif a_name == b_name:
        st.info("A and B are the same checkpoint: pick another one as B to see differences.")
    sentence = st.text_input("Sentence", default, key="heads_cmp_src")
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
    kind = c1.selectbox("Attention", list(cmp.maps), format_func=KINDS.get, key="heads_cmp_kind")
    n_layers, h = cmp.maps[kind][0].shape[:2]
    layer = c2.selectbox("Layer", range(n_layers), format_func=layer_name, key="heads_cmp_layer")
    head = c3.selectbox("Head", [-1, *range(h)], format_func=head_name, key="heads_cmp_head")
    words = cmp.level[kind] == "pieces" and st.checkbox("Whole words (merge each word's pieces)",
                                                        key="heads_cmp_words")
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


SYNTAX_DEFAULT = 300            # sentences of the dev file the grid uses unless asked for more (~10 s here)
TYPED = "A sentence I type (automatic parse)"


def ud_dev_file() -> str:
    """Where the UD English EWT dev file is read in place (core.paths; ATTN_EXPLORER_SHARED moves it)."""
    return str(shared_eval("ud-english-ewt", "en_ewt-ud-dev.conllu"))


def syntax_grid_section(ckpt, path: str, sentences: list, card_syntax: dict | None) -> sx.SyntaxReport | None:
    """The heads x relations grid over the first sentences of the dev file; None after a message if it fails."""
    total = len(sentences)
    n = int(st.number_input("Sentences for the grid", min(10, total), total, min(SYNTAX_DEFAULT, total),
                            step=50, key="heads_syn_n",
                            help=f"The first sentences of the file, in order. All {total} take about a minute "
                                 "on a laptop CPU; each choice is computed once per checkpoint."))
    try:
        rep = cache.syntax_report(ckpt, path, n, sx.MIN_ARCS)
    except sx.SyntaxDataError as e:
        st.warning(f"No grid: {e}")
        return None
    if not rep.rows:
        st.info(f"On {rep.sentences} sentences no relation has {rep.min_arcs} arcs in each half, so there is no "
                "grid yet: use more sentences.")
        return rep
    show_figure(syntax_grid(rep.heldout, rep.rows, "Held-out accuracy minus the fixed-offset baseline (points)"),
                f"syntax_grid_{ckpt.name}", key="heads_syn_grid")
    found = rep.syntactic
    st.caption(f"Each cell: how often a head's strongest link from a word lands on its gold partner, minus how "
               f"often the best fixed offset (e.g. always the next word) does, on the second half of the "
               f"{rep.sentences} sentences used ({rep.halves['second']} held out; {rep.skipped} skipped). The "
               f"boxed head of each column was chosen on the first half; a thick box: syntactic by Voita et al.'s "
               f"rule (at least {sx.SYNTACTIC_MARGIN:g} points over the baseline).")
    if found:
        st.write(f"**{len(found)} of {len(rep.rows)} relation-directions have a syntactic head**: "
                 + "; ".join(f"{md_escape(relation_label(r))}: layer {r['layer']}, head {r['head']} "
                             f"({r['accuracy']:.0f}% vs {r['baseline']:.0f}%)" for r in found) + ".")
        layers = rep.layers()
        st.caption("They sit in " + ", ".join(f"layer {k} ({len(v)})" for k, v in layers.items()) + ".")
    else:
        st.write(f"**No head beats its baseline by {sx.SYNTACTIC_MARGIN:g} points** on these sentences.")
    card = card_syntax if isinstance(card_syntax, dict) else None
    if card:
        layers = ", ".join(f"layer {k} ({len(v)})" for k, v in card.get("layers", {}).items()) or "no layer"
        st.caption(f"The model card, scored on {card.get('sentences', '?')} sentences of "
                   f"{md_escape(str(card.get('conllu', 'a CoNLL-U file')))} by scripts/evaluate\\_syntax.py: "
                   f"{len(card.get('syntactic', []))} of {card.get('relations_scored', '?')} relation-directions "
                   f"with a syntactic head; they sit in {layers}.")
    with st.expander("The table: best head of each relation and direction"):
        st.dataframe(pd.DataFrame(rep.rows), hide_index=True)
    st.download_button("Download the table (CSV)", pd.DataFrame(rep.rows).to_csv(index=False).encode("utf-8"),
                       file_name=f"syntax_{ckpt.name}_{rep.sentences}.csv", mime="text/csv", key="heads_syn_csv")
    return rep


def one_sentence(ckpt, cfg, sentences: list, rep: sx.SyntaxReport | None, gold_note: str) -> None:
    """Pick a relation, a direction and a sentence: its gold arcs beside the arcs one head draws."""
    nlp = sx.automatic_parser()
    sources = ["Gold-parsed sentences"] + ([TYPED] if nlp is not None else [])
    source = st.radio("Sentence", sources, horizontal=True, key="heads_syn_source")
    if nlp is None:
        st.caption("Typed sentences have no gold parse, and no automatic parser (spaCy with its English model "
                   f"{sx.SPACY_MODEL}) is installed here: pick one of the gold-parsed sentences.")
    if source == TYPED:
        try:
            chosen = [sx.automatic_parse(nlp, st.text_input("Your sentence", "The cat sat on the mat.",
                                                            key="heads_syn_typed"))]
        except sx.SyntaxDataError as e:
            st.warning(str(e))
            return
        st.info("This parse is automatic (spaCy), not gold: it can be wrong, and its labels are spaCy's.")
    else:
        chosen = sentences
    rows = rep.rows if rep is not None else []
    options = [(r["relation"], r["direction"]) for r in rows] or sorted(
        {(rel, d) for s in chosen for _, _, rel in s.arcs() for d in sx.DIRECTIONS})
    first = next((k for k, r in enumerate(rows) if r["syntactic"]), 0)     # start on a syntactic head if any
    c1, c2, c3 = st.columns([2, 1, 1])
    rel, direction = c1.selectbox("Relation and direction", options, index=first, key="heads_syn_rel",
                                  format_func=lambda o: f"{o[0]} {o[1]}")
    best = next((r for r in rows if (r["relation"], r["direction"]) == (rel, direction)), None)
    layer = c2.selectbox("Layer", range(cfg.N), index=best["layer"] - 1 if best else 0, format_func=layer_name,
                         key=f"heads_syn_layer_{rel}_{direction}")
    head = c3.selectbox("Head", range(cfg.h), index=best["head"] - 1 if best else 0, format_func=head_name,
                        key=f"heads_syn_head_{rel}_{direction}")
    having = [k for k, s in enumerate(chosen) if any(r == rel for _, _, r in s.arcs())][:200]
    if not having:
        st.info(f"No sentence here has a {md_escape(rel)} arc.")
        return
    k = st.selectbox("Sentence with that relation", having, key=f"heads_syn_sent_{rel}",
                     format_func=lambda k: f"{chosen[k].where}: {chosen[k].text[:90]}")
    sentence = chosen[k]
    try:
        sa = cache.parsed_attention(ckpt, sentence)
    except ValueError as e:
        st.warning(f"This sentence cannot be shown: {e}. Pick another.")
        return
    keep = set(sa.words)
    gold = [(d, h, r) for d, h, r in sentence.arcs() if d in keep and h in keep]
    fig = arcs_figure(sentence.words, gold, sa.head_arcs(layer, head), rel, direction,
                      f"encoder layer {layer + 1}, head {head + 1}", f"{rel} {direction}: gold beside the head")
    show_figure(fig, f"syntax_{ckpt.name}_{rel}_layer{layer + 1}_head{head + 1}", key="heads_syn_arcs")
    meta = fig.layout.meta
    st.caption(f"{gold_note} Bold arcs above: the sentence's {md_escape(rel)} arcs. Below, from each "
               f"{'dependent' if direction == 'dep->head' else 'head word'} of them: green when the head's "
               f"strongest link lands on the gold partner, red when not ({meta['followed']} of {meta['asked']} "
               f"here); grey: the head's other links."
               + (f" Unmapped words (no piece of their own) are left out: "
                  f"{', '.join(md_escape(sentence.words[w]) for w in sa.unmapped)}." if sa.unmapped else ""))


def syntax_tab(ckpt, cfg, card_syntax: dict | None) -> None:
    """Tab: which encoder heads follow English syntax, against gold dependency parses (core.studies.syntax)."""
    st.caption("Does a head point each word at its syntactic partner (its head, or its dependent), more often "
               "than a fixed habit such as 'always the next word' does? Measured per dependency relation "
               "against gold Universal Dependencies parses, as Clark et al. 2019 and Voita et al. 2019 do.")
    path = ud_dev_file()
    sentences, why = cache.ud_sentences(path)
    rep = None
    if sentences is None:
        st.warning(f"The gold parses of UD English EWT dev cannot be read, so there is no grid: {md_escape(why)} "
                   "Only the paper's Figure 5 sentence, with a gold parse written by hand for this project, is "
                   "offered below.")
        try:
            sentences, note = [sx.read_figure5()], "Gold parse: the paper's Figure 5 sentence, parsed by hand."
        except sx.SyntaxDataError as e:
            st.warning(f"The hand-made parse of the Figure 5 sentence cannot be read either: {md_escape(str(e))}")
            return
    else:
        note = "Gold parse: UD English EWT dev (CC BY-SA 4.0)."
        rep = syntax_grid_section(ckpt, path, sentences, card_syntax)
    st.subheader("One sentence: gold arcs beside a head's")
    one_sentence(ckpt, cfg, sentences, rep, note)


def contribution_maps(ckpt, model, sentence: str, show: str) -> contrib_study.Contributions | None:
    """A kind, layer and head of one sentence: attention weights beside the chosen view; None after a message."""
    try:
        c = cache.contributions(ckpt, sentence)
    except ValueError as e:
        st.warning(str(e))
        return None
    cfg = model.cfg
    c1, c2, c3 = st.columns(3)
    kind = c1.selectbox("Attention", list(KINDS), format_func=KINDS.get, key="heads_ctb_kind")
    n_layers = cfg.N if kind == "enc_self" else cfg.N_dec
    layer = c2.selectbox("Layer", range(n_layers), index=n_layers - 1, format_func=layer_name,
                         key=f"heads_ctb_layer_{kind}")
    whole = "all heads summed as vectors" if show == "norm" else "mean of all heads"
    head = c3.selectbox("Head", [-1, *range(cfg.h)], key="heads_ctb_head", disabled=show == "alti",
                        format_func=lambda k: whole if k < 0 else head_name(k),
                        help="Contributions (ALTI+) are measured for a whole layer." if show == "alti" else None)
    words = st.checkbox("Whole words (merge each word's pieces)", key="heads_ctb_words")
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
    sentence = st.text_input("Sentence", default, key="heads_ctb_src")
    show = show_weights.show_control("heads_ctb_show")
    show_weights.explain(show)
    c = contribution_maps(ckpt, model, sentence, show)
    if c is not None and c.result.tgt:
        st.subheader("Where each translated word came from")
        words, share = contrib_study.word_shares(c)
        show_figure(source_share_figure(words, share, f"The model's translation: {c.result.tgt}"),
                    "source_share", key="heads_ctb_share")
        st.caption(md_escape(show_weights.share_sentence(words, share)))
    faithfulness_section(model)


def introduction(name: str) -> None:
    st.title("What heads do")
    st.caption("Each layer has several attention heads. Here they are scored on probe sentences, switched off "
               "one by one, and compared between checkpoints.")
    if name == UNTRAINED:
        st.info("This model is untrained, so every score below describes random attention. "
                "Pick a trained checkpoint in the sidebar to see real heads.")


ckpt, model = cache.model_or_stop()
default = NEWS_SENTENCE if domain(model.card) == "news" else default_sentence(model.card)   # the model's domain
introduction(ckpt.name)
table = cache.head_scores(ckpt)
finder, ent, syn, roll, ctb, abl, cmp_tab = st.tabs(
    ["Head finder", "Entropy", "Syntax", "Rollout", "Beyond attention", "Switch heads off", "Compare checkpoints"])
with finder:
    head_finder(ckpt.name, table)
with ent:
    entropy_tab(table)
with syn:
    syntax_tab(ckpt, model.cfg, model.card.syntax)
with roll:
    rollout_tab(ckpt, model.cfg, default)
with ctb:
    contributions_tab(ckpt, model, default)
with abl:
    ablation_tab(ckpt, model, default)
with cmp_tab:
    compare_tab(ckpt, default)
