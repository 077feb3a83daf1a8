#!/usr/bin/env python
"""An atlas of every head of a checkpoint: each encoder, decoder and cross-attention head named by its strongest
role over a corpus, against that role's baseline (core/studies/atlas.py), written into the checkpoint folder.

    python scripts/compute_atlas.py checkpoints/news-small
    python scripts/compute_atlas.py checkpoints/multi30k-small --limit 1000
    python scripts/compute_atlas.py path/to/gpt2          # a language model (decoder-only or encoder-only)

The encoder's roles are measured on the gold-parsed English sentences of UD English EWT dev and the anaphora set,
the decoder's and cross-attention's on the RWTH English-German gold alignments, teacher-forced (both evaluation
data, read in place). The atlas (atlas.json: every head's role, scores and a few example sentences, with the
corpus and the date) is what the "Atlas" tab of What heads do shows at once. It prints the roles by layer.
A language model's self-attention heads are measured on the English probe sentences and, for a decoder-only one, on
repeated random tokens (core/studies/lm_atlas.py: previous and next token, induction, duplicate token, sinks);
--conllu, --gold and --limit do not apply to it.
"""
from __future__ import annotations

import sys
from pathlib import Path

from tqdm import tqdm

from app.checkpoints import is_language_model, languages
from core import CheckpointError, load_checkpoint
from core.studies import atlas, lm_atlas
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
    for kind in atlas.EVERY_KIND:
        for layer, roles in atlas.roles_by_layer(result, kind).items():
            out.append(f"{kind}, layer {layer}: " + ", ".join(f"{r} {n}" for r, n in sorted(roles.items())))
    return out


def main(argv=None) -> dict:
    args = parse_args(argv)
    cli.set_threads(args.threads)
    try:
        tm = load_checkpoint(args.checkpoint)
    except CheckpointError as e:
        sys.exit(f"error: {e}")
    name = Path(args.checkpoint).name
    bar = tqdm(total=100, disable=args.no_progress, desc="atlas")
    def progress(done, total, text):
        bar.update(round(100 * done / total) - bar.n)
    if is_language_model(tm):
        if args.conllu or args.gold or args.limit:
            print("A language model's atlas is measured on the probe sentences: --conllu, --gold and --limit "
                  "are not used.")
        result = lm_atlas.compute_lm_atlas(tm, name=name, progress=progress)
    else:
        try:
            sentences, pairs, notes = atlas.load_corpora(languages(tm.card), args.conllu, args.gold)
        except CheckpointError as e:
            sys.exit(f"error: {e}")
        for note in notes:
            print(note)
        if not sentences and not pairs:
            sys.exit("error: no corpus fits this model, so there is no atlas to compute.")
        sentences = sentences[: args.limit] if (sentences and args.limit) else sentences
        result = atlas.compute_atlas(tm, sentences, pairs, name, progress=progress)
    bar.close()
    atlas.write_atlas(args.out or args.checkpoint, result)
    print("\n".join(layer_lines(result)))
    print(f"{result['seconds']} s; written to {Path(args.out or args.checkpoint) / atlas.FILE}")
    return result


if __name__ == "__main__":
    main()
