"""The "What heads do" tabs that read every head's scores over the probe sentences (core.studies.analysis,
cached by app.cache.head_scores): the head finder (one score as a layers x heads grid, and the heads ranked by
it) and the entropy of every head."""
import pandas as pd
import streamlit as st

from app.display import show_figure
from app.figures import heads as figs
from app.heads_tabs.common import KEEP, csv_button
from app.text import md_escape
from core.studies import analysis
from core.views import KINDS

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



def head_finder(name: str, table: pd.DataFrame) -> None:
    """Tab: one score of every head as a layers × heads grid, and the heads ranked by it."""
    n = table.attrs.get("sentences", {})
    c1, c2 = st.columns(2)
    kind = c1.selectbox("Attention", SCORED, format_func=KINDS.get, key="heads_kind", persist_state=KEEP)
    scores = [s for s in analysis.SCORES if table.loc[table.attention == kind, s].notna().any()]
    score = c2.selectbox("Score", scores, format_func=lambda s: f"{COLUMNS[s]}: {analysis.SCORES[s]}",
                         key="heads_score", persist_state=KEEP)
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
    kind = c1.selectbox("Attention", SCORED, format_func=KINDS.get, key="heads_ent_kind", persist_state=KEEP)
    norm = c2.radio("Entropy", ["entropy", "entropy_norm"], horizontal=True, key="heads_ent_norm", persist_state=KEEP,
                    format_func=lambda s: "in bits" if s == "entropy" else "normalised (0 to 1)")
    show_figure(figs.head_grid(analysis.score_grid(table, norm, kind), f"{KINDS[kind]}: entropy",
                               "bits" if norm == "entropy" else "of maximum",
                               zmin=0, zmax=1 if norm == "entropy_norm" else None, colorscale="Magma"),
                f"entropy_{kind}_{norm}", key="heads_entropy")
    st.caption("Low entropy: the head looks at one or two tokens. High: it spreads its attention evenly. "
               "Normalised entropy divides by the most a row can have, log2(number of tokens it sees), "
               "so short and long sentences compare.")
