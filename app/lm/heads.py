"""What heads do on a language model: the head finder with its roles (a decoder-only model's induction, duplicate
token, previous token and first-token sink heads, measured by core.studies.induction on repeated random tokens; an
encoder-only model's previous and next token, [CLS] and [SEP] heads, on the probe sentences), the entropy of every
head, attention rollout, and the atlas of every head's strongest role (app/heads_tabs/atlas.py, core.studies.lm_atlas).
The tabs that need a translation model say why in one line.
app/screens/heads.py hands over to page() when such a model is loaded; the same tabs, the same links.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app import url_state
from app.checkpoints import DECODER_ONLY, model_family
from app.display import show_figure
from app.figures import heads as figs
from app.heads_tabs.atlas import atlas_tab
from app.heads_tabs.common import KEEP, csv_button, head_name, layer_name
from app.lm import cache as lm_cache
from app.lm.common import needs_translation
from app.lm.explorer import default_text
from app.lm.scores import DECODER_SCORES, score_names
from app.lm.views import KIND, title
from app.text import md_escape
from core.studies import analysis

TABS = ["Head finder", "Entropy", "Syntax", "Rollout", "Beyond attention", "Switch heads off", "Compare checkpoints",
        "Atlas"]
NOT_BUILT = {"Syntax": "syntax", "Beyond attention": "contributions", "Switch heads off": "ablation",
             "Compare checkpoints": "compare"}     # tab -> its key of TRANSLATION_ONLY


def where_measured(model, table: pd.DataFrame, score: str) -> str:
    """On what a score was measured, for the caption under its grid."""
    if model_family(model) == DECODER_ONLY and score in DECODER_SCORES:
        return (f"{table.attrs['sequences']} sequences of {table.attrs['L']} random tokens repeated twice "
                "(TransformerLens' definitions)")
    return f"{table.attrs['sentences']} English probe sentences"


def strongest(model, table: pd.DataFrame) -> str:
    """One line: the strongest head of each role of the head finder's first scores."""
    names = score_names(model)
    roles = list(DECODER_SCORES) if model_family(model) == DECODER_ONLY else ["previous", "next", "cls", "sep"]
    parts = []
    for role in roles:
        best = analysis.rank_heads(table, role, KIND, top=1)
        if not best.empty:
            row = best.iloc[0]
            parts.append(f"{names[role][0]}: layer {row.layer + 1}, head {row['head'] + 1} ({row[role]:.2f})")
    return "Strongest head of each role: " + "; ".join(parts) + "."


def head_finder(ckpt, model, table: pd.DataFrame) -> None:
    """Tab: one score of every head as a layers × heads grid, and the heads ranked by it."""
    names = score_names(model)
    score = st.selectbox("Role or score", list(names), format_func=lambda s: names[s][0], key="lm_heads_score",
                         persist_state=KEEP)
    grid = analysis.score_grid(table, score, KIND)
    show_figure(figs.head_grid(grid, f"{title(model)}: {names[score][0]}", names[score][0], zmin=0),
                f"heads_self_{score}", key="lm_heads_grid")
    st.caption(md_escape(f"{names[score][1]} Each cell is the mean over {where_measured(model, table, score)}."))
    st.info(md_escape(strongest(model, table)))
    if model_family(model) == DECODER_ONLY and table.attrs.get("loss_gap") is not None:
        st.caption(f"In-context learning: the loss on the second copy minus the first is "
                   f"{table.attrs['loss_gap']:+.2f} nats (negative: the model copies from what it has read).")
    st.subheader("Heads ranked by " + md_escape(names[score][0]))
    ranked = analysis.rank_heads(table, score, KIND, top=10)
    columns = {s: n for s, (n, _) in names.items()}
    st.dataframe(figs.one_based(ranked)[["layer", "head", *names]].rename(columns=columns), hide_index=True)
    with st.expander("What the columns mean"):
        st.markdown("\n".join(f"- **{md_escape(n)}**: {md_escape(m)}" for n, m in names.values()))
    csv_button(table, "Download every head's scores (CSV)", f"head_scores_{ckpt.name}.csv", "lm_heads_csv")


def entropy_tab(model, table: pd.DataFrame) -> None:
    """Tab: every head's entropy, in bits or normalised, on the probe sentences."""
    norm = st.radio("Entropy", ["entropy", "entropy_norm"], horizontal=True, key="lm_heads_ent", persist_state=KEEP,
                    format_func=lambda s: "in bits" if s == "entropy" else "normalised (0 to 1)")
    show_figure(figs.head_grid(analysis.score_grid(table, norm, KIND), f"{title(model)}: entropy",
                               "bits" if norm == "entropy" else "of maximum", zmin=0,
                               zmax=1 if norm == "entropy_norm" else None, colorscale="Magma"),
                f"entropy_self_{norm}", key="lm_heads_entropy")
    st.caption(f"On {table.attrs['sentences']} English probe sentences. Low: the head looks at one or two tokens. "
               "High: it spreads its attention evenly. Normalised, each row is divided by the most it can have, "
               "log2(the number of tokens it may see).")


def rollout_tab(ckpt, model) -> None:
    """Tab: attention rollout through the layers beside one layer's raw attention."""
    text = st.text_input("Text", default_text(model), key="lm_heads_roll_text", persist_state=KEEP)
    cfg = model.cfg
    c1, c2 = st.columns(2)
    layer = c1.selectbox("Up to layer", range(cfg.N), index=cfg.N - 1, format_func=layer_name,
                         key="lm_heads_roll_layer", persist_state=KEEP)
    head = c2.selectbox("Raw attention of that layer", [-1, *range(cfg.h)], format_func=head_name,
                        key="lm_heads_roll_head", persist_state=KEEP)
    try:
        (roll, raw), labels = lm_cache.rollout(ckpt, text, layer, None if head < 0 else head)
    except ValueError as e:
        st.warning(str(e))
        return
    show_figure(figs.maps_side_by_side(roll, raw, labels, labels,
                                       (f"rollout through layers 1–{layer + 1}", f"raw attention, layer {layer + 1}"),
                                       f"{title(model)}: attention rollout beside raw attention"),
                f"rollout_layer{layer + 1}", key="lm_heads_rollout")
    st.caption("Rollout (Abnar & Zuidema 2020) follows attention through the layers, counting the residual "
               "connection as attention to oneself: row i shows which input tokens position i has mixed in.")


def page(ckpt, model) -> None:
    """The whole page for a decoder-only or encoder-only model."""
    st.title("What heads do")
    st.caption("Each layer has several attention heads. Here they are scored by what they attend to, on random "
               "tokens repeated twice and on probe sentences.")
    names = score_names(model)
    link = [url_state.choice("tab", "heads_tab", {url_state.slug(t): t for t in TABS}, TABS[0], "tab"),
            url_state.choice("score", "lm_heads_score", list(names), None, "score")]
    url_state.restore("heads", link)
    tabs = st.tabs(TABS, default="Head finder", key="heads_tab", on_change="rerun")
    url_state.publish("heads", link)
    for name, tab in zip(TABS, tabs):
        if not tab.open:
            continue
        with tab:
            if name in NOT_BUILT:
                needs_translation(NOT_BUILT[name], model)
            elif name == "Head finder":
                head_finder(ckpt, model, lm_cache.head_table(ckpt))
            elif name == "Entropy":
                entropy_tab(model, lm_cache.head_table(ckpt))
            elif name == "Atlas":
                atlas_tab(ckpt, model)
            else:
                rollout_tab(ckpt, model)
