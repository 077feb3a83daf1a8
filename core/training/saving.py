"""Saving a run: resume state and weight saves, their average, the exported checkpoint folder, and warm starts."""
from __future__ import annotations

import json
from pathlib import Path

from safetensors.torch import load_file, save as st_save

from core import Transformer, load_model, save_checkpoint
from core.checkpoint import atomic_write, read_card, unique_state_dict
from core.model.grow import load_grown
from core.paths import portable

from .run import epochs_done, hardware, run_seconds, stop_reason
from .state import save_state


# Options that act only while training: a warm start may change them (the weights mean the same).
TRAINING_ONLY = ("dropout", "attn_dropout", "ffn_dropout", "label_smoothing")
# Sizes a warm start may grow (train.py --grow): the new parts start silent, so the model starts as it was.
GROWABLE = ("d_ff", "N_dec")


def warm_start(folder, model, run: Path, rewarm: int, grow: bool = False) -> dict:
    """Load a shipped checkpoint's weights into `model` and return the info dict of a run that continues it.

    The optimiser is fresh (the checkpoint has no Adam moments): the step count, tokens and wall time
    carry on from its card, the schedule continues from its step after `rewarm` steps of re-warm-up,
    and its training log seeds the run's, so curves stay whole. With `grow` the run's d_ff and (pre-norm)
    N_dec may be larger than the checkpoint's: the new parts start silent (core.model.grow).
    """
    folder = Path(folder)
    src = load_model(folder)
    diff = {k: (v, getattr(model.cfg, k)) for k, v in vars(src.cfg).items()
            if getattr(model.cfg, k) != v and k not in TRAINING_ONLY}
    grown = {k: list(diff.pop(k)) for k in GROWABLE if grow and k in diff and diff[k][1] > diff[k][0]}
    if diff:
        raise SystemExit(f"--init-from {folder}: its config differs from this run's (checkpoint, run): {diff}; "
                         "use the same --preset and --set options"
                         + ("" if grow else " (or --grow with a larger d_ff or N_dec)"))
    try:
        load_grown(model, src.state_dict())
    except ValueError as e:
        raise SystemExit(f"--init-from {folder}: {e}") from None
    tr = read_card(folder).training
    step = int(tr.get("steps", 0))
    if (folder / "train_log.jsonl").exists() and not (run / "train_log.jsonl").exists():
        atomic_write(run / "train_log.jsonl", (folder / "train_log.jsonl").read_bytes())
    init = {"from": portable(folder), "step": step, "rewarm": rewarm, "optimizer": "fresh Adam",
            "elapsed_s": float(tr.get("wall_time_s", 0.0))}   # --max-minutes counts from here
    if grown:
        init["grown"] = grown
    return {"step": step, "epoch": int(tr.get("epochs", 0)) + 1, "pos": 0,   # a new shuffle, not the one it was in
            "elapsed_s": float(tr.get("wall_time_s", 0.0)), "tokens": int(tr.get("target_tokens", 0)),
            "best_bleu": None, "init": init}


def save_all(run: Path, model, opt, sched, info, keep: int) -> None:
    """Resume state, plus a weights-only save for averaging (the last `keep` are kept)."""
    save_state(run / "state.safetensors", model, opt, sched, info)
    saves = run / "saves"
    saves.mkdir(exist_ok=True)
    weights = {k: v.detach().cpu().float().contiguous() for k, v in unique_state_dict(model).items()}
    atomic_write(saves / f"step_{info['step']:07d}.safetensors", st_save(weights))
    for old in sorted(saves.glob("step_*.safetensors"))[:-keep]:
        old.unlink()


def average_saves(paths) -> dict:
    """The element-wise mean of several weight files (the paper averages the last 5 checkpoints)."""
    total = None
    for p in paths:
        sd = load_file(str(p))
        total = sd if total is None else {k: total[k] + sd[k] for k in total}
    return {k: v / len(paths) for k, v in total.items()}


def cooldown_record(args, info: dict) -> dict | None:
    """The card's record of --cooldown (or --cooldown-minutes) for the weights `info` describes: None without one (older
    run.json files have no such option) or when the run stopped before it began (--max-minutes first);
    "stopped_at_step" ("stopped_at_minute") when it stopped part way."""
    if getattr(args, "cooldown_minutes", 0):      # by the clock
        unit, length, end = "minute", args.cooldown_minutes, args.max_minutes
        at = run_seconds(info, info["elapsed_s"]) / 60
    else:
        unit, length, end, at = "step", getattr(args, "cooldown", 0), args.max_steps, info["step"]
    if not length or at <= end - length:
        return None
    record = {f"{unit}s": length, f"to_zero_at_{unit}": end, "shape": "1 - sqrt"}
    return record if at >= end else {**record, f"stopped_at_{unit}": round(at, 2)}


def export(run: Path, args, cfg, tokenizer, info, device, n_params, world, k: int | None = None) -> Path:
    """Average the last k saves into a model and write it, with card and log, to args.out."""
    saves = sorted((run / "saves").glob("step_*.safetensors"))[-(k or args.keep):]
    model = Transformer(cfg)
    model.load_state_dict(average_saves(saves), strict=False)
    out = Path(args.out)
    prep = Path(args.data) / "prep_report.json"
    card = read_card(out)            # the notes, demo and recipe of an earlier export stay
    # scores of scripts/evaluate.py, evaluate_pronouns.py, ... belong to the weights being replaced
    card.test = card.valid = card.pronouns = card.alignment = None
    hw = device if isinstance(device, str) else hardware(device)   # a string: the training run's, from run.json
    card.name, card.trained_here, card.parameters = out.name, True, n_params
    card.data = {"folder": portable(args.data), "prep_report": json.loads(prep.read_text()) if prep.exists() else None}
    card.training = {"preset": args.preset, "steps": info["step"], "epochs": epochs_done(info),
                     "target_tokens": info["tokens"], "wall_time_s": round(info["elapsed_s"], 1),
                     "hardware": hw, "processes": world, "max_tokens": args.max_tokens,
                     "accum": args.accum, "warmup": args.warmup, "lr_scale": args.lr_scale, "clip": args.clip,
                     "cooldown": cooldown_record(args, info),
                     "precision": getattr(args, "precision_used", None), "warm_start": info.get("init"),
                     "overrides": list(args.set or []),
                     "subword_dropout": getattr(args, "subword_dropout", 0.0),
                     "averaged_saves": [p.name for p in saves]}
    card.dev_last, card.dev_best_bleu = info.get("last_valid"), info.get("best_bleu")
    card.dev_best_bleu_step = info.get("best_bleu_step")
    card.stopped_by = stop_reason(args, info, epochs_done(info), info["elapsed_s"])
    save_checkpoint(out, model, tokenizer, card)
    if (run / "train_log.jsonl").exists():
        atomic_write(out / "train_log.jsonl", (run / "train_log.jsonl").read_bytes())
    print(f"exported {out} (average of {len(saves)} saves)", flush=True)
    return out
