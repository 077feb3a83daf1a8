"""Learn to copy: a two-layer attention-only GPT trained live on repeated random tokens, until an induction head forms.

The second toy of Watch it learn, after the digit reversal (core/studies/toy_task.py). The model is the paper's
decoder alone (core.model.DecoderOnly: no FFN, learned positions); the data, sequences [<s>] + r + r of random
tokens r, are the induction-head literature's (Olsson et al. 2022). The first copy cannot be predicted; the second
can, by finding the current token earlier on and copying the one after it: a previous-token head in layer 1 and an
induction head in layer 2 working together. They form suddenly, a phase change: the loss drops as the best head's
induction score (core/studies/induction.py) jumps from noise to near 1.

Each batch draws its copy length from min_len..max_len: with one fixed length a head can reach "the token after
the previous occurrence" by position alone (a fixed offset), which is no induction head and scores like one.
Every `every` steps a Snapshot measures, on held-out sequences of eval_len tokens a copy (the same ones each time),
every head's induction, previous-token and duplicate-token scores and the in-context loss gap (second copy minus
first), with one example's maps for a page to redraw. `snapshots` yields them as it trains; `train` runs it to the
end; LiveCopyRun runs it on a background thread for a server, as toy_task.LiveRun does. No Streamlit here.

Measured here (2 shared CPU cores, torch 2.13, defaults, seeds 0-3, one torch thread): the best head's induction
score rises from 0.05 to past 0.5 at step 300-400 (4-8 s; about 0.2 fifty to a hundred steps before, 0.7 seventy-five
after), ends near 0.8 in layer 2 beside a layer-1 previous-token head (0.4-0.56), with a loss gap of -3.5 nats; the
head scores 0.53-0.80 at copy length 4 and 0.62-0.76 at 16 too, so it matches tokens, not a fixed offset. Run it
on ONE torch thread: with two on this machine a step of these tiny matrices took 10-15x longer (2.4-4.4 steps/s
against 38-64), the threads waiting on each other.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from core.model.decoder_only import DecoderOnly
from core.model.decoder_only_config import DecoderOnlyConfig

from .induction import copy_losses, repeated_tokens, scores_from_maps
from .toy_task import LiveRun, OneRunAtATime

BOS = 0                                   # <s>; ids 1..vocab_size-1 are the random tokens
EVAL_SEED = 1234                          # the held-out sequences (training draws from seed + 1)
# the random tokens' names (ids 1..39), as checkpoints/tiny-copy's tokenizer writes them: letters and digits read
# easily on a map
TOKEN_NAMES = [chr(c) for c in range(ord("A"), ord("Z") + 1)] + [str(d) for d in range(10)] + ["#", "@", "%"]


@dataclass(frozen=True)
class CopyConfig:
    """The task, the model (paper names) and the budget: a step count with a time cap."""
    vocab_size: int = 40             # <s> and 39 random tokens
    min_len: int = 6                 # random tokens per copy, drawn per batch
    max_len: int = 16
    eval_len: int = 12               # per copy in the held-out sequences and the example
    N: int = 2
    d_model: int = 48
    d_ff: int = 0                    # 0: attention-only
    h: int = 4
    steps: int = 1000
    max_seconds: float = 110.0
    batch_size: int = 32
    lr: float = 6e-3                 # Adam, constant after a short warm-up
    warmup: int = 20
    every: int = 25                  # a snapshot every `every` steps (and at step 0 and the last)
    eval_batch: int = 64
    threshold: float = 0.5           # the phase change: the first snapshot whose best induction score reaches it
    pace: float = 0.0                # at most this many steps a second (slow motion); 0: full speed
    seed: int = 0

    def __post_init__(self):
        if not 2 <= self.min_len <= self.max_len <= 64 or not 2 <= self.eval_len <= self.max_len:
            raise ValueError(f"Copy lengths must satisfy 2 <= min_len <= max_len <= 64 and 2 <= eval_len <= max_len; "
                             f"got {self.min_len}, {self.max_len} and {self.eval_len}.")
        if self.vocab_size < 3 or self.N < 2:
            raise ValueError("An induction head needs at least 2 layers and a vocabulary of at least 3 tokens.")
        if self.steps < 1 or self.every < 1 or self.max_seconds <= 0 or self.pace < 0 or self.lr <= 0:
            raise ValueError("steps, every, max_seconds and lr must be positive, and pace 0 or more.")


def build_model(cfg: CopyConfig) -> DecoderOnly:
    """The DecoderOnly of cfg (learned positions for 2 max_len + 1 tokens, an output projection of its own),
    initialised from cfg.seed without touching torch's global RNG.

    Its linear layers and token embedding start as PyTorch's defaults (uniform +-1/sqrt(d_in); N(0, 1)), not
    GPT-2's N(0, 0.02): from GPT-2's, and with the output tied to the embedding, no run here formed an induction
    head in 1,500 steps (its loss gap fell through other, positional heads), while from these one formed in about
    300-400 at lr 6e-3 (seeds 0-3, measured here)."""
    mcfg = DecoderOnlyConfig(vocab_size=cfg.vocab_size, N=cfg.N, d_model=cfg.d_model, d_ff=cfg.d_ff, h=cfg.h,
                             max_len=2 * cfg.max_len + 1, positions="learned", tie_output=False, bos_id=BOS)
    with torch.random.fork_rng():
        torch.manual_seed(cfg.seed)
        model = DecoderOnly(mcfg)
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                module.reset_parameters()
    return model


def held_out(cfg: CopyConfig) -> torch.Tensor:
    """The held-out sequences (eval_batch, 2 eval_len + 1); the first is the example a page shows."""
    return repeated_tokens(cfg.vocab_size, cfg.eval_len, cfg.eval_batch, EVAL_SEED, BOS, exclude=[BOS])


def token_name(i: int) -> str:
    """How a map labels token id i: <s>, then the tokenizer's names, then (past them) the id itself."""
    return "<s>" if i == BOS else TOKEN_NAMES[i - 1] if 1 <= i <= len(TOKEN_NAMES) else str(i)


