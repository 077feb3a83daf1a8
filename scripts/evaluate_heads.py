#!/usr/bin/env python
"""Which heads of a decoder-only language model are induction, previous-token or duplicate-token heads, and which
are attention sinks: every head's scores on repeated random tokens (TransformerLens' definitions).

    python scripts/evaluate_heads.py checkpoints/gpt2                      # writes checkpoints/gpt2/heads.json
    python scripts/evaluate_heads.py checkpoints/lm-tiny --sequences 200 --L 20 --json heads.json

The model reads --sequences sequences [bos] + r + r, r being L random tokens (special ids left out; a model without
a start token gets a random first token), drawn from --seed. For every head: its induction score (mean attention
from the second copy to the token after the current token's previous occurrence), previous-token score (to the
token before), duplicate-token score (to the previous occurrence itself) and first-token sink share (on position 0,
from position 4 on), and for the model the next-token loss on each copy and their gap (second minus first: negative
when it copies from context). core/studies/induction.py defines them. Layers and heads count from 1.
"""
from __future__ import annotations

import sys
from pathlib import Path

from core.checkpoint import CheckpointError, write_json
from core.checkpoint.folder import load_model
from core.model.families import family_of
from core.studies import induction as ind
from scripts import cli

COLUMNS = ("layer", "head", *ind.SCORES)
FILE = "heads.json"


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p, "decoder-only checkpoint folder (model.safetensors, config.json)")
    p.add_argument("--sequences", type=int, default=64, help="repeated random sequences (default %(default)s)")
    p.add_argument("--L", type=int, default=None,
                   help="random tokens per copy (default: 50, or fewer where the model's positions end)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random tokens (default %(default)s)")
    p.add_argument("--batch-size", type=int, default=8, help="sequences run through the model together")
    p.add_argument("--json", metavar="OUT", help=f"where to write every head's scores (default: CHECKPOINT/{FILE})")
    p.add_argument("--top", type=int, default=5, help="heads listed per score at the top (default %(default)s)")
    cli.add_device(p)
    cli.add_threads(p)
    return p.parse_args(argv)


def run(args) -> dict:
    if args.sequences < 1 or args.batch_size < 1 or args.top < 0 or (args.L is not None and args.L < 2):
        raise cli.UsageError("--sequences and --batch-size must be at least 1, --L at least 2, --top 0 or more.")
    cli.set_threads(args.threads)
    folder = Path(args.checkpoint)
    model = load_model(folder, cli.pick_device(args.device))
    if family_of(model.cfg) != "decoder-only":
        raise cli.UsageError(f"{folder} holds an {family_of(model.cfg)} model (a translation model): induction "
                             f"scores are measured on decoder-only language models, which read one text left to "
                             f"right. Give a decoder-only checkpoint (GPT-2, Llama, or one trained here).")
    try:
        scores = ind.induction_scores(model, L=args.L, batch=args.sequences, seed=args.seed, chunk=args.batch_size)
    except ValueError as e:                      # an L longer than the model's positions, a vocabulary too small
        raise cli.UsageError(str(e)) from None
    out = {"checkpoint": str(folder), **scores.to_json()}
    write_json(args.json or folder / FILE, out)
    return {**out, "written_to": str(args.json or folder / FILE), "top": args.top}


def table(heads: list[dict]) -> str:
    """Every head's scores as an aligned text table."""
    lines = ["  ".join(f"{c:>9}" for c in COLUMNS)]
    lines += ["  ".join(f"{h[c]:>9}" if c in ("layer", "head") else cli.cell(h[c], 9) for c in COLUMNS)
              for h in heads]
    return "\n".join(lines)


def describe(out: dict) -> str:
    """What was measured, the top heads of each score, the whole table, and where it was written."""
    L, pos = out["L"], out["positions"]
    gap = out["loss_gap"]
    lines = [f"{out['sequences']} sequences of [bos] + 2 x {L} random tokens (seed {out['seed']}): induction and "
             f"duplicate over the {pos['induction']} positions of the second copy, previous over {pos['previous']}, "
             f"sink over {pos['sink']} (from position {out['sink_from']})",
             f"next-token loss: first copy {out['loss_first']:.3f} nats, second copy {out['loss_second']:.3f}, "
             f"gap {gap:+.3f}" + (" (it copies from context)" if gap < -0.5 else ""), ""]
    for score in ind.SCORES:
        top = sorted(out["heads"], key=lambda h: -h[score])[: out["top"]]
        lines.append(f"top {score:<9} " + ", ".join(f"{h['layer']}.{h['head']} {h[score]:.3f}" for h in top))
    lines += ["", table(out["heads"]), "", f"written to {out['written_to']}"]
    return "\n".join(lines)


main = cli.command(parse_args, run, describe, (CheckpointError, cli.UsageError))


if __name__ == "__main__":
    sys.exit(main())
