"""An atlas of a language model's heads (decoder-only GPT-2, Llama; encoder-only BERT): each head of its one kind
of map, self-attention, named by its strongest role over a corpus, against that role's baseline, by the rule and in
the JSON of the translation models' atlas (core.studies.atlas: a role counts at MARGIN points over its baseline;
a head that only parks its attention is named so only when it has no other role).

Every role is a hit rate in %: how often a row's strongest link is the one the role names. On the English probe
sentences (core/studies/probes, core.studies.analysis.load_neutral), one pass each:
  previous   decoder-only: a token's strongest link, among the tokens it sees (itself included), is the one before
             it; baseline: a random pick among them (1 / (i + 1) at position i, counted from 0). Encoder-only: its
             strongest link to ANOTHER token is the text piece before it; baseline 1 / (T - 1)
  next       (encoder-only) the same with the text piece after it
  sink       decoder-only: a row strongest on the first token, from row 2 on (row 1's previous token is the
             first); encoder-only: a text piece's row strongest on [CLS] or [SEP] (RoBERTa's <s>, </s>); baseline:
             a random pick (the specials' share of the keys)
On [bos] + r + r, r of L random tokens (decoder-only; core.studies.induction's sequences, TransformerLens' layout):
  induction  a query of the second copy is strongest on the token right after the previous occurrence of its own
  duplicate  ... on that previous occurrence itself; baseline: a random pick among the keys it sees
Induction and duplicate, being measured on random tokens, keep no example sentences; the other roles keep the probe
sentences where a head does its role most, to open in the explorer. No Streamlit here.
"""
from __future__ import annotations

import time

import numpy as np
import torch

from core.model.families import family_of

from . import induction
from .analysis import load_neutral
from .atlas import LM_KIND, RoleScores, Tally, atlas_dict, head_entries, row_hits

DECODER_ONLY, ENCODER_ONLY = "decoder-only", "encoder-only"
NAMES = {DECODER_ONLY: "Masked self-attention", ENCODER_ONLY: "Self-attention"}   # as the language-model pages
SEQUENCES = 16          # repeated random sequences for induction and duplicate


def probe_texts() -> list[str]:
    """The English probe sentences (news and parliament) every language model is scored on."""
    return [p["en"] for p in load_neutral()]


def decoder_rows(maps: np.ndarray, tallies: dict, n: int) -> None:
    """previous and sink of one text's masked maps (N, h, T, T) into tallies, as sentence n."""
    T = maps.shape[-1]
    rows = np.arange(1, T)
    tallies["previous"].add(row_hits(maps, rows, rows - 1), float(np.sum(1 / (rows + 1))), len(rows), n)
    rows = np.arange(2, T)
    tallies["sink"].add(row_hits(maps, rows, np.zeros_like(rows)), float(np.sum(1 / (rows + 1))), len(rows), n)


def encoder_rows(maps: np.ndarray, roles: list, tallies: dict, n: int) -> None:
    """previous, next and sink of one input's maps (N, h, T, T), its tokens' roles ("cls", "sep", "mask" or None
    for a text piece) into tallies, as sentence n."""
    T = maps.shape[-1]
    text = np.asarray([i for i, r in enumerate(roles) if r is None], dtype=int)
    specials = np.asarray([i for i, r in enumerate(roles) if r in ("cls", "sep")], dtype=int)
    others = maps.copy()
    others[..., np.arange(T), np.arange(T)] = -np.inf                   # the strongest link to ANOTHER token
    has_prev = text[1:][np.diff(text) == 1]                              # text pieces right after a text piece
    tallies["previous"].add(row_hits(others, has_prev, has_prev - 1), len(has_prev) / max(T - 1, 1), len(has_prev), n)
    has_next = has_prev - 1
    tallies["next"].add(row_hits(others, has_next, has_next + 1), len(has_next) / max(T - 1, 1), len(has_next), n)
    if len(text) and len(specials):
        on_special = np.isin(maps[..., text, :].argmax(-1), specials).sum(-1)           # (N, h)
        tallies["sink"].add(on_special, len(text) * len(specials) / T, len(text), n)


