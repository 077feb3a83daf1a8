"""What the decoder-only and encoder-only families share: their config.json round-trip and switching heads off."""
from __future__ import annotations

import dataclasses
import json
from numbers import Integral

import torch


class FamilyJson:
    """A family's dataclass config as config.json: its "family" key, then every field."""

    def to_json(self) -> str:
        return json.dumps({"family": self.family, **dataclasses.asdict(self)}, indent=2)

    @classmethod
    def from_dict(cls, d: dict) -> FamilyJson:
        d = dict(d)
        if d.pop("family", cls.family) != cls.family:
            raise ValueError(f"config.json's family is not {cls.family!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown config keys: {unknown}")
        return cls(**d)


class HeadAblation:
    """ablate_heads and the (N, h) head_mask of a model with one self-attention of h heads in each of N layers."""

    head_name = "head"              # what a column of the mask is ("query head" with grouped-query attention)

    def ablate_heads(self, heads) -> torch.Tensor:
        """The (N, h) head_mask that switches off these (layer, head) pairs (from 0); the model is never changed."""
        mask = torch.ones(self.cfg.N, self.cfg.h, device=next(self.parameters()).device)
        for layer, head in heads:
            if not (isinstance(layer, Integral) and isinstance(head, Integral)
                    and 0 <= layer < self.cfg.N and 0 <= head < self.cfg.h):
                raise ValueError(f"There is no head {layer}.{head} in this model: it has {self.cfg.N} layers of "
                                 f"{self.cfg.h} heads (counted from 0).")
            mask[layer, head] = 0.0
        return mask

    def _layer_masks(self, head_mask) -> list:
        if head_mask is None:
            return [None] * self.cfg.N
        if tuple(head_mask.shape) != (self.cfg.N, self.cfg.h):
            raise ValueError(f"head_mask has shape {tuple(head_mask.shape)}; this model needs ({self.cfg.N}, "
                             f"{self.cfg.h}): one row per layer, one column per {self.head_name}.")
        return list(head_mask)
