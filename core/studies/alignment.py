"""Cross-attention as word alignment, scored against human gold links (AER, Och & Ney 2003).

A *map* here is word-level encoder-decoder attention, shape (W_tgt, W_src): row t is target word t,
column s source word s. A *link* is (t, s), 0-based. Our models translate English -> German, so the
English side is the source and the German side the target, whatever a gold file calls them.

Word level as everywhere else in the project (core.tokenizer.merge_attention): the attention *from* a
target word is the mean over its pieces' rows, the attention *to* a source word the sum over its
pieces' columns. "<s>", "</s>" and padding are dropped, and each row is renormalised over the real
source words, so that a head that parks weight on "</s>" still has rows that sum to 1 (argmax does
not change; a threshold then means "share of the attention on words").

Two shifts, because decoder position t *reads* tgt_tokens[t] and *produces* out_tokens[t]:
  "produced": a target word's row is the step that writes it (the usual reading of an attention map);
  "read":     the step that has just read it as input, one step later (Chen et al. 2020's Shift-Att).

The gold links, and which of the model's pieces spell which gold word, are in core.studies.alignment_gold.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .alignment_gold import AlignmentError, GoldPair, gold_masks, model_text, piece_slots
from .analysis import head_or_mean
from core.tokenizer import merge_attention, merge_words, word_ids
from core.views import sentence_only

SHIFTS = {"produced": "a target word's row is the decoder step that produces (writes) it",
          "read": "a target word's row is the decoder step that reads it as input (Shift-Att)"}
METHODS = {"argmax": "one link per target word, to the source word it attends most",
           "threshold": "a link wherever the attention reaches the threshold"}


# --------------------------------------------------------------------------- word-level maps

def content_pieces(result) -> tuple[list, list]:
    """(source pieces, target pieces) of an AttendResult without "<s>", "</s>" and padding."""
    return list(result.src_tokens[:-1]), list(result.tgt_tokens[1:])


def word_maps(result, shift: str, src_slots: list, tgt_slots: list, maps: np.ndarray | None = None) -> np.ndarray:
    """Cross-attention (N_dec, h, T, S) -> word level (N_dec, h, W_tgt, W_src) under a shift, rows renormalised.

    src_slots, tgt_slots: (piece, word) pairs of the content pieces (piece_slots, or own_words).
    maps: other (..., T, S) maps labelled like the cross-attention (norm-based, ALTI+: core.studies.contributions)
    in place of result.cross.
    """
    if shift not in SHIFTS:
        raise ValueError(f"unknown shift {shift!r}; choose one of {list(SHIFTS)}")
    start = 0 if shift == "produced" else 1            # the step that writes target piece i is i; that reads it, i + 1
    rows = [start + p for p, _ in tgt_slots]
    cols = [p for p, _ in src_slots]                   # never the last column, "</s>"
    cross = (result.cross if maps is None else maps)[..., rows, :][..., cols]   # (..., slots_tgt, slots_src)
    maps = merge_attention(cross, [w for _, w in tgt_slots], [w for _, w in src_slots])   # (..., W_tgt, W_src)
    return maps / np.maximum(maps.sum(-1, keepdims=True), 1e-12)


def gold_slots(result, pair: GoldPair) -> tuple[list, list]:
    """(source, target) slots of an AttendResult on the gold words; AlignmentError if it cannot be mapped."""
    if result.truncated:
        raise AlignmentError("the sentence is longer than the model takes")
    src, tgt = content_pieces(result)
    return piece_slots(src, pair.src_words), piece_slots(tgt, pair.tgt_words)


def shared(slots: list) -> bool:
    """Whether a piece spells two gold words (e.g. '",'), so that both read the same attention."""
    return len({p for p, _ in slots}) < len(slots)


def own_words(result) -> tuple[list, list, list, list]:
    """(source slots, target slots, source words, target words) on the model's own words, for text without gold."""
    src, tgt = content_pieces(result)
    if not src or not tgt:
        raise AlignmentError("the source or the translation is empty, so there is nothing to align")
    sid, tid = word_ids(src), word_ids(tgt)
    return list(enumerate(sid)), list(enumerate(tid)), merge_words(src, sid), merge_words(tgt, tid)


