"""Every head of a language model scored, as the head finder lists them: the decoder-only roles measured by
core.studies.induction on repeated random tokens (induction, duplicate token, previous token, first-token sink), and
the scores of core.studies.analysis on the probe sentences (entropy, distance, itself; an encoder-only model's next
token and its [CLS] and [SEP] shares). This file only puts core's numbers into one table. No Streamlit here."""
from __future__ import annotations

import numpy as np
import pandas as pd

from app.checkpoints import DECODER_ONLY, model_family
from app.lm.views import KIND, labels
from core.studies import analysis, induction

# score -> (column title, what a high value means), in the order the head finder offers them
DECODER_SCORES = {
    "induction": ("induction", "Attention, on the second copy of a repeated random sequence, to the token right "
                               "after the previous occurrence of the current token: what an induction head reads to "
                               "copy it as its guess (Olsson et al. 2022). Near 1: an induction head."),
    "duplicate": ("duplicate token", "Attention to the previous occurrence of the current token itself, on the "
                                     "same sequences. Near 1: a duplicate-token head."),
    "previous": ("previous token", "Attention to the token just before, on the same sequences. Near 1: a "
                                   "previous-token head (an induction head's partner in an earlier layer)."),
    "sink": ("first-token sink", "The share of attention on the very first token (an attention sink: StreamingLLM, "
                                 "Xiao et al. 2023). Heads with nothing to do park their attention there."),
}
TEXT_SCORES = {
    "self": ("itself", "The share a token keeps on itself, on the probe sentences."),
    "distance": ("distance", "How far away, in tokens, the tokens a head looks at are on average, on the probe "
                             "sentences. High: a long-distance head."),
    "entropy": ("entropy (bits)", "How spread out the attention is, in bits, on the probe sentences: 0 means one "
                                  "token gets it all."),
    "entropy_norm": ("spread (0-1)", "The entropy divided by the most a row can have: 0 = all on one token, 1 = "
                                     "spread evenly over every token it may see."),
}
ENCODER_SCORES = {
    "previous": ("previous token", "The share of each token's attention that goes to the token just before it, on "
                                   "the probe sentences."),
    "next": ("next token", "The share that goes to the token just after it (an encoder-only model sees both ways)."),
    "cls": ("[CLS] sink", "The share that goes to the first token, [CLS] (RoBERTa's <s>): a place to park attention."),
    "sep": ("[SEP] sink", "The share that goes to [SEP] (RoBERTa's </s>): BERT's heads famously park attention there "
                          "(Clark et al. 2019)."),
    "punctuation": ("punctuation", "The share that goes to commas, full stops and other punctuation."),
}


def score_names(model) -> dict:
    """score -> (column title, meaning) of this model's head finder."""
    first = DECODER_SCORES if model_family(model) == DECODER_ONLY else ENCODER_SCORES
    return {**first, **TEXT_SCORES}


def probe_texts() -> list[str]:
    """The English news and parliament probe sentences of the translation models' head finder (core/studies/probes;
    one model pass each: a language model has no batched pass yet)."""
    return [p["en"] for p in analysis.load_neutral()]


def text_scores(model, res) -> dict:
    """{score: (N, h)} of one probe sentence's maps (core.studies.analysis.sentence_scores)."""
    decoder = model_family(model) == DECODER_ONLY
    attn = res.self_attn
    scores = analysis.sentence_scores(attn, labels(model, res), decoder=decoder)
    if not decoder:
        roles = np.array([r or "" for r in res.roles])
        scores["cls"] = analysis.key_mass(attn, roles == "cls")
        scores["sep"] = analysis.key_mass(attn, roles == "sep")
    return scores


def head_table(model, texts: list[str], repeated: induction.InductionScores | None = None) -> pd.DataFrame:
    """One row per head (attention "self", layer, head from 0) with every score of score_names(model): the text
    scores averaged over `texts`, the decoder-only roles from `repeated` (core.studies.induction)."""
    per_text = [text_scores(model, model.attend(t)) for t in texts]
    N, h = model.cfg.N, model.cfg.h
    layer, head = np.divmod(np.arange(N * h), h)
    table = {"attention": KIND, "layer": layer, "head": head}
    for name in score_names(model):
        if repeated is not None and name in DECODER_SCORES:
            grid = getattr(repeated, name)
        else:
            grid = np.nanmean(np.stack([s[name] for s in per_text]), axis=0)
        table[name] = np.asarray(grid, dtype=float).reshape(-1)
    df = pd.DataFrame(table)
    df.attrs.update(sentences=len(texts), sequences=repeated.sequences if repeated else 0,
                    L=repeated.L if repeated else 0, loss_gap=repeated.loss_gap if repeated else None)
    return df
