#!/usr/bin/env python
"""Write the sentences of the "Queries and keys" page into each shipped checkpoint: CHECKPOINT/qk_sample.jsonl.

    python scripts/make_qk_sample.py                     # both shipped checkpoints, from ../shared/data
    python scripts/make_qk_sample.py --data /path/to/data --n 200

The first n lines of each corpus's dev split (valid.en / valid.de), so that the page works offline, where the
data folder is absent. news-small: newstest2013 (WMT test sets are released for research use);
multi30k-small: Multi30k validation (non-commercial research and educational use). The first line of the
file says where the sentences come from; every other line is {"line": n, "src": English, "tgt": German}.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from core.checkpoint import atomic_write
from core.studies.qk import SAMPLE_FILE, SAMPLE_SIZE, read_corpus
from core.paths import REPO, shared_data
from scripts import cli


# checkpoint -> (corpus folder under the data folder, what the dev split is, its licence)
SAMPLES = {
    "news-small": ("wmt-en-de", "newstest2013 (WMT13 news)", "WMT test sets are released for research use"),
    "multi30k-small": ("multi30k", "Multi30k validation (image captions)",
                       "Multi30k: for non-commercial research and educational use"),
}


def sample_lines(corpus: Path, what: str, licence: str, n: int) -> str:
    """The JSONL text: a line about the sample, then one line per sentence pair."""
    pairs = read_corpus(corpus, "valid", n)
    head = {"sample": f"the first {len(pairs)} sentences of {what}", "licence": licence,
            "made_by": "scripts/make_qk_sample.py"}
    rows = [json.dumps(head, ensure_ascii=False)]
    rows += [json.dumps({"line": i + 1, "src": p["src"], "tgt": p["tgt"]}, ensure_ascii=False)
             for i, p in enumerate(pairs)]
    return "\n".join(rows) + "\n"


def main(argv=None) -> int:
    ap = cli.parser(__doc__, summary=True)
    ap.add_argument("--data", type=Path, default=shared_data(), help="folder of the corpora")
    ap.add_argument("--checkpoints", type=Path, default=REPO / "checkpoints")
    ap.add_argument("--n", type=int, default=SAMPLE_SIZE, help="sentences per checkpoint")
    args = ap.parse_args(argv)
    missing = 0
    for name, (corpus, what, licence) in SAMPLES.items():
        folder, source = args.checkpoints / name, args.data / corpus
        if not (folder / "config.json").exists() or not (source / "valid.en").exists():
            print(f"skipped {name}: no checkpoint at {folder} or no corpus at {source}", file=sys.stderr)
            missing += 1
            continue
        text = sample_lines(source, what, licence, args.n)
        atomic_write(folder / SAMPLE_FILE, text)
        print(f"{folder / SAMPLE_FILE}: {text.count(chr(10)) - 1} pairs, {len(text.encode()) / 1024:.1f} KB")
    return 1 if missing == len(SAMPLES) else 0


if __name__ == "__main__":
    sys.exit(main())
