#!/usr/bin/env python
"""Which encoder heads follow English syntax: every head against gold dependency parses (the paper's Figure 5).

    python scripts/evaluate_syntax.py checkpoints/news-small                  # UD English EWT dev, 2,001 sentences
    python scripts/evaluate_syntax.py checkpoints/news-small --json syntax.json --limit 200

Each sentence's raw text (`# text = `) goes through the encoder, and its pieces are mapped onto the gold UD words
by the characters they spell. For each dependency relation (the universal part before ':'; nmod:poss as poss) and
each direction (the dependent's row pointing at its head, or the head's row at its dependent), a head follows an
arc when the word it attends most, among the other words, is the gold partner. The best head and the best fixed
offset ("always the next word": +1) are chosen on the first half of the sentences and scored on the second half;
a head is syntactic when it beats that baseline by 10 points or more (Voita et al. 2019). Only relations with
--min-arcs arcs in each half are listed.

The card gets a summary under "syntax" (the syntactic heads by relation and layer); --json writes the whole table.
A --limit run leaves the card alone. The gold file is evaluation data: read in place, never trained on.
"""
from __future__ import annotations

import sys
from pathlib import Path

from tqdm import tqdm

from core import CheckpointError, load_checkpoint
from core.checkpoint import update_card, write_json
from core.paths import portable
from core.studies import conllu
from core.studies import syntax as sx
from scripts import cli

HEADER = ("relation", "direction", "n", "layer", "head", "accuracy", "baseline", "offset", "syntactic")


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p)
    p.add_argument("--conllu", default=str(conllu.ud_english_dev()),
                   help="gold parses in CoNLL-U; default: %(default)s")
    p.add_argument("--json", metavar="OUT", help="write the table as JSON to this file")
    p.add_argument("--limit", type=int, default=0,
                   help="only the first N sentences (0: all); the card is then left alone")
    p.add_argument("--min-arcs", type=int, default=sx.MIN_ARCS,
                   help="list a relation only with at least this many arcs in each half (default %(default)s)")
    p.add_argument("--batch-size", type=int, default=48, help="sentences run through the encoder together")
    p.add_argument("--no-card", action="store_true", help="do not write the summary into card.json")
    cli.add_device(p)
    cli.add_threads(p)
    cli.add_progress(p)
    return p.parse_args(argv)


def table(rows: list) -> str:
    """The rows as an aligned text table (layers and heads from 1; accuracy and baseline held out, in %)."""
    def cell(r, k):
        v = r[k]
        return ("yes" if v else "") if k == "syntactic" else f"{v:+d}" if k == "offset" else str(v)
    cells = [list(HEADER)] + [[cell(r, k) for k in HEADER] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADER))]
    return "\n".join("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))
                     .rstrip() for line in cells)


def describe(rep: sx.SyntaxReport) -> str:
    """The table and what it says, for the terminal."""
    h = rep.halves
    lines = [f"{rep.sentences} sentences used, {rep.skipped} skipped"
             + (f" ({'; '.join(rep.skipped_reasons)})" if rep.skipped else "")
             + f"; {rep.unmapped_words} words without a piece of their own ({rep.dropped_arcs} arcs not scored); "
             f"{rep.seconds} s",
             f"best head and offset chosen on the first {h['first']} sentences, accuracy (%) on the other "
             f"{h['second']} (n arcs); syntactic: accuracy >= baseline + {sx.SYNTACTIC_MARGIN:g} points "
             f"(Voita et al. 2019)", ""]
    if not rep.rows:
        lines.append(f"No relation has {rep.min_arcs} arcs in each half (--min-arcs): give more sentences.")
    else:
        lines.append(table(rep.rows))
    layers = rep.layers()
    lines += ["", "syntactic heads by layer: " + ("; ".join(f"layer {layer}: {', '.join(rels)}"
                                                           for layer, rels in layers.items()) or "none")]
    return "\n".join(lines)


def run(args) -> sx.SyntaxReport:
    if args.limit < 0 or args.min_arcs < 1 or args.batch_size < 1:
        raise cli.UsageError("--limit cannot be negative; --min-arcs and --batch-size must be at least 1.")
    sentences = conllu.read_conllu(args.conllu)                # before the model: a wrong path fails at once
    sentences = sentences[: args.limit] if args.limit else sentences
    cli.set_threads(args.threads)
    folder = Path(args.checkpoint)
    tm = load_checkpoint(folder, cli.pick_device(args.device))
    with tqdm(total=len(sentences), unit="sentence", disable=args.no_progress, dynamic_ncols=True) as bar:
        ev = sx.evaluate(tm, sentences, batch_size=args.batch_size,
                         progress=lambda done, total: bar.update(done - bar.n))
    rep = sx.report(ev, args.min_arcs)
    if args.json:
        write_json(args.json, rep.to_json())
    if not args.no_card and not args.limit:
        update_card(folder, syntax=sx.card_summary(rep, portable(args.conllu)))
    return rep


main = cli.command(parse_args, run, describe, (conllu.SyntaxDataError, CheckpointError, cli.UsageError))


if __name__ == "__main__":
    sys.exit(main())
