"""The paper's Figure 3 over a corpus: which encoder heads follow dependencies by their length in words.

Figure 3 shows one sentence: a head of layer 5 links 'making' to 'more difficult', eight words away. Over many
gold-parsed sentences (core.studies.syntax.evaluate: every arc of UD, read in both directions, dep->head and
head->dep) this asks, for each length bucket (1-2, 3-4, 5-7, 8+ words between the two words), how often each
head *follows* the arc (the query word's strongest link to another word lands on its partner) and how much of
the query word's attention the partner gets. The baseline of a bucket is the best fixed relative offset
(partner = query + k words), as in the syntax study. Like it, the best head and the offset of each bucket are
chosen on the first half of the sentences and both are reported on the second half: a head picked and scored on
the same sentences looks better than it is. Both directions are pooled: a long arc is a long arc whichever word
asks. Layers and heads count from 0 in arrays, from 1 in `LongArcReport.rows` and card_summary.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .conllu import SyntaxDataError
from .syntax import Evaluation, best_offset

BUCKETS = (("1-2", 1, 2), ("3-4", 3, 4), ("5-7", 5, 7), ("8+", 8, 10**9))   # name, shortest, longest (words)
LONG = "8+"                      # the bucket Figure 3 is about ('making' -> 'more difficult': 8 words)
MIN_ARCS = 20                    # a bucket is reported when each half has at least this many directed arcs


def bucket_of(offsets: np.ndarray) -> np.ndarray:
    """The BUCKETS index of each arc's length |offset| (words), -1 for none (offset 0 cannot happen)."""
    length = np.abs(np.asarray(offsets, dtype=int))
    out = np.full(length.shape, -1)
    for b, (_, lo, hi) in enumerate(BUCKETS):
        out[(length >= lo) & (length <= hi)] = b
    return out


@dataclass
class LongArcReport:
    """Held-out scores of every head by arc length.

    rows: one per bucket with enough arcs: {"length", "n" (held-out directed arcs), "layer", "head" (chosen on
    the first half, 1-based), "follows" and "baseline" (held-out %), "offset" (the baseline's), "ratio"
    (follows / baseline), "mass" (held-out mean attention on the partner)}. follows, mass: bucket name ->
    (N, h) held-out % and mean attention of every head; chosen_on: bucket -> (N, h) % on the first half (for
    choosing only). sentences: used sentences; halves: their split.
    """
    rows: list
    follows: dict
    mass: dict
    chosen_on: dict
    sentences: int
    halves: dict

    def row(self, length: str = LONG) -> dict | None:
        """The row of one bucket, None when it had too few arcs."""
        return next((r for r in self.rows if r["length"] == length), None)

    def by_layer(self) -> dict:
        """bucket -> [held-out % of each layer's best head, that head chosen on the first half], layers in order."""
        out = {}
        for name, grid in self.follows.items():
            best = self.chosen_on[name].argmax(1)                            # (N,) each layer's head
            out[name] = [round(float(grid[layer, k]), 1) for layer, k in enumerate(best)]
        return out

    def rank(self, layer: int, head: int, length: str = LONG) -> int:
        """1-based rank of head (layer, head), 0-based, among all heads by held-out follows in a bucket."""
        grid = self.follows[length]
        return int((grid > grid[layer, head]).sum()) + 1


