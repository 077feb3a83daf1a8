"""What the contrastive attributions share (core.attribution for a translation, core.lm_contrast for a language
model): a word's log-probability teacher-forced, the method check, hooks that scale token embeddings by a factor
(gradient x input and the integrated gradients' path, Shrikumar et al. 2016, Sundararajan et al. 2017), and the
Gauss-Legendre points of that path."""
from __future__ import annotations

import threading

import numpy as np
import torch

DEFAULT_STEPS = 64              # integrated gradients' quadrature points (the path wiggles: 16 miss by 20%)
MAX_STEPS = 256
EMBEDDINGS = ("src_embed", "tgt_embed", "tok_embed")    # the token-embedding modules of every family


def check_method(method: str, steps, methods) -> None:
    """ValueError, in words, for a method not in `methods` or a number of steps out of range."""
    if method not in methods:
        raise ValueError(f"Unknown method {method!r}: choose one of {', '.join(methods)}.")
    if not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must be a whole number from 1 to {MAX_STEPS}, not {steps!r}.")


def word_logprobs(logits: torch.Tensor, spans: list) -> torch.Tensor:
    """(B, T, V) logits, one (word ids, first row) per batch row -> (B,) log P of each word: its pieces'
    log-probabilities summed, row `first` scoring the first piece."""
    out = []
    for b, (word, first) in enumerate(spans):
        lp = logits[b, first: first + len(word)].float().log_softmax(-1)           # (K, V)
        out.append(lp[torch.arange(len(word)), torch.tensor(word, device=logits.device)].sum())
    return torch.stack(out)


def path_points(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Integrated gradients' (factors, weights) on [0, 1]: Gauss-Legendre with `steps` points (Captum's default
    rule), then the baseline (factor 0, weight 0) last so that its log-odds comes with the same passes."""
    nodes, w = np.polynomial.legendre.leggauss(steps)
    return np.concatenate([(nodes + 1) / 2, [0.0]]), np.concatenate([w / 2, [0.0]])


class EmbeddingScale:
    """Forward hooks that multiply each token embedding of one pass by a factor: sides is a list of (ids (B, T),
    factor (B, T), name), one per id tensor the model embeds.

    Only the pass of the calling thread, and only the id tensors given, are touched; `reached` holds the names of
    the sides the hooks saw (a model whose embeddings are none of EMBEDDINGS is reached by none)."""

    def __init__(self, model, sides: list):
        self.model, self.owner, self.reached = model, threading.get_ident(), set()
        self.sides = sides
        self.handles = []

    def _hook(self, module, args, out):
        if threading.get_ident() != self.owner:
            return None
        for ids, factor, side in self.sides:
            if args and args[0] is ids:
                self.reached.add(side)
                return out * factor[..., None].to(out.dtype)
        return None

    def __enter__(self):
        embeds = {id(m): m for m in (getattr(self.model, name, None) for name in EMBEDDINGS)
                  if isinstance(m, torch.nn.Module)}
        self.handles = [m.register_forward_hook(self._hook) for m in embeds.values()]
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        self.handles = []
