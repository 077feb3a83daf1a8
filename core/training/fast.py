"""The GPU's training step: a compiled forward and backward over fixed-shape batches that live on the device.

A 9.9M-parameter model on an H200 ran at 3% of the chip (docs/benchmarks.md): its step was shaped for a 2-core CPU.
What held the GPU, and what this path does instead (scripts/train.py --fast; auto: on CUDA, one process):
- hundreds of small kernels launched one by one from Python: `torch.compile` fuses them. `dynamic=True` compiles
  ONE graph for every batch shape, and the shapes come from a fixed set of length buckets (core/data.py
  bucket_batches), so nothing recompiles; mode "reduce-overhead" adds CUDA graphs, one per batch shape.
- a host synchronisation every step (`loss.item()`, `float(grad_norm)`): the sums stay on the device and are read
  every --log-every steps.
- batches collated in Python and copied every step: every pair is on the device once, padded to its bucket, and a
  batch is one index_select.
- the loss in CPU-sized row chunks (core/model/loss.py): one fused projection and cross entropy.
The CPU keeps scripts/train.py's own loop and core/model/loss.py's chunked loss, as they were.
"""
from __future__ import annotations

import time

import numpy as np
import torch
from torch import nn

from core.data import LENGTH_BUCKETS, bucket_batches, buckets_of
from core.model.loss import summed_cross_entropy

FAST_LOG_EVERY = 50      # steps between reads of the device's sums (each read waits for the GPU)


def use_fast_path(choice: str, device, world: int) -> bool:
    """--fast auto|on|off: auto takes it on CUDA with one process (data-parallel runs keep the eager loop)."""
    if choice == "on" and world > 1:
        raise ValueError("--fast on trains in one process; under torchrun leave --fast at auto or off")
    return choice == "on" or (choice == "auto" and device.type == "cuda" and world == 1)


class DevicePairs:
    """Every training pair on the device, each side padded to its length bucket: for each (S, T) cell of source and
    target buckets, int64 tensors of source ids (rows, S), decoder inputs <s> + y and targets y + </s> (rows, T).
    Row 0 of each is a blank pair (source </s>, input <s>, targets all padding): it fills a cell's last batch and
    adds no loss and no gradient."""

    def __init__(self, pairs, lengths, cfg, device, buckets=LENGTH_BUCKETS, source=None):
        # source: what these pairs were made from (the loop builds them again only when it changes)
        self.cfg, self.buckets, self.source = cfg, buckets, source
        lengths_arr = np.asarray(lengths, dtype=np.int64).reshape(-1, 2)
        self.lengths, self.tgt_lengths = lengths_arr, lengths_arr[:, 1]
        src_b, tgt_b = buckets_of(lengths_arr[:, 0], buckets), buckets_of(lengths_arr[:, 1], buckets)
        self.row = np.zeros(len(pairs), dtype=np.int64)            # row of pair i in its cell's tensors
        self.tensors = {}
        for shape in sorted(set(zip(src_b.tolist(), tgt_b.tolist()))):
            members = np.flatnonzero((src_b == shape[0]) & (tgt_b == shape[1]))
            self.row[members] = np.arange(1, len(members) + 1)
            self.tensors[shape] = tuple(torch.from_numpy(x).to(device) for x in
                                        _padded(pairs, members, lengths_arr, shape, cfg))

    def batch(self, shape: tuple[int, int], rows: torch.Tensor):
        """(src (B, S), tgt_in (B, T), tgt_out (B, T)) of the (S, T) cell's rows (a (B,) int64 tensor on the device)."""
        return tuple(t.index_select(0, rows) for t in self.tensors[shape])

    def epoch(self, max_tokens: int, seed: int):
        """The epoch's batches as [((S, T), rows on the device, real target tokens)], from bucket_batches."""
        plan = bucket_batches(self.lengths, max_tokens, seed, self.buckets)
        pair = np.array([i for _, idx in plan for i in idx], dtype=np.int64)       # -1: a blank row
        real = pair >= 0
        rows = torch.from_numpy(np.where(real, self.row[np.maximum(pair, 0)], 0))
        rows = rows.to(next(iter(self.tensors.values()))[0].device)
        starts = np.cumsum([0] + [len(idx) for _, idx in plan])
        tokens = np.add.reduceat(np.where(real, self.tgt_lengths[np.maximum(pair, 0)], 0), starts[:-1]).tolist()
        return [(b, rows[a: z], n) for (b, _), a, z, n in zip(plan, starts[:-1].tolist(), starts[1:].tolist(), tokens)]


