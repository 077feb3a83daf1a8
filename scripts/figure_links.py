#!/usr/bin/env python
"""Do the paper's Figure 3 and 4 links hold in a checkpoint, and in each weight save of the run that made it?

    python scripts/figure_links.py checkpoints/news-small
    python scripts/figure_links.py checkpoints/news-small --card     # and write its links into card.json
    python scripts/figure_links.py runs/news-mix-its-out --saves runs/news-mix-its/saves --last 6
    python scripts/figure_links.py checkpoints/news-small --card --corpus   # and Figure 3 over UD English EWT dev

A figure is kept when its best head links the words (core/studies/paper_figures.py: a score of at least the link
threshold, and at least 2 times what the sentence's other words give the same words). Over a run that verdict can
fold from one save to the next; before a cool-down meant to ship, this shows whether a run's figure heads hold, fade
or sit on the edge. One line per set of weights: each figure's best head (layer and head counted from 1), its score,
the other words' share and the verdict. The checkpoint gives the architecture and tokenizer; each save's weights
replace its own in turn. With --card the checkpoint's own links go into its card.json under card["figures"], which
CARD.md prints.

With --corpus, Figure 3 is also measured beyond its sentence (core/studies/long_arcs.py): over the gold-parsed
sentences of a CoNLL-U file (default: UD English EWT dev, evaluation data), which encoder head follows dependencies
8+ words long most often, against the best fixed offset, chosen on one half and scored on the other; and where the
sentence's head stands among them. With --card it goes under card["figures"]["3"]["corpus"].
"""
from __future__ import annotations

import sys
from pathlib import Path

from tqdm import tqdm

from core import CheckpointError, load_checkpoint
from core.checkpoint import update_card
from core.checkpoint.folder import fill_model
from core.paths import portable
from core.studies import conllu
from core.studies import long_arcs as la
from core.studies import syntax as sx
from core.training.saving import average_saves
from scripts import cli
from scripts.evaluate_candidate import LINKED_FIGURES, figure_links


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p, help="a checkpoint folder: its links, and the architecture and tokenizer for --saves")
    p.add_argument("--saves", metavar="FOLDER", help="a run's saves folder (train.py's RUN/saves): score each save")
    p.add_argument("--last", type=int, default=0, help="only the last N saves (0: all)")
    p.add_argument("--card", action="store_true", help="write the checkpoint's links into its card.json")
    p.add_argument("--corpus", nargs="?", const="", metavar="CONLLU",
                   help="also measure Figure 3 over a gold-parsed corpus (default file: UD English EWT dev)")
    p.add_argument("--min-arcs", type=int, default=la.MIN_ARCS,
                   help="with --corpus: report a length when each half has at least this many arcs of it")
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


def corpus_figure3(tm, figure3: dict, path: str, progress: bool = True, min_arcs: int = la.MIN_ARCS) -> dict:
    """Figure 3 over the corpus at `path` ("": UD English EWT dev): card_summary of the long-arc study, with the
    sentence's own head (figure3: figure_links' Figure 3, 1-based) placed among the others."""
    sentences = conllu.read_conllu(path or None)
    bar = tqdm(total=len(sentences), desc="corpus", disable=not progress)
    ev = sx.evaluate(tm, sentences, progress=lambda done, _total: bar.update(done - bar.n))
    bar.close()
    own = (figure3["layer"] - 1, figure3["head"] - 1) if figure3.get("linked") is not None else None
    summary = la.card_summary(la.report(ev, min_arcs), portable(path or conllu.ud_english_dev()), own)
    summary["random_halvings"] = la.random_halvings(ev)
    summary["seconds"] = round(ev.seconds, 1)
    if own is not None and (line := la.sentence_line(summary, *own)):
        print(line, flush=True)
    return summary


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
        figures = {str(n): f for n, f in rows[0]["figures"].items()}
        if args.corpus is not None:
            figures["3"] = {**figures["3"], "corpus": corpus_figure3(tm, figures["3"], args.corpus,
                                                                     not args.no_progress, args.min_arcs)}
        if args.card:
            update_card(args.checkpoint, figures=figures)
        for path in tqdm(save_files(args.saves, args.last) if args.saves else [], desc="saves",
                         disable=args.no_progress):
            fill_model(tm.model, average_saves([path]), f"{path} does not match {args.checkpoint}/config.json")
            rows.append({"weights": path.name, "figures": figure_links(tm)})
            tqdm.write(line(rows[-1]))
    except (CheckpointError, conllu.SyntaxDataError) as e:
        sys.exit(f"error: {e}")
    return rows


if __name__ == "__main__":
    main()
