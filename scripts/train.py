#!/usr/bin/env python
"""Train a Transformer on a corpus prepared by scripts/prepare_data.py: GPU first, CPU too.

    python scripts/train.py --data data/multi30k --run runs/multi30k-small --out checkpoints/multi30k-small
    torchrun --nproc_per_node=8 -- scripts/train.py --preset base --data data/wmt-en-de ...   # several GPUs

(The "--" keeps torchrun from reading our --run as an abbreviation of its own --run-path.)

The run folder (--run, git-ignored) holds the resume state, the last saves for averaging and the
JSONL log; --out receives the exported checkpoint (averaged weights, fp16) and attention snapshots.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from core import Tokenizer, Transformer, make_optimizer, preset
from core.data import collate, token_batches
from core.model.grow import describe_growth
from core.training.state import load_state, read_info
from core.checkpoint import write_json
from core.training.fast import FAST_LOG_EVERY, use_fast_path
from core.training.fast_loop import Loop, train_fast
from core.training.memory import keep_freed_memory, keep_matmul_kernels
from core.training.precision import autocast, pick_precision
from core.training.probes import Probes
from core.training.run import (EpochPairs, JsonlLog, StopSignal, clock_cooldown_factor, finished, hardware,
                               overrides, progress)
from core.training.saving import export, save_all, warm_start
from core.training.validation import Validation, validate
from scripts import cli


def parse_args(argv=None):
    p = cli.parser(__doc__)
    p.add_argument("--data", required=True, help="folder with train/valid .en/.de and spm.model")
    p.add_argument("--run", required=True, help="run folder for resume state, saves and logs (git-ignored)")
    p.add_argument("--out", help="checkpoint folder to export into at the end")
    p.add_argument("--preset", default="small", help="small, base, big or tiny")
    p.add_argument("--config", help="JSON file of config overrides")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="config overrides, e.g. dropout=0.2")
    p.add_argument("--max-tokens", type=int, default=4096, help="padded tokens per batch and process")
    p.add_argument("--accum", type=int, default=1, help="batches accumulated into one update")
    p.add_argument("--warmup", type=int, default=4000)
    p.add_argument("--lr-scale", type=float, default=1.0, help="factor on the paper's schedule")
    p.add_argument("--clip", type=float, default=0.0, help="gradient-norm clipping (0: none, as in the paper)")
    p.add_argument("--max-steps", type=int, default=0)
    p.add_argument("--cooldown", type=int, default=0, metavar="STEPS",
                   help="with --max-steps: take the learning rate to 0 over the last STEPS steps (1 - sqrt shape)")
    p.add_argument("--max-minutes", type=float, default=0.0,
                   help="stop after this much training time (summed over --resume; from a warm start: --init-from)")
    p.add_argument("--cooldown-minutes", type=float, default=0.0, metavar="MINUTES",
                   help="with --max-minutes: take the learning rate to 0 over its last MINUTES, by the clock (for a "
                        "lent GPU's fixed time, where the step count is not known ahead)")
    p.add_argument("--epochs", type=float, default=0.0)
    p.add_argument("--patience", type=int, default=0,
                   help="stop when dev BLEU has not improved for this many validations (0: never)")
    p.add_argument("--max-len", type=int, default=128, help="leave out training pairs longer than this in tokens")
    p.add_argument("--subword-dropout", type=float, default=0.0, metavar="P",
                   help="BPE-dropout (Provilkov et al. 2020): skip each merge with probability P, a new "
                        "segmentation of the training pairs every epoch (0.1 in the paper; 0: off)")
    p.add_argument("--save-every-min", type=float, default=10.0)
    p.add_argument("--save-every-steps", type=int, default=0)
    p.add_argument("--keep", type=int, default=5, help="weight saves kept for averaging")
    p.add_argument("--valid-every", type=int, default=1000, help="steps between validations (0: never)")
    p.add_argument("--valid-sentences", type=int, default=1000)
    p.add_argument("--bleu-sentences", type=int, default=200, help="dev sentences decoded for BLEU (0: none)")
    p.add_argument("--probe-every", type=int, default=0, help="steps between attention snapshots (0: never)")
    p.add_argument("--resume", action="store_true", help="continue from RUN/state.safetensors")
    p.add_argument("--init-from", metavar="CHECKPOINT",
                   help="warm-start a new run from a checkpoint folder's weights (fresh optimiser; "
                        "step count, schedule and log carry on)")
    p.add_argument("--rewarm", type=int, default=200,
                   help="with --init-from: steps of linear learning-rate re-warm-up")
    p.add_argument("--grow", action="store_true",
                   help="with --init-from and a larger d_ff or N_dec (--set d_ff=2048 N_dec=6; N_dec needs "
                        "norm=pre): the checkpoint's FFN units and decoder layers are kept and the new ones start "
                        "silent (zero output weights), so the model starts as it was")
    p.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"],
                   help="auto: bf16 autocast on CUDA and on CPUs with native bf16, else fp32")
    p.add_argument("--seed", type=int, default=1)
    cli.add_threads(p)
    p.add_argument("--fast", default="auto", choices=["auto", "on", "off"],
                   help="the GPU's step (core/training/fast.py): fixed-shape batches on the device, a compiled step, "
                        "the sums read every --log-every steps; auto: on CUDA with one process (the CPU keeps its own)")
    p.add_argument("--compile", nargs="?", const="on", default="auto", choices=["auto", "on", "off"],
                   help="torch.compile the step (auto: with --fast on CUDA; off on a CPU, where it was slower)")
    p.add_argument("--compile-backend", default="inductor",
                   help="torch.compile's backend (aot_eager: traced but not code-generated, for rehearsals on a CPU)")
    p.add_argument("--compile-mode", default=None,
                   help="torch.compile's mode, e.g. reduce-overhead (CUDA graphs, one per length bucket)")
    cli.add_device(p)
    cli.add_progress(p)
    p.add_argument("--log-every", type=int, default=None,
                   help="steps between JSONL log lines (default 1; on the fast path 50, each line waits for the GPU)")
    args = p.parse_args(argv)
    if args.cooldown and not 0 < args.cooldown <= args.max_steps:
        p.error("--cooldown STEPS needs --max-steps (the step where the learning rate reaches 0), "
                "at least STEPS")
    if args.cooldown_minutes and not 0 < args.cooldown_minutes <= args.max_minutes:
        p.error("--cooldown-minutes MINUTES needs --max-minutes (when the learning rate reaches 0), at least MINUTES")
    if args.cooldown_minutes and args.cooldown:
        p.error("--cooldown (steps) and --cooldown-minutes (the clock): give one")
    if args.grow and not args.init_from:
        p.error("--grow grows the checkpoint given by --init-from; give one")
    return args


def main(argv=None):
    args = parse_args(argv)
    world, rank = int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0))
    try:
        device = torch.device(cli.pick_device(args.device))
    except cli.UsageError as e:
        sys.exit(f"error: {e}")
    if world > 1:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
            torch.cuda.set_device(device)
    cli.set_threads(args.threads)
    if device.type == "cpu":
        keep_freed_memory()
        keep_matmul_kernels()       # before the model's first matmul
    torch.manual_seed(args.seed)
    run = Path(args.run)
    main_proc = rank == 0
    if main_proc:
        run.mkdir(parents=True, exist_ok=True)

    tokenizer = Tokenizer.from_folder(args.data)
    cfg = preset(args.preset, vocab_size=len(tokenizer), **overrides(args.config, args.set))
    epoch_pairs = EpochPairs(args.data, tokenizer, cfg, args.max_len, args.subword_dropout, args.seed)

    valid = Validation(args, tokenizer, cfg, device) if (args.valid_every and main_proc) else None
    model = Transformer(cfg)
    info = {"step": 0, "epoch": 0, "pos": 0, "elapsed_s": 0.0, "tokens": 0, "best_bleu": None}
    state_path = run / "state.safetensors"
    if args.resume and not state_path.exists():
        sys.exit(f"--resume: no resume state at {state_path}; start without --resume")
    if args.resume:
        info = read_info(state_path)      # the schedule's warm-start offset, before the optimiser is made
    elif args.init_from:
        info = warm_start(args.init_from, model, run, args.rewarm, args.grow)
        if main_proc:
            print(f"warm start from {args.init_from} at step {info['step']}: fresh optimiser, "
                  f"{args.rewarm} steps of re-warm-up", flush=True)
            if "grown" in info["init"]:
                print(f"grown: {describe_growth(info['init']['grown'])}", flush=True)
    model = model.to(device)
    init = info.get("init") or {}
    opt, sched = make_optimizer(model, cfg.d_model, args.warmup, args.lr_scale, fused=True,
                                start_step=init.get("step", 0), rewarm=init.get("rewarm", 0),
                                cooldown=(args.max_steps, args.cooldown))
    if args.resume:
        info = load_state(state_path, model, opt, sched)
        if main_proc:
            print(f"resumed at step {info['step']} (epoch {info['epoch']}, batch {info['pos']})", flush=True)
    n_params = sum(p.numel() for p in model.parameters())
    try:
        fast = use_fast_path(args.fast, device, world)
    except ValueError as e:
        sys.exit(f"error: {e}")
    args.fast_used = fast
    args.log_every = args.log_every or (FAST_LOG_EVERY if fast else 1)
    args.compile_used = args.compile == "on" or (args.compile == "auto" and fast and device.type == "cuda")
    train_model = model
    if args.compile_used and not fast:
        train_model = torch.compile(model)
    if world > 1:
        train_model = torch.nn.parallel.DistributedDataParallel(
            train_model, device_ids=[device.index] if device.type == "cuda" else None)
    args.precision_used, why = pick_precision(args.precision, device)
    amp = autocast(args.precision_used, device)
    if main_proc:
        print(f"precision: {args.precision_used} ({why})"
              + (f"; the fast path, {'compiled' if args.compile_used else 'not compiled'}" if fast else ""),
              flush=True)
    probes = Probes(args, tokenizer, model) if (args.probe_every and main_proc and args.out) else None
    log = JsonlLog(run / "train_log.jsonl", info["step"]) if main_proc else None
    if main_proc:
        # start_step: where this process began (a warm start's or a resume's step), so that a benchmark of
        # this run reads its own log lines, not those it inherited
        write_json(run / "run.json", {"args": vars(args), "config": json.loads(cfg.to_json()), "world": world,
                                         "start_step": info["step"],
                                         "precision": args.precision_used,
                                         "device": hardware(device), "parameters": n_params})

    pairs, skipped, lengths = epoch_pairs(info["epoch"])
    if main_proc:
        cut = f", BPE-dropout {args.subword_dropout}" if args.subword_dropout > 0 else ""
        print(f"{len(pairs)} training pairs ({skipped} longer than {args.max_len} tokens left out{cut}); "
              f"{sum(t for _, t in lengths)} target tokens an epoch; {world} process(es) on {device}", flush=True)
    n_micro = world * args.accum
    # (the fast path cuts its own batches, by length bucket)
    epoch_batches = [] if fast else token_batches(lengths, args.max_tokens, seed=args.seed + info["epoch"])
    info["epoch_batches"] = len(epoch_batches)   # for the card's fractional epoch count
    bar = progress(args, info["step"], main_proc)
    t_start, last_save, step_tokens_t = time.time() - info["elapsed_s"], time.time(), time.time()
    model.train()
    stop = StopSignal()
    info.pop("stopped_by_signal", None)             # a resumed run that was stopped by a signal goes on
    if fast:                                        # the GPU's loop; the eager one below is the CPU's
        train_fast(Loop(args, model, opt, sched, info, epoch_pairs, cfg, device, amp, run, t_start, log, bar,
                        valid, probes, stop))
    while not fast and not finished(args, info, len(epoch_batches), time.time() - t_start, world, stop.requested):
        if info["pos"] + n_micro > len(epoch_batches):        # the rest does not fill an update: next epoch
            info["epoch"], info["pos"] = info["epoch"] + 1, 0
            pairs, skipped, lengths = epoch_pairs(info["epoch"])
            epoch_batches = token_batches(lengths, args.max_tokens, seed=args.seed + info["epoch"])
            info["epoch_batches"] = len(epoch_batches)
            continue
        step_batches = epoch_batches[info["pos"]: info["pos"] + n_micro]
        global_tokens = sum(lengths[i][1] for b in step_batches for i in b)
        mine = step_batches[rank::world]
        loss_sum = torch.zeros((), device=device)
        for a, idx in enumerate(mine):
            src, tin, tout = collate(pairs, idx, cfg.pad_id, cfg.bos_id, cfg.eos_id, device)
            sync = contextlib.nullcontext() if (world == 1 or a == len(mine) - 1) else train_model.no_sync()
            with sync:
                with amp:       # the projection and the loss in one (core/model/loss.py)
                    loss, n = train_model(src, tin, tgt_out=tout)
                # normalise by the whole update's tokens, so that any split over processes and
                # accumulation steps gives the same gradient (DDP averages over processes)
                (loss * n * world / global_tokens).backward()
            loss_sum += loss.detach() * n
        if world > 1:
            dist.all_reduce(loss_sum)
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip if args.clip > 0 else float("inf"))
        lr = opt.param_groups[0]["lr"]
        opt.step()
        sched.step()
        if args.cooldown_minutes:          # the schedule's next rate, scaled down by the clock
            f = clock_cooldown_factor(args, info, time.time() - t_start, world)
            for group in opt.param_groups:
                group["lr"] *= f
        opt.zero_grad(set_to_none=True)
        info["step"] += 1
        info["pos"] += n_micro
        info["tokens"] += global_tokens
        now = time.time()
        tok_s = global_tokens / max(now - step_tokens_t, 1e-9)
        step_tokens_t = now
        if main_proc:
            mean_loss = loss_sum.item() / global_tokens
            if info["step"] % args.log_every == 0:
                log.write({"step": info["step"], "epoch": info["epoch"], "loss": round(mean_loss, 5), "lr": lr,
                           "tokens_per_s": round(tok_s, 1), "grad_norm": round(float(grad_norm), 4),
                           "elapsed_s": round(now - t_start, 2)})
            bar.update(1)
            bar.set_postfix(loss=f"{mean_loss:.3f}", lr=f"{lr:.2e}", tok_s=f"{tok_s:.0f}", ep=info["epoch"])
            if valid and info["step"] % args.valid_every == 0:
                validate(valid, model, info, log, bar, args.patience)
            if probes and info["step"] % args.probe_every == 0:
                probes.snapshot(info["step"])
            due = (args.save_every_steps and info["step"] % args.save_every_steps == 0) or \
                  (not args.save_every_steps and now - last_save >= args.save_every_min * 60)
            if due:
                info["elapsed_s"] = now - t_start
                save_all(run, model, opt, sched, info, args.keep)
                last_save = now
        model.train()
    stop.close()
    if stop.requested:
        info["stopped_by_signal"] = True
    if main_proc:
        bar.close()
        info["elapsed_s"] = time.time() - t_start
        if valid and info["step"] % args.valid_every:   # before the save, so the state holds the last dev scores
            validate(valid, model, info, log, None, args.patience)
        save_all(run, model, opt, sched, info, args.keep)
        if probes:
            probes.snapshot(info["step"])
        if args.out:
            export(run, args, cfg, tokenizer, info, device, n_params, world)
        print(json.dumps({"step": info["step"], "epoch": info["epoch"], "elapsed_s": round(info["elapsed_s"], 1),
                          "tokens": info["tokens"]}), flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return model


if __name__ == "__main__":
    main()
