"""The model families a checkpoint can hold, by config.json's "family" key (absent: the paper's encoder-decoder).

Each is (its config dataclass, its nn.Module): core/checkpoint/folder.py builds any of them from a folder.
"""
from __future__ import annotations

from .config import TransformerConfig
from .decoder_only import DecoderOnly
from .decoder_only_config import DecoderOnlyConfig
from .encoder_only import EncoderOnly, EncoderOnlyConfig
from .transformer import Transformer

DEFAULT = "encoder-decoder"           # what a config.json without "family" describes (every older checkpoint)
FAMILIES = {
    "encoder-decoder": (TransformerConfig, Transformer),
    "decoder-only": (DecoderOnlyConfig, DecoderOnly),
    "encoder-only": (EncoderOnlyConfig, EncoderOnly),
}


def family_of(cfg) -> str:
    """The family name of a config object (TransformerConfig has no `family` attribute: the default)."""
    return getattr(cfg, "family", DEFAULT)


def config_from_dict(d: dict):
    """A config.json's dict -> the config of its family; ValueError for an unknown family or unknown keys."""
    d = dict(d)
    family = d.pop("family", DEFAULT)
    if family not in FAMILIES:
        raise ValueError(f"family {family!r} is not one this code builds ({', '.join(FAMILIES)})")
    return FAMILIES[family][0].from_dict(d)


def build_model(cfg, empty: bool = False):
    """The nn.Module of a config of any family, with fresh weights; empty: its parameters left uninitialised where
    the family can (for_weights), to be filled from a checkpoint at once (core/checkpoint/folder.py)."""
    model_class = FAMILIES[family_of(cfg)][1]
    return model_class.for_weights(cfg) if empty and hasattr(model_class, "for_weights") else model_class(cfg)
