"""scripts/train.py's loop on the fast path (core/training/fast.py): the same bookkeeping as its eager loop (epochs,
the schedule and cool-down, validations, snapshots, saves, when to stop), with one log line every --log-every steps,
when the sums on the device are read."""
from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from .fast import DevicePairs, FastStep
from .run import clock_cooldown_factor, finished
from .saving import save_all
from .validation import validate


@dataclass
class Loop:
    """What train.py has built for the loop: the run's options, model, optimiser and the things it writes."""
    args: object
    model: torch.nn.Module
    opt: torch.optim.Optimizer
    sched: object
    info: dict
    epoch_pairs: object          # core.training.run.EpochPairs
    cfg: object
    device: torch.device
    amp: object                  # the autocast context (core.training.precision)
    run: object                  # the run folder (pathlib.Path)
    t_start: float
    log: object                  # core.training.run.JsonlLog
    bar: object
    valid: object = None         # core.training.validation.Validation, or None
    probes: object = None        # core.training.probes.Probes, or None
    stop: object = None          # core.training.run.StopSignal


def train_fast(loop: Loop) -> None:
    """Train until finished(): fixed-shape batches on the device, the compiled step, the sums read every N steps."""
    args, info = loop.args, loop.info
    every = args.log_every
    step = FastStep(loop.model, loop.opt, loop.amp, args.clip, args.compile_backend, args.compile_mode,
                    compile=args.compile_used)
    pairs, batches = _epoch(loop)
    last_save, first = time.time(), True
    loop.model.train()
    while not finished(args, info, len(batches), time.time() - loop.t_start, 1, loop.stop.requested):
        if info["pos"] + args.accum > len(batches):                # the rest does not fill an update: next epoch
            info["epoch"], info["pos"] = info["epoch"] + 1, 0
            pairs, batches = _epoch(loop, pairs)
            continue
        update = batches[info["pos"]: info["pos"] + args.accum]
        tokens = sum(n for _, _, n in update)
        t0 = time.perf_counter()
        step([pairs.batch(b, rows) for b, rows, _ in update], tokens)
        if first:                                                  # the first step compiles: say how long it took
            _first_step(loop, t0)
        lr = loop.opt.param_groups[0]["lr"]
        loop.sched.step()
        if args.cooldown_minutes:                                  # the schedule's next rate, scaled down by the clock
            f = clock_cooldown_factor(args, info, time.time() - loop.t_start)
            for group in loop.opt.param_groups:
                group["lr"] *= f
        info["step"] += 1
        info["pos"] += args.accum
        info["tokens"] += tokens
        loop.bar.update(1)
        if first or info["step"] % every == 0:                    # the first step's line: its own, not in a mean
            _log(loop, step.sums.read(), lr)
            first = False
        t_aside = time.time()                                       # validations, snapshots, saves: not tokens/s
        if loop.valid and info["step"] % args.valid_every == 0:
            validate(loop.valid, loop.model, info, loop.log, loop.bar, args.patience)
        if loop.probes and info["step"] % args.probe_every == 0:
            loop.probes.snapshot(info["step"])
        now = time.time()
        due = (args.save_every_steps and info["step"] % args.save_every_steps == 0) or \
              (not args.save_every_steps and now - last_save >= args.save_every_min * 60)
        if due:
            info["elapsed_s"] = now - loop.t_start
            save_all(loop.run, loop.model, loop.opt, loop.sched, info, args.keep)
            last_save = now
        loop.model.train()
        step.sums.pause(time.time() - t_aside)
    if step.sums.steps:
        _log(loop, step.sums.read(), loop.opt.param_groups[0]["lr"])


def _epoch(loop: Loop, pairs: DevicePairs | None = None):
    """(the epoch's pairs on the device, its batches): the pairs are put on the device again only when they change
    (BPE-dropout cuts them afresh each epoch)."""
    cut = loop.epoch_pairs(loop.info["epoch"])
    if pairs is None or pairs.source is not cut:
        pairs = DevicePairs(cut[0], cut[2], loop.cfg, loop.device, source=cut)
    batches = pairs.epoch(loop.args.max_tokens, loop.args.seed + loop.info["epoch"])
    loop.info["epoch_batches"] = len(batches)
    return pairs, batches


def _first_step(loop: Loop, t0: float) -> None:
    """Wait for the first step (compilation included) and log its seconds."""
    if loop.device.type == "cuda":
        torch.cuda.synchronize(loop.device)
    seconds = time.perf_counter() - t0
    loop.log.write({"kind": "first_step", "step": loop.info["step"] + 1, "seconds": round(seconds, 1),
                    "compiled": loop.args.compile_used, "backend": loop.args.compile_backend,
                    "mode": loop.args.compile_mode})
    loop.bar.write(f"first step (compilation included): {seconds:.1f} s")


def _log(loop: Loop, sums: dict, lr: float) -> None:
    """One JSONL line for the steps since the last read: their mean loss, tokens/s and the last gradient norm."""
    info = loop.info
    loop.log.write({"step": info["step"], "epoch": info["epoch"], "loss": round(sums["loss"], 5), "lr": lr,
                    "tokens_per_s": round(sums["tokens_per_s"], 1), "grad_norm": round(sums["grad_norm"], 4),
                    "steps": sums["steps"], "elapsed_s": round(time.time() - loop.t_start, 2)})
    loop.bar.set_postfix(loss=f"{sums['loss']:.3f}", lr=f"{lr:.2e}", tok_s=f"{sums['tokens_per_s']:.0f}",
                         ep=info["epoch"])
