#!/usr/bin/env python
"""Does the checkpoint resolve 'its'? Contrastive accuracy on core/studies/probes/pronouns_en_de.jsonl.

    python scripts/evaluate_pronouns.py checkpoints/news-small
    python scripts/evaluate_pronouns.py checkpoints/news-small --json pronouns.json   # every item's scores too

For each item the model scores the right German and the same sentence with the other possessive
(seine/ihre, ...) or pronoun (er/es/sie); it passes when the right one is more probable. Prints the
accuracy overall, for feminine and for masculine/neuter antecedents and by distance (words from the
antecedent to the pronoun), how well the model tells the genders apart whatever its overall lean
("separation", an AUC) and that lean ("feminine_lean", nats), and writes it into CHECKPOINT/card.json under
card["pronouns"].
It also scores the encoder's heads on core/studies/probes/anaphora_en.jsonl (does the pronoun attend most to its
antecedent?): the best head chosen on the first half of the sentences, scored on the second half, goes to
card["pronouns"]["anaphora_head"] (core.studies.emergence.held_out_hits).
A model that always writes sein- scores about 50% overall and 0% on feminine antecedents.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from core import CheckpointError, load_checkpoint
from core.checkpoint import update_card, write_json
from core.studies import emergence
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


def anaphora_head(tm) -> dict:
    """The held-out anaphora head: chosen on the first half of anaphora_en.jsonl, its hit rate on the second
    (layer and head counted from 1, as on the card's other heads); {} when too few sentences line up."""
    row = emergence.model_scores(tm, tm.card.steps, spread=True)
    if "hit_held_out" not in row:
        return {}
    return {"layer": row["hit_held_out_layer"] + 1, "head": row["hit_held_out_head"] + 1,
            "hit_rate_second_half": round(row["hit_held_out"], 4), "chance": round(row["hit_held_out_chance"], 4),
            "sentences_second_half": row["hit_held_out_sentences"],
            "best_on_the_whole_set": round(row["hit_best"], 4),
            "random_halvings": {k: round(v, 4) if isinstance(v, float) else v
                                for k, v in row.get("hit_held_out_spread", {}).items()},
            "rule": "the encoder head whose pronoun rows most often point at the antecedent (itself and </s> aside) "
                    "on the first half of anaphora_en.jsonl, scored on the second half"}


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
    summary["anaphora_head"] = anaphora_head(tm)
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
          f"{pct(summary['masc_neut'])} masculine/neuter ({summary['items']} items); genders separated "
          f"{summary['separation']} (0.5: ignored, 1: always), mean lean to the feminine form "
          f"{summary['feminine_lean']:+.2f} nats", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
