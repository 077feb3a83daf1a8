"""Attention, step by step, on a real head (paper, section 3.2.1): one sentence's queries, keys and values.

`capture` runs the model once on a sentence under core.studies.contributions.Capture, takes what went into one
attention module (the layer's input: queries from it, keys and values from it or from the encoder output) and recomputes
each head's q = x W_i^Q, k = x W_i^K, v = x W_i^V from the weights, in float64. From these, HeadSteps gives every
intermediate of softmax(q k^T / sqrt(d_k)) v for one head (a T5 model: softmax(q k^T + its position bias) v). The
model is not changed: the hook is removed after the pass and only records calls made from the calling thread, so
sessions sharing one model do not mix.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from core.studies.contributions import Capture
from core.translator import AttendResult, TranslationModel
from core.views import check_kind


@dataclass
class HeadSteps:
    """One attention layer's per-head q (h, R, d_k), k and v (h, C, d_k) for one sentence, with labels.

    rows / cols: the query and key tokens as core.views labels them (pieces, with <s> and </s>);
    mask (R, C): True where a query may look at a key (False above the diagonal of decoder self-attention);
    reported (h, R, C): the maps the model itself reports for this layer (AttendResult of the same pass).
    """
    kind: str
    layer: int
    rows: list
    cols: list
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    mask: np.ndarray
    reported: np.ndarray
    result: AttendResult
    bias: np.ndarray | None = None     # (h, R, C): T5's position bias, added to the scores; None: the paper's
    scale: bool = True                 # divided by sqrt(d_k) (the paper); T5 does not divide

    @property
    def d_k(self) -> int:
        return self.q.shape[-1]

    @property
    def h(self) -> int:
        return self.q.shape[0]

    def scores(self, head: int) -> np.ndarray:
        """Q K^T of one head: (R, C) dot products, before scaling."""
        return self.q[head] @ self.k[head].T

    def scaled(self, head: int) -> np.ndarray:
        """Q K^T / sqrt(d_k) (T5: Q K^T + its position bias), with -inf where the mask forbids a key: (R, C)."""
        s = self.scores(head) / math.sqrt(self.d_k) if self.scale else self.scores(head)
        return np.where(self.mask, s if self.bias is None else s + self.bias[head], -np.inf)

    def weights(self, head: int) -> np.ndarray:
        """softmax of each row of the scaled scores: (R, C), rows sum to 1, masked keys exactly 0."""
        s = self.scaled(head)
        e = np.exp(s - s.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def output(self, head: int) -> np.ndarray:
        """The head's output, the weighted average of the values: (R, d_k) (before Concat and W^O)."""
        return self.weights(head) @ self.v[head]


def _per_head(x: torch.Tensor, linear: torch.nn.Linear, h: int) -> np.ndarray:
    """x (T, d_model) through one projection, split into heads: (h, T, d_k), float64."""
    w = linear.weight.detach().double()
    y = x.double() @ w.T if linear.bias is None else x.double() @ w.T + linear.bias.detach().double()   # (T, h d_k)
    return y.view(y.shape[0], h, -1).transpose(0, 1).numpy()          # (h, T, d_k)


def capture(model: TranslationModel, src: str, tgt: str | None = None, kind: str = "enc_self", layer: int = 0,
            beam: int = 1) -> HeadSteps:
    """The queries, keys and values of every head of one attention layer for one sentence (teacher-forced on
    `tgt`, or on the model's own translation as in attend). ValueError for bad input or a layer it lacks."""
    modules = model.model.attention_modules()[check_kind(kind)]
    if not 0 <= layer < len(modules):
        raise ValueError(f"This model has no {kind} layer {layer + 1}: it has {len(modules)} (counted from 1).")
    module = modules[layer]
    with Capture(model.model) as cap:                 # the inputs of attend's own pass, for this thread only
        result = model.attend(src, tgt=tgt, beam=beam)
    seen = cap.seen[(kind, layer)]
    query, key, value = (seen[n][0] for n in ("query", "key", "value"))   # batch of 1: (T, d_model) each
    h = module.h
    view = result.view(kind)
    R, C = len(view.rows), len(view.cols)
    mask = seen.get("mask")
    mask = (np.ones((R, C), bool) if mask is None
            else np.broadcast_to(mask[0, 0].cpu().numpy(), (R, C)).copy())   # (R, C)
    steps = HeadSteps(kind, layer, view.rows, view.cols, _per_head(query, module.w_q, h),
                      _per_head(key, module.w_k, h), _per_head(value, module.w_v, h), mask,
                      np.asarray(view.maps[layer], dtype=np.float64), result,
                      None if seen.get("position_bias") is None
                      else np.broadcast_to(seen["position_bias"][0].double().cpu().numpy(), (h, R, C)).copy(),
                      module.scale)
    if steps.q.shape[1] != R or steps.k.shape[1] != C:
        raise RuntimeError(f"captured {steps.q.shape[1]} queries and {steps.k.shape[1]} keys for a {R} x {C} map")
    return steps


@dataclass
class QueryWalk:
    """One query's walk through one head, for the page: every number of softmax(q k^T / sqrt(d_k)) v.

    shown: the dimensions written out; q (d_k,), k (C, d_k), v (C, d_k); dots (C,) full q.k; dots_shown (C,)
    the part of each q.k from the shown dimensions (the rest is dots - dots_shown); scaled, weights (C,);
    output (d_k,), the weighted sum of the values; allowed (C,): keys the query may look at.
    """
    row: int
    shown: list
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    dots: np.ndarray
    dots_shown: np.ndarray
    scaled: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    allowed: np.ndarray


def walk(steps: HeadSteps, head: int, row: int, n_shown: int = 4) -> QueryWalk:
    """One query (row) of one head, with its first n_shown dimensions to write out."""
    if not 0 <= head < steps.h or not 0 <= row < len(steps.rows):
        raise ValueError(f"head {head} or query {row} is out of range ({steps.h} heads, {len(steps.rows)} queries).")
    shown = list(range(min(n_shown, steps.d_k)))
    q, k, v = steps.q[head, row], steps.k[head], steps.v[head]
    return QueryWalk(row, shown, q, k, v, steps.scores(head)[row], k[:, shown] @ q[shown], steps.scaled(head)[row],
                     steps.weights(head)[row], steps.output(head)[row], steps.mask[row])
