"""How fast the model writes step by step: TranslationModel.trace (every step recorded: candidates, attention) against
plain translate(), and the "How it writes" page's script run on a step change. Prints figures only.

    python scripts/bench/bench_trace.py [--repeats 7] [--threads 2] [--clicks 10]

(a) a 30-word sentence, beam 4, on checkpoints/news-small: trace() against translate(beam=4), interleaved, median
    of repeats (targets: trace <= 1.5 s and <= 3x translate); and beam 1 (greedy) for comparison.
(b) the page run headless (streamlit.testing AppTest) on that sentence: its first run (decoding included), then
    the median script run of a "Next" click, which only reads the cached trace (target <= 150 ms).
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import core
from core.paths import REPO

CKPT = REPO / "checkpoints" / "news-small"
PAGE = REPO / "app" / "screens" / "how_it_writes.py"
# 30 words of news (the kind of sentence news-small was trained on)
SENTENCE = ("The government said on Tuesday that the new rules for banks would come into force next year, "
            "although several ministers warned that the costs for small savers could rise sharply.")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_trace(tm: core.TranslationModel, beam: int, repeats: int) -> tuple[float, float, int]:
    """(median seconds of trace, of translate, steps), interleaved so that both see the same load."""
    tm.trace(SENTENCE, beam=beam), tm.translate([SENTENCE], beam=beam)          # warm-up
    traced, plain = [], []
    for _ in range(repeats):
        traced.append(timed(lambda: tm.trace(SENTENCE, beam=beam)))
        plain.append(timed(lambda: tm.translate([SENTENCE], beam=beam)))
    return statistics.median(traced), statistics.median(plain), len(tm.trace(SENTENCE, beam=beam).steps)


def bench_page(clicks: int) -> tuple[float, float]:
    """(seconds of the page's first run, median seconds of a step change's run)."""
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(str(PAGE), default_timeout=600)
    at.session_state["checkpoint"] = CKPT.name
    at.query_params["text"] = SENTENCE
    first = timed(at.run)
    runs = []
    for _ in range(clicks):
        button = at.button(key="hw_next")
        if button.disabled:
            at.session_state["hw_step"] = 1
            button = at.button(key="hw_next")
        runs.append(timed(button.click().run))
        assert not at.exception, [e.value for e in at.exception]
    return first, statistics.median(runs)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2, help="torch threads (the project's CPU target: 2 cores)")
    ap.add_argument("--clicks", type=int, default=10)
    args = ap.parse_args(argv)
    if not (CKPT / "model.safetensors").exists():
        raise SystemExit(f"{CKPT} is missing: this benchmark measures the shipped news-small.")
    torch.set_num_threads(args.threads)
    tm = core.load_checkpoint(CKPT)
    print(f"sentence: {len(SENTENCE.split())} words, {len(tm.source_ids(SENTENCE))} source pieces; "
          f"torch threads {torch.get_num_threads()}")
    for beam in (4, 1):
        traced, plain, steps = bench_trace(tm, beam, args.repeats)
        print(f"beam {beam}: trace {traced:.3f} s, translate {plain:.3f} s, ratio {traced / plain:.2f}x, "
              f"{steps} steps (median of {args.repeats})")
        if beam == 4:
            print(f"  targets: trace <= 1.5 s {'met' if traced <= 1.5 else 'MISSED'}, <= 3x translate "
                  f"{'met' if traced <= 3 * plain else 'MISSED'}")
    first, step = bench_page(args.clicks)
    print(f"page: first run {first:.2f} s (decoding included); a step change's run {step * 1000:.0f} ms "
          f"(median of {args.clicks}; target <= 150 ms {'met' if step <= 0.15 else 'MISSED'})")


if __name__ == "__main__":
    main()
