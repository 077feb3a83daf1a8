#!/usr/bin/env python
"""Score every cross-attention head as a word aligner against human gold links (AER, Och & Ney 2003).

    python scripts/evaluate_alignment.py checkpoints/news-small                       # RWTH de-en gold, argmax
    python scripts/evaluate_alignment.py checkpoints/news-small --json align.json --as-tokenized
    python scripts/evaluate_alignment.py checkpoints/news-small --weights attention norm alti    # all three ways

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

--weights reads the links from other maps than the attention weights (core/studies/alignment_weights.py):
"norm", the norm-based maps of Kobayashi et al. 2020 (every head's ||alpha f(x)||, and each layer's heads summed
as vectors), and "alti", ALTI+ source contributions (Ferrando et al. 2022; rolled through layers 1..l, and one
block's own). Every head and layer of each is scored the same way; the card gets the best of each under
"alignment"."by_weights" and, with two or more, which wins on the held-out half ("alignment"."held_out_winner").
"""
from __future__ import annotations

import sys
from pathlib import Path

from tqdm import tqdm

from core import CheckpointError, load_checkpoint
from core.studies import alignment as al
from core.studies import alignment_gold as ag
from core.studies import alignment_weights as aw
from core.checkpoint import read_card, update_card, write_json
from core.paths import portable
from scripts import cli


TOKENIZED = "as_tokenized_result"      # card["alignment"][TOKENIZED]: the summary of an --as-tokenized run
SUMMARY = ("pairs", "scored", "skipped", "shared_piece_pairs", "selected", "best_layer", "all_heads", "diagonal",
           "seconds")


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p)
    p.add_argument("--gold", default=str(ag.default_gold()),
                   help="folder with src.en, tgt.de and gold.talp (English index first); default: %(default)s")
    p.add_argument("--json", help="write the full result (every head) to this file")
    p.add_argument("--as-tokenized", action="store_true",
                   help="feed the gold's tokenised text (spaces around punctuation) to the model unchanged")
    p.add_argument("--method", default="argmax", choices=list(al.METHODS), help="how links are read from a map")
    p.add_argument("--threshold", type=float, default=0.5, help="with --method threshold: the smallest weight linked")
    p.add_argument("--limit", type=int, default=0, help="only the first N pairs (0: all); the card is then left alone")
    p.add_argument("--no-card", action="store_true", help="do not write the result into card.json")
    p.add_argument("--weights", nargs="+", default=["attention"], choices=list(aw.WEIGHTS),
                   help="which maps to read links from: attention weights, norm-based, ALTI+ (default: attention)")
    cli.add_threads(p, default=1, help="CPU threads (one sentence at a time: 1 is usually fastest)")
    cli.add_progress(p)
    return p.parse_args(argv)


BY_WEIGHTS = ("selected", "best_layer", "all_heads")   # card["alignment"]["by_weights"][weights]: the best of each


def record_alignment(folder: Path, result: dict, as_tokenized: bool) -> None:
    """Set card["alignment"] (or its "as_tokenized" part) and nothing else; re-read first, write atomically.

    A run without the attention weights keeps the attention entry as it was and only sets "by_weights"."""
    old = read_card(folder).alignment or {}
    weights = result.get("by_weights", {})
    if "attention" not in result.get("weights", ["attention"]):
        entry = dict(old)
    else:
        entry = {k: v for k, v in result.items() if k not in ("heads", "by_weights", "weights", "held_out")}
        if as_tokenized:
            entry = {**old, TOKENIZED: {k: entry[k] for k in SUMMARY}}
        else:
            entry.update({k: old[k] for k in (TOKENIZED, "by_weights", "held_out_winner") if k in old})
    if weights and not as_tokenized:
        entry["by_weights"] = {**entry.get("by_weights", {}),
                               **{w: {k: r[k] for k in BY_WEIGHTS} for w, r in weights.items()}}
        if len(weights) > 1:
            entry["held_out_winner"] = result["held_out"]
    update_card(folder, alignment=entry)


