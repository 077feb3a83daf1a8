"""The "Show:" choice shared by the explorer and the heads page: attention weights, weighted by value size
(Kobayashi et al. 2020), or contributions (ALTI+, Ferrando et al. 2022), each with its one-sentence explanation.
The maps come from core.studies.contributions through app.cache."""
from __future__ import annotations

import streamlit as st

from app.text import md_escape
from core.studies.contributions import EXPLAIN, WEIGHTS, word_shares

LAYER_ONLY = ("Contributions are measured for a whole layer (all heads and the residual connection together), "
              "so every head shows the same map.")


def show_control(key: str, persist_state: str | None = None) -> str:
    """"Show: attention weights | weighted by value size | contributions"; returns "attention", "norm" or "alti".
    persist_state: Streamlit's, how long the choice outlives the control not being drawn."""
    st.session_state.setdefault(key, "attention")
    return st.segmented_control("Show", list(WEIGHTS), key=key, format_func=WEIGHTS.get, required=True,
                                persist_state=persist_state,
                                help=" ".join(f"{WEIGHTS[w].capitalize()}: {EXPLAIN[w]}" for w in WEIGHTS))


def explain(weights: str, contrib=None) -> None:
    """The one-sentence explanation of what is shown, and (contrib given: a Contributions of a translated sentence)
    how much of each translated word's prediction came from the source."""
    shares = ""
    if contrib is not None and contrib.result.tgt:
        shares = " " + share_sentence(*word_shares(contrib))
    st.caption(md_escape(f"{WEIGHTS[weights].capitalize()}: {EXPLAIN[weights]}"
                         + (f" {LAYER_ONLY}" if weights == "alti" else "") + shares))


def share_sentence(words: list, share) -> str:
    """'Of each word's prediction, on average 63% came from the source ...' for a translated sentence."""
    if not len(words):
        return ""
    k = int(share.argmin())
    return (f"On average {share.mean():.0%} of each translated word's prediction came from the source and "
            f"{1 - share.mean():.0%} from the words written before it (ALTI+); least from the source: "
            f"'{words[k]}' ({share[k]:.0%}).")
