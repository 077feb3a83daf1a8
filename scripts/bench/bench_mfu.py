#!/usr/bin/env python
"""Model FLOPs utilisation (MFU) of a training run: its measured tokens/s against a peak FLOP rate.

    python scripts/bench/bench_mfu.py --run runs/news-small                       # CPU: against a measured matmul peak
    python scripts/bench/bench_mfu.py --run runs/gpu-base --peak-tflops 989       # H100/H200 bf16 dense peak

FLOPs per target token are counted, not estimated: the run's own model (run.json) does forward, loss and
backward on sample batches of the run's own data and batch size, under torch's FlopCounterMode on the
meta device (no compute, no memory). Padding is counted too, as the hardware computes it.
Tokens/s is the median over the run's JSONL log (one line per step; global tokens over all processes).
Prints one JSON object. Measure the default CPU peak on an otherwise idle machine: a training run
beside it takes the same cores and makes the peak look low (MFU over 1).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from core import Tokenizer, Transformer, TransformerConfig, label_smoothed_loss
from core.checkpoint import read_jsonl
from core.data import collate, token_batches
from scripts import cli
from scripts.bench.bench_core import sync
from core.training.run import read_run, training_pairs


def flops_per_target_token(cfg: TransformerConfig, pairs, lengths, batches) -> tuple[float, float]:
    """(training FLOPs per real target token, share of target positions that are padding) over the batches.

    lengths: (source, target) tokens of each pair, the target with its end-of-sentence (train_utils.training_pairs).
    """
    model = Transformer(cfg).to("meta").train()
    flops = real = padded = 0
    for idx in batches:
        src, tin, tout = (t.to("meta") for t in collate(pairs, idx, cfg.pad_id, cfg.bos_id, cfg.eos_id))
        counter = FlopCounterMode(display=False)
        with counter:
            loss, _ = label_smoothed_loss(model(src, tin), tout, cfg.label_smoothing, cfg.pad_id)
            loss.backward()
        flops += counter.get_total_flops()
        real += sum(lengths[i][1] for i in idx)
        padded += tout.numel()
    return flops / real, 1 - real / padded


def median_tokens_per_s(log_path: Path, skip: int, since_step: int = 0) -> tuple[float, int]:
    """Median tokens/s over the log's step lines after the first `skip` (warm-up, compilation), and how many."""
    rates = [r["tokens_per_s"] for r in read_jsonl(log_path, skip_bad=True)     # a run may still be writing it
             if "tokens_per_s" in r and r["step"] > since_step]
    rates = rates[skip:]
    if not rates:
        sys.exit(f"{log_path} has no step lines after the first {skip}: train longer or lower --skip")
    return statistics.median(rates), len(rates)


def measured_matmul_tflops(device: str, dtype: torch.dtype, n: int = 2048, repeat: int = 5) -> float:
    """The best TFLOP/s of an n x n matmul on this machine: a practical peak where no datasheet applies."""
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    best = float("inf")
    for _ in range(repeat + 1):
        sync(a.device)
        t = time.perf_counter()
        a @ b
        sync(a.device)
        best = min(best, time.perf_counter() - t)
    return 2 * n ** 3 / best / 1e12


def sig(x: float, digits: int = 4) -> float:
    """x to `digits` significant digits (TFLOP/s on a CPU are small numbers)."""
    return float(f"{x:.{digits}g}")


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, help="a run folder written by scripts/train.py")
    p.add_argument("--data", help="the prepared data (default: the folder run.json names)")
    p.add_argument("--peak-tflops", type=float, help="peak of ONE device, e.g. 989 for H100/H200 bf16 dense "
                                                     "(default: a matmul measured here in the run's precision)")
    p.add_argument("--batches", type=int, default=20, help="sample batches to count FLOPs on")
    p.add_argument("--skip", type=int, default=20, help="first log steps left out (warm-up, compilation)")
    p.add_argument("--since-step", type=int, help="only log steps after this one (default: the step where the "
                                                   "run last started, so a warm start's inherited log is left out)")
    args = p.parse_args(argv)

    run = Path(args.run)
    if not (run / "run.json").exists():
        sys.exit(f"{run} is not a training run: it has no run.json (scripts/train.py writes one)")
    meta, cfg = read_run(run)
    targs, world = meta["args"], meta.get("world", 1)
    data = Path(args.data or targs["data"])
    if not (data / "spm.model").exists():
        sys.exit(f"no prepared data at {data}: pass --data with the folder the run trained on")

    tokenizer = Tokenizer.from_folder(data)
    pairs, _, lengths = training_pairs(data, tokenizer, cfg, targs["max_len"])
    batches = token_batches(lengths, targs["max_tokens"], seed=targs["seed"])
    sample = batches[:: max(1, len(batches) // args.batches)][: args.batches]     # a sample across the (shuffled) epoch
    per_token, padding = flops_per_target_token(cfg, pairs, lengths, sample)

    since = args.since_step if args.since_step is not None else meta.get("start_step", 0)
    tok_s, n_steps = median_tokens_per_s(run / "train_log.jsonl", args.skip, since)
    achieved = per_token * tok_s / 1e12
    on_cuda = "CUDA" in str(meta.get("device", ""))
    if args.peak_tflops:
        peak, peak_from = args.peak_tflops, "given"
    else:
        if on_cuda and not torch.cuda.is_available():
            sys.exit("the run was on CUDA but this machine has no GPU: pass --peak-tflops")
        cli.set_threads(targs.get("threads"))            # the run's threads (0 or none: torch's default)
        # the precision the run computed in (runs from before --precision: bf16 on CUDA, fp32 on a CPU)
        precision = meta.get("precision") or ("bf16" if on_cuda else "fp32")
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        peak = measured_matmul_tflops("cuda" if on_cuda else "cpu", dtype)
        peak_from = "measured matmul here" + ("" if on_cuda else f" ({precision}, {torch.get_num_threads()} threads)")
    out = {"run": str(run), "device": meta.get("device"), "precision": meta.get("precision"), "processes": world,
           "parameters": meta.get("parameters"), "max_tokens": targs["max_tokens"],
           "gflops_per_target_token": round(per_token / 1e9, 4), "padding_share": round(padding, 3),
           "target_tokens_per_s": round(tok_s, 1), "log_steps": n_steps,
           "achieved_tflops": sig(achieved), "peak_tflops_per_device": sig(peak), "peak_from": peak_from,
           "mfu": sig(achieved / (peak * world))}
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