# --------------------------------------------------------------------------- links and scores

def predict(maps: np.ndarray, method: str = "argmax", threshold: float = 0.5) -> np.ndarray:
    """Maps (..., W_tgt, W_src) -> boolean links of the same shape."""
    if method == "argmax":
        best = maps.argmax(-1)[..., None]                         # (..., W_tgt, 1)
        return np.arange(maps.shape[-1]) == best
    if method == "threshold":
        return maps >= threshold
    raise ValueError(f"unknown method {method!r}; choose one of {list(METHODS)}")


def link_set(mask: np.ndarray) -> set:
    """A boolean (W_tgt, W_src) link matrix -> a set of (t, s)."""
    return {(int(t), int(s)) for t, s in zip(*np.nonzero(mask))}


def classify(pred: set, sure: set, possible: set) -> dict:
    """Predicted and gold links sorted for drawing: correct (sure), possible, wrong, and missed sure links."""
    return {"correct": pred & sure, "possible": (pred & possible) - sure, "wrong": pred - possible,
            "missed": sure - pred}


def diagonal_map(n_tgt: int, n_src: int) -> np.ndarray:
    """The baseline: target word t linked to the source word at the same relative position."""
    A = np.zeros((n_tgt, n_src), dtype=np.float32)
    A[np.arange(n_tgt), np.minimum(((np.arange(n_tgt) + 0.5) * n_src / n_tgt).astype(int), n_src - 1)] = 1.0
    return A


def counts(pred: np.ndarray, S: np.ndarray, P: np.ndarray) -> np.ndarray:
    """(..., 4) counts |A∩S|, |A∩P|, |A|, |S| of predicted links (..., W_tgt, W_src) against gold."""
    ax = (-2, -1)
    n_s = np.broadcast_to(S.sum(), pred.shape[:-2])
    return np.stack([(pred & S).sum(ax), (pred & P).sum(ax), pred.sum(ax), n_s], -1)


def scores(c) -> dict:
    """AER = 1 - (|A∩S| + |A∩P|) / (|A| + |S|), precision |A∩P|/|A|, recall |A∩S|/|S| (Och & Ney 2003)."""
    a_s, a_p, a, s = (float(x) for x in c)
    return {"aer": 1.0 - (a_s + a_p) / (a + s) if a + s else float("nan"),
            "precision": a_p / a if a else float("nan"), "recall": a_s / s if s else float("nan")}


def candidates(maps: np.ndarray) -> tuple[list, np.ndarray]:
    """Every head, every layer's head average and the all-head average of (N_dec, h, R, C) maps.

    Returns (labels, stack (C, R, C)); a label is (layer, head), counted from 1, "mean" for averages
    and "all" for the all-layer one.
    """
    L, h = maps.shape[:2]
    labels = ([(layer + 1, k + 1) for layer in range(L) for k in range(h)]
              + [(layer + 1, "mean") for layer in range(L)] + [("all", "mean")])
    stack = np.concatenate([maps.reshape(L * h, *maps.shape[2:]), maps.mean(1), maps.mean((0, 1))[None]])
    return labels, stack


def select(maps: np.ndarray, layer, head) -> np.ndarray:
    """One candidate of (N_dec, h, R, C) maps by its label: (2, 3), (2, "mean") or ("all", "mean")."""
    if layer == "all":
        return maps.mean((0, 1))
    return head_or_mean(maps, layer - 1, None if head == "mean" else head - 1)     # labels count from 1


# --------------------------------------------------------------------------- one sentence pair, as a page shows it