def _padded(pairs, members, lengths, shape: tuple[int, int], cfg):
    """(src (1 + len(members), S), tgt_in and tgt_out (1 + len(members), T)) numpy arrays of these pairs, row 0
    blank; in a few numpy assignments for all of a cell's pairs, not a Python loop over the news mix's 900k."""
    n = len(members) + 1
    src = np.full((n, shape[0]), cfg.pad_id, dtype=np.int64)
    tin, tout = np.full((2, n, shape[1]), cfg.pad_id, dtype=np.int64)
    src[0, 0] = cfg.eos_id                          # the blank row: a source of </s> alone
    s_len, t_len = lengths[members, 0], lengths[members, 1] - 1        # lengths hold the target's </s>
    rows = np.arange(1, n)
    _scatter(src, rows, s_len, [pairs[i][0] for i in members])
    _scatter(tout, rows, t_len, [pairs[i][1] for i in members])
    tin[:, 1:] = tout[:, :-1]                      # <s> + y: the targets shifted right, before </s> is added
    tin[:, 0] = cfg.bos_id
    tout[rows, t_len] = cfg.eos_id
    return src, tin, tout


def _scatter(out, rows, lens, seqs):
    """out[rows[j], :lens[j]] = seqs[j] for every j, in one numpy assignment."""
    if not len(seqs):
        return
    flat = np.concatenate([np.asarray(s) for s in seqs]).astype(np.int64)
    r = np.repeat(rows, lens)
    c = np.arange(len(flat)) - np.repeat(np.cumsum(lens) - lens, lens)
    out[r, c] = flat


class SummedLoss(nn.Module):
    """A batch's (summed label-smoothed loss, real target tokens): encoder, decoder, projection and torch's fused
    cross entropy, the same sum as Transformer(src, tgt_in, tgt_out=...) times its token count, with no row chunks."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, src, tgt_in, tgt_out):
        cfg = self.model.cfg
        memory, src_mask, _ = self.model.encode(src)                      # (B, S, d_model)
        hidden, _, _ = self.model.decode(tgt_in, memory, src_mask)        # (B, T, d_model)
        logits = self.model.project(hidden)                               # (B, T, vocab)
        loss = summed_cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), cfg.label_smoothing, cfg.pad_id)
        return loss, (tgt_out != cfg.pad_id).sum()


def compile_loss(model, backend: str = "inductor", mode: str | None = None, fall_back: bool = False):
    """torch.compile of SummedLoss(model), one graph for every bucket shape (dynamic=True; no duck sizing, so a
    batch whose row count equals its length does not tie the two and recompile on the next one).

    fall_back: should compilation fail, run that code eagerly instead of failing (on a lent GPU, a slower run beats
    none); the tests leave it off, so that a failure shows.
    """
    import torch.fx.experimental._config as fx_config

    fx_config.use_duck_shape = False
    torch._dynamo.config.suppress_errors = fall_back
    return torch.compile(SummedLoss(model), dynamic=True, backend=backend, mode=mode)


class DeviceSums:
    """Loss, tokens and steps summed on the device between reads, so that a step never waits for the GPU."""

    def __init__(self, device):
        self.device = device
        self.reset()

    def reset(self):
        self.loss = torch.zeros((), dtype=torch.float64, device=self.device)
        self.tokens = torch.zeros((), dtype=torch.int64, device=self.device)
        self.grad_norm, self.steps, self.since = None, 0, time.perf_counter()

    def add(self, loss_sum, tokens):
        """One micro-batch's summed loss and target tokens (device tensors)."""
        self.loss += loss_sum.detach()
        self.tokens += tokens

    def read(self) -> dict:
        """Mean loss, tokens/s and the last grad norm since the last read (one wait for the GPU), then reset."""
        loss, tokens, grad_norm = torch.stack([self.loss, self.tokens.double(),
                                               self.grad_norm.double()]).tolist()
        seconds = time.perf_counter() - self.since
        out = {"loss": loss / max(tokens, 1), "tokens": int(tokens), "grad_norm": grad_norm,
               "tokens_per_s": tokens / max(seconds, 1e-9), "steps": self.steps}
        self.reset()
        return out

    def pause(self, seconds: float):
        """Leave `seconds` (a validation, a save) out of the tokens/s of this window."""
        self.since += seconds


class FastStep:
    """One update: forward and backward of each micro-batch through the compiled loss, clipping, fused Adam."""

    def __init__(self, model, opt, amp, clip: float, backend: str = "inductor", mode: str | None = None,
                 compile: bool = True):
        self.model, self.opt, self.amp, self.clip = model, opt, amp, clip
        on_cuda = next(model.parameters()).device.type == "cuda"
        self.loss = compile_loss(model, backend, mode, fall_back=on_cuda) if compile else SummedLoss(model)
        self.graphs = compile and mode is not None and "reduce-overhead" in mode
        self.sums = DeviceSums(next(model.parameters()).device)

    def __call__(self, batches, tokens: int):
        """batches: [(src, tgt_in, tgt_out)] of one update; tokens: their real target tokens (known on the host),
        by which the summed loss is divided so that any split of an update gives the same gradient."""
        for src, tin, tout in batches:
            if self.graphs:
                torch.compiler.cudagraph_mark_step_begin()
            with self.amp:
                loss_sum, n = self.loss(src, tin, tout)
            (loss_sum / tokens).backward()
            self.sums.add(loss_sum, n)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(),
                                                   self.clip if self.clip > 0 else float("inf"))
        self.sums.grad_norm, self.sums.steps = grad_norm.detach(), self.sums.steps + 1
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