def induction_cells(L: int) -> tuple[np.ndarray, np.ndarray]:
    """(queries, keys) of the cells an induction head attends in [<s>] + r + r with L tokens a copy: each query
    i = L+1..2L of the second copy and key i - (L - 1), the token after the previous occurrence of query i's token
    (the cells core/studies/induction.py's induction score averages)."""
    queries = np.arange(L + 1, 2 * L + 1)
    return queries, queries - (L - 1)


@dataclass
class Snapshot:
    """The state of a run at one step, measured on the held-out sequences."""
    step: int
    seconds: float
    loss: float | None               # mean training loss since the previous snapshot (None at step 0)
    induction: np.ndarray            # (N, h) every head's induction score
    previous: np.ndarray             # (N, h) previous-token score
    duplicate: np.ndarray            # (N, h) duplicate-token score
    loss_first: float                # held-out next-token loss on the first copy ...
    loss_second: float               # ... and on the second
    example: np.ndarray              # (N, h, T, T) the maps of the first held-out sequence
    example_ids: list                # its tokens

    @property
    def loss_gap(self) -> float:
        """Second copy minus first: negative once the model copies from context."""
        return self.loss_second - self.loss_first

    @property
    def best(self) -> tuple[int, int]:
        """(layer, head) from 0 of the head with the highest induction score."""
        layer, head = np.unravel_index(int(np.argmax(self.induction)), self.induction.shape)
        return int(layer), int(head)

    @property
    def best_induction(self) -> float:
        return float(self.induction.max())


@torch.no_grad()
def measure(model: DecoderOnly, cfg: CopyConfig, tokens: torch.Tensor, step: int, seconds: float,
            loss: float | None) -> Snapshot:
    """One Snapshot of `model` on the held-out `tokens`."""
    was_training = model.training
    model.eval()
    logits, maps = model(tokens, need_weights=True)
    model.train(was_training)
    s = scores_from_maps(maps, cfg.eval_len)
    first, second = copy_losses(logits, tokens, cfg.eval_len)
    example = torch.stack([m[0] for m in maps]).float().numpy()            # (N, h, T, T)
    return Snapshot(step, seconds, loss, s.induction, s.previous, s.duplicate, first, second, example,
                    tokens[0].tolist())