@dataclass
class SentenceMaps:
    """One sentence pair's word-level cross-attention under every shift, and its words."""
    maps: dict                     # shift -> (N_dec, h, W_tgt, W_src)
    rows: list                     # German (target) words
    cols: list                     # English (source) words
    translation: str               # the German the decoder read (the model's own when none was given)


def sentence_maps(result, pair: GoldPair | None = None) -> SentenceMaps:
    """The SentenceMaps of an AttendResult, on the gold pair's words or (pair None) on the model's own words;
    AlignmentError (a ValueError, worded for the reader) when they cannot be mapped. A prompt (T5's) is left out."""
    result = sentence_only(result)
    if pair is not None:
        (src_slots, tgt_slots), cols, rows = gold_slots(result, pair), pair.src_words, pair.tgt_words
    else:
        src_slots, tgt_slots, cols, rows = own_words(result)
    return SentenceMaps({shift: word_maps(result, shift, src_slots, tgt_slots) for shift in SHIFTS}, rows, cols,
                        result.tgt)


@dataclass
class HeadLinks:
    """One candidate head's map of a sentence pair, its links and, with gold, how they score."""
    attn: np.ndarray               # (W_tgt, W_src)
    links: dict                    # {"model": set} without gold, classify's sets with it
    gold: dict | None              # {"sure": set, "possible": set (possible only)}
    scores: dict | None            # aer, precision, recall of this pair


def head_links(sentence: SentenceMaps, layer, head, shift: str, method: str = "argmax", threshold: float = 0.5,
               pair: GoldPair | None = None) -> HeadLinks:
    """The links of candidate (layer, head) (labels as in select) under a shift and a method, scored on `pair`."""
    attn = select(sentence.maps[shift], layer, head)
    mask = predict(attn, method, threshold)
    if pair is None:
        return HeadLinks(attn, {"model": link_set(mask)}, None, None)
    return HeadLinks(attn, classify(link_set(mask), pair.sure, pair.possible),
                     {"sure": pair.sure, "possible": pair.possible - pair.sure},
                     scores(counts(mask, *gold_masks(pair))))


# --------------------------------------------------------------------------- a corpus

@dataclass
class Evaluation:
    """Per-pair counts of every candidate under both shifts, and of the diagonal baseline."""
    labels: list
    index: list = field(default_factory=list)                    # position in the given pairs of each scored pair
    lines: list = field(default_factory=list)                    # its gold line
    counts: dict = field(default_factory=lambda: {s: [] for s in SHIFTS})   # shift -> list of (C, 4)
    diagonal: list = field(default_factory=list)                 # list of (4,)
    skipped: list = field(default_factory=list)                  # (line, reason)
    shared: int = 0                                              # scored pairs with a piece spelling two gold words
    n_pairs: int = 0
    seconds: float = 0.0


def evaluate(tm, pairs: list[GoldPair], as_tokenized: bool = False, method: str = "argmax",
             threshold: float = 0.5, progress=None) -> Evaluation:
    """Teacher-force every pair through the model and count links of every head under both shifts.

    progress: optional callable(done, total) for a progress bar.
    """
    t0 = time.time()
    ev = Evaluation(labels=[], n_pairs=len(pairs))
    for k, pair in enumerate(pairs):
        src, tgt = model_text(pair, as_tokenized)
        try:
            res = sentence_only(tm.attend(src, tgt=tgt))        # the sentence's pieces: no prompt (T5)
            slots = gold_slots(res, pair)
        except (AlignmentError, ValueError) as e:
            ev.skipped.append((pair.line, str(e)))
        else:
            S, P = gold_masks(pair)
            for shift in SHIFTS:
                ev.labels, stack = candidates(word_maps(res, shift, *slots))
                ev.counts[shift].append(counts(predict(stack, method, threshold), S, P))
            ev.diagonal.append(counts(predict(diagonal_map(*S.shape)), S, P))
            ev.index.append(k)
            ev.shared += any(shared(x) for x in slots)
            ev.lines.append(pair.line)
        if progress:
            progress(k + 1, len(pairs))
    ev.seconds = time.time() - t0
    return ev


