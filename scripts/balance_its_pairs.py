#!/usr/bin/env python
"""Repeat the training pairs that translate 'its', so that ihr- and sein- are seen equally often.

    python scripts/balance_its_pairs.py --data data/wmt-en-de --out data/wmt-en-de-its --factor 4

German 'its' agrees with the antecedent: "The city lost its mayor" -> "Die Stadt verlor ihren
Bürgermeister". The news corpus has fewer such ihr- pairs than sein- pairs (722 against 915, counted on 2026-12-03),
and news-small writes sein- for most feminine antecedents. This writes a copy of a prepared data folder
(scripts/prepare_data.py) whose training split has, after the original pairs:
- each ihr-pair repeated so that the two kinds reach --factor times the larger kind's count, and
- each sein-pair likewise.
An ihr-pair: the English has 'its' and no her/their; the German an ihr- form (lower case, or
capitalised as the first word) and no sein- form. A sein-pair: 'its' and no his; a seine/seinen/seinem/
seiner/seines (bare 'sein' is also the verb 'to be') and no ihr- form. Dev, test and the SentencePiece
model are copied unchanged, so the two folders' scores compare.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from core.checkpoint.atomic import atomic_write, write_json
from scripts import cli

SPLITS_COPIED = ("valid.en", "valid.de", "test.en", "test.de", "spm.model", "spm.vocab")
IHR = re.compile(r"\bihr(?:e|en|em|er|es)?\b|^Ihr(?:e|en|em|er|es)?\b")
SEIN_ANY = re.compile(r"\b[Ss]ein(?:e|en|em|er|es)?\b")
SEIN_POSSESSIVE = re.compile(r"\b[Ss]ein(?:e|en|em|er|es)\b")
ITS = re.compile(r"\bits\b", re.IGNORECASE)
HER_THEIR = re.compile(r"\b(?:her|hers|their|theirs)\b", re.IGNORECASE)
HIS = re.compile(r"\bhis\b", re.IGNORECASE)


def its_kind(en: str, de: str) -> str | None:
    """'ihr' or 'sein' when the pair shows which possessive 'its' became; None otherwise."""
    if not ITS.search(en):
        return None
    if IHR.search(de) and not SEIN_ANY.search(de) and not HER_THEIR.search(en):
        return "ihr"
    if SEIN_POSSESSIVE.search(de) and not IHR.search(de) and not HIS.search(en):
        return "sein"
    return None


def repeats(counts: dict[str, int], factor: float) -> dict[str, int]:
    """Extra copies of each pair of a kind, so that every kind reaches factor x the larger kind's count."""
    goal = factor * max(counts.values(), default=0)
    return {kind: max(0, round(goal / n) - 1) if n else 0 for kind, n in counts.items()}


def balance(data: Path, out: Path, factor: float) -> dict:
    """Write the balanced copy of data into out; returns the report (also out/prep_report.json's "its_balance")."""
    lines = {}
    for name in ("train.en", "train.de", "train.origin"):
        path = data / name
        if name != "train.origin" or path.exists():
            lines[name] = path.read_text(encoding="utf-8").splitlines()
    en, de = lines["train.en"], lines["train.de"]
    if len(en) != len(de):
        raise ValueError(f"{data}: train.en has {len(en)} lines and train.de {len(de)}; prepare the data again.")
    kinds = {"ihr": [], "sein": []}
    for i, (e, d) in enumerate(zip(en, de)):
        kind = its_kind(e, d)
        if kind:
            kinds[kind].append(i)
    counts = {k: len(v) for k, v in kinds.items()}
    extra = repeats(counts, factor)
    added = [i for kind, idx in kinds.items() for i in idx * extra[kind]]
    for name, rows in lines.items():
        atomic_write(out / name, "\n".join(rows + [rows[i] for i in added]) + "\n")
    for name in SPLITS_COPIED:
        if (data / name).exists():
            atomic_write(out / name, (data / name).read_bytes())
    report = {"from": str(data), "factor": factor, "pairs": counts, "extra_copies_of_each": extra,
              "train_pairs": len(en) + len(added), "added": len(added),
              "rule": "ihr: English 'its' without her/their, German ihr- without sein-; "
                      "sein: 'its' without his, German seine/seinen/seinem/seiner/seines without ihr-"}
    # The card of a model trained on out quotes prep_report.json: say there what was added.
    prep_path = data / "prep_report.json"
    prep = json.loads(prep_path.read_text(encoding="utf-8")) if prep_path.exists() else {}
    prep["its_balance"] = report
    write_json(out / "prep_report.json", prep)
    return report


def main(argv=None) -> int:
    p = cli.parser(__doc__)
    p.add_argument("--data", required=True, help="a folder written by scripts/prepare_data.py")
    p.add_argument("--out", required=True, help="the balanced copy (git-ignored, like data/)")
    p.add_argument("--factor", type=float, default=4.0, help="each kind's count as a multiple of the larger one's")
    args = p.parse_args(argv)
    data, out = Path(args.data), Path(args.out)
    if not (data / "train.en").exists():
        print(f"error: {data} has no train.en; run scripts/prepare_data.py first.", file=sys.stderr)
        return 2
    if out.resolve() == data.resolve():
        print("error: --out must be a new folder, not --data itself.", file=sys.stderr)
        return 2
    if args.factor < 1:
        print("error: --factor must be at least 1.", file=sys.stderr)
        return 2
    try:
        report = balance(data, out, args.factor)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{report['pairs']} pairs; {report['added']} copies added -> {report['train_pairs']} training pairs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
