#!/usr/bin/env python
"""Which view of the model is faithful: attention weights, norm-based maps or ALTI+ contributions?

    python scripts/evaluate_faithfulness.py checkpoints/news-small                 # 200 dev sentences
    python scripts/evaluate_faithfulness.py checkpoints/multi30k-small --sentences 50 --json faith.json

The model translates the first N sentences of the dev (valid) split greedily. For each word it writes, each
method names the source word that mattered most for it; that word is removed from attention (its pieces become
padding, so neither the encoder nor the decoder-encoder attention can read it) and the drop in the word's
log-probability, teacher-forced on the same translation, is measured; a random source word is the baseline.
A method whose top word costs more when removed is the more faithful one (core/studies/faithfulness.py).

The dev split is read from --data, else the checkpoint's data folder (card.json "data"."folder"), else the folder
of that name under ../shared/data (read in place). The table is printed and written to the checkpoint folder as
faithfulness.json (the "What heads do" page shows it); --no-write leaves the folder alone.
"""
from __future__ import annotations

import sys
from pathlib import Path

from tqdm import tqdm

from core import CheckpointError, load_checkpoint
from core.checkpoint import write_json
from core.data import read_parallel
from core.paths import REPO, portable, shared_data
from core.studies import faithfulness as fa
from scripts import cli

RESULT_FILE = fa.RESULT_FILE


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p)
    p.add_argument("--data", help="a folder with valid.en and valid.de (default: the checkpoint's data folder)")
    p.add_argument("--sentences", type=int, default=200, help="how many dev sentences, from the first (%(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random baseline")
    p.add_argument("--json", help="also write the result to this file")
    p.add_argument("--no-write", action="store_true", help=f"do not write {RESULT_FILE} into the checkpoint folder")
    cli.add_threads(p, default=1, help="CPU threads (one sentence at a time: 1 is usually fastest)")
    cli.add_progress(p)
    return p.parse_args(argv)


def dev_folders(tm, data: str | None) -> list[Path]:
    """Where to look for the dev split, in order."""
    if data:
        return [Path(data)]
    named = tm.card.data_name
    return [f for f in (tm.card.data_folder(REPO), shared_data(Path(named).name) if named else None) if f]


def dev_sources(tm, data: str | None, n: int) -> tuple[list, Path]:
    """The first n non-empty dev sources and their folder; ValueError saying where it looked."""
    tried = dev_folders(tm, data)
    for folder in tried:
        try:
            src, _ = read_parallel(folder, "valid")
        except (FileNotFoundError, OSError, ValueError):
            continue
        sources = [s for s in src if s.strip()][:n]
        if sources:
            return sources, folder
    where = ", ".join(str(f) for f in tried) or "nowhere: the card names no data folder"
    raise ValueError(f"No dev split (valid.en, valid.de) was found (looked in {where}). Give one with --data.")


def describe(r: dict) -> str:
    """The table as text."""
    lines = [f"{r['sentences']} sentences ({r['skipped']} skipped), {sum(x['words'] for x in r['table'][:1])} "
             f"generated words, {r['seconds']} s; drop in log P(word) when the method's top source word is removed "
             "(nats, higher = more faithful):",
             f"{'method':<10} {'mean drop':>10} {'± s.e.':>8} {'median':>8} {'P>1/2 lost':>11}"]
    for x in r["table"]:
        lines.append(f"{x['method']:<10} {cli.cell(x['mean_drop'], 10)} {cli.cell(x['stderr'], 8)} "
                     f"{cli.cell(x['median_drop'], 8)} {cli.cell(x['flipped'], 11)}")
    lines.append(f"most faithful: {r['most_faithful']}")
    return "\n".join(lines)


def run(args) -> dict:
    if args.sentences < 1 or args.threads < 1:
        raise ValueError("--sentences and --threads must be at least 1.")
    cli.set_threads(args.threads)
    folder = Path(args.checkpoint)
    tm = load_checkpoint(folder)
    sources, data = dev_sources(tm, args.data, args.sentences)
    with tqdm(total=len(sources), unit="sentence", disable=args.no_progress, dynamic_ncols=True) as bar:
        f = fa.measure(tm, sources, args.seed, progress=lambda done, total: bar.update(done - bar.n))
    result = {"checkpoint": folder.name, "data": portable(data), "split": "valid", "seed": args.seed,
              "methods": fa.METHODS, **fa.report(f)}
    if args.json:
        write_json(args.json, result)
    if not args.no_write:
        write_json(folder / RESULT_FILE, result)
    return result


main = cli.command(parse_args, run, describe, (CheckpointError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
