"""Watch it learn: a tiny Transformer trained from scratch to reverse (or copy) a string of digits.

The Annotated Transformer's first example, on our own code: core.Transformer, core.label_smoothed_loss and
core.make_optimizer (Adam with the warm-up schedule of section 5.3); nothing of the model or the loss is copied.
While it trains, snapshots of one example's cross-attention show the alignment form: the diagonal of a copy,
the anti-diagonal of a reversal. `train` is the loop; `LiveRun` runs it on a background thread for a server
where many sessions watch one run. No Streamlit here.

Threads, as measured here (torch 2.13, OpenMP): torch's thread count belongs to each thread, not to the process.
A thread started from Python runs its ops on one OpenMP thread per core whatever set_num_threads said in other
threads (an 800x800 matmul loop used 2.0 CPU-seconds per second of its own on 2 cores, while get_num_threads
there said 1); set_num_threads inside a thread changes that thread alone (the main thread kept its 2). So
LiveRun sets its own thread to one torch thread, and the app's script threads set theirs in app/startup.py.
"""
from __future__ import annotations

import atexit
import functools
import math
import threading
import time
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from core import Transformer, label_smoothed_loss, make_optimizer, preset

PAD, UNK, BOS, EOS = 0, 1, 2, 3
DIGIT0 = 4                                   # ids 4..13 are the digits 0..9
VOCAB = DIGIT0 + 10
TASKS = {"reverse": "reverse the digits", "copy": "copy the digits"}


@dataclass(frozen=True)
class ToyConfig:
    """The task, the model (paper names) and the budget: a step count with a time cap."""
    task: str = "reverse"
    min_len: int = 4                 # digits per example
    max_len: int = 8
    example: str = "31859264"        # the example whose cross-attention is shown
    N: int = 2
    d_model: int = 32
    d_ff: int = 64
    h: int = 2
    steps: int = 600
    max_seconds: float = 90.0
    batch_size: int = 64
    warmup: int = 100
    lr_scale: float = 1.0
    label_smoothing: float = 0.1
    every: int = 10                  # a snapshot every `every` steps (and at steps 0 and the last)
    pace: float = 0.0                # at most this many steps a second (slow motion for a class); 0: full speed
    seed: int = 0

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"The task must be one of {', '.join(TASKS)}, not {self.task!r}.")
        if not 1 <= self.min_len <= self.max_len <= 30:
            raise ValueError(f"Digits per example must satisfy 1 <= min_len <= max_len <= 30; "
                             f"got {self.min_len} and {self.max_len}.")
        check_digits(self.example, self.max_len)
        if self.steps < 1 or self.every < 1 or self.max_seconds <= 0 or self.pace < 0:
            raise ValueError("steps, every and max_seconds must be positive, and pace 0 or more.")


def check_digits(text: str, max_len: int) -> str:
    """text itself, or a ValueError a student understands."""
    if not text or not text.isdigit() or not text.isascii():
        raise ValueError(f"Type digits only (0-9), for example 31859264; got {text!r}.")
    if len(text) > max_len:
        raise ValueError(f"At most {max_len} digits: this model was trained on strings of up to {max_len}.")
    return text


def target_digits(task: str, digits: str) -> str:
    """What the model should write: the digits reversed, or copied."""
    return digits[::-1] if task == "reverse" else digits


def encode(task: str, digits: str) -> tuple[list[int], list[int]]:
    """digits -> (source ids + </s>, decoder ids <s> + target + </s>)."""
    src = [DIGIT0 + int(c) for c in digits] + [EOS]
    return src, [BOS] + [DIGIT0 + int(c) for c in target_digits(task, digits)] + [EOS]


def tokens(ids) -> list[str]:
    """ids -> labels: the digit, or <s> / </s> / <pad>."""
    names = {PAD: "<pad>", UNK: "<unk>", BOS: "<s>", EOS: "</s>"}
    return [names.get(int(i), str(int(i) - DIGIT0)) for i in ids]