def snapshots(cfg: CopyConfig, stop: threading.Event | None = None, model: DecoderOnly | None = None
              ) -> Iterator[Snapshot]:
    """Train for cfg.steps steps or cfg.max_seconds, yielding a Snapshot at step 0, every cfg.every steps and at
    the last. stop: set, the run ends after the current step. model: None, a fresh build_model(cfg); given, it is
    trained in place (a caller keeps it). Runs on the calling thread, with that thread's torch threads."""
    model = (build_model(cfg) if model is None else model).train()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.warmup))
    g = torch.Generator().manual_seed(cfg.seed + 1)
    tokens = held_out(cfg)
    losses: list[float] = []
    t0 = time.perf_counter()
    yield measure(model, cfg, tokens, 0, 0.0, None)
    step = last = 0
    while step < cfg.steps:
        if (stop is not None and stop.is_set()) or time.perf_counter() - t0 > cfg.max_seconds:
            break
        L = int(torch.randint(cfg.min_len, cfg.max_len + 1, (1,), generator=g))
        batch = repeated_tokens(cfg.vocab_size, L, cfg.batch_size, int(torch.randint(2 ** 31, (1,), generator=g)),
                                BOS, exclude=[BOS])                        # (B, 2L + 1)
        logits = model(batch[:, :-1])                                      # (B, 2L, V): each next token
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        losses.append(loss.item())
        if step % cfg.every == 0 or step == cfg.steps:
            yield measure(model, cfg, tokens, step, time.perf_counter() - t0, float(np.mean(losses)))
            losses, last = [], step
        if cfg.pace:                       # slow motion: the sleep gives the CPU (and the GIL) back to the server
            wait = t0 + step / cfg.pace - time.perf_counter()
            if wait > 0:
                (stop.wait if stop is not None else time.sleep)(wait)
    if last != step:
        yield measure(model, cfg, tokens, step, time.perf_counter() - t0, float(np.mean(losses)) if losses else None)


def phase_change(snaps: list[Snapshot], threshold: float = 0.5) -> Snapshot | None:
    """The first snapshot whose best induction score reaches `threshold`, or None."""
    return next((s for s in snaps if s.best_induction >= threshold), None)


@dataclass
class CopyResult:
    """What train returns: the model, every snapshot, why it stopped, its speed and the phase change."""
    model: DecoderOnly
    snapshots: list
    stopped_by: str                  # "steps", "time" or "stop"
    steps: int
    seconds: float
    threshold: float

    @property
    def steps_per_s(self) -> float:
        return self.steps / max(self.seconds, 1e-9)

    @property
    def phase_change(self) -> Snapshot | None:
        return phase_change(self.snapshots, self.threshold)


def train(cfg: CopyConfig, on_snapshot=None, stop: threading.Event | None = None) -> CopyResult:
    """Run `snapshots` to its end: on_snapshot (None, or a function) is called with each Snapshot."""
    model = build_model(cfg)
    snaps, t0 = [], time.perf_counter()
    for s in snapshots(cfg, stop, model):
        snaps.append(s)
        if on_snapshot is not None:
            on_snapshot(s)
    steps = snaps[-1].step
    stopped_by = ("steps" if steps >= cfg.steps else "stop" if stop is not None and stop.is_set() else "time")
    return CopyResult(model.eval(), snaps, stopped_by, steps, time.perf_counter() - t0, cfg.threshold)


class LiveCopyRun(LiveRun):
    """toy_task.LiveRun for the copy task: the same lock, stop and view; its thread runs copy_task.train."""

    def _train(self, **kwargs):
        return train(self.cfg, **kwargs)


class OneCopyRunAtATime(OneRunAtATime):
    """At most one LiveCopyRun at a time: the server's holder of the current or last copy-task run."""

    def start(self, cfg: CopyConfig, started_by: str, owner: str = "") -> tuple[LiveCopyRun, bool]:
        with self._lock:
            if self.run is not None and self.run.running:
                return self.run, False
            self.run = LiveCopyRun(cfg, started_by, owner).start()
            return self.run, True
