#!/usr/bin/env python
"""Which explanation of "why this word and not that one?" to trust: erase the source words each one ranks highest.

    python scripts/evaluate_contrast.py checkpoints/news-small                  # the pronoun test + worked sentences
    python scripts/evaluate_contrast.py checkpoints/news-small --items 20 --no-write

At each German pronoun of the pronoun test (and of the model's own translations of the worked sentences), the
model's preferred form is contrasted with the other gender's. Each method of TranslationModel.contrast (erasure,
gradient x input, integrated gradients, ALTI-Logit), the step's cross-attention (mean of heads, and the best head)
and a random order rank the source words; the top 1 and top 3 are erased (pieces deleted) and we count how often
the preference flips and how far the log-odds falls (core/studies/contrast_faithfulness.py). The table is printed
and written to the checkpoint folder as contrast_faithfulness.json (How it writes and Which pronoun? show it);
--no-write leaves the folder alone.
"""
from __future__ import annotations

import sys
from pathlib import Path

from tqdm import tqdm

from core import CheckpointError, load_checkpoint
from core.attribution import DEFAULT_STEPS
from core.checkpoint import write_json
from core.studies import contrast_faithfulness as cf
from scripts import cli


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p)
    p.add_argument("--items", type=int, default=0, help="only the first N items of the pronoun test (0: all)")
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="integrated gradients' points (%(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random order")
    p.add_argument("--json", help="also write the result to this file")
    p.add_argument("--no-write", action="store_true", help=f"do not write {cf.RESULT_FILE} into the checkpoint folder")
    cli.add_threads(p, default=1, help="CPU threads (small passes: 1 is usually fastest)")
    cli.add_progress(p)
    return p.parse_args(argv)


def describe(r: dict) -> str:
    """The table as text."""
    head = r.get("best_head") or {}
    lines = [f"{r['cases']} cases ({len(r['skipped'])} skipped); the source words each ranker puts first are erased; "
             f"best head: layer {head.get('layer')}, head {head.get('head')} (chosen on these cases)",
             f"{'ranker':<12} {'top':>3} {'flipped':>8} {'mean fall':>10} {'± s.e.':>8}"]
    for x in r["table"]:
        lines.append(f"{x['ranker']:<12} {x['top']:>3} {cli.cell(x['flipped'], 8, '.1%')} "
                     f"{cli.cell(x['mean_fall'], 10)} {cli.cell(x['stderr'], 8)}")
    lines.append(f"most faithful (top 1, erasure and random aside): {r['most_faithful']}; seconds per case: "
                 + ", ".join(f"{m} {s}" for m, s in r["seconds_per_case"].items()))
    return "\n".join(lines)


def run(args) -> dict:
    if args.items < 0 or args.threads < 1:
        raise ValueError("--items must be 0 or more and --threads at least 1.")
    cli.set_threads(args.threads)
    folder = Path(args.checkpoint)
    tm = load_checkpoint(folder)
    cases, skipped = cf.all_cases(tm, args.items)
    with tqdm(total=len(cases), unit="case", disable=args.no_progress, dynamic_ncols=True) as bar:
        out = cf.measure(tm, cases, args.steps, args.seed, progress=lambda done, total: bar.update(done - bar.n))
    out.skipped = skipped + out.skipped
    result = {"checkpoint": folder.name, "steps": args.steps, "seed": args.seed, **cf.report(out)}
    if args.json:
        write_json(args.json, result)
    if not args.no_write:
        write_json(folder / cf.RESULT_FILE, result)
    return result


main = cli.command(parse_args, run, describe, (CheckpointError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
