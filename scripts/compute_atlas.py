#!/usr/bin/env python
"""An atlas of every head of a checkpoint: each encoder, decoder and cross-attention head named by its strongest
role over a corpus, against that role's baseline (core/studies/atlas.py), written into the checkpoint folder.

    python scripts/compute_atlas.py checkpoints/news-small
    python scripts/compute_atlas.py checkpoints/multi30k-small --limit 1000

The encoder's roles are measured on the gold-parsed English sentences of UD English EWT dev and the anaphora set,
the decoder's and cross-attention's on the RWTH English-German gold alignments, teacher-forced (both evaluation
data, read in place). The atlas (atlas.json: every head's role, scores and a few example sentences, with the
corpus and the date) is what the "Atlas" tab of What heads do shows at once. It prints the roles by layer.
"""
from __future__ import annotations

import sys
from pathlib import Path

from tqdm import tqdm

from app.checkpoints import languages
from core import CheckpointError, load_checkpoint
from core.studies import atlas
from scripts import cli


def parse_args(argv=None):
    p = cli.parser(__doc__)
    cli.add_checkpoint(p)
    p.add_argument("--conllu", help="gold parses in CoNLL-U (default: UD English EWT dev)")
    p.add_argument("--gold", help="a gold alignment folder in the RWTH layout (default: the RWTH set)")
    p.add_argument("--limit", type=int, default=0, help="only the first N parsed sentences (0: all)")
    p.add_argument("--out", help="write the atlas here instead of the checkpoint folder")
    cli.add_threads(p)
    cli.add_progress(p)
    return p.parse_args(argv)


def layer_lines(result: dict) -> list[str]:
    """'encoder self-attention, layer 1: next 6, previous 2' lines."""
    out = []
    for kind in atlas.KINDS:
        for layer, roles in atlas.roles_by_layer(result, kind).items():
            out.append(f"{kind}, layer {layer}: " + ", ".join(f"{r} {n}" for r, n in sorted(roles.items())))
    return out


def main(argv=None) -> dict:
    args = parse_args(argv)
    cli.set_threads(args.threads)
    try:
        tm = load_checkpoint(args.checkpoint)
        sentences, pairs, notes = atlas.load_corpora(languages(tm.card), args.conllu, args.gold)
    except CheckpointError as e:
        sys.exit(f"error: {e}")
    for note in notes:
        print(note)
    if not sentences and not pairs:
        sys.exit("error: no corpus fits this model, so there is no atlas to compute.")
    sentences = sentences[: args.limit] if (sentences and args.limit) else sentences
    bar = tqdm(total=100, disable=args.no_progress, desc="atlas")
    result = atlas.compute_atlas(tm, sentences, pairs, Path(args.checkpoint).name,
                                 progress=lambda done, total, text: bar.update(round(100 * done / total) - bar.n))
    bar.close()
    atlas.write_atlas(args.out or args.checkpoint, result)
    print("\n".join(layer_lines(result)))
    print(f"{result['seconds']} s; written to {Path(args.out or args.checkpoint) / atlas.FILE}")
    return result


if __name__ == "__main__":
    main()
