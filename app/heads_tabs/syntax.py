"""The Syntax tab of "What heads do": which encoder heads follow English syntax, against gold dependency parses."""
from pathlib import Path

import pandas as pd
import streamlit as st

from app import cache
from app.checkpoints import page_problem
from app.data_notice import offer_download
from app.display import show_figure
from app.figures.syntax import arcs_figure, relation_label, syntax_grid
from app.heads_tabs.common import KEEP, head_name, layer_name
from app.text import md_escape
from core.datasets import how_to_get
from core.studies import conllu
from core.studies import syntax as sx

SYNTAX_DEFAULT = 300            # sentences of the dev file the grid uses unless asked for more (~10 s here)
TYPED = "A sentence I type (automatic parse)"


def syntax_grid_section(ckpt, path: str, sentences: list, card_syntax: dict | None) -> sx.SyntaxReport | None:
    """The heads x relations grid over the first sentences of the dev file; None after a message if it fails."""
    total = len(sentences)
    n = int(st.number_input("Sentences for the grid", min(10, total), total, min(SYNTAX_DEFAULT, total),
                            step=50, key="heads_syn_n", persist_state=KEEP,
                            help=f"The first sentences of the file, in order. All {total} take about a minute "
                                 "on a laptop CPU; each choice is computed once per checkpoint."))
    try:
        rep = cache.syntax_report(ckpt, path, n, sx.MIN_ARCS)
    except conllu.SyntaxDataError as e:
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
    nlp = conllu.automatic_parser()
    sources = ["Gold-parsed sentences"] + ([TYPED] if nlp is not None else [])
    source = st.radio("Sentence", sources, horizontal=True, key="heads_syn_source", persist_state=KEEP)
    if nlp is None:
        st.caption("Typed sentences have no gold parse, and no automatic parser (spaCy with its English model "
                   f"{conllu.SPACY_MODEL}) is installed here: pick one of the gold-parsed sentences.")
    if source == TYPED:
        try:
            chosen = [conllu.automatic_parse(nlp, st.text_input("Your sentence", "The cat sat on the mat.",
                                                                key="heads_syn_typed", persist_state=KEEP))]
        except conllu.SyntaxDataError as e:
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
                                  persist_state=KEEP, format_func=lambda o: f"{o[0]} {o[1]}")
    best = next((r for r in rows if (r["relation"], r["direction"]) == (rel, direction)), None)
    layer = c2.selectbox("Layer", range(cfg.N), index=best["layer"] - 1 if best else 0, format_func=layer_name,
                         key=f"heads_syn_layer_{rel}_{direction}", persist_state=KEEP)
    head = c3.selectbox("Head", range(cfg.h), index=best["head"] - 1 if best else 0, format_func=head_name,
                        key=f"heads_syn_head_{rel}_{direction}", persist_state=KEEP)
    having = [k for k, s in enumerate(chosen) if any(r == rel for _, _, r in s.arcs())][:200]
    if not having:
        st.info(f"No sentence here has a {md_escape(rel)} arc.")
        return
    k = st.selectbox("Sentence with that relation", having, key=f"heads_syn_sent_{rel}", persist_state=KEEP,
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
    if problem := page_problem("syntax", cache.load_model(ckpt).card):      # an imported model of other languages
        st.info(problem)
        return
    path = str(conllu.ud_english_dev())
    sentences, why = cache.ud_sentences(path)
    rep = None
    if sentences is None:
        why = (f"they are not on this machine yet: {how_to_get('eval')} fetches them." if not Path(path).is_file()
               else md_escape(why))
        st.warning(f"The gold parses of UD English EWT dev cannot be read, so there is no grid: {why} "
                   "Only the paper's Figure 5 sentence, with a gold parse written by hand for this project, is "
                   "offered below.")
        offer_download("eval", "heads_syn_fetch")
        try:
            sentences, note = [conllu.read_figure5()], "Gold parse: the paper's Figure 5 sentence, parsed by hand."
        except conllu.SyntaxDataError as e:
            st.warning(f"The hand-made parse of the Figure 5 sentence cannot be read either: {md_escape(str(e))}")
            return
    else:
        note = "Gold parse: UD English EWT dev (CC BY-SA 4.0)."
        rep = syntax_grid_section(ckpt, path, sentences, card_syntax)
    st.subheader("One sentence: gold arcs beside a head's")
    one_sentence(ckpt, cfg, sentences, rep, note)
