"""Checkpoints: a folder of model.safetensors, config.json, the tokenizer's files and card.json.

config.json's "family" says which model it builds (core/model/families.py): absent, the paper's encoder-decoder.

Never pickles: safetensors and JSON hold data only, so loading a stranger's checkpoint cannot run code.
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save as st_save

from core.model.families import DEFAULT, build_model, config_from_dict, family_of
from core.tokenizer import Tokenizer

from .atomic import atomic_write
from .card import Card, as_card, read_card, write_card


# family -> the class load_checkpoint hands its models out in, (model, tokenizer, card, folder) -> it; imported when
# used (those modules import this one)
WRAPPERS = {DEFAULT: "core.translator.TranslationModel", "decoder-only": "core.language_model.LanguageModel",
            "encoder-only": "core.masked_language_model.MaskedLanguageModel"}


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


def save_checkpoint(folder, model: torch.nn.Module, tokenizer: Tokenizer | None = None, card: Card | dict | None = None,
                    dtype: torch.dtype = torch.float16) -> Path:
    """Write weights (fp16 by default), config, tokenizer and card into `folder`, each file atomically. model: of
    any family (core/model/families.py); its config's to_json says which."""
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


def load_model(folder, device="cpu") -> torch.nn.Module:
    """Build the model of folder/config.json (of its family) and fill it from folder/model.safetensors."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"There is no checkpoint folder at '{folder}'.")
    try:
        cfg = config_from_dict(_read_json(folder / "config.json", "the model's sizes"))
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{folder}/config.json does not describe a model this code can build: {e}") from None
    weights = folder / "model.safetensors"
    if not weights.exists():
        raise CheckpointError(f"{folder}: the checkpoint has no model.safetensors (the weights).")
    try:
        state = load_file(weights)      # read from the file, not its bytes first: one copy of the weights less
    except Exception as e:  # safetensors raises its own error type for truncated or garbage files
        raise CheckpointError(f"{weights} could not be read: it is truncated or not a safetensors file "
                              f"({e}).") from None
    model = fill_model(build_model(cfg, empty=True), state, f"{weights} does not match {folder}/config.json")
    return model.to(device).eval()


def fill_model(model: torch.nn.Module, state: dict, mismatch: str) -> torch.nn.Module:
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
    model.load_state_dict(state, strict=False)   # each copied into its float32 parameter: no 2nd whole copy
    return model


def load_checkpoint(folder, device="cpu"):
    """The one loader: folder -> model + tokenizer + card, or CheckpointError: a TranslationModel for the paper's
    encoder-decoder, a LanguageModel (core/language_model.py) for a decoder-only one, a MaskedLanguageModel
    (core/masked_language_model.py) for an encoder-only one (WRAPPERS)."""
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
    module, name = WRAPPERS[family_of(model.cfg)].rsplit(".", 1)
    return getattr(importlib.import_module(module), name)(model, tokenizer, card, folder)
