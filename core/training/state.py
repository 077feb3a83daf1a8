"""Resume state of a training run: weights, optimiser, schedule, RNG and data position in ONE safetensors file.

The scalars travel as JSON in the safetensors metadata, so the file stays pickle-free and is
written atomically (temp file, then rename).
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save as st_save

from core.checkpoint import atomic_write, unique_state_dict

# Options that choose how torch runs the optimiser, not what it computes: a resumed run takes these from the
# optimiser made by today's code (a saved {"fused": None} would otherwise turn today's fused Adam off).
IMPLEMENTATION = ("fused", "foreach", "capturable", "differentiable")


def save_state(path, model, opt, sched, info: dict) -> None:
    """info: JSON-able scalars (step, epoch, position in the epoch, elapsed time, ...)."""
    tensors = {f"model.{k}": v.detach().cpu().contiguous() for k, v in unique_state_dict(model).items()}
    opt_sd = opt.state_dict()
    for idx, st in opt_sd["state"].items():
        for key, val in st.items():
            val = val if torch.is_tensor(val) else torch.tensor(val)
            tensors[f"optim.{idx}.{key}"] = val.detach().cpu().contiguous()
    tensors["rng.cpu"] = torch.get_rng_state()
    if torch.cuda.is_available():
        tensors["rng.cuda"] = torch.cuda.get_rng_state()
    sched_sd = {k: v for k, v in sched.state_dict().items() if k != "lr_lambdas"}
    meta = {"info": json.dumps(info), "param_groups": json.dumps(opt_sd["param_groups"]),
            "sched": json.dumps(sched_sd)}
    atomic_write(path, st_save(tensors, metadata=meta))


def read_info(path) -> dict:
    """Only the info dict of a resume state (step, epoch, tokens, ...), without loading any tensor."""
    with safe_open(str(path), framework="pt") as f:
        return json.loads(f.metadata()["info"])


def load_state(path, model, opt, sched) -> dict:
    """Restore everything save_state wrote; returns the info dict."""
    path = Path(path)
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    model_sd = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    missing = set(unique_state_dict(model)) - set(model_sd)
    if missing:
        raise ValueError(f"{path} does not fit this model (missing {sorted(missing)[:3]}): "
                         "was it made with another preset or config?")
    model.load_state_dict(model_sd, strict=False)
    state = {}
    for k, v in tensors.items():
        if k.startswith("optim."):
            _, idx, key = k.split(".", 2)
            state.setdefault(int(idx), {})[key] = v
    groups = json.loads(meta["param_groups"])
    for saved, now in zip(groups, opt.param_groups):     # lr, betas, eps: the run's; the kernel: today's
        saved.update({k: now[k] for k in IMPLEMENTATION if k in now})
    opt.load_state_dict({"state": state, "param_groups": groups})
    sched.load_state_dict({**json.loads(meta["sched"]), "lr_lambdas": [None] * len(opt.param_groups)})
    torch.set_rng_state(tensors["rng.cpu"])
    if "rng.cuda" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors["rng.cuda"])
    return json.loads(meta["info"])
