"""The pieces of scripts/train.py that are not the training step: logging, validation, saves, export."""
from __future__ import annotations

import contextlib
import json
import platform
import signal
import time
from pathlib import Path

import numpy as np
import sacrebleu
import torch
import torch.distributed as dist
from safetensors.torch import load_file, save as st_save
from tqdm import tqdm

from core import TransformerConfig, TranslationModel, clean_text, label_smoothed_loss, save_checkpoint
from core import emergence
from core.checkpoint import atomic_write, unique_state_dict
from core.data import collate, encode_pairs, read_parallel, token_batches
from core.pronouns import load_pronoun_set, pronoun_accuracy

nullcontext = contextlib.nullcontext
PROBE_LINES = [8, 1053, 1]   # newstest2013 lines (1-based): the paper's Figure 3 and Figures 4-5 sentences, a short one


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


def write_json(path, obj) -> None:
    atomic_write(path, json.dumps(obj, indent=2, ensure_ascii=False))


def read_run(run: Path) -> tuple[dict, TransformerConfig]:
    """RUN/run.json as train.py wrote it (args, config, world, device, parameters), and its model config."""
    meta = json.loads((Path(run) / "run.json").read_text(encoding="utf-8"))
    return meta, TransformerConfig.from_dict(meta["config"])


def training_pairs(data, tokenizer, cfg, max_len: int):
    """(pairs, how many were too long, (source, target) lengths with the end-of-sentence) of DATA's train split."""
    src, tgt = read_parallel(data, "train")
    pairs, skipped = encode_pairs(tokenizer, src, tgt, cfg.eos_id, min(max_len, cfg.max_len - 1))
    return pairs, skipped, [(len(s), len(t) + 1) for s, t in pairs]


def hardware(device) -> str:
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA)"
    return f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} threads"


def cpu_has_bf16() -> bool:
    """True when this CPU does bf16 matrix work natively (x86 AVX512_BF16 or AMX; read from /proc/cpuinfo)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:          # not Linux: stay with fp32
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def pick_precision(choice: str, device) -> tuple[str, str]:
    """(precision, why) for --precision auto|fp32|bf16 on this device."""
    if choice != "auto":
        return choice, "asked for"
    if device.type == "cuda":
        return "bf16", "auto: a CUDA GPU"
    if cpu_has_bf16():
        return "bf16", "auto: this CPU has AVX512_BF16/AMX"
    return "fp32", "auto: this CPU has no native bf16"


def autocast(precision: str, device):
    """Mixed precision for the forward pass: bf16 matmuls, fp32 master weights, optimiser and loss."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return nullcontext()


def warm_start(folder, model, run: Path, rewarm: int) -> dict:
    """Load a shipped checkpoint's weights into `model` and return the info dict of a run that continues it.

    The optimiser is fresh (the checkpoint has no Adam moments): the step count, tokens and wall time
    carry on from its card, the schedule continues from its step after `rewarm` steps of re-warm-up,
    and its training log seeds the run's, so curves stay whole.
    """
    from core import load_model
    folder = Path(folder)
    src = load_model(folder)
    if src.cfg != model.cfg:
        diff = {k: (v, getattr(model.cfg, k)) for k, v in vars(src.cfg).items() if getattr(model.cfg, k) != v}
        raise SystemExit(f"--init-from {folder}: its config differs from this run's (checkpoint, run): {diff}; "
                         "use the same --preset and --set options")
    model.load_state_dict(src.state_dict())
    card = json.loads((folder / "card.json").read_text()) if (folder / "card.json").exists() else {}
    tr = card.get("training", {})
    step = int(tr.get("steps", 0))
    if (folder / "train_log.jsonl").exists() and not (run / "train_log.jsonl").exists():
        atomic_write(run / "train_log.jsonl", (folder / "train_log.jsonl").read_bytes())
    return {"step": step, "epoch": int(tr.get("epochs", 0)) + 1, "pos": 0,   # a new shuffle, not the one it was in
            "elapsed_s": float(tr.get("wall_time_s", 0.0)), "tokens": int(tr.get("target_tokens", 0)),
            "best_bleu": None,
            "init": {"from": str(folder), "step": step, "rewarm": rewarm, "optimizer": "fresh Adam"}}


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
    if max_minutes and elapsed >= max_minutes * 60:
        return "max_minutes"
    return None


def plateaued(info, patience: int) -> bool:
    """True once dev BLEU has not beaten its best for `patience` validations in a row (early stopping; 0: never)."""
    return bool(patience) and info.get("bleu_stale", 0) >= patience


def _step(line: str):
    """The step of a log line, or None for a line cut short (a run killed while writing it)."""
    try:
        return json.loads(line).get("step", 0)
    except json.JSONDecodeError:
        return None