def batch(cfg: ToyConfig, n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """n random examples -> src (n, max_len + 1) and decoder ids tgt (n, max_len + 2), padded with <pad>; each row
    is what encode gives for its digits (built in whole tensors: no Python loop to hold the interpreter's lock)."""
    L = torch.randint(cfg.min_len, cfg.max_len + 1, (n, 1), generator=g)          # (n, 1) digits per example
    digits = torch.randint(0, 10, (n, cfg.max_len), generator=g) + DIGIT0         # (n, max_len)
    pos = torch.arange(cfg.max_len)[None, :]                                       # (1, max_len)
    real = pos < L                                                                 # (n, max_len)
    order = (L - 1 - pos).clamp(min=0) if cfg.task == "reverse" else pos.expand(n, -1)
    written = digits.gather(1, order)                                              # the target digits
    src = torch.full((n, cfg.max_len + 1), PAD, dtype=torch.long)
    src[:, :-1] = torch.where(real, digits, PAD)
    src.scatter_(1, L, EOS)
    tgt = torch.full((n, cfg.max_len + 2), PAD, dtype=torch.long)
    tgt[:, 0] = BOS
    tgt[:, 1:-1] = torch.where(real, written, PAD)
    tgt.scatter_(1, L + 1, EOS)
    return src, tgt


def build_model(cfg: ToyConfig) -> Transformer:
    """preset("tiny") with the sizes of cfg, initialised from cfg.seed without touching torch's global RNG."""
    mcfg = preset("tiny", vocab_size=VOCAB, N=cfg.N, d_model=cfg.d_model, d_ff=cfg.d_ff, h=cfg.h, dropout=0.0,
                  max_len=2 * cfg.max_len + 8, label_smoothing=cfg.label_smoothing)
    with torch.random.fork_rng():
        torch.manual_seed(cfg.seed)
        return Transformer(mcfg)


@functools.lru_cache(maxsize=8)
def parameter_count(cfg: ToyConfig) -> int:
    """How many numbers the model of cfg learns."""
    return sum(p.numel() for p in build_model(cfg).parameters())


def expected_columns(task: str, n_digits: int) -> np.ndarray:
    """For each decoder row that writes a digit, the source position holding that digit: (n_digits,)."""
    t = np.arange(n_digits)
    return n_digits - 1 - t if task == "reverse" else t


def alignment_hits(cross: np.ndarray, task: str, n_digits: int) -> np.ndarray:
    """cross (..., T, S) maps of examples with n_digits digits -> (...) share of digit rows whose largest weight
    falls on the source digit being written (1.0: a clean diagonal, or anti-diagonal for a reversal)."""
    rows = cross[..., :n_digits, :]                                   # the </s> row writes no digit
    return (rows.argmax(-1) == expected_columns(task, n_digits)).mean(-1)


@torch.no_grad()
def look(model: Transformer, task: str, digits: str) -> tuple[np.ndarray, str]:
    """One example, teacher-forced: its cross-attention (N_dec, h, T, S) and the model's greedy guess of
    each digit from the correct ones before it (what a teacher-forced step writes)."""
    was_training = model.training
    model.eval()
    src, tgt = (torch.tensor([ids]) for ids in encode(task, digits))
    logits, attns = model(src, tgt[:, :-1], need_weights=True)            # (1, T, V)
    model.train(was_training)
    cross = torch.stack([a[0] for a in attns.cross]).float().numpy()      # (N_dec, h, T, S)
    guess = "".join(t if t.isdigit() else "·" for t in tokens(logits[0, : len(digits)].argmax(-1)))
    return cross, guess


@dataclass
class Snapshot:
    """The state of a run at one step: the loss, and the example's cross-attention and guess."""
    step: int
    seconds: float
    loss: float | None               # mean training loss since the previous snapshot (None at step 0)
    accuracy: float | None           # share of target tokens predicted right, teacher-forced, same steps
    cross: np.ndarray                # (N_dec, h, T, S) of cfg.example
    guess: str                       # the model's digits for cfg.example
    hits: np.ndarray                 # (N_dec, h) alignment_hits of each cross-attention head


@dataclass
class ToyResult:
    """What train returns: the model, every snapshot, why it stopped, and its speed."""
    model: Transformer
    snapshots: list
    stopped_by: str                  # "steps", "time" or "stop"
    steps: int
    seconds: float

    @property
    def steps_per_s(self) -> float:
        return self.steps / max(self.seconds, 1e-9)


def train(cfg: ToyConfig, on_snapshot=None, stop: threading.Event | None = None) -> ToyResult:
    """Train a tiny Transformer on the toy task for cfg.steps steps or cfg.max_seconds, whichever comes first.

    on_snapshot: None, or a function called with each Snapshot (step 0, every cfg.every steps, the last).
    stop: None, or an Event: set, the run ends after the current step. cfg.pace > 0 sleeps between steps to
    keep to that many steps a second. Runs on the calling thread, with that thread's torch threads.
    """
    model = build_model(cfg).train()
    opt, sched = make_optimizer(model, cfg.d_model, cfg.warmup, cfg.lr_scale)
    g = torch.Generator().manual_seed(cfg.seed + 1)
    snapshots, losses, right, total = [], [], 0, 0
    t0 = time.perf_counter()

    def snap(step):
        cross, guess = look(model, cfg.task, cfg.example)
        s = Snapshot(step, time.perf_counter() - t0, float(np.mean(losses)) if losses else None,
                     right / total if total else None, cross, guess,
                     alignment_hits(cross, cfg.task, len(cfg.example)))
        snapshots.append(s)
        if on_snapshot is not None:
            on_snapshot(s)

    snap(0)
    step, stopped_by = 0, "steps"
    while step < cfg.steps:
        if stop is not None and stop.is_set():
            stopped_by = "stop"
            break
        if time.perf_counter() - t0 > cfg.max_seconds:
            stopped_by = "time"
            break
        src, tgt = batch(cfg, cfg.batch_size, g)
        gold = tgt[:, 1:]                                                  # (B, T)
        logits = model(src, tgt[:, :-1])                                   # (B, T, V)
        loss, _ = label_smoothed_loss(logits, gold, cfg.label_smoothing, PAD)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        step += 1
        real = gold != PAD
        losses.append(loss.item())
        right += int(((logits.argmax(-1) == gold) & real).sum())
        total += int(real.sum())
        if step % cfg.every == 0 or step == cfg.steps:
            snap(step)
            losses, right, total = [], 0, 0
        if cfg.pace:                       # slow motion: the sleep gives the CPU (and the GIL) back to the server
            wait = t0 + step / cfg.pace - time.perf_counter()
            if wait > 0:
                (stop.wait if stop is not None else time.sleep)(wait)
    if snapshots[-1].step != step:
        snap(step)
    return ToyResult(model.eval(), snapshots, stopped_by, step, time.perf_counter() - t0)


@torch.no_grad()
def held_out_hits(model: Transformer, cfg: ToyConfig, n: int = 32, seed: int = 1234) -> np.ndarray:
    """(N_dec, h): each cross-attention head's alignment_hits averaged over n fresh examples of cfg.max_len digits."""
    g = torch.Generator().manual_seed(seed)
    fixed = replace(cfg, min_len=cfg.max_len, example="0")
    src, tgt = batch(fixed, n, g)
    _, attns = model.eval()(src, tgt[:, :-1], need_weights=True)
    cross = torch.stack(attns.cross, 1).float().numpy()                   # (n, N_dec, h, T, S)
    return alignment_hits(cross, cfg.task, cfg.max_len).mean(0)


def best_head(hits: np.ndarray) -> tuple[int, int]:
    """(layer, head), counted from 0, of the largest entry of an (N_dec, h) array of hits."""
    layer, head = np.unravel_index(int(np.argmax(hits)), hits.shape)
    return int(layer), int(head)


@dataclass
class LiveRun:
    """One training run on a background thread, watched by many sessions: the snapshots so far, who started it.

    Reading and writing the snapshots goes through a lock; `stop()` asks the loop to end after its step.
    """
    cfg: ToyConfig
    started_by: str                  # the name shown to every session
    owner: str = ""                  # the session that started it (only it may stop it)
    threads: int = 1                 # torch threads of the training thread
    started_at: float = field(default_factory=time.time)
    snapshots: list = field(default_factory=list)
    result: ToyResult | None = None
    error: str | None = None
    torch_threads: int | None = None   # what the training thread runs on, once it has started
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def start(self) -> LiveRun:
        self._thread = threading.Thread(target=self._run, name="toy-training", daemon=True)
        self._thread.start()
        return self

    @property
    def id(self) -> str:
        return f"{self.started_at:.6f}"

    def _run(self):
        # torch's thread count is kept per thread (OpenMP): a new thread does NOT inherit set_num_threads from the
        # thread that made it (it starts with one per core, even where get_num_threads says otherwise), and setting
        # it here leaves every other thread's as it is (measured; see watch_it_learn's docs).
        torch.set_num_threads(self.threads)
        self.torch_threads = torch.get_num_threads()
        try:
            result = self._train(on_snapshot=self._add, stop=self._stop)
            with self._lock:
                self.result = result
        except Exception as e:  # noqa: BLE001 a failed run must end as a message, never as a dead thread
            with self._lock:
                self.error = f"{type(e).__name__}: {e}"

    def _train(self, **kwargs):
        """The training this run's thread runs (a subclass names another task's)."""
        return train(self.cfg, **kwargs)

    def _add(self, snapshot: Snapshot):
        with self._lock:
            self.snapshots.append(snapshot)

    def stop(self) -> None:
        self._stop.set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def view(self) -> tuple[list, ToyResult | None, str | None]:
        """(a copy of the snapshot list, the result or None, the error or None), read under the lock."""
        with self._lock:
            return list(self.snapshots), self.result, self.error

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)


class OneRunAtATime:
    """At most one LiveRun at a time: the server's (process-wide) holder of the current or last run."""

    def __init__(self):
        self._lock = threading.Lock()
        self.run: LiveRun | None = None
        atexit.register(self.close)      # a thread still inside torch when the interpreter ends aborts the process

    def close(self, timeout: float = 5.0) -> None:
        """Stop the current run and wait for its thread (at the server's exit)."""
        if self.run is not None:
            self.run.stop()
            self.run.join(timeout)

    def start(self, cfg: ToyConfig, started_by: str, owner: str = "") -> tuple[LiveRun, bool]:
        """(the run now current, True if this call started it): a run already going is returned as it is."""
        with self._lock:
            if self.run is not None and self.run.running:
                return self.run, False
            self.run = LiveRun(cfg, started_by, owner).start()
            return self.run, True


def expected_loss_floor(cfg: ToyConfig) -> float:
    """The label-smoothed loss of a perfect model (its predictions equal the smoothed targets), in nats."""
    e, v = cfg.label_smoothing, VOCAB
    p_true, p_other = 1 - e + e / v, e / v
    return -(p_true * math.log(p_true) + (v - 1) * p_other * math.log(p_other)) if e else 0.0
