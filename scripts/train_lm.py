"""Train the paper's decoder alone (a small GPT) on the copy task, and measure its induction head forming.

The data are the induction-head literature's repeated random tokens ([<s>] + r + r, core/studies/copy_task.py);
the model is core.model.DecoderOnly built as copy_task.build_model builds it. The loop keeps the translation
runs' habits where they apply: a resume state in the run folder (core.training.state, one safetensors file, saved
atomically every --save-every steps and at the end; a rerun of the same command goes on from it), train_log.jsonl,
attention snapshots (core.checkpoint.snapshots) and a card. Every --every steps it logs every head's induction and
previous-token score and the in-context loss gap (second copy minus first) on held-out sequences; the card records
the step where the best head's induction score first reaches --threshold and the loss drop around it.

    python scripts/train_lm.py --out checkpoints/tiny-copy          # see scripts/recipes/tiny-copy.sh

Each step's batch is drawn from (seed, step) alone, so a resumed run sees the batches an uninterrupted one would.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from core.checkpoint import atomic_write, save_checkpoint
from core.checkpoint.card import Card
from core.checkpoint.snapshots import write_probes, write_snapshot
from core.studies.copy_task import BOS, TOKEN_NAMES, CopyConfig, build_model, held_out, measure
from core.studies.induction import repeated_tokens
from core.tokenizer_json import JsonTokenizer
from core.training.precision import autocast, pick_precision
from core.training.state import load_state, save_state

STATE = "train_state.safetensors"
LOG = "train_log.jsonl"
NAMES = TOKEN_NAMES                # the 39 random tokens' names (ids 1..39; 0 is <s>), shared with the live page


def copy_tokenizer(vocab_size: int) -> JsonTokenizer:
    """A word-level tokenizer.json for the copy task: <s>, then one token per random id, split on spaces."""
    if vocab_size - 1 > len(NAMES):
        raise ValueError(f"The copy tokenizer names {len(NAMES)} tokens; --vocab-size may be at most "
                         f"{len(NAMES) + 1}.")
    vocab = {"<s>": BOS, **{n: i for i, n in enumerate(NAMES[: vocab_size - 1], 1)}}
    spec = {"version": "1.0", "truncation": None, "padding": None, "normalizer": None, "post_processor": None,
            "added_tokens": [{"id": BOS, "content": "<s>", "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": False, "special": True}],
            "pre_tokenizer": {"type": "WhitespaceSplit"}, "decoder": None,
            "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<s>"}}
    return JsonTokenizer(json.dumps(spec), vocab_size)


def batch_at(cfg: CopyConfig, step: int) -> torch.Tensor:
    """The training batch of `step` (B, 2L + 1), L drawn from min_len..max_len: a function of (seed, step) only."""
    g = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
    L = int(torch.randint(cfg.min_len, cfg.max_len + 1, (1,), generator=g))
    return repeated_tokens(cfg.vocab_size, L, cfg.batch_size, int(torch.randint(2 ** 31, (1,), generator=g)),
                           BOS, exclude=[BOS])


def log_record(snap, cfg: CopyConfig) -> dict:
    """One train_log.jsonl line of a Snapshot: the loss, every head's scores and the loss gap."""
    layer, head = snap.best
    return {"step": snap.step, "kind": "heads", "loss": snap.loss, "seconds": round(snap.seconds, 2),
            "induction": np.round(snap.induction, 4).tolist(), "previous": np.round(snap.previous, 4).tolist(),
            "best_head": [layer, head], "best_induction": round(snap.best_induction, 4),
            "best_previous": round(float(snap.previous.max()), 4),
            "loss_first": round(snap.loss_first, 4), "loss_second": round(snap.loss_second, 4),
            "loss_gap": round(snap.loss_gap, 4)}


