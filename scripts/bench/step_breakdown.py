#!/usr/bin/env python
"""Where a CPU training step's time goes, part by part, timed with the clock rather than torch.profiler.

    python scripts/bench/step_breakdown.py --data data/wmt-en-de                      # tensor2tensor's dropouts
    python scripts/bench/step_breakdown.py --data data/wmt-en-de --set attn_dropout=0 ffn_dropout=0   # the paper's

It trains the news-small recipe (preset small, pre-norm, bf16 autocast, fused Adam, clipping at 1.0, 2 threads)
on the first --batches batches of the data's first epoch, --passes times over. The first passes build oneDNN's
kernels for each batch shape, as the first epoch of a long run does, so only the last pass is reported: its
milliseconds a step in the forward pass (by module, inclusive: an attention's time includes its projections),
the fused pre-softmax projection and loss (core/model/loss.py, which also makes that part's gradients), the
backward pass, gradient clipping and the Adam step, and its target tokens/s. Prints one JSON object.

Why a clock: on this project's 2-core machine (a virtual machine) torch.profiler made whole steps 1.5 to 4x
slower and single ops 30 to 50x slower (the loss's softmax: 127 ms against ~2 ms; measured on 2026-12-03), so its table
described the profiler. Forward hooks cost a few microseconds a call. Run it on an idle machine.
"""
from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path

import torch

from core import Tokenizer, Transformer, make_optimizer, preset
from core.data import collate, token_batches
from core.training.memory import keep_freed_memory, keep_matmul_kernels
from core.training.precision import autocast
from core.training.run import overrides, training_pairs
from scripts import cli

MAX_LEN = 128      # train.py's default --max-len: longer training pairs are left out
# the module classes the forward pass is split into (inclusive times: they nest)
PARTS = ("MultiHeadAttention", "PositionwiseFeedForward", "Dropout", "LayerNorm", "Embedding")


class ForwardClock:
    """Forward hooks that add up the wall time of each PARTS module class, and note when the decoder's output
    is ready (the projection and the loss start there)."""

    def __init__(self, model: Transformer):
        self.ms, self.hidden_ready = defaultdict(float), 0.0
        self._start = {}
        for m in model.modules():
            if type(m).__name__ in PARTS:
                m.register_forward_pre_hook(self._pre)
                m.register_forward_hook(self._post)
        model.dec_norm.register_forward_hook(self._hidden)      # an nn.Identity in a post-norm model

    def _pre(self, module, args):
        self._start[id(module)] = time.perf_counter()

    def _post(self, module, args, out):
        self.ms[type(module).__name__] += (time.perf_counter() - self._start.pop(id(module))) * 1e3

    def _hidden(self, module, args, out):
        self.hidden_ready = time.perf_counter()


def breakdown(model, opt, batches, precision: str, clip: float, passes: int) -> dict:
    """Train on `batches` (collated (src, tgt_in, tgt_out) triples) `passes` times; ms a step of the last pass."""
    clock, amp = ForwardClock(model), autocast(precision, torch.device("cpu"))
    tokens = sum(int((tout != model.cfg.pad_id).sum()) for _, _, tout in batches)
    model.train()
    for _ in range(passes):
        clock.ms.clear()
        parts = defaultdict(float)
        start = time.perf_counter()
        for src, tin, tout in batches:
            t0 = time.perf_counter()
            with amp:
                loss, _ = model(src, tin, tgt_out=tout)
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            t3 = time.perf_counter()
            opt.step()
            opt.zero_grad(set_to_none=True)
            t4 = time.perf_counter()
            ready = clock.hidden_ready
            for name, a, b in (("forward, model", t0, ready), ("projection + loss", ready, t1),
                               ("backward", t1, t2), ("clip", t2, t3), ("adam", t3, t4)):
                parts[name] += (b - a) * 1e3
        wall = time.perf_counter() - start
    n = len(batches)
    return {"ms_per_step": round(wall * 1e3 / n, 1), "target_tokens_per_s": round(tokens / wall, 1),
            "parts_ms": {k: round(v / n, 1) for k, v in parts.items()},
            "forward_modules_ms": {k: round(clock.ms[k] / n, 1) for k in PARTS if k in clock.ms}}


def main(argv=None) -> dict:
    p = cli.parser(__doc__)
    p.add_argument("--data", required=True, help="a corpus prepared by scripts/prepare_data.py")
    p.add_argument("--preset", default="small")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="config overrides, after norm=pre (the news runs' setting)")
    p.add_argument("--batches", type=int, default=30, help="batches of the first epoch to time")
    p.add_argument("--passes", type=int, default=3, help="passes over them; the last one is reported")
    p.add_argument("--max-tokens", type=int, default=3500)
    p.add_argument("--precision", default="bf16", choices=["bf16", "fp32"])
    p.add_argument("--seed", type=int, default=1)
    cli.add_threads(p, default=2)
    args = p.parse_args(argv)
    if not (Path(args.data) / "spm.model").exists():
        p.error(f"no prepared data at {args.data}: run scripts/prepare_data.py first")
    if args.batches < 1 or args.passes < 1:
        p.error("--batches and --passes must be at least 1")
    cli.set_threads(args.threads)
    keep_freed_memory()
    keep_matmul_kernels()          # before the first matmul, as train.py does
    torch.manual_seed(args.seed)
    settings = ["norm=pre", *args.set]
    tokenizer = Tokenizer.from_folder(args.data)
    cfg = preset(args.preset, vocab_size=len(tokenizer), **overrides(None, settings))
    pairs, _, lengths = training_pairs(args.data, tokenizer, cfg, MAX_LEN)
    chosen = token_batches(lengths, args.max_tokens, seed=args.seed)[: args.batches]
    batches = [collate(pairs, idx, cfg.pad_id, cfg.bos_id, cfg.eos_id) for idx in chosen]
    model = Transformer(cfg)
    opt, _ = make_optimizer(model, cfg.d_model, warmup=600, scale=0.4, fused=True)
    result = {"preset": args.preset, "set": settings, "precision": args.precision, "threads": torch.get_num_threads(),
              "batches": len(batches), "passes": args.passes,
              **breakdown(model, opt, batches, args.precision, clip=1.0, passes=args.passes)}
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
