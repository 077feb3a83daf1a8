"""How fast "why this word and not that one?" is: TranslationModel.contrast with each method on a 30-word sentence.
Prints figures only.

    python scripts/bench/bench_contrast.py [--repeats 5] [--threads 2] [--steps 64]

On checkpoints/news-small, a 30-word news sentence with an 'its', at the step that writes its possessive 'ihre'
(prefix: the model's own greedy words before it), 'ihre' against 'seine'; the methods interleaved, median of
repeats. Targets: gradient x input and ALTI-Logit <= 1 s, integrated gradients (--steps points) and erasure <= 3 s.
Also prints the load average: other work on the machine slows every figure.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

import core
from core.attribution import DEFAULT_STEPS, METHODS
from core.paths import REPO

CKPT = REPO / "checkpoints" / "news-small"
# 30 words of news with an 'its' (bench_trace.py's sentence, its antecedent made a company)
SENTENCE = ("The company said on Tuesday that its new rules for savers would come into force next year, "
            "although several ministers warned that the costs for small banks could rise sharply.")
TARGETS = {"erasure": 3.0, "gradient": 1.0, "integrated": 3.0, "alti_logit": 1.0}


def the_step(tm) -> tuple[str, str, str]:
    """(prefix, chosen, other): the model's own words before its first sein-/ihr- word (or its 5th word)."""
    words = tm.translate(SENTENCE, beam=1).split()
    at = next((i for i, w in enumerate(words) if w.lower().startswith(("ihr", "sein"))), 5)
    chosen = words[at].strip(".,")
    other = {"i": "seine", "s": "ihre"}.get(chosen[:1].lower(), "und")
    return " ".join(words[:at]), chosen, other


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="torch threads (the project's CPU target: 2 cores)")
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="integrated gradients' points")
    args = ap.parse_args(argv)
    if not (CKPT / "model.safetensors").exists():
        raise SystemExit(f"{CKPT} is missing: this benchmark measures the shipped news-small.")
    torch.set_num_threads(args.threads)
    tm = core.load_checkpoint(CKPT)
    prefix, chosen, other = the_step(tm)
    print(f"sentence: {len(SENTENCE.split())} words, {len(tm.source_ids(SENTENCE))} source pieces; step after "
          f"'{prefix[-40:]}': '{chosen}' against '{other}'; torch threads {torch.get_num_threads()}; "
          f"load average before {os.getloadavg()[0]:.2f}")
    times = {m: [] for m in METHODS}
    for m in METHODS:                                                     # warm-up
        tm.contrast(SENTENCE, prefix, chosen, other, method=m, steps=args.steps)
    for _ in range(args.repeats):
        for m in METHODS:
            start = time.perf_counter()
            tm.contrast(SENTENCE, prefix, chosen, other, method=m, steps=args.steps)
            times[m].append(time.perf_counter() - start)
    for m in METHODS:
        t = statistics.median(times[m])
        print(f"{m:<11} {t:6.3f} s (median of {args.repeats}; target <= {TARGETS[m]:g} s "
              f"{'met' if t <= TARGETS[m] else 'MISSED'})")
    ig = tm.contrast(SENTENCE, prefix, chosen, other, method="integrated", steps=args.steps)
    print(f"integrated gradients at {args.steps} points: completeness gap {ig.completeness_gap:.3f} of a log-odds "
          f"change of {ig.log_odds - ig.baseline_log_odds:.2f}; load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
