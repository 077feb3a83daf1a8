"""The cached computations of the language-model pages, under app/cache.py's key convention: a CheckpointKey first,
then the page's choices. Results are shared read-only (st.cache_resource): a head or layer switch only slices them."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.cache import load_model
from app.checkpoints import DECODER_ONLY, CheckpointKey, model_family
from app.lm import scores, views
from core.studies import analysis, induction
from core.views import AttentionView

READING = "Reading the text and collecting every attention map…"


def attend(key: CheckpointKey, text: str, pair: str | None = None):
    """The model's pass over a text (and, for an encoder-only model, a second sentence): tokens and every map.
    ValueError for a text it cannot read."""
    return _attend(key, text, pair)


@st.cache_resource(max_entries=32, show_spinner=READING)
def _attend(key: CheckpointKey, text: str, pair: str | None):
    model = load_model(key)
    if model_family(model) == DECODER_ONLY:
        if pair:
            raise ValueError("A language model reads one text: put the second sentence after the first.")
        return model.attend(text)
    return model.attend(text, pair)


@st.cache_resource(max_entries=32, show_spinner=False)
def view(key: CheckpointKey, text: str, pair: str | None = None) -> AttentionView:
    """attend(...)'s self-attention labelled by its tokens (app.lm.views.lm_view)."""
    return views.lm_view(load_model(key), attend(key, text, pair))


@st.cache_data(max_entries=8, show_spinner="Scoring every head on repeated random tokens and the probe sentences…")
def head_table(key: CheckpointKey) -> pd.DataFrame:
    """Every head's scores (app.lm.scores.head_table): induction and sinks on repeated random tokens for a
    decoder-only model (core.studies.induction), the other scores on the probe sentences."""
    model = load_model(key)
    repeated = induction.induction_scores(model.model) if model_family(model) == DECODER_ONLY else None
    return scores.head_table(model, scores.probe_texts(), repeated)


def rollout(key: CheckpointKey, text: str, layer: int, head: int | None):
    """(rollout through layers 0..layer, that layer's raw map (a head, or the mean of its heads)) and the labels."""
    v = view(key, text)
    return (analysis.rollout(v.maps)[layer], analysis.head_or_mean(v.maps, layer, head)), v.rows
