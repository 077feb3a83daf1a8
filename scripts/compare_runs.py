#!/usr/bin/env python
"""Training runs side by side at equal wall-clock: each run's dev scores after the same minutes of training.

    python scripts/compare_runs.py runs/cmp-d256 runs/cmp-d384
    python scripts/compare_runs.py runs/a runs/b --every 10 --json comparison.json
    python scripts/compare_runs.py runs/news-drop03 runs/news-drop01 --since-warm-start

Reads each run's train_log.jsonl (scripts/train.py writes it): its validation lines (dev perplexity, greedy
BLEU, the pronoun test) and the wall time of its steps. Every --every minutes, up to the last validation of the
run that stopped first, it prints each run's latest validation by then: a larger, slower model is judged on what
it reaches in the same time, not in the same steps. A validation counts from the time of the step it followed
(elapsed_s, the run's training time, counted on over --resume and warm starts).

--since-warm-start compares warm starts (train.py --init-from) made from different checkpoints: each run's clock
starts at the step it was started from (its state's record of the warm start), the checkpoint's own last
validation is its row at minute 0, and the earlier lines of the log it inherited are left out.
"""
from __future__ import annotations

import sys
from pathlib import Path

from core.checkpoint import write_json
from core.checkpoint.jsonl import split_train_log
from core.training.state import read_info
from scripts import cli


def warm_start_step(run) -> int:
    """The step a warm-started run began from (train.py's resume state records it); ValueError if it was not one."""
    state = Path(run) / "state.safetensors"
    init = (read_info(state).get("init") or {}) if state.exists() else {}
    if "step" not in init:
        raise ValueError(f"{run} is not a warm start, or has not saved yet (no state.safetensors recording an "
                         "--init-from step): leave out --since-warm-start, or wait for its first save")
    return int(init["step"])


def validations(run, since_warm_start: bool = False) -> list[dict]:
    """[{minutes, step, ppl, bleu, pronouns, feminine, separation}] of a run's validations, in time order.

    since_warm_start: minutes and validations count from the run's warm-start step (see warm_start_step).
    Raises ValueError, naming the folder, when it has no log or the log has no timed validation."""
    path = Path(run) / "train_log.jsonl"
    if not path.exists():
        raise ValueError(f"{run} has no train_log.jsonl: is it a run folder of scripts/train.py (its --run)?")
    start = warm_start_step(run) if since_warm_start else 0
    steps, valids = split_train_log(path)              # a run may still be writing it
    elapsed = {r["step"]: r["elapsed_s"] for r in steps if "elapsed_s" in r}
    zero = elapsed.get(start, 0.0)                     # logs start at step 1: no warm start counts from 0 s
    out = []
    for r in valids:
        if r["step"] not in elapsed or r["step"] < start:
            continue
        pron = r.get("pronouns") or {}
        out.append({"minutes": round((elapsed[r["step"]] - zero) / 60, 1), "step": r["step"], "ppl": r.get("ppl"),
                    "bleu": r.get("bleu"), "pronouns": pron.get("accuracy"), "feminine": pron.get("feminine"),
                    "separation": pron.get("separation")})
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
    """One run's cell: step, perplexity, BLEU, the pronoun test's overall / feminine accuracy and how well it tells
    the genders apart (separation; "-" in logs written before 2026-12-03)."""
    def num(x, spec):
        return "-" if x is None else format(x, spec)
    return (f"step {v['step']:>6} ppl {num(v['ppl'], '6.2f')} BLEU {num(v['bleu'], '5.2f')} "
            f"pron {num(v['pronouns'], '.2f')}/{num(v['feminine'], '.2f')} sep {num(v['separation'], '.2f')}")


def main(argv=None) -> int:
    p = cli.parser(__doc__)
    p.add_argument("runs", nargs="+", help="run folders (train.py's --run), two or more")
    p.add_argument("--every", type=float, default=10.0, help="minutes between the rows")
    p.add_argument("--json", metavar="FILE", help="also write the table and every validation to FILE")
    p.add_argument("--since-warm-start", action="store_true",
                   help="count each run's minutes from its warm start (train.py --init-from), from minute 0")
    args = p.parse_args(argv)
    if len(args.runs) < 2 or args.every <= 0:
        p.error("give two or more run folders, and --every above 0 minutes")
    try:
        runs = {str(r): validations(r, args.since_warm_start) for r in args.runs}
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
