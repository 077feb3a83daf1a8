#!/usr/bin/env python
"""Training speed of this tree against an older commit, side by side: train.py's own tokens/s, interleaved.

    python scripts/bench/bench_train_speed.py --data data/wmt-en-de --baseline 0538829

The baseline commit is exported with `git archive` into artifacts/speed/<commit>/ (git-ignored) and its own
scripts/train.py runs from there, so each side is exactly the code of its commit. Both sides run the news-small
recipe (bf16, 2 threads, 3,500-token batches) for --steps steps from the same seed, taking turns --rounds times
(A B, then B A, ...), so that a slow minute of a shared machine hits both and neither side always runs second
(an A/A run, the same code on both sides, read 0.91x for the side that ran second); the figure is the median
over each side's JSONL log lines (`tokens_per_s`, one a step) after the first --skip steps of every segment.
Run it on an idle machine: a training run beside it takes the same cores. Prints one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from core.checkpoint import read_jsonl
from core.paths import REPO

RECIPE = ["--preset", "small", "--set", "norm=pre", "--clip", "1.0", "--threads", "2", "--max-tokens", "3500",
          "--warmup", "600", "--lr-scale", "0.4", "--precision", "bf16", "--valid-every", "0", "--seed", "1",
          "--no-progress", "--save-every-min", "1000"]


def export_commit(commit: str, dest: Path) -> Path:
    """The tree of `commit` in dest/<commit>/ (made once), from `git archive`."""
    folder = dest / commit
    if not (folder / "scripts" / "train.py").exists():
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile() as tar:
            subprocess.run(["git", "-C", str(REPO), "archive", commit], stdout=tar, check=True)
            tar.seek(0)
            tarfile.open(fileobj=tar).extractall(folder, filter="data")
    return folder


def segment(tree: Path, data: str, run: Path, steps: int, overrides: list[str]) -> list[float]:
    """One run of tree's train.py for `steps` steps in a fresh run folder; its tokens/s, one a step.

    overrides: config KEY=VALUE pairs added to the recipe's --set norm=pre."""
    env = {**os.environ, "PYTHONPATH": str(tree)}      # the tree's own core, not the installed one
    recipe = RECIPE[:RECIPE.index("norm=pre") + 1] + overrides + RECIPE[RECIPE.index("norm=pre") + 1:]
    cmd = [sys.executable, str(tree / "scripts" / "train.py"), "--data", str(Path(data).resolve()),
           "--run", str(run), "--max-steps", str(steps), *recipe]
    subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    return [r["tokens_per_s"] for r in read_jsonl(run / "train_log.jsonl") if "tokens_per_s" in r]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="a corpus prepared by scripts/prepare_data.py")
    p.add_argument("--baseline", default="0538829", help="the commit to compare with")
    p.add_argument("--steps", type=int, default=80, help="steps a segment")
    p.add_argument("--skip", type=int, default=10, help="steps left out at the start of each segment (warm-up)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", default=str(REPO / "artifacts" / "speed"))
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="config overrides for both sides")
    p.add_argument("--this-set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="config overrides for this tree only, e.g. attn_dropout=0 ffn_dropout=0 (the paper's "
                        "dropout, which commits before 3419519 of 2026-12-01 cannot set)")
    args = p.parse_args(argv)
    if args.skip >= args.steps:
        p.error("--skip must be smaller than --steps")
    out = Path(args.out)
    trees = {"baseline": export_commit(args.baseline, out), "this tree": REPO}
    rates = {name: [] for name in trees}
    for r in range(args.rounds):
        order = list(trees.items()) if r % 2 == 0 else list(trees.items())[::-1]   # A B, B A: on this machine the
        for name, tree in order:                                                # second of a pair reads slower
            run = out / "runs" / f"{name.replace(' ', '_')}_{r}"
            if run.exists():
                for f in run.rglob("*"):
                    if f.is_file():
                        f.unlink()
            overrides = args.set + (args.this_set if name == "this tree" else [])
            got = segment(tree, args.data, run, args.steps, overrides)[args.skip:]
            rates[name] += got
            print(f"round {r + 1}, {name}: median {statistics.median(got):.0f} tokens/s", file=sys.stderr, flush=True)
    medians = {name: round(statistics.median(v), 1) for name, v in rates.items()}
    print(json.dumps({"baseline": args.baseline, "set": args.set, "this_set": args.this_set,
                      "tokens_per_s": medians, "steps_counted": len(rates["baseline"]),
                      "speed_up": round(medians["this tree"] / medians["baseline"], 3)}))


if __name__ == "__main__":
    main()
