#!/usr/bin/env python
"""Training runs side by side at equal wall-clock: each run's dev scores after the same minutes of training.

    python scripts/compare_runs.py runs/cmp-d256 runs/cmp-d384
    python scripts/compare_runs.py runs/a runs/b --every 10 --json comparison.json

Reads each run's train_log.jsonl (scripts/train.py writes it): its validation lines (dev perplexity, greedy
BLEU, the pronoun test) and the wall time of its steps. Every --every minutes, up to the last validation of the
run that stopped first, it prints each run's latest validation by then: a larger, slower model is judged on what
it reaches in the same time, not in the same steps. A validation counts from the time of the step it followed
(elapsed_s, the run's training time, counted on over --resume and warm starts).
"""
from __future__ import annotations

import sys
from pathlib import Path

from core.checkpoint import write_json
from core.checkpoint.jsonl import split_train_log
from scripts import cli


def validations(run) -> list[dict]:
    """[{minutes, step, ppl, bleu, pronouns, feminine}] of a run's validations, in time order.

    Raises ValueError, naming the folder, when it has no log or the log has no timed validation."""
    path = Path(run) / "train_log.jsonl"
    if not path.exists():
        raise ValueError(f"{run} has no train_log.jsonl: is it a run folder of scripts/train.py (its --run)?")
    steps, valids = split_train_log(path)              # a run may still be writing it
    elapsed = {r["step"]: r["elapsed_s"] for r in steps if "elapsed_s" in r}
    out = []
    for r in valids:
        if r["step"] not in elapsed:
            continue
        pron = r.get("pronouns") or {}
        out.append({"minutes": round(elapsed[r["step"]] / 60, 1), "step": r["step"], "ppl": r.get("ppl"),
                    "bleu": r.get("bleu"), "pronouns": pron.get("accuracy"), "feminine": pron.get("feminine")})
    if not out:
        raise ValueError(f"{path} has no validation yet: train.py validates every --valid-every steps")
    return sorted(out, key=lambda v: v["minutes"])


def at_equal_time(runs: dict[str, list[dict]], every: float) -> list[dict]:
    """[{minutes, name: that run's latest validation by then}] every `every` minutes, from the time every run has
    one up to the time where the run that stopped first made its last (beyond it, one side has no new score)."""
    end = min(v[-1]["minutes"] for v in runs.values())
    first = int(-(-max(v[0]["minutes"] for v in runs.values()) // every))    # the first multiple with a score each
    times = [k * every for k in range(first, int(end // every + 1e-9) + 1)]
    return [{"minutes": t, **{name: [x for x in v if x["minutes"] <= t][-1] for name, v in runs.items()}}
            for t in times]


def fmt(v: dict) -> str:
    """One run's cell: step, perplexity, BLEU and the pronoun test's overall / feminine accuracy."""
    def num(x, spec):
        return "-" if x is None else format(x, spec)
    return (f"step {v['step']:>6} ppl {num(v['ppl'], '6.2f')} BLEU {num(v['bleu'], '5.2f')} "
            f"pron {num(v['pronouns'], '.2f')}/{num(v['feminine'], '.2f')}")


def main(argv=None) -> int:
    p = cli.parser(__doc__)
    p.add_argument("runs", nargs="+", help="run folders (train.py's --run), two or more")
    p.add_argument("--every", type=float, default=10.0, help="minutes between the rows")
    p.add_argument("--json", metavar="FILE", help="also write the table and every validation to FILE")
    args = p.parse_args(argv)
    if len(args.runs) < 2 or args.every <= 0:
        p.error("give two or more run folders, and --every above 0 minutes")
    try:
        runs = {str(r): validations(r) for r in args.runs}
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    table = at_equal_time(runs, args.every)
    if not table:
        print(f"The runs have no common time yet: each needs a validation before the others' last one, on the "
              f"--every {args.every:g} minute grid.", file=sys.stderr)
        return 1
    print("minutes  " + "  |  ".join(runs))
    for row in table:
        print(f"{row['minutes']:7.1f}  " + "  |  ".join(fmt(row[name]) for name in runs))
    if args.json:
        write_json(args.json, {"every_minutes": args.every, "table": table, "validations": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