def text_roles(lm, texts: list[str], progress=None) -> tuple[dict, list]:
    """The tallies of the probe roles over `texts` (one pass each) and the texts read."""
    decoder = family_of(lm.cfg) == DECODER_ONLY
    tallies = {r: Tally() for r in (("previous", "sink") if decoder else ("previous", "next", "sink"))}
    read = []
    for i, text in enumerate(texts):
        res = lm.attend(text)
        maps = np.asarray(res.self_attn, dtype=np.float64)              # (N, h, T, T)
        if decoder:
            decoder_rows(maps, tallies, len(read))
        else:
            encoder_rows(maps, res.roles, tallies, len(read))
        read.append(text)
        if progress is not None:
            progress(i + 1, len(texts))
    return tallies, read


@torch.no_grad()
def copy_roles(lm, sequences: int = SEQUENCES, seed: int = 0, chunk: int = 8, progress=None) -> tuple[dict, int]:
    """(induction and duplicate tallies, L) of a decoder-only model on `sequences` repeated random sequences."""
    cfg, model = lm.cfg, lm.model
    L = induction.longest_copy(cfg)
    tokens = induction.repeated_tokens(cfg.vocab_size, L, sequences, seed, cfg.bos_id, induction.special_ids(cfg))
    rows = np.arange(L + 1, 2 * L + 1)                                   # the second copy's queries
    visible = float(np.sum(1 / (rows + 1)))
    tallies = {"induction": Tally(), "duplicate": Tally()}
    was_training = model.training
    model.eval()
    try:
        for start in range(0, sequences, chunk):
            _, maps = model(tokens[start: start + chunk].to(lm.device), need_weights=True)
            a = induction.stack_maps(maps)                                # (B, N, h, T, T)
            for b in range(len(a)):
                tallies["induction"].add(row_hits(a[b], rows, rows - (L - 1)), visible, len(rows), start + b)
                tallies["duplicate"].add(row_hits(a[b], rows, rows - L), visible, len(rows), start + b)
            if progress is not None:
                progress(min(start + chunk, sequences), sequences)
    finally:
        model.train(was_training)
    return tallies, L


def compute_lm_atlas(lm, texts: list[str] | None = None, name: str = "", progress=None,
                     sequences: int = SEQUENCES) -> dict:
    """Every head's roles (module docstring) in core.studies.atlas' JSON, under the kind LM_KIND, with the name of
    the map ("names") and the model's family. texts None: the probe sentences. progress(done, total, text)."""
    t0 = time.time()
    family = family_of(lm.cfg)
    if family not in NAMES:
        raise ValueError(f"The language-model atlas is for decoder-only and encoder-only models, not {family}.")
    texts = probe_texts() if texts is None else list(texts)
    decoder = family == DECODER_ONLY
    share = 0.6 if decoder else 1.0
    def stage(text, base, part):
        return None if progress is None else lambda done, total: progress(base + part * done / max(total, 1), 1,
                                                                           text)
    tallies, read = text_roles(lm, texts, stage("Heads on the probe sentences", 0.0, share))
    rs = RoleScores()
    rs.sentences = len(read)
    for role, t in tallies.items():
        if t.hits:                                   # a role no row could hit (one-token texts) is left out
            rs.put(role, *t.score(), t.per_sentence())
    corpus = f"{len(read)} English probe sentences"
    if decoder:
        copies, L = copy_roles(lm, sequences, progress=stage("Heads on repeated random tokens", share, 1 - share))
        for role, t in copies.items():
            rs.put(role, *t.score())                 # random tokens: no example sentences to open
        corpus += f" and {sequences} sequences of {L} random tokens repeated twice"
    heads = {LM_KIND: head_entries(rs, read, 0, (lm.cfg.N, lm.cfg.h))}
    if progress is not None:
        progress(1, 1, "Done")
    out = atlas_dict(name, {LM_KIND: corpus}, heads, [[t, None] for t in read], t0)
    return {**out, "family": family, "names": {LM_KIND: NAMES[family]}}