class JsonlLog:
    """Append-only JSON-lines log; on resume, lines after the resumed step are dropped."""

    def __init__(self, path: Path, resume_step: int):
        self.path = path
        if path.exists():
            keep = [line for line in path.read_text().splitlines()
                    if _step(line) is not None and _step(line) <= resume_step]
            atomic_write(path, "".join(line + "\n" for line in keep))
        self.f = open(path, "a", encoding="utf-8")

    def write(self, record: dict) -> None:
        self.f.write(json.dumps(record) + "\n")
        self.f.flush()


class Validation:
    """Dev loss, perplexity and greedy BLEU on the first sentences of the valid split.

    Also the dev NLL when every target is paired with the next sentence's source: a model that
    uses its source does much worse then; one whose encoder collapsed (all sources look alike)
    scores the same, and `source_gain` (the difference, nats per token) shows it long before BLEU.
    And the contrastive pronoun accuracy (core.pronouns: does 'its' become sein- or ihr- as it should?).
    """

    def __init__(self, args, tokenizer, cfg, device):
        src, tgt = read_parallel(args.data, "valid")
        src, tgt = src[: args.valid_sentences], tgt[: args.valid_sentences]
        self.pairs, _ = encode_pairs(tokenizer, src, tgt, cfg.eos_id, cfg.max_len - 1)
        self.wrong = [(self.pairs[(i + 1) % len(self.pairs)][0], t) for i, (_, t) in enumerate(self.pairs)]
        self.batches, self.wrong_batches = (token_batches([(len(s), len(t) + 1) for s, t in pairs], args.max_tokens)
                                            for pairs in (self.pairs, self.wrong))
        bleu = [(s, t) for s, t in zip(src[: args.bleu_sentences], tgt) if clean_text(s)]   # valid may keep empty lines
        self.bleu_src, self.bleu_ref = [s for s, _ in bleu], [t for _, t in bleu]
        self.tokenizer, self.cfg, self.device = tokenizer, cfg, device
        self.pronoun_items = load_pronoun_set()

    def _losses(self, model, pairs, batches):
        """(label-smoothed loss, NLL) per target token over the given pairs."""
        nll = smoothed = tokens = 0.0
        for idx in batches:
            src, tin, tout = collate(pairs, idx, self.cfg.pad_id, self.cfg.bos_id, self.cfg.eos_id, self.device)
            logits = model(src, tin).float()
            l_s, n = label_smoothed_loss(logits, tout, self.cfg.label_smoothing, self.cfg.pad_id)
            l_n, _ = label_smoothed_loss(logits, tout, 0.0, self.cfg.pad_id)
            smoothed, nll, tokens = smoothed + l_s.item() * n.item(), nll + l_n.item() * n.item(), tokens + n.item()
        return smoothed / tokens, nll / tokens

    @torch.no_grad()
    def run(self, model) -> dict:
        model.eval()
        smoothed, nll = self._losses(model, self.pairs, self.batches)
        _, wrong_nll = self._losses(model, self.wrong, self.wrong_batches)
        out = {"loss": round(smoothed, 4), "nll": round(nll, 4), "ppl": round(float(np.exp(nll)), 2),
               "source_gain": round(wrong_nll - nll, 4)}
        if self.bleu_src:
            hyps = TranslationModel(model, self.tokenizer).translate(self.bleu_src, beam=1)
            out["bleu"] = round(sacrebleu.corpus_bleu(hyps, [self.bleu_ref]).score, 2)
            out["bleu_sentences"] = len(self.bleu_src)
        # teacher-forced, batched: cheap next to BLEU's decoding ({"accuracy", "feminine", "masc_neut"})
        out["pronouns"] = pronoun_accuracy(TranslationModel(model, self.tokenizer), self.pronoun_items)
        return out


def validate(valid: Validation, model, info, log, bar, patience: int = 0) -> dict:
    t = time.time()
    res = valid.run(model)
    res.update(kind="valid", step=info["step"], seconds=round(time.time() - t, 1))
    log.write(res)
    info["last_valid"] = res
    if res.get("bleu") is not None:
        if info.get("best_bleu") is None or res["bleu"] > info["best_bleu"]:
            info["best_bleu"], info["best_bleu_step"], info["bleu_stale"] = res["bleu"], info["step"], 0
        else:
            info["bleu_stale"] = info.get("bleu_stale", 0) + 1
    say = bar.write if bar is not None else print
    say(f"step {info['step']}: dev {json.dumps(res)}")
    if plateaued(info, patience):
        say(f"dev BLEU has not beaten {info['best_bleu']} (step {info['best_bleu_step']}) "
            f"for {info['bleu_stale']} validations: stopping (--patience {patience})")
    if res["source_gain"] < 0.01 and info["step"] >= 1000:
        say("warning: the model ignores its source (dev NLL is the same with other sentences' sources); "
            "its encoder may have collapsed. A lower --lr-scale, a longer --warmup or --set norm=pre can help.")
    return res