def percent(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def describe(r: dict) -> str:
    """A few readable lines about a result (each way of weighting in turn, when there are several)."""
    if "by_weights" in r:
        parts = [f"== {w} ({aw.WEIGHTS[w]}) ==\n" + describe(x) for w, x in r["by_weights"].items()]
        win = r["held_out"]
        if len(r["by_weights"]) > 1 and win["winner"]:
            best = win["by_weights"][win["winner"]]
            parts.append(f"held-out winner: {win['winner']} (layer {best['layer']}, head {best['head']}, shift "
                         f"'{best['shift']}': AER {percent(best['aer_second_half'])}); "
                         + ", ".join(f"{w} {percent(x['aer_second_half'])}" for w, x in win["by_weights"].items()))
        return "\n".join(parts)
    s, b = r["selected"], r["best_layer"]
    what = "best head"
    if s is None:                                     # ALTI has no single heads: its best layer stands in
        s, what = b, "best layer"
    return "\n".join([
        f"{r['scored']} of {r['pairs']} pairs scored, {r['skipped']} skipped"
        + (f" ({'; '.join(r['skipped_reasons'])})" if r["skipped"] else "")
        + f", {r['shared_piece_pairs']} with a piece spelling two gold words; {r['seconds']} s",
        f"{what} (chosen on the first {r['halves']['first']} pairs): layer {s['layer']}, "
        + (f"{s['head']}" if isinstance(s["head"], str) else f"head {s['head']}")
        + f", shift '{s['shift']}': AER {percent(s['aer_second_half'])} on the other {r['halves']['second']} "
        f"(precision {percent(s['precision_second_half'])}, recall {percent(s['recall_second_half'])})",
        f"best whole layer ({b['head']}): layer {b['layer']}, shift '{b['shift']}': AER "
        f"{percent(b['aer_second_half'])} held out",
        "all-head average: " + ", ".join(f"{k} {percent(v)}" for k, v in r["all_heads"].items()),
        f"diagonal baseline: AER {percent(r['diagonal']['aer_second_half'])} held out "
        f"({percent(r['diagonal']['aer'])} on all pairs)"])


def run(args) -> dict:
    if args.limit < 0 or args.threads < 1:
        raise ag.AlignmentError("--limit cannot be negative and --threads must be at least 1.")
    cli.set_threads(args.threads)
    folder = Path(args.checkpoint)
    tm = load_checkpoint(folder)
    pairs = ag.read_gold(args.gold)
    pairs = pairs[: args.limit] if args.limit else pairs
    weights = list(dict.fromkeys(args.weights))
    with tqdm(total=len(pairs), unit="pair", disable=args.no_progress, dynamic_ncols=True) as bar:
        def progress(done, total):
            bar.update(done - bar.n)
        if weights == ["attention"]:
            evs = {"attention": al.evaluate(tm, pairs, args.as_tokenized, args.method, args.threshold, progress)}
        else:
            evs = aw.evaluate_weights(tm, pairs, weights, args.as_tokenized, args.method, args.threshold, progress)
    reports = {w: al.report(ev, args.method, args.threshold) for w, ev in evs.items()}
    result = {"checkpoint": folder.name, "gold": portable(args.gold),
              "direction": "English (gold src.en) is the model's source, German (tgt.de) its target",
              "as_tokenized": args.as_tokenized, **reports["attention" if "attention" in reports else weights[0]]}
    if weights != ["attention"]:
        result.update(weights=weights, by_weights=reports, held_out=aw.winner(reports))
    if args.json:
        write_json(args.json, result)
    if not args.no_card and not args.limit:
        record_alignment(folder, result, args.as_tokenized)
    return result


main = cli.command(parse_args, run, describe, (ag.AlignmentError, CheckpointError))


if __name__ == "__main__":
    sys.exit(main())
