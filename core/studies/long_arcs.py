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

from collections import Counter
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
    halves = {"first": ev.used_first, "second": ev.used - ev.used_first}     # sentences scored, not skipped ones
    return LongArcReport(rows, follows, masses, chosen, ev.used, halves)


def random_halvings(ev: Evaluation, length: str = LONG, splits: int = 200, seed: int = 0) -> dict:
    """report's choice over `splits` random halvings of the sentences instead of the one in file order: the mean
    and 5th-95th percentiles of the chosen head's held-out rate, of the offset baseline and of their ratio, and
    how often the most chosen head (1-based) was chosen. One halving in file order puts the treebank's later
    documents (other genres) on the scoring side; this says how much that choice moves the figure."""
    b = next(i for i, (name, _, _) in enumerate(BUCKETS) if name == length)
    sel = bucket_of(ev.offsets) == b
    if not sel.any():
        return {}
    hits = np.asarray(ev.hits, dtype=bool).reshape(-1, ev.n_layers, ev.n_heads)[sel]
    sentence, offsets = np.asarray(ev.sentence)[sel], np.asarray(ev.offsets, dtype=int)[sel]
    rng, rows, heads = np.random.default_rng(seed), [], Counter()
    for _ in range(splits):
        first = np.zeros(ev.used, dtype=bool)
        first[rng.permutation(ev.used)[: ev.used // 2]] = True
        one = first[sentence]
        if one.all() or not one.any():
            continue
        layer, head = np.unravel_index(int(np.argmax(hits[one].mean(0))), hits.shape[1:])
        follows = 100 * float(hits[~one][:, layer, head].mean())
        base = 100 * float(np.mean(offsets[~one] == best_offset(offsets[one])))
        rows.append((follows, base, follows / base if base else np.nan))
        heads[int(layer) + 1, int(head) + 1] += 1
    if not rows:
        return {}
    r = np.asarray(rows)
    def spread(col):
        return {"mean": round(float(np.nanmean(col)), 2), "p05": round(float(np.nanpercentile(col, 5)), 2),
                "p95": round(float(np.nanpercentile(col, 95)), 2)}
    (layer, head), n = heads.most_common(1)[0]
    return {"splits": len(rows), "follows": spread(r[:, 0]), "baseline": spread(r[:, 1]), "ratio": spread(r[:, 2]),
            "head": {"layer": layer, "head": head, "chosen": n}}


def sentence_line(summary: dict, layer: int, head: int) -> str | None:
    """The corpus verdict a student reads beside one sentence's head (layer, head, 0-based), from card_summary;
    None without a long bucket.

    "Over 972 held-out sentences, layer 5 head 2 follows dependencies 8+ words long 2.1 times as often as any
    fixed offset (18.5% of 1,326 arcs; the best offset, -8 words: 8.9%); layer 5 head 4, the one this sentence
    picks, does so in 2.2% of them (rank 26 of 48)."
    """
    r = next((r for r in summary.get("buckets", []) if r["length"] == summary["length"]), None)
    grid = np.asarray(summary.get("grid") or [[]], dtype=float)
    if r is None or not (layer < grid.shape[0] and head < grid.shape[1]):
        return None
    times = (f"{r['ratio']:.1f} times as often as any fixed offset" if r["ratio"] else "while no fixed offset does")
    if (layer + 1, head + 1) == (r["layer"], r["head"]):
        picks = "is that head"
    else:
        rank = int((grid > grid[layer, head]).sum()) + 1
        picks = f"does so in {grid[layer, head]:.1f}% of them (rank {rank} of {grid.size})"
    spread = (summary.get("random_halvings") or {}).get("ratio")
    again = (f"; over {summary['random_halvings']['splits']} random halvings {spread['mean']:.1f} times on average, "
             f"{spread['p05']:.1f}-{spread['p95']:.1f}" if spread else "")
    return (f"Over {summary['halves']['second']:,} held-out sentences, layer {r['layer']} head {r['head']} follows "
            f"dependencies {r['length']} words long {times} ({r['follows']:.1f}% of {r['n']:,} arcs; the best "
            f"offset, {r['offset']:+d} words: {r['baseline']:.1f}%{again}); layer {layer + 1} head {head + 1}, the "
            f"one this sentence picks, {picks}.")


def card_summary(rep: LongArcReport, conllu: str, figure_head: tuple[int, int] | None = None) -> dict:
    """What the card keeps under figures.3.corpus: the long bucket's chosen head (1-based) and the length it was
    chosen for, every bucket's row, each layer's best held-out rate by length, every head's held-out rate in the
    long bucket (grid, layers x heads), and Figure 3's own head's rates (figure_head: its (layer, head), 0-based)
    with its rank in the long bucket."""
    r = rep.row(LONG) or {}
    out = {"length": LONG, "layer": r.get("layer"), "head": r.get("head"), "follows": r.get("follows"),
           "baseline": r.get("baseline"), "ratio": r.get("ratio"), "conllu": conllu, "sentences": rep.sentences,
           "halves": rep.halves, "buckets": rep.rows, "by_layer": rep.by_layer(),
           "grid": np.round(rep.follows[LONG], 1).tolist() if LONG in rep.follows else None,
           "rule": ("a head follows an arc when the query word's strongest link to another word is its partner "
                    "(both directions); head and offset chosen on the first half of the sentences, scored on the "
                    "second")}
    if figure_head is not None:
        layer, head = figure_head
        out["figure_head"] = {"layer": layer + 1, "head": head + 1,
                              "follows": {k: round(float(v[layer, head]), 1) for k, v in rep.follows.items()},
                              "rank": rep.rank(layer, head) if LONG in rep.follows else None}
    return out
