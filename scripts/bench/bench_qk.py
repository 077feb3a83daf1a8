#!/usr/bin/env python
"""How long the "Queries and keys" page takes: the forward pass that collects every head's queries and keys
over a checkpoint's ~200 sample sentences, then projecting one head to 2-D (target: PCA < 2 s on this machine).

    python scripts/bench/bench_qk.py [--checkpoint checkpoints/news-small] [--threads 1] [--repeat 5] [--tsne]

Prints numbers; asserts nothing. The app runs torch on one thread (app/startup.py), so the default here does too.
"""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from core import CheckpointError, load_checkpoint
from core.studies import qk
from core.paths import REPO
from scripts import cli



def timed(fn, *args, **kwargs):
    """(result, seconds) of one call."""
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def main() -> int:
    p = cli.parser(__doc__, summary=True)
    p.add_argument("--checkpoint", type=Path, default=REPO / "checkpoints" / "news-small")
    cli.add_threads(p, default=1, help="torch threads (the app uses 1)")
    p.add_argument("--repeat", type=int, default=5, help="heads projected (the median is printed)")
    p.add_argument("--tsne", action="store_true", help="also time t-SNE of one head (slow: up to minutes)")
    args = p.parse_args()
    cli.set_threads(args.threads)
    try:
        model, load_s = timed(load_checkpoint, args.checkpoint)
    except CheckpointError as e:
        print(f"cannot load {args.checkpoint}: {e}", file=sys.stderr)
        return 1
    pairs, about = qk.checkpoint_sample(model.folder, model.card)
    if not pairs:
        print(f"{args.checkpoint} has no {qk.SAMPLE_FILE} and its corpus is not here: "
              "run scripts/make_qk_sample.py", file=sys.stderr)
        return 1
    print(f"{args.checkpoint.name}: {len(pairs)} sentences ({about}); torch threads {args.threads}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; loaded in {load_s:.1f} s")

    srcs, tgts = [x["src"] for x in pairs], [x["tgt"] for x in pairs]
    _, maps_s = timed(model.attend_batch, srcs, tgts)
    results, vec_s = timed(model.attend_batch, srcs, tgts, vectors=True)
    memo = {}
    sets, gather_s = timed(lambda: {kind: qk.gather(results, kind, memo=memo) for kind in ("enc_self", "dec_self",
                                                                                          "cross")})
    print(f"forward pass, maps only:                  {maps_s:6.2f} s")
    print(f"forward pass, maps + queries and keys:    {vec_s:6.2f} s")
    print(f"gathering them per kind (+ hover texts):  {gather_s:6.2f} s")
    mb = sum(s.q.nbytes + s.k.nbytes for s in sets.values()) / 2 ** 20
    print(f"kept in memory (float16, every kind, layer and head): {mb:.0f} MB")

    enc = sets["enc_self"]
    heads = [(layer, head) for layer in range(enc.layers) for head in range(enc.heads)][: max(1, args.repeat)]
    times = [timed(qk.head_embedding, enc, layer, head)[1] for layer, head in heads]
    points = enc.head(0, 0)
    print(f"PCA of one encoder head ({points.n_queries:,} queries + {len(points.vectors) - points.n_queries:,} keys,"
          f" gathered, centred, projected): median {statistics.median(times):.3f} s, max {max(times):.3f} s "
          f"over {len(times)} heads (target < 2 s)")
    _, layer_s = timed(qk.layer_embeddings, enc, 0)
    print(f"PCA of every head of one layer (small multiples, {enc.heads} heads): {layer_s:.2f} s")
    if args.tsne:
        cut = enc.first_sentences(qk.TSNE_MAX_POINTS)
        _, tsne_s = timed(qk.head_embedding, cut, 0, 0, "tsne")
        print(f"t-SNE of one head on its first {len(cut.pairs)} sentences ({len(cut.head(0, 0).vectors):,} points): "
              f"{tsne_s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
