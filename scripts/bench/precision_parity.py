#!/usr/bin/env python
"""Does bf16 training learn as well as fp32? Two short runs, same data, seed and steps, one per precision,
side by side (one thread each); prints both dev-loss curves, the gap, and each run's tokens/s.

    python scripts/bench/precision_parity.py --data data/multi30k --steps 600 --valid-every 100

Pass mark (bf16 may replace fp32 only if it learns as well): the dev loss of the bf16 run within 2% of the fp32
run's at the end.
Runs go to artifacts/parity/{fp32,bf16} (git-ignored).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path
from core.checkpoint.jsonl import split_train_log
from core.paths import REPO



def run_pair(args) -> dict:
    """Start both runs at once (each on its own core), wait for them; precision -> run folder."""
    runs, procs = {}, []
    for prec in ("fp32", "bf16"):
        run = Path(args.out) / prec
        runs[prec] = run
        cmd = [sys.executable, str(REPO / "scripts" / "train.py"), "--data", args.data, "--run", str(run),
               "--preset", "small", "--set", "norm=pre", "--clip", "1.0", "--max-tokens", str(args.max_tokens),
               "--warmup", str(args.warmup), "--lr-scale", "0.4", "--max-steps", str(args.steps),
               "--valid-every", str(args.valid_every), "--valid-sentences", str(args.valid_sentences),
               "--bleu-sentences", "0", "--threads", "1", "--seed", "1", "--precision", prec, "--no-progress",
               "--save-every-steps", str(args.steps)]
        if not args.reuse or not (run / "train_log.jsonl").exists():
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL))
    for p in procs:
        if p.wait():
            sys.exit(f"a training run failed (exit {p.returncode}): run it by hand to see why")
    return runs


def curves(run: Path) -> tuple[dict, float]:
    """(step -> dev loss, median target tokens/s) of one run's log."""
    steps, valids = split_train_log(run / "train_log.jsonl")        # a killed run may end in half a line
    dev = {r["step"]: r["loss"] for r in valids}
    return dev, statistics.median(r["tokens_per_s"] for r in steps if "tokens_per_s" in r)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="data/multi30k")
    p.add_argument("--out", default="artifacts/parity")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--valid-every", type=int, default=100)
    p.add_argument("--valid-sentences", type=int, default=1014)
    p.add_argument("--max-tokens", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=800)
    p.add_argument("--reuse", action="store_true", help="only print the table of runs already made")
    args = p.parse_args(argv)
    if not (Path(args.data) / "spm.model").exists():
        sys.exit(f"no prepared data at {args.data}: run scripts/prepare_data.py first (see README)")

    runs = run_pair(args)
    (fp32, fp32_tok), (bf16, bf16_tok) = curves(runs["fp32"]), curves(runs["bf16"])
    print(f"dev loss (label-smoothed), {args.valid_sentences} sentences of {args.data}; same seed, data and steps")
    print(f"{'step':>6} {'fp32':>8} {'bf16':>8} {'bf16/fp32 - 1':>14}")
    for step in sorted(set(fp32) & set(bf16)):
        print(f"{step:>6} {fp32[step]:8.4f} {bf16[step]:8.4f} {bf16[step] / fp32[step] - 1:+14.2%}")
    last = max(set(fp32) & set(bf16))
    gap = bf16[last] / fp32[last] - 1
    print(f"target tokens/s (median, one thread each, side by side): fp32 {fp32_tok:.0f}, bf16 {bf16_tok:.0f} "
          f"({bf16_tok / fp32_tok:.2f}x)")
    print(f"final gap {gap:+.2%}: {'within' if abs(gap) <= 0.02 else 'NOT within'} 2%")
    return {"fp32": fp32, "bf16": bf16, "gap": gap, "tokens_per_s": {"fp32": fp32_tok, "bf16": bf16_tok}}


if __name__ == "__main__":
    main()