def _rounded(d: dict) -> dict:
    """Floats to 4 decimals, NaN (nothing to score) to None, so that the JSON stays valid."""
    return {k: ((round(v, 4) if np.isfinite(v) else None) if isinstance(v, float) else v) for k, v in d.items()}


def report(ev: Evaluation, method: str = "argmax", threshold: float = 0.5) -> dict:
    """Every candidate's scores, and the choices made on the first half of the pairs only.

    The best single head (over heads and both shifts) and the best layer average are chosen by their
    AER on the first half of the given pairs; their AER on the second half is the honest, held-out figure.
    """
    if not ev.index:
        raise AlignmentError(f"none of the {ev.n_pairs} pairs could be scored "
                             + (f"(first reason: {ev.skipped[0][1]})" if ev.skipped else ""))
    n_first = ev.n_pairs // 2 or 1                                # the selection half: pairs given first
    first = np.array(ev.index) < n_first
    def part(rows, mask):
        return np.asarray(rows)[mask].sum(0) if mask.any() else np.zeros(np.asarray(rows).shape[1:])
    everything = np.ones_like(first)
    rows, held_out = [], {}
    for shift in SHIFTS:
        per_pair = np.asarray(ev.counts[shift])                   # (pairs, candidates, 4)
        whole, one, two = (part(per_pair, m) for m in (everything, first, ~first))
        for c, (layer, head) in enumerate(ev.labels):
            held_out[layer, head, shift] = {f"{k}_second_half": v for k, v in scores(two[c]).items()}
            rows.append(_rounded({"layer": layer, "head": head, "shift": shift, **scores(whole[c]),
                                  "aer_first_half": scores(one[c])["aer"], "aer_second_half": scores(two[c])["aer"]}))
    # the choice sees the first half only; a candidate with nothing to score there comes last
    def pick(kind):
        return min((r for r in rows if kind(r)), default=None, key=lambda r: 2.0 if r["aer_first_half"] is None
                   else r["aer_first_half"])
    def chosen(r):
        return None if r is None else _rounded({**{k: r[k] for k in ("layer", "head", "shift", "aer_first_half")},
                                                **held_out[r["layer"], r["head"], r["shift"]]})
    # a single head has a number; a whole layer a word ("mean" of the weights, "sum" of norm vectors, ALTI's)
    best = pick(lambda r: not isinstance(r["head"], str))
    layer = pick(lambda r: isinstance(r["head"], str) and r["layer"] != "all")
    diag = np.asarray(ev.diagonal)
    n_layers = max(r["layer"] for r in rows if r["layer"] != "all")
    grid = {s: [[r["aer"] for r in rows if r["shift"] == s and r["layer"] == layer] for layer in range(1, n_layers + 1)]
            for s in SHIFTS}
    return {
        "method": method, **({"threshold": threshold} if method == "threshold" else {}),
        "shifts": SHIFTS,
        "pairs": ev.n_pairs, "scored": len(ev.index), "skipped": len(ev.skipped),
        "skipped_lines": [line for line, _ in ev.skipped],
        "skipped_reasons": sorted({why for _, why in ev.skipped}),
        "shared_piece_pairs": ev.shared,
        "halves": {"first": int(first.sum()), "second": int((~first).sum()),
                   "rule": f"chosen on the first {n_first} of {ev.n_pairs} given pairs, scored on the rest"},
        "heads": rows,
        "selected": chosen(best),
        "best_layer": chosen(layer),
        "all_heads": {s: next(r["aer"] for r in rows if r["shift"] == s and r["layer"] == "all") for s in SHIFTS},
        "diagonal": _rounded({**scores(diag.sum(0)), "aer_second_half": scores(part(diag, ~first))["aer"]}),
        "grid": grid,
        "seconds": round(ev.seconds, 1),
    }
