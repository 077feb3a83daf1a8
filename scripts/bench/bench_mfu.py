#!/usr/bin/env python
"""Model FLOPs utilisation (MFU) of a training run, or of a preset's fast step: tokens/s against a peak FLOP rate.

    python scripts/bench/bench_mfu.py --run runs/news-small                       # CPU: against a measured matmul peak
    python scripts/bench/bench_mfu.py --run runs/gpu-base --peak-tflops 989       # H100/H200 bf16 dense peak
    python scripts/bench/bench_mfu.py --preset base --set norm=pre N_dec=2 --data data/news-mix-its \
        --max-tokens 60000 --seconds 30 --peak-tflops 989                          # the GPU's step, before a run

--preset times the training step a run on this device would take (core/training/fast.py on CUDA: compiled, on
fixed-shape batches kept on the device) for --seconds after its first step (the compilation, timed apart), on a
sample of the data's training pairs, with a fresh optimiser; nothing is saved.

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

from core import Tokenizer, Transformer, TransformerConfig, make_optimizer, preset
from core.checkpoint import read_jsonl
from core.data import collate, encode_pairs, read_parallel, token_batches
from core.training.fast import DevicePairs, FastStep, SummedLoss
from core.training.precision import autocast, pick_precision
from core.training.run import hardware, overrides, read_run, training_pairs
from scripts import cli
from scripts.bench.bench_core import sync


def flops_per_target_token(cfg: TransformerConfig, pairs, lengths, batches) -> tuple[float, float]:
    """(training FLOPs per real target token, share of target positions that are padding) over the batches.

    lengths: (source, target) tokens of each pair, the target with its end-of-sentence (train_utils.training_pairs).
    """
    return counted_flops(cfg, (collate(pairs, idx, cfg.pad_id, cfg.bos_id, cfg.eos_id) for idx in batches))


def counted_flops(cfg: TransformerConfig, batches) -> tuple[float, float]:
    """(training FLOPs per real target token, padding share of the target positions) of (src, tgt_in, tgt_out) batches,
    counted on the meta device: forward, loss and backward, padding included, as the hardware computes it."""
    loss_of = SummedLoss(Transformer(cfg).to("meta").train())
    flops = real = padded = 0
    for batch in batches:
        real += int((batch[2] != cfg.pad_id).sum())
        padded += batch[2].numel()
        counter = FlopCounterMode(display=False)
        with counter:
            loss_of(*(t.to("meta") for t in batch))[0].backward()
        flops += counter.get_total_flops()
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


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--run", help="a run folder written by scripts/train.py")
    what.add_argument("--preset", help="time this preset's training step on this device (small, base, tiny...)")
    p.add_argument("--data", help="the prepared data (--run: default the folder run.json names)")
    p.add_argument("--peak-tflops", type=float, help="peak of ONE device, e.g. 989 for H100/H200 bf16 dense "
                                                     "(default: a matmul measured here in the run's precision)")
    p.add_argument("--batches", type=int, default=20, help="sample batches to count FLOPs on")
    p.add_argument("--skip", type=int, default=20, help="first log steps left out (warm-up, compilation)")
    p.add_argument("--since-step", type=int, help="only log steps after this one (default: the step where the "
                                                   "run last started, so a warm start's inherited log is left out)")
    step = p.add_argument_group("--preset: the step timed")
    step.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="config overrides, e.g. N_dec=2")
    step.add_argument("--max-tokens", type=int, default=4096, help="padded tokens a batch")
    step.add_argument("--seconds", type=float, default=30.0, help="time the steps after the first for this long")
    step.add_argument("--pairs", type=int, default=100_000,
                      help="training pairs sampled (every k-th line; also for a run on the fast path)")
    step.add_argument("--max-len", type=int, default=128)
    step.add_argument("--compile", default="auto", choices=["auto", "on", "off"], help="auto: on CUDA")
    step.add_argument("--compile-backend", default="inductor")
    step.add_argument("--compile-mode", default=None)
    step.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"])
    cli.add_threads(p)
    cli.add_device(p)
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    out = step_mfu(args) if args.preset else run_mfu(args)
    print(json.dumps(out, indent=None if args.preset else 1), flush=True)
    return out


def peak_of(args, on_cuda: bool, precision: str) -> tuple[float, str]:
    """(peak TFLOP/s of one device, where it came from): given, or a matmul measured here in that precision."""
    if args.peak_tflops:
        return args.peak_tflops, "given"
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    peak = measured_matmul_tflops("cuda" if on_cuda else "cpu", dtype)
    return peak, "measured matmul here" + ("" if on_cuda else f" ({precision}, {torch.get_num_threads()} threads)")


def run_mfu(args) -> dict:
    """The MFU of a run from its log: its median tokens/s times its FLOPs per target token."""
    run = Path(args.run)
    if not (run / "run.json").exists():
        sys.exit(f"{run} is not a training run: it has no run.json (scripts/train.py writes one)")
    meta, cfg = read_run(run)
    targs, world = meta["args"], meta.get("world", 1)
    data = Path(args.data or targs["data"])
    if not (data / "spm.model").exists():
        sys.exit(f"no prepared data at {data}: pass --data with the folder the run trained on")

    tokenizer = Tokenizer.from_folder(data)
    if targs.get("fast_used"):          # the fast path's batches: padded to their length bucket, a sample will do
        pairs, lengths = sampled_pairs(data, tokenizer, cfg, targs["max_len"], args.pairs)
        per_token, padding = bucket_flops(cfg, pairs, lengths, targs["max_tokens"], targs["seed"], args.batches)
    else:
        pairs, _, lengths = training_pairs(data, tokenizer, cfg, targs["max_len"])
        batches = token_batches(lengths, targs["max_tokens"], seed=targs["seed"])
        sample = batches[:: max(1, len(batches) // args.batches)][: args.batches]  # a sample across the epoch
        per_token, padding = flops_per_target_token(cfg, pairs, lengths, sample)

    since = args.since_step if args.since_step is not None else meta.get("start_step", 0)
    tok_s, n_steps = median_tokens_per_s(run / "train_log.jsonl", args.skip, since)
    achieved = per_token * tok_s / 1e12
    on_cuda = "CUDA" in str(meta.get("device", ""))
    if not args.peak_tflops:
        if on_cuda and not torch.cuda.is_available():
            sys.exit("the run was on CUDA but this machine has no GPU: pass --peak-tflops")
        cli.set_threads(targs.get("threads"))            # the run's threads (0 or none: torch's default)
    # the precision the run computed in (runs from before --precision: bf16 on CUDA, fp32 on a CPU)
    peak, peak_from = peak_of(args, on_cuda, meta.get("precision") or ("bf16" if on_cuda else "fp32"))
    return {"run": str(run), "device": meta.get("device"), "precision": meta.get("precision"), "processes": world,
            "parameters": meta.get("parameters"), "max_tokens": targs["max_tokens"],
            "gflops_per_target_token": round(per_token / 1e9, 4), "padding_share": round(padding, 3),
            "target_tokens_per_s": round(tok_s, 1), "log_steps": n_steps,
            "achieved_tflops": sig(achieved), "peak_tflops_per_device": sig(peak), "peak_from": peak_from,
            "mfu": sig(achieved / (peak * world))}


def bucket_flops(cfg, pairs, lengths, max_tokens: int, seed: int, n: int) -> tuple[float, float]:
    """counted_flops of n batches across an epoch of the fast path's bucketed batches."""
    on_cpu = DevicePairs(pairs, lengths, cfg, "cpu")
    batches = on_cpu.epoch(max_tokens, seed)
    return counted_flops(cfg, (on_cpu.batch(b, rows) for b, rows, _ in batches[:: max(1, len(batches) // n)][:n]))


def sampled_pairs(data: Path, tokenizer, cfg, max_len: int, n: int):
    """(pairs, lengths) of every k-th training line, about n of them (the whole corpus would take a minute to cut)."""
    src, tgt = read_parallel(data, "train")
    k = max(1, len(src) // n)
    pairs, _ = encode_pairs(tokenizer, src[::k], tgt[::k], cfg.eos_id, min(max_len, cfg.max_len - 1))
    return pairs, [(len(s), len(t) + 1) for s, t in pairs]


def step_mfu(args) -> dict:
    """Time the step a run of this preset would take on this device (the fast path on CUDA), and its MFU."""
    device = torch.device(cli.pick_device(args.device))
    cli.set_threads(args.threads)
    data = Path(args.data or "data/wmt-en-de")
    if not (data / "spm.model").exists():
        sys.exit(f"no prepared data at {data}: pass --data with a folder made by scripts/prepare_data.py")
    tokenizer = Tokenizer.from_folder(data)
    cfg = preset(args.preset, vocab_size=len(tokenizer), **overrides(None, args.set))
    pairs, lengths = sampled_pairs(data, tokenizer, cfg, args.max_len, args.pairs)
    torch.manual_seed(1)
    model = Transformer(cfg).to(device).train()
    opt, _ = make_optimizer(model, cfg.d_model, warmup=4000, fused=True)
    precision, _ = pick_precision(args.precision, device)
    compiled = args.compile == "on" or (args.compile == "auto" and device.type == "cuda")
    step = FastStep(model, opt, autocast(precision, device), clip=1.0, backend=args.compile_backend,
                    mode=args.compile_mode, compile=compiled)
    on_device = DevicePairs(pairs, lengths, cfg, device)
    batches = on_device.epoch(args.max_tokens, seed=1)
    t = time.perf_counter()
    b, rows, n = batches[0]
    step([on_device.batch(b, rows)], n)
    sync(device)
    first_s = time.perf_counter() - t
    tokens, steps, t = 0, 0, time.perf_counter()
    while time.perf_counter() - t < args.seconds:
        b, rows, n = batches[(steps + 1) % len(batches)]
        step([on_device.batch(b, rows)], n)
        tokens, steps = tokens + n, steps + 1
        if steps % 20 == 0:
            sync(device)                 # the host runs at most 20 steps ahead of the device
    sync(device)
    seconds = time.perf_counter() - t
    sample = batches[:: max(1, len(batches) // args.batches)][: args.batches]
    per_token, padding = counted_flops(cfg, (tuple(x.cpu() for x in on_device.batch(b, r)) for b, r, _ in sample))
    achieved = per_token * tokens / seconds / 1e12
    peak, peak_from = peak_of(args, device.type == "cuda", precision)
    return {"preset": args.preset, "set": args.set, "device": hardware(device), "precision": precision,
            "step": "core/training/fast.py", "compiled": compiled, "parameters":
            sum(p.numel() for p in model.parameters()), "max_tokens": args.max_tokens, "pairs": len(pairs),
            "first_step_s": round(first_s, 1), "steps": steps, "seconds": round(seconds, 1),
            "gflops_per_target_token": round(per_token / 1e9, 4), "padding_share": round(padding, 3),
            "target_tokens_per_s": round(tokens / seconds, 1), "achieved_tflops": sig(achieved),
            "peak_tflops_per_device": sig(peak), "peak_from": peak_from, "mfu": sig(achieved / peak)}


if __name__ == "__main__":
    main()
