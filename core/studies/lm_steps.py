"""Attention, step by step, on a real head of a language model (decoder-only or encoder-only): one text's queries,
keys and values of one layer, as core.studies.step_by_step.HeadSteps, so that its walk() follows one query.

A forward pre-hook keeps what went into the layer's attention module on attend's own pass (for the calling thread
only, removed after it); q = x W^Q, k = x W^K, v = x W^V are recomputed from the weights in float64, turned by the
model's rotary angles where it has them, and the shared key/value heads of grouped-query attention repeated for each
query head. The model is not changed.
"""
from __future__ import annotations

import threading

import numpy as np
import torch

from core.model.rotary import RotaryEmbedding
from core.studies.step_by_step import HeadSteps, _per_head


def capture_lm(model, text: str, layer: int = 0) -> HeadSteps:
    """Every head's q, k, v (h, T, d_k) of one layer for one text (LanguageModel or MaskedLanguageModel), with the
    maps the model reports for that layer. ValueError for an empty text or a layer it lacks."""
    modules = model.model.attention_modules()["self"]
    if not 0 <= layer < len(modules):
        raise ValueError(f"This model has no layer {layer + 1}: it has {len(modules)} (counted from 1).")
    module, owner, seen = modules[layer], threading.get_ident(), {}

    def keep(_m, args):
        if threading.get_ident() == owner and "x" not in seen:
            seen["x"] = args[0].detach()
            seen["rotary"] = args[2] if len(args) > 2 and isinstance(args[2], tuple) else None
    handle = module.register_forward_pre_hook(keep)
    try:
        result = model.attend(text)
    finally:
        handle.remove()
    x = seen["x"][0]                                                     # (T, d_model): batch of one
    h, h_kv = module.h, getattr(module, "h_kv", module.h)
    q, k, v = _per_head(x, module.w_q, h), _per_head(x, module.w_k, h_kv), _per_head(x, module.w_v, h_kv)
    if seen["rotary"] is not None:                                       # the model's own angles, in float64
        cos, sin = (a.double().cpu() for a in seen["rotary"])
        q, k = (RotaryEmbedding.rotate(torch.from_numpy(a), cos, sin).numpy() for a in (q, k))
    if h_kv != h:                                                        # query head i reads key head i // (h / h_kv)
        k, v = np.repeat(k, h // h_kv, axis=0), np.repeat(v, h // h_kv, axis=0)
    T = x.shape[0]
    causal = model.cfg.family == "decoder-only"
    mask = np.tril(np.ones((T, T), bool)) if causal else np.ones((T, T), bool)
    tokens = list(result.tokens)
    return HeadSteps("self", layer, tokens, tokens, q, k, v, mask, np.asarray(result.self_attn[layer], np.float64),
                     result)
