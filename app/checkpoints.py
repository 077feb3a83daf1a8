"""The checkpoints the app can show: their folder and names, the key of one version of one (CheckpointKey, the first
argument of every cache in app/cache.py), the domain of their training data, and the untrained model the app
falls back to when there is none. No Streamlit here.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import torch

from app.demo import domain
from core import Transformer, TranslationModel, preset
from core.checkpoint import read_card
from core.paths import REPO

CHECKPOINTS = REPO / "checkpoints"      # default; the env var ATTN_EXPLORER_CHECKPOINTS overrides it (tests)
UNTRAINED = "(untrained model)"


class CheckpointKey(NamedTuple):
    """Which checkpoint, which version: a folder name of checkpoints/ (or UNTRAINED) and its weights' file and
    modification time, so that a checkpoint rewritten by training is loaded and scored afresh. Never id(model):
    Python gives a new model the id of one evicted from the model cache."""
    name: str
    version: str


def checkpoints_dir() -> Path:
    """The folder of checkpoints, read at every call so that tests can point it at a temporary folder."""
    return Path(os.environ.get("ATTN_EXPLORER_CHECKPOINTS") or CHECKPOINTS)


def checkpoint_names() -> list[str]:
    """Folders of checkpoints/ that look like checkpoints, then the untrained fallback."""
    names = sorted(p.name for p in checkpoints_dir().glob("*")        # dot-folders are half-written imports
                   if not p.name.startswith(".") and (p / "config.json").exists())
    return names + [UNTRAINED]


def checkpoint_key(name: str) -> CheckpointKey:
    """The key of the checkpoint `name` as its files are now (one look at its weights' file)."""
    if name == UNTRAINED:
        return CheckpointKey(name, UNTRAINED)
    weights = checkpoints_dir() / name / "model.safetensors"
    try:
        return CheckpointKey(name, f"{weights}@{weights.stat().st_mtime_ns}")
    except OSError:
        return CheckpointKey(name, str(weights))


def untrained_model() -> TranslationModel:
    """A freshly initialised small model with a byte-level tokenizer, for when no checkpoint exists."""
    from app.fallback_tokenizer import fallback_tokenizer
    tok = fallback_tokenizer()
    cfg = preset("small", vocab_size=len(tok), dropout=0.0)
    # the same "untrained model" in every process, without touching the global RNG
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = Transformer(cfg)
    return TranslationModel(model, tok, {"name": UNTRAINED, "trained_here": False,
                                         "note": "freshly initialised: its attention is noise"})


def card_domain(name: str) -> str | None:
    """The domain ('captions', 'news') of a checkpoint's training data, read from its card.json alone."""
    if name == UNTRAINED:
        return None
    try:
        return domain(read_card(checkpoints_dir() / name))
    except (OSError, ValueError):
        return None


def preferred_checkpoint(names: list[str], prefer_domain: str | None) -> str:
    """The first checkpoint trained on `prefer_domain`, else the first one."""
    return next((n for n in names if prefer_domain and card_domain(n) == prefer_domain), names[0])
