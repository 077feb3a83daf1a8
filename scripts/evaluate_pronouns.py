#!/usr/bin/env python
"""Does the checkpoint resolve 'its'? Contrastive accuracy on core/probes/pronouns_en_de.jsonl.

    python scripts/evaluate_pronouns.py checkpoints/news-small
    python scripts/evaluate_pronouns.py checkpoints/news-small --json pronouns.json   # every item's scores too

For each item the model scores the right German and the same sentence with the other possessive
(seine/ihre, ...) or pronoun (er/es/sie); it passes when the right one is more probable. Prints the
accuracy overall, for feminine and for masculine/neuter antecedents and by distance (words from the
antecedent to the pronoun), and writes it into CHECKPOINT/card.json under card["pronouns"].
A model that always writes sein- scores about 50% overall and 0% on feminine antecedents.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from core import CheckpointError, load_checkpoint
from core.checkpoint import update_card, write_json
from core.studies.pronouns import PRONOUN_SET, evaluate, load_pronoun_set, summarize
from scripts import cli



def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p)
    p.add_argument("--json", metavar="FILE", help="also write the summary and every item's scores to FILE")
    p.add_argument("--set", dest="probe_set", default=str(PRONOUN_SET), help="the pronoun set (JSON lines)")
    p.add_argument("--batch-size", type=int, default=128, help="sentences scored together")
    cli.add_device(p)
    p.add_argument("--no-card", action="store_true", help="do not write the result into card.json")
    return p.parse_args(argv)


def run(args) -> dict:
    """Evaluate, write the card (and --json); returns the summary."""
    folder = Path(args.checkpoint)
    tm = load_checkpoint(folder, cli.pick_device(args.device))
    items = load_pronoun_set(args.probe_set)
    if not items:
        raise ValueError(f"{args.probe_set} has no items.")
    t0 = time.time()
    results = evaluate(tm, items, batch_size=max(1, args.batch_size))
    summary = {**summarize(results), "set": Path(args.probe_set).name, "seconds": round(time.time() - t0, 1),
               "method": "contrastive: log P(right German) > log P(same sentence, other possessive or pronoun)"}
    if not args.no_card:
        update_card(folder, pronouns=summary)
    if args.json:
        write_json(args.json, {"checkpoint": str(folder), "summary": summary, "items": results})
    return summary


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        summary = run(args)
    except (CheckpointError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    def pct(v):
        return "n/a" if v is None else f"{100 * v:.1f}%"
    print(f"{args.checkpoint}: {pct(summary['accuracy'])} overall, {pct(summary['feminine'])} feminine, "
          f"{pct(summary['masc_neut'])} masculine/neuter ({summary['items']} items)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
