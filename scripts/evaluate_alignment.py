#!/usr/bin/env python
"""Score every cross-attention head as a word aligner against human gold links (AER, Och & Ney 2003).

    python scripts/evaluate_alignment.py checkpoints/news-small                       # RWTH de-en gold, argmax
    python scripts/evaluate_alignment.py checkpoints/news-small --json align.json --as-tokenized

Each gold pair is teacher-forced: the English side is the model's source and the German side its
target (our models translate English -> German; the RWTH gold calls the pair German-English, and its
gold.talp lists the English index first). Every head, every layer's head average and the all-head
average are scored under both shifts ("produced": the step that writes a word; "read": the step that
has just read it, Chen et al. 2020's Shift-Att). The best single head and the best layer average are
chosen on the first half of the pairs; their AER on the second half is the held-out figure. The
diagonal baseline links each German word to the English word at the same relative position.

The gold text is tokenised ("end ." and "do n't"); by default it is detokenised for the model ("end.")
and the model's pieces are mapped back onto the gold words by the characters they spell.
--as-tokenized feeds the tokenised text unchanged instead. The result goes into the checkpoint's
card.json under "alignment" (an --as-tokenized run under "alignment"."as_tokenized_result"); --json writes
the full list of heads.
"""
from __future__ import annotations

import sys
from pathlib import Path

from tqdm import tqdm

from core import CheckpointError, load_checkpoint
from core.studies import alignment as al
from core.checkpoint import read_card, update_card, write_json
from core.paths import portable
from scripts import cli


TOKENIZED = "as_tokenized_result"      # card["alignment"][TOKENIZED]: the summary of an --as-tokenized run
SUMMARY = ("pairs", "scored", "skipped", "shared_piece_pairs", "selected", "best_layer", "all_heads", "diagonal",
           "seconds")


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p)
    p.add_argument("--gold", default=str(al.DEFAULT_GOLD),
                   help="folder with src.en, tgt.de and gold.talp (English index first); default: %(default)s")
    p.add_argument("--json", help="write the full result (every head) to this file")
    p.add_argument("--as-tokenized", action="store_true",
                   help="feed the gold's tokenised text (spaces around punctuation) to the model unchanged")
    p.add_argument("--method", default="argmax", choices=list(al.METHODS), help="how links are read from a map")
    p.add_argument("--threshold", type=float, default=0.5, help="with --method threshold: the smallest weight linked")
    p.add_argument("--limit", type=int, default=0, help="only the first N pairs (0: all); the card is then left alone")
    p.add_argument("--no-card", action="store_true", help="do not write the result into card.json")
    cli.add_threads(p, default=1, help="CPU threads (one sentence at a time: 1 is usually fastest)")
    cli.add_progress(p)
    return p.parse_args(argv)


def record_alignment(folder: Path, result: dict, as_tokenized: bool) -> None:
    """Set card["alignment"] (or its "as_tokenized" part) and nothing else; re-read first, write atomically."""
    old = read_card(folder).alignment or {}
    entry = {k: v for k, v in result.items() if k != "heads"}          # the full list lives in --json
    if as_tokenized:
        entry = {**old, TOKENIZED: {k: entry[k] for k in SUMMARY}}
    elif TOKENIZED in old:                                             # keep the other way's summary
        entry[TOKENIZED] = old[TOKENIZED]
    update_card(folder, alignment=entry)


def percent(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def describe(r: dict) -> str:
    """A few readable lines about a result."""
    s, b = r["selected"], r["best_layer"]
    return "\n".join([
        f"{r['scored']} of {r['pairs']} pairs scored, {r['skipped']} skipped"
        + (f" ({'; '.join(r['skipped_reasons'])})" if r["skipped"] else "")
        + f", {r['shared_piece_pairs']} with a piece spelling two gold words; {r['seconds']} s",
        f"best head (chosen on the first {r['halves']['first']} pairs): layer {s['layer']}, head {s['head']}, "
        f"shift '{s['shift']}': AER {percent(s['aer_second_half'])} on the other {r['halves']['second']} "
        f"(precision {percent(s['precision_second_half'])}, recall {percent(s['recall_second_half'])})",
        f"best layer average: layer {b['layer']}, shift '{b['shift']}': AER {percent(b['aer_second_half'])} held out",
        "all-head average: " + ", ".join(f"{k} {percent(v)}" for k, v in r["all_heads"].items()),
        f"diagonal baseline: AER {percent(r['diagonal']['aer_second_half'])} held out "
        f"({percent(r['diagonal']['aer'])} on all pairs)"])


def run(args) -> dict:
    if args.limit < 0 or args.threads < 1:
        raise al.AlignmentError("--limit cannot be negative and --threads must be at least 1.")
    cli.set_threads(args.threads)
    folder = Path(args.checkpoint)
    tm = load_checkpoint(folder)
    pairs = al.read_gold(args.gold)
    pairs = pairs[: args.limit] if args.limit else pairs
    with tqdm(total=len(pairs), unit="pair", disable=args.no_progress, dynamic_ncols=True) as bar:
        ev = al.evaluate(tm, pairs, args.as_tokenized, args.method, args.threshold,
                         progress=lambda done, total: bar.update(done - bar.n))
    result = {"checkpoint": folder.name, "gold": portable(args.gold),
              "direction": "English (gold src.en) is the model's source, German (tgt.de) its target",
              "as_tokenized": args.as_tokenized, **al.report(ev, args.method, args.threshold)}
    if args.json:
        write_json(args.json, result)
    if not args.no_card and not args.limit:
        record_alignment(folder, result, args.as_tokenized)
    return result


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        result = run(args)
    except (al.AlignmentError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(describe(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
