"""Word alignment read from other weights than attention: norm-based maps and ALTI+ (core.studies.contributions).

The candidates of each way of weighting, at word level (core.studies.alignment.word_maps), labelled
(layer, head) counted from 1 as alignment.candidates labels them:
  attention  every head (l, k), each layer's head average (l, "mean"), all heads ("all", "mean")
  norm       every head's ||alpha f(x)|| (l, k); each layer's heads summed as vectors before the norm (l, "sum")
             (Kobayashi et al. 2020, 4.2); the layers' row-normalised maps averaged ("all", "sum")
  alti       ALTI+ source contributions rolled through layers 1..l (l, "rolled"); one cross-attention block's own
             contributions over the encoder's outputs (l, "block"); the whole decoder ("all", "rolled")
Every pair is teacher-forced once; one pass gives all three.
"""
from __future__ import annotations

import time

import numpy as np

from . import alignment as al
from . import alignment_gold as ag
from .contributions import WEIGHTS, contributions


def weight_candidates(c, weights: str, shift: str, slots: tuple) -> tuple[list, np.ndarray]:
    """(labels, stack (C, W_tgt, W_src)) of one way of weighting, for one pair under one shift."""
    if weights == "attention":
        return al.candidates(al.word_maps(c.result, shift, *slots))
    if weights == "norm":
        heads = al.word_maps(c.result, shift, *slots, maps=c.norm["cross"])         # (L, h, W_tgt, W_src)
        layers = al.word_maps(c.result, shift, *slots, maps=c.norm_layer["cross"])  # (L, W_tgt, W_src)
        L, h = heads.shape[:2]
        labels = ([(n + 1, k + 1) for n in range(L) for k in range(h)] + [(n + 1, "sum") for n in range(L)]
                  + [("all", "sum")])
        return labels, np.concatenate([heads.reshape(L * h, *heads.shape[2:]), layers, layers.mean(0)[None]])
    if weights == "alti":
        rolled = al.word_maps(c.result, shift, *slots, maps=c.rolled["cross"])      # (L, W_tgt, W_src)
        block = al.word_maps(c.result, shift, *slots, maps=c.block["cross"])
        L = rolled.shape[0]
        labels = [(n + 1, "rolled") for n in range(L)] + [(n + 1, "block") for n in range(L)] + [("all", "rolled")]
        return labels, np.concatenate([rolled, block, rolled[-1:]])
    raise ValueError(f"unknown weights {weights!r}; choose one of {list(WEIGHTS)}")


def evaluate_weights(tm, pairs: list, weights=("attention", "norm", "alti"), as_tokenized: bool = False,
                     method: str = "argmax", threshold: float = 0.5, progress=None) -> dict:
    """{weights: alignment.Evaluation} for each way of weighting, from one teacher-forced pass per pair."""
    t0 = time.time()
    evs = {w: al.Evaluation(labels=[], n_pairs=len(pairs)) for w in weights}
    for k, pair in enumerate(pairs):
        src, tgt = ag.model_text(pair, as_tokenized)
        try:
            c = contributions(tm, src, tgt)
            slots = al.gold_slots(c.result, pair)
        except (ag.AlignmentError, ValueError) as e:
            for ev in evs.values():
                ev.skipped.append((pair.line, str(e)))
        else:
            S, P = ag.gold_masks(pair)
            diagonal = al.counts(al.predict(al.diagonal_map(*S.shape)), S, P)
            for w, ev in evs.items():
                for shift in al.SHIFTS:
                    ev.labels, stack = weight_candidates(c, w, shift, slots)
                    ev.counts[shift].append(al.counts(al.predict(stack, method, threshold), S, P))
                ev.diagonal.append(diagonal)
                ev.index.append(k)
                ev.shared += any(al.shared(x) for x in slots)
                ev.lines.append(pair.line)
        if progress:
            progress(k + 1, len(pairs))
    for ev in evs.values():
        ev.seconds = time.time() - t0
    return evs


def winner(reports: dict) -> dict:
    """Which way of weighting aligns best on the held-out half: the lowest second-half AER of its chosen head or
    layer (both chosen on the first half), per way and overall."""
    best = {}
    for w, r in reports.items():
        options = [x for x in (r["selected"], r["best_layer"]) if x and x["aer_second_half"] is not None]
        if options:
            pick = min(options, key=lambda x: x["aer_second_half"])
            best[w] = {k: pick[k] for k in ("layer", "head", "shift", "aer_second_half")}
    overall = min(best, key=lambda w: best[w]["aer_second_half"], default=None)
    return {"by_weights": best, "winner": overall}