class Probes:
    """Attention maps of fixed dev sentences, saved as fp16 .npz every few steps (to watch heads form)."""

    def __init__(self, args, tokenizer, model):
        src, tgt = read_parallel(args.data, "valid")
        lines = [n for n in PROBE_LINES if n <= len(src)] or [1]
        self.sentences = [(n, src[n - 1], tgt[n - 1]) for n in lines]
        # the paper's Figure 3-5 sentences when the dev lines lack them (translated greedily: no reference)
        self.sentences += emergence.paper_probes(s for _, s, _ in self.sentences)
        self.folder = Path(args.out) / "snapshots"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.tokenizer, self.model = tokenizer, model

    def snapshot(self, step: int) -> None:
        tm = TranslationModel(self.model, self.tokenizer)     # puts the model in eval mode
        arrays, meta = {}, []
        for i, (line, src, tgt) in enumerate(self.sentences):
            r = tm.attend(src, tgt=tgt)
            for kind in ("enc_self", "dec_self", "cross"):
                arrays[f"{i}_{kind}"] = getattr(r, kind).astype(np.float16)
            meta.append({"line": line, "src": r.src, "tgt": r.tgt, "src_tokens": r.src_tokens,
                         "tgt_tokens": r.tgt_tokens, "out_tokens": r.out_tokens})
        pronoun_arrays, pronouns = emergence.record_pronouns(tm)   # the pronoun rows of core/probes/anaphora_en
        arrays.update(pronoun_arrays)
        tmp = self.folder / f".step_{step:07d}.npz.tmp"
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)
        tmp.replace(self.folder / f"step_{step:07d}.npz")
        write_json(self.folder / "probes.json", {"split": "valid", "sentences": meta, "pronouns": pronouns})
        self.model.train()


def save_all(run: Path, model, opt, sched, info, keep: int) -> None:
    """Resume state, plus a weights-only save for averaging (the last `keep` are kept)."""
    from scripts.train_state import save_state
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


def epochs_done(info) -> float:
    """Epochs seen, with the fraction of the current one (states saved before it was recorded: whole epochs)."""
    return round(info["epoch"] + info["pos"] / info["epoch_batches"] if info.get("epoch_batches") else info["epoch"], 2)


def _cooldown(args) -> dict | None:
    """The card's record of --cooldown (None without one; older run.json files have no such option)."""
    steps = getattr(args, "cooldown", 0)
    return {"steps": steps, "to_zero_at_step": args.max_steps, "shape": "1 - sqrt"} if steps else None


def export(run: Path, args, cfg, tokenizer, info, device, n_params, world, k: int | None = None) -> Path:
    """Average the last k saves into a model and write it, with card and log, to args.out."""
    from core import Transformer
    saves = sorted((run / "saves").glob("step_*.safetensors"))[-(k or args.keep):]
    model = Transformer(cfg)
    model.load_state_dict(average_saves(saves), strict=False)
    out = Path(args.out)
    prep = Path(args.data) / "prep_report.json"
    card = {}
    if (out / "card.json").exists():
        card = json.loads((out / "card.json").read_text())
    # scores of scripts/evaluate.py, evaluate_pronouns.py, ... belong to the weights being replaced
    for key in ("test", "valid", "pronouns", "alignment"):
        card.pop(key, None)
    hw = device if isinstance(device, str) else hardware(device)   # a string: the training run's, from run.json
    card.update({
        "name": out.name, "trained_here": True,
        "data": {"folder": str(args.data), "prep_report": json.loads(prep.read_text()) if prep.exists() else None},
        "training": {"preset": args.preset, "steps": info["step"], "epochs": epochs_done(info),
                     "target_tokens": info["tokens"], "wall_time_s": round(info["elapsed_s"], 1),
                     "hardware": hw, "processes": world, "max_tokens": args.max_tokens,
                     "accum": args.accum, "warmup": args.warmup, "lr_scale": args.lr_scale, "clip": args.clip,
                     "cooldown": _cooldown(args),
                     "precision": getattr(args, "precision_used", None), "warm_start": info.get("init"),
                     "overrides": list(args.set or []),
                     "averaged_saves": [p.name for p in saves]},
        "parameters": n_params,
        "dev_last": info.get("last_valid"), "dev_best_bleu": info.get("best_bleu"),
        "dev_best_bleu_step": info.get("best_bleu_step"),
        "stopped_by": stop_reason(args, info, epochs_done(info), info["elapsed_s"]),
    })
    save_checkpoint(out, model, tokenizer, card)
    if (run / "train_log.jsonl").exists():
        atomic_write(out / "train_log.jsonl", (run / "train_log.jsonl").read_bytes())
    print(f"exported {out} (average of {len(saves)} saves)", flush=True)
    return out
