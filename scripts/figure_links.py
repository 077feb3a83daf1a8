#!/usr/bin/env python
"""Do the paper's Figure 3 and 4 links hold in a checkpoint, and in each weight save of the run that made it?

    python scripts/figure_links.py checkpoints/news-small
    python scripts/figure_links.py checkpoints/news-small --card     # and write its links into card.json
    python scripts/figure_links.py runs/news-mix-its-out --saves runs/news-mix-its/saves --last 6

A figure is kept when its best head links the words (core/studies/paper_figures.py: a score of at least the link
threshold, and at least 2 times what the sentence's other words give the same words). Over a run that verdict can
fold from one save to the next; before a cool-down meant to ship, this shows whether a run's figure heads hold, fade
or sit on the edge. One line per set of weights: each figure's best head (layer and head counted from 1), its score,
the other words' share and the verdict. The checkpoint gives the architecture and tokenizer; each save's weights
replace its own in turn. With --card the checkpoint's own links go into its card.json under card["figures"], which
CARD.md prints.
"""
from __future__ import annotations

import sys
from pathlib import Path

from tqdm import tqdm

from core import CheckpointError, load_checkpoint
from core.checkpoint import update_card
from core.checkpoint.folder import fill_model
from core.training.saving import average_saves
from scripts import cli
from scripts.evaluate_candidate import LINKED_FIGURES, figure_links


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p, help="a checkpoint folder: its links, and the architecture and tokenizer for --saves")
    p.add_argument("--saves", metavar="FOLDER", help="a run's saves folder (train.py's RUN/saves): score each save")
    p.add_argument("--last", type=int, default=0, help="only the last N saves (0: all)")
    p.add_argument("--card", action="store_true", help="write the checkpoint's links into its card.json")
    cli.add_threads(p, default=1)
    cli.add_progress(p)
    return p.parse_args(argv)


def describe(figure: dict) -> str:
    """'layer 5 head 7 0.557 / others 0.282, not linked' (or why the figure cannot be found)."""
    if figure["linked"] is None:
        return figure["problem"]
    verdict = "linked" if figure["linked"] else "not linked"
    return (f"layer {figure['layer']} head {figure['head']} {figure['score']:.3f} / others {figure['others']:.3f},"
            f" {verdict}")


def line(row: dict) -> str:
    """One set of weights' line: its name, then each figure described."""
    return f"{row['weights']}: " + " | ".join(f"Figure {n}: {describe(row['figures'][n])}" for n in LINKED_FIGURES)


def save_files(folder, last: int) -> list[Path]:
    """The save files of a run's saves folder, oldest first, the last `last` of them (all for 0)."""
    files = sorted(Path(folder).glob("step_*.safetensors"))
    if not files:
        raise CheckpointError(f"There are no weight saves (step_*.safetensors) in '{folder}'.")
    return files[-last:] if last > 0 else files


def main(argv=None) -> list[dict]:
    args = parse_args(argv)
    cli.set_threads(args.threads)
    try:
        tm = load_checkpoint(args.checkpoint)
        rows = [{"weights": Path(args.checkpoint).name, "figures": figure_links(tm)}]
        print(line(rows[0]), flush=True)
        if args.card:
            update_card(args.checkpoint, figures={str(n): f for n, f in rows[0]["figures"].items()})
        for path in tqdm(save_files(args.saves, args.last) if args.saves else [], desc="saves",
                         disable=args.no_progress):
            fill_model(tm.model, average_saves([path]), f"{path} does not match {args.checkpoint}/config.json")
            rows.append({"weights": path.name, "figures": figure_links(tm)})
            tqdm.write(line(rows[-1]))
    except CheckpointError as e:
        sys.exit(f"error: {e}")
    return rows


if __name__ == "__main__":
    main()
