"""Checkpoints: a folder of model.safetensors, config.json, the SentencePiece model(s) and card.json.

Never pickles: safetensors and JSON hold data only, so loading a stranger's checkpoint cannot run code.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load as st_load, save as st_save

from core.model.config import TransformerConfig
from core.model.transformer import Transformer
from core.tokenizer import Tokenizer

from .atomic import atomic_write
from .card import Card, as_card, read_card, write_card


class CheckpointError(Exception):
    """A checkpoint folder is missing, incomplete, corrupt or does not match its config."""


def unique_state_dict(model: torch.nn.Module) -> dict:
    """The state dict with tied tensors (shared embeddings and projection) stored once."""
    seen, out = set(), {}
    for name, t in model.state_dict().items():
        if t.data_ptr() in seen:
            continue
        seen.add(t.data_ptr())
        out[name] = t
    return out


def save_checkpoint(folder, model: Transformer, tokenizer: Tokenizer | None = None, card: Card | dict | None = None,
                    dtype: torch.dtype = torch.float16) -> Path:
    """Write weights (fp16 by default), config, tokenizer and card into `folder`, each file atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu", dtype if v.is_floating_point() else v.dtype).contiguous()
             for k, v in unique_state_dict(model).items()}
    atomic_write(folder / "model.safetensors", st_save(state))
    atomic_write(folder / "config.json", model.cfg.to_json())
    if tokenizer is not None:
        tokenizer.save(folder)
    if card is not None:
        write_card(folder, as_card(card))
    return folder


def _read_json(path: Path, what: str) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path.parent}: the checkpoint has no {path.name} ({what}).") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path}: {what} is not valid JSON ({e}). The file may be damaged.") from None


def load_model(folder, device="cpu") -> Transformer:
    """Build the Transformer of folder/config.json and fill it from folder/model.safetensors."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"There is no checkpoint folder at '{folder}'.")
    try:
        cfg = TransformerConfig.from_dict(_read_json(folder / "config.json", "the model's sizes"))
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{folder}/config.json does not describe a model this code can build: {e}") from None
    weights = folder / "model.safetensors"
    if not weights.exists():
        raise CheckpointError(f"{folder}: the checkpoint has no model.safetensors (the weights).")
    try:
        state = st_load(weights.read_bytes())
    except Exception as e:  # safetensors raises its own error type for truncated or garbage files
        raise CheckpointError(f"{weights} could not be read: it is truncated or not a safetensors file "
                              f"({e}).") from None
    model = fill_model(Transformer(cfg), state, f"{weights} does not match {folder}/config.json")
    return model.to(device).eval()


def fill_model(model: Transformer, state: dict, mismatch: str) -> Transformer:
    """Put weights saved by this project (unique_state_dict's names: tied weights once) into model, as float32;
    a CheckpointError that starts with `mismatch` when their names or shapes are not the model's."""
    expected = {k: v.shape for k, v in unique_state_dict(model).items()}
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    wrong = [f"{k}: file {tuple(state[k].shape)}, config {tuple(expected[k])}"
             for k in expected if k in state and state[k].shape != expected[k]]
    if missing or unexpected or wrong:
        raise CheckpointError(
            f"{mismatch}: "
            + "; ".join(filter(None, [missing and f"missing {missing[:5]}",
                                      unexpected and f"unexpected {unexpected[:5]}",
                                      wrong and "wrong shapes " + ", ".join(wrong[:5])])))
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
    return model


def load_checkpoint(folder, device="cpu"):
    """The one loader: folder -> TranslationModel (model + tokenizer + card), or CheckpointError."""
    from core.translator import TranslationModel
    folder = Path(folder)
    model = load_model(folder, device)
    try:
        tokenizer = Tokenizer.from_folder(folder)
    except FileNotFoundError as e:
        raise CheckpointError(f"{folder}: {e}") from None
    except (RuntimeError, OSError, ValueError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{folder}: the SentencePiece model could not be read ({e}).") from None
    if len(tokenizer) != model.cfg.vocab_size:
        raise CheckpointError(f"{folder}: the tokenizer has {len(tokenizer)} pieces but the model expects "
                              f"{model.cfg.vocab_size}: they do not belong together.")
    try:
        card = read_card(folder)
    except ValueError as e:
        raise CheckpointError(f"{e}. The model card may be damaged.") from None
    return TranslationModel(model, tokenizer, card, folder)
