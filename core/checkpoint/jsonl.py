"""The one reader of JSON-lines files (train_log.jsonl, the probe sets, qk_sample.jsonl, run logs)."""
from __future__ import annotations

import json
from pathlib import Path


def read_jsonl(path, skip_bad: bool = False, numbered: bool = False) -> list:
    """The records of a JSON-lines file, blank lines left out.

    skip_bad: leave out lines that do not parse (a log still being written ends in half a line); otherwise
    such a line raises ValueError naming the file and line. A missing file raises FileNotFoundError.
    numbered: (line number, record) pairs, for messages that point at a line.
    """
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            if not skip_bad:
                raise ValueError(f"{path}, line {n}: not valid JSON ({e})") from None
            continue
        rows.append((n, row) if numbered else row)
    return rows


def split_train_log(path) -> tuple[list[dict], list[dict]]:
    """(training steps, validations) of a train_log.jsonl that scripts/train.py writes: the records with a step,
    validations being those of kind "valid". A line cut short (a run still writing) is left out."""
    steps, valids = [], []
    for row in read_jsonl(path, skip_bad=True):
        if isinstance(row, dict) and "step" in row:
            (valids if row.get("kind") == "valid" else steps).append(row)
    return steps, valids
