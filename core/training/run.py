"""A training run's bookkeeping: config overrides, its run.json, the training pairs, the progress bar and the
JSONL log, and when to stop (steps, epochs, minutes, patience or a signal)."""
from __future__ import annotations

import json
import platform
import signal
from pathlib import Path

import torch
import torch.distributed as dist
from tqdm import tqdm

from core import TransformerConfig
from core.checkpoint import atomic_write, read_jsonl
from core.data import encode_pairs, read_parallel
from core.training.schedule import cooldown_factor


def overrides(config_file, pairs) -> dict:
    """Config overrides from a JSON file and KEY=VALUE strings (values parsed as JSON when they can be)."""
    out = json.loads(Path(config_file).read_text()) if config_file else {}
    for item in pairs:
        if "=" not in item:
            raise SystemExit(f"--set expects KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def read_run(run: Path) -> tuple[dict, TransformerConfig]:
    """RUN/run.json as train.py wrote it (args, config, world, device, parameters), and its model config."""
    meta = json.loads((Path(run) / "run.json").read_text(encoding="utf-8"))
    return meta, TransformerConfig.from_dict(meta["config"])


def training_pairs(data, tokenizer, cfg, max_len: int, subword_dropout: float = 0.0, seed: int | None = None):
    """(pairs, how many were too long, (source, target) lengths with the end-of-sentence) of DATA's train split.

    With subword_dropout (BPE-dropout) each call with another seed gives another segmentation: train.py
    seeds it with the epoch, so a resumed run sees the same pieces it would have seen.
    """
    src, tgt = read_parallel(data, "train")
    pairs, skipped = encode_pairs(tokenizer, src, tgt, cfg.eos_id, min(max_len, cfg.max_len - 1),
                                  subword_dropout, seed)
    return pairs, skipped, [(len(s), len(t) + 1) for s, t in pairs]


class EpochPairs:
    """The training pairs of each epoch: cut once, or with BPE-dropout afresh each epoch, seeded by
    (seed, epoch) so that a resumed run sees the pieces it would have seen."""

    def __init__(self, data, tokenizer, cfg, max_len: int, subword_dropout: float = 0.0, seed: int = 1):
        self.args = (data, tokenizer, cfg, max_len)
        self.subword_dropout, self.seed, self.cached = subword_dropout, seed, None

    def __call__(self, epoch: int):
        """(pairs, how many were too long, lengths) of that epoch (training_pairs)."""
        if self.cached is None or self.subword_dropout > 0:
            self.cached = training_pairs(*self.args, self.subword_dropout, seed=self.seed * 100_003 + epoch)
        return self.cached


def hardware(device) -> str:
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA)"
    return f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"


def progress(args, start_step, main_proc):
    return tqdm(total=args.max_steps or None, initial=start_step, disable=args.no_progress or not main_proc,
                unit="step", dynamic_ncols=True, mininterval=2.0)


class StopSignal:
    """SIGTERM or Ctrl-C asks a run to stop: it ends after the current step, then validates, saves and
    exports as at any other end, so killing a run loses nothing (a second Ctrl-C stops it at once)."""

    def __init__(self):
        self.requested = False
        self.previous = {sig: signal.signal(sig, self._handle) for sig in (signal.SIGTERM, signal.SIGINT)}

    def close(self):
        """Give the signals back to whoever had them (train.main also runs inside tests)."""
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum, frame):
        if self.requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.requested = True
        print(f"{signal.Signals(signum).name}: stopping after this step (saving and exporting first)", flush=True)


def finished(args, info, n_batches, elapsed, world=1, requested: bool = False) -> bool:
    """Stop at --max-steps, --epochs, --max-minutes or --patience, whichever comes first, or when a stop
    was requested (all processes agree)."""
    stop = requested or stop_reason(args, info, info["epoch"] + info["pos"] / max(n_batches, 1), elapsed) is not None
    if world > 1:
        flag = torch.tensor([int(stop)], device="cuda" if dist.get_backend() == "nccl" else "cpu")   # NCCL: GPU only
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        stop = bool(flag.item())
    return stop


def stop_reason(args, info, epochs: float, elapsed: float) -> str | None:
    """The limit that ends the run ("patience", "max_steps", "epochs", "max_minutes" or "signal"), or None."""
    # getattr: average_checkpoints re-exports runs whose older run.json lacks some of these options
    max_steps, max_epochs, max_minutes = (getattr(args, k, None) for k in ("max_steps", "epochs", "max_minutes"))
    if info.get("stopped_by_signal"):
        return "signal"
    if plateaued(info, getattr(args, "patience", 0)):
        return "patience"
    if max_steps and info["step"] >= max_steps:
        return "max_steps"
    if max_epochs and epochs >= max_epochs:
        return "epochs"
    if max_minutes and run_seconds(info, elapsed) >= max_minutes * 60:
        return "max_minutes"
    return None


def run_seconds(info, elapsed: float) -> float:
    """The training time --max-minutes counts: all of it, or since the warm start (--init-from) that began this run."""
    return elapsed - (info.get("init") or {}).get("elapsed_s", 0.0)


def clock_cooldown_factor(args, info, elapsed: float, world: int = 1) -> float:
    """--cooldown-minutes: the factor on the learning rate that takes it to 0 over the last minutes of --max-minutes
    (1 - sqrt shape, as --cooldown by steps). All processes use the slowest clock, so that they keep equal weights."""
    seconds = run_seconds(info, elapsed)
    if world > 1:
        t = torch.tensor([seconds], dtype=torch.float64, device="cuda" if dist.get_backend() == "nccl" else "cpu")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        seconds = float(t.item())
    return cooldown_factor(seconds, args.max_minutes * 60, args.cooldown_minutes * 60)


def plateaued(info, patience: int) -> bool:
    """True once dev BLEU has not beaten its best for `patience` validations in a row (early stopping; 0: never)."""
    return bool(patience) and info.get("bleu_stale", 0) >= patience


class JsonlLog:
    """Append-only JSON-lines log; on resume, lines after the resumed step are dropped (and a line cut short
    by a run killed while writing it)."""

    def __init__(self, path: Path, resume_step: int):
        self.path = path
        if path.exists():
            keep = [row for row in read_jsonl(path, skip_bad=True)
                    if isinstance(row, dict) and row.get("step", 0) <= resume_step]
            atomic_write(path, "".join(json.dumps(row) + "\n" for row in keep))
        self.f = open(path, "a", encoding="utf-8")

    def write(self, record: dict) -> None:
        self.f.write(json.dumps(record) + "\n")
        self.f.flush()


def epochs_done(info) -> float:
    """Epochs seen, with the fraction of the current one (states saved before it was recorded: whole epochs)."""
    return round(info["epoch"] + info["pos"] / info["epoch_batches"] if info.get("epoch_batches") else info["epoch"], 2)
