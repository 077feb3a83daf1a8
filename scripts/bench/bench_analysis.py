"""How long the head finder takes: every score of every head over the probe sentences (target: < 5 s on CPU).

    python scripts/bench/bench_analysis.py [--checkpoint checkpoints/news-small] [--threads 2] [--repeat 3]

Uses the checkpoint if it exists, else an untrained "small" model with data/wmt-en-de's tokenizer, else
with the app's fallback tokenizer. Prints numbers; asserts nothing.
"""
from __future__ import annotations

import time
from pathlib import Path

import torch

from core import Tokenizer, Transformer, TranslationModel, load_checkpoint, preset
from core.studies import analysis
from core.paths import REPO
from scripts import cli



def pick_model(checkpoint: Path):
    """(model, what it is): the checkpoint, or an untrained small model with the best tokenizer at hand."""
    if (checkpoint / "config.json").exists():
        return load_checkpoint(checkpoint), f"checkpoint {checkpoint}"
    spm = REPO / "data" / "wmt-en-de"
    if (spm / "spm.model").exists():
        tok, what = Tokenizer.from_folder(spm), f"untrained small model, tokenizer of {spm}"
    else:
        from app.fallback_tokenizer import fallback_tokenizer
        tok, what = fallback_tokenizer(), "untrained small model, the app's fallback tokenizer"
    torch.manual_seed(0)
    return TranslationModel(Transformer(preset("small", vocab_size=len(tok), dropout=0.0)), tok), what


def main():
    p = cli.parser(__doc__, summary=True)
    p.add_argument("--checkpoint", type=Path, default=REPO / "checkpoints" / "news-small")
    cli.add_threads(p, default=torch.get_num_threads(), help=None)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    cli.set_threads(args.threads)
    tm, what = pick_model(args.checkpoint)
    neutral, anaphora = analysis.load_neutral(), analysis.load_anaphora()
    print(f"model: {what}; N={tm.cfg.N}, N_dec={tm.cfg.N_dec}, h={tm.cfg.h}, d_model={tm.cfg.d_model}; "
          f"{args.threads} thread(s)")
    print(f"probes: {len(neutral)} neutral sentences (with German), {len(anaphora)} annotated pronoun sentences")

    times, cpu = [], []
    for _ in range(args.repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        table = analysis.head_scores(tm, neutral, anaphora)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    print(f"head finder, batched:            first {times[0]:.2f} s, best {min(times):.2f} s wall clock; "
          f"best {min(cpu):.2f} s of CPU time ({len(table)} heads × {len(analysis.SCORES)} scores)")
    print("  (wall clock well above CPU time / threads means other processes are using the cores)")

    # the same work one sentence at a time, through TranslationModel.attend, to show what batching buys
    start = time.perf_counter()
    for s in neutral:
        tm.attend(s["en"], tgt=s["de"])
    for a in anaphora:
        tm.attend(a["text"], tgt="x")
    print(f"one sentence at a time (attend): {time.perf_counter() - start:.2f} s (forward passes only, no scores)")

    for score in ("previous", "next", "eos", "distance", "anaphora", "entropy_norm"):
        best = analysis.rank_heads(table, score, top=1).iloc[0]
        print(f"  top encoder head for {score:12s}: layer {best.layer + 1}, head {best['head'] + 1}: {best[score]:.3f}")


if __name__ == "__main__":
    main()
