#!/usr/bin/env python
"""Translate a test split with beam search and score it with sacrebleu (BLEU and chrF).

    python scripts/evaluate.py checkpoints/news-small                  # newstest2014, beam 4, alpha 0.6
    python scripts/evaluate.py checkpoints/multi30k-small --split valid --limit 200

Sources come from the data folder (default: the one named in the checkpoint's card.json).
References are the RAW corpus files when the data folder is a prepared copy whose
prep_report.json names a corpus that is still there (scores against the originals, as sacrebleu's
own test sets do); otherwise the data folder's files as they are. The hypotheses go to
CHECKPOINT/translations.<split>.de; the scores, with sacrebleu's signatures, go into
card.json under card[<split>] and are printed as JSON.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from sacrebleu.metrics import BLEU, CHRF
from tqdm import tqdm

from core import CheckpointError, clean_text, load_checkpoint
from core.checkpoint import atomic_write
from core.checkpoint import Card, as_card, update_card
from core.data import read_parallel
from core.paths import REPO, from_portable, portable
from scripts import cli


SRC, TGT = "en", "de"


class EvalError(Exception):
    """A problem with the command line or the files, worded for the person who ran it."""


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p)
    p.add_argument("--data", help="folder with <split>.en/.de (default: the card's data folder)")
    p.add_argument("--split", default="test", choices=["test", "valid"])
    p.add_argument("--beam", type=int, default=4, help="beam size (1: greedy)")
    p.add_argument("--alpha", type=float, default=0.6, help="length penalty exponent")
    p.add_argument("--limit", type=int, default=0, help="only the first N sentences (0: all)")
    p.add_argument("--batch-size", type=int, default=32, help="sentences decoded together")
    cli.add_device(p)
    cli.add_threads(p)
    cli.add_progress(p)
    return p.parse_args(argv)


def find_data(arg, card: Card | dict) -> Path:
    """--data, or the card's data folder (relative to here, else to the repository)."""
    card = as_card(card)
    folder = Path(arg) if arg else card.data_folder(REPO)
    if folder is not None and folder.is_dir():
        return folder
    name = arg or card.data_name
    if not name:
        raise EvalError("The checkpoint's card does not say which data it was trained on: pass --data FOLDER.")
    raise EvalError(f"The data folder '{name}' does not exist: pass --data FOLDER "
                    "(the output of scripts/prepare_data.py).")


def references(data: Path, split: str, n_lines: int):
    """(lines, path) of the raw corpus' references if prep_report.json names them and they align; else (None, ours)."""
    report = data / "prep_report.json"
    try:
        raw = from_portable(json.loads(report.read_text(encoding="utf-8"))["corpus"])
        if (raw / f"{split}.{TGT}").exists():
            refs = read_parallel(raw, split, SRC, TGT)[1]
            if len(refs) == n_lines:
                return refs, raw / f"{split}.{TGT}"
    except (OSError, ValueError, KeyError, TypeError):   # no report, or a raw corpus that does not fit: fall back
        pass
    return None, data / f"{split}.{TGT}"


def translate_all(tm, sources, beam, alpha, batch_size, progress=True) -> list[str]:
    """Beam-search every source sentence (empty ones give empty output), longest first, with a progress bar."""
    out = [""] * len(sources)
    todo = sorted((i for i, s in enumerate(sources) if clean_text(s)), key=lambda i: -len(sources[i]))
    with tqdm(total=len(sources), unit="sent", disable=not progress, dynamic_ncols=True) as bar:
        bar.update(len(sources) - len(todo))
        for start in range(0, len(todo), batch_size):
            idx = todo[start: start + batch_size]
            for i, hyp in zip(idx, tm.translate([sources[i] for i in idx], beam, alpha, batch_size)):
                out[i] = hyp
            bar.update(len(idx))
    return out


def evaluate(args) -> dict:
    """Translate, score, write the translations and the card; returns the card entry."""
    folder = Path(args.checkpoint)
    if args.beam < 1 or args.batch_size < 1 or args.limit < 0:
        raise EvalError("--beam and --batch-size must be at least 1, and --limit cannot be negative.")
    device = cli.pick_device(args.device)
    cli.set_threads(args.threads)
    tm = load_checkpoint(folder, device)
    data = find_data(args.data, tm.card)
    try:
        sources, prepared_refs = read_parallel(data, args.split, SRC, TGT)
    except (FileNotFoundError, ValueError) as e:
        raise EvalError(str(e)) from None
    raw_refs, ref_path = references(data, args.split, len(sources))
    refs = raw_refs if raw_refs is not None else prepared_refs
    if args.limit:
        sources, refs = sources[: args.limit], refs[: args.limit]
    if not sources:
        raise EvalError(f"{data}/{args.split}.{SRC} has no sentences to translate.")

    t0 = time.time()
    hyps = translate_all(tm, sources, args.beam, args.alpha, args.batch_size, not args.no_progress)
    seconds = time.time() - t0
    bleu, chrf = BLEU(), CHRF()
    b, c = bleu.corpus_score(hyps, [refs]), chrf.corpus_score(hyps, [refs])
    result = {"split": args.split, "data": portable(data), "references": portable(ref_path),
              "sentences": len(sources), "bleu": round(b.score, 2), "chrf": round(c.score, 2),
              "bleu_signature": str(bleu.get_signature()), "chrf_signature": str(chrf.get_signature()),
              "bleu_detail": str(b), "beam": args.beam, "alpha": args.alpha, "seconds": round(seconds, 1),
              "device": str(device)}
    atomic_write(folder / f"translations.{args.split}.{TGT}", "".join(h + "\n" for h in hyps))
    update_card(folder, **{args.split: result})      # re-reads: the card may have changed while we decoded
    return result


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        result = evaluate(args)
    except (EvalError, cli.UsageError, CheckpointError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