def report(ev: Evaluation, min_arcs: int = MIN_ARCS) -> LongArcReport:
    """Each bucket's best head and best offset, chosen on the first half of the sentences, scored on the second."""
    if not ev.used:
        raise SyntaxDataError(f"none of the {ev.n_sentences} sentences could be used.")
    buckets = bucket_of(ev.offsets)
    offsets, first = np.asarray(ev.offsets, dtype=int), np.asarray(ev.first, dtype=bool)
    hits = np.asarray(ev.hits, dtype=bool).reshape(len(buckets), ev.n_layers, ev.n_heads)
    mass = np.asarray(ev.mass, dtype=np.float32).reshape(hits.shape)
    rows, follows, masses, chosen = [], {}, {}, {}
    for b, (name, _, _) in enumerate(BUCKETS):
        one, two = (buckets == b) & first, (buckets == b) & ~first
        if one.sum() < min_arcs or two.sum() < min_arcs:
            continue
        chosen[name] = chosen_on = 100 * hits[one].mean(0)                   # (N, h)
        layer, head = np.unravel_index(int(np.argmax(chosen_on)), chosen_on.shape)   # first max: lowest layer
        k = best_offset(offsets[one])
        follows[name], masses[name] = 100 * hits[two].mean(0), mass[two].mean(0)
        held, base = float(follows[name][layer, head]), 100 * float(np.mean(offsets[two] == k))
        rows.append({"length": name, "n": int(two.sum()), "layer": int(layer) + 1, "head": int(head) + 1,
                     "follows": round(held, 1), "baseline": round(base, 1), "offset": k,
                     "ratio": round(held / base, 2) if base else None,
                     "mass": round(float(masses[name][layer, head]), 3)})
    halves = {"first": ev.n_first, "second": ev.n_sentences - ev.n_first}
    return LongArcReport(rows, follows, masses, chosen, ev.used, halves)


def sentence_line(rep: LongArcReport, layer: int, head: int, length: str = LONG) -> str | None:
    """The corpus verdict a student reads beside one sentence's head (layer, head, 0-based), or None.

    "Over 1,001 held-out sentences, layer 5 head 2 follows dependencies 8+ words long 2.1 times as often as any
    fixed offset (17.0% of 512 arcs, offset +8: 8.1%); layer 5 head 4, the one this sentence picks, does so in
    3.2% of them (rank 20 of 48)."
    """
    r = rep.row(length)
    if r is None:
        return None
    best = f"layer {r['layer']} head {r['head']}"
    times = (f"{r['ratio']:.1f} times as often as any fixed offset" if r["ratio"] else "while no fixed offset does")
    mine = float(rep.follows[length][layer, head])
    picks = ("is that head" if (layer + 1, head + 1) == (r["layer"], r["head"]) else
             f"does so in {mine:.1f}% of them (rank {rep.rank(layer, head, length)} of {rep.follows[length].size})")
    return (f"Over {rep.halves['second']:,} held-out sentences, {best} follows dependencies {length} words long "
            f"{times} ({r['follows']:.1f}% of {r['n']:,} arcs; the best offset, {r['offset']:+d} words: "
            f"{r['baseline']:.1f}%); layer {layer + 1} head {head + 1}, the one this sentence picks, {picks}.")


def card_summary(rep: LongArcReport, conllu: str, figure_head: tuple[int, int] | None = None) -> dict:
    """What the card keeps under figures.3.corpus: the long bucket's chosen head (1-based) and the length it was
    chosen for, every bucket's row, each layer's best held-out rate by length, and Figure 3's own head's rates
    (figure_head: its (layer, head), 0-based) with its rank in the long bucket."""
    r = rep.row(LONG) or {}
    out = {"length": LONG, "layer": r.get("layer"), "head": r.get("head"), "follows": r.get("follows"),
           "baseline": r.get("baseline"), "ratio": r.get("ratio"), "conllu": conllu, "sentences": rep.sentences,
           "halves": rep.halves, "buckets": rep.rows, "by_layer": rep.by_layer(),
           "rule": ("a head follows an arc when the query word's strongest link to another word is its partner "
                    "(both directions); head and offset chosen on the first half of the sentences, scored on the "
                    "second")}
    if figure_head is not None:
        layer, head = figure_head
        out["figure_head"] = {"layer": layer + 1, "head": head + 1,
                              "follows": {k: round(float(v[layer, head]), 1) for k, v in rep.follows.items()},
                              "rank": rep.rank(layer, head) if LONG in rep.follows else None}
    return out