def phase_change_record(rows: list[dict], threshold: float) -> dict | None:
    """The first logged step whose best induction score reaches `threshold`, with the training loss and loss gap
    one log interval before and after it (the drop that comes with the head), or None if it never did."""
    heads = [r for r in rows if r.get("kind") == "heads"]
    i = next((i for i, r in enumerate(heads) if r["best_induction"] >= threshold), None)
    if i is None:
        return None
    before, at, after = heads[max(i - 1, 0)], heads[i], heads[min(i + 1, len(heads) - 1)]
    return {"threshold": threshold, "step": at["step"], "best_head": at["best_head"],
            "best_induction": at["best_induction"], "induction_before": before["best_induction"],
            "step_before": before["step"], "loss_before": before["loss"], "loss_after": after["loss"],
            "loss_gap_before": before["loss_gap"], "loss_gap_after": after["loss_gap"], "step_after": after["step"]}


def train(cfg: CopyConfig, run: Path, out: Path, save_every: int, stop_after: int | None = None,
          fresh: bool = False, recipe: str | None = None, precision: str = "fp32") -> dict:
    """Train (or resume) the run in `run`; at the end export the checkpoint to `out`. Returns the summary.
    stop_after: end after this many steps of this call, as an interruption would (the state is saved).
    precision: "fp32", "bf16" (autocast: bf16 matmuls, fp32 weights, optimiser and loss) or "auto" (bf16 where
    the CPU does it natively), as for the translation models (core/training/precision.py)."""
    precision, why = pick_precision(precision, torch.device("cpu"))
    print(f"precision: {precision} ({why})")
    run.mkdir(parents=True, exist_ok=True)
    model = build_model(cfg).train()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg.warmup))
    state, log = run / STATE, run / LOG
    if fresh:
        state.unlink(missing_ok=True)
        log.unlink(missing_ok=True)
    info = load_state(state, model, opt, sched) if state.exists() else {"step": 0, "seconds": 0.0}
    if info.get("config") not in (None, asdict(cfg)):
        raise SystemExit(f"{state} was made with other settings ({info['config']}); rerun with those, or with "
                         "--fresh to start again.")
    step, done_before = int(info["step"]), float(info["seconds"])
    rows = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines() if x.strip()] if log.exists() else []
    rows = [r for r in rows if r["step"] <= step]        # lines written after the last save are redone
    tokens = held_out(cfg)
    tokenizer = copy_tokenizer(cfg.vocab_size)

    def snapshot(loss):
        snap = measure(model, cfg, tokens, step, done_before + time.perf_counter() - t0, loss)
        rows.append(log_record(snap, cfg))
        write_snapshot(run, step, {"0_dec_self": snap.example})

    def save():
        atomic_write(log, "".join(json.dumps(r) + "\n" for r in rows))
        save_state(state, model, opt, sched, {"step": step, "seconds": done_before + time.perf_counter() - t0,
                                              "config": asdict(cfg)})

    t0, losses, this_call = time.perf_counter(), [], 0
    if step == 0:
        snapshot(None)
    while step < cfg.steps and (stop_after is None or this_call < stop_after):
        batch = batch_at(cfg, step)                                        # (B, 2L + 1)
        with autocast(precision, torch.device("cpu")):
            logits = model(batch[:, :-1])                                  # (B, 2L, V)
        loss = F.cross_entropy(logits.float().reshape(-1, cfg.vocab_size), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        step, this_call = step + 1, this_call + 1
        losses.append(loss.item())
        if step % cfg.every == 0 or step == cfg.steps:
            snapshot(float(np.mean(losses)))
            losses = []
        if step % save_every == 0 or step == cfg.steps:
            save()
    save()
    if step < cfg.steps:
        return {"step": step, "finished": False}
    return export(cfg, run, out, model, tokenizer, rows, done_before + time.perf_counter() - t0, recipe, precision)


def export(cfg, run, out, model, tokenizer, rows, seconds, recipe, precision: str = "fp32") -> dict:
    """The checkpoint folder: weights, config, tokenizer, card, train_log.jsonl and the snapshots."""
    phase = phase_change_record(rows, cfg.threshold)
    last = rows[-1]
    example = held_out(cfg)[0].tolist()
    training = {"task": "copy", "data": "repeated random tokens [<s>] + r + r", "config": asdict(cfg),
                "steps": last["step"], "wall_time_s": round(seconds, 1), "torch_threads": torch.get_num_threads(),
                "precision": precision,
                "phase_change": phase, "final": {k: last[k] for k in ("loss", "best_head", "best_induction",
                                                                        "best_previous", "loss_gap")}}
    rose = (f"The best head's induction score first reached {cfg.threshold} at step {phase['step']} (layer "
            f"{phase['best_head'][0] + 1}, head {phase['best_head'][1] + 1}: {phase['induction_before']} at step "
            f"{phase['step_before']}, {phase['best_induction']} then); the training loss went from "
            f"{phase['loss_before']:.3f} to {phase['loss_after']:.3f} and the in-context loss gap from "
            f"{phase['loss_gap_before']:.2f} to {phase['loss_gap_after']:.2f} nats around it." if phase else
            f"The best head's induction score never reached {cfg.threshold}.")
    card = Card(name=out.name, recipe=recipe, training=training, parameters=sum(p.numel() for p in
                                                                                 model.parameters()),
                stopped_by="max_steps",
                notes=(f"The paper's decoder alone (a GPT): {cfg.N} layers of {cfg.h} heads, d_model {cfg.d_model}, "
                       f"{'attention only' if not cfg.d_ff else f'd_ff {cfg.d_ff}'}, learned positions, trained "
                       "here to continue repeated random tokens, so that an induction head forms."),
                data_notes=(f"Synthetic: each batch is <s> then {cfg.min_len}-{cfg.max_len} random tokens (of "
                            f"{cfg.vocab_size - 1}) twice; the scores are measured on {cfg.eval_batch} held-out "
                            f"sequences of {cfg.eval_len} tokens twice. No text corpus."),
                training_notes=(f"Adam lr {cfg.lr}, {cfg.warmup} warm-up steps, batch {cfg.batch_size}, "
                                f"{last['step']} steps in {seconds:.0f} s on {torch.get_num_threads()} CPU thread(s). "
                                + rose),
                evaluation_notes=(f"At the end: best head layer {last['best_head'][0] + 1}, head "
                                  f"{last['best_head'][1] + 1}, induction score {last['best_induction']}; best "
                                  f"previous-token score {last['best_previous']}; loss gap {last['loss_gap']:.2f} "
                                  "nats. train_log.jsonl has every head's scores every "
                                  f"{cfg.every} steps."),
                limitations="It knows no language: it only copies. Its text is letters and digits split by spaces.")
    save_checkpoint(out, model, tokenizer, card, dtype=torch.float32)
    atomic_write(out / LOG, (run / LOG).read_text(encoding="utf-8"))
    pieces = tokenizer.pieces(example)
    for path in sorted((run / "snapshots").glob("step_*.npz")):
        atomic_write(out / "snapshots" / path.name, path.read_bytes())
    write_probes(out, [{"line": 0, "src": "", "tgt": " ".join(pieces[1:]), "src_tokens": [], "tgt_tokens": pieces,
                        "out_tokens": pieces}], [], split="held-out repeated random tokens")
    return {"step": last["step"], "finished": True, "phase_change": phase, "final": training["final"],
            "folder": str(out)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="the checkpoint folder to write at the end")
    p.add_argument("--run", type=Path, help="where the resume state and log live (default runs/<out's name>)")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--every", type=int, default=25, help="measure the heads every this many steps")
    p.add_argument("--save-every", type=int, default=100, help="save the resume state every this many steps")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: tiny matrices run slower on more)")
    p.add_argument("--threshold", type=float, default=0.5, help="the induction score that marks the phase change")
    p.add_argument("--stop-after", type=int, help="end after this many steps of this call (then rerun to resume)")
    p.add_argument("--fresh", action="store_true", help="ignore a saved state in the run folder and start again")
    p.add_argument("--recipe", help="the recipe file that ran this command, for the card")
    p.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="fp32",
                   help="bf16: autocast matmuls, fp32 weights and optimiser; auto: bf16 where the CPU does it "
                        "natively (fp32 by default: a model this small gains nothing, and runs match everywhere)")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    cfg = replace(CopyConfig(), steps=a.steps, every=a.every, seed=a.seed, threshold=a.threshold,
                  max_seconds=1e9)
    summary = train(cfg, a.run or Path("runs") / a.out.name, a.out, a.save_every, a.stop_after, a.fresh, a.recipe,
                    a.precision)
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
