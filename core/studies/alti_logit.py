"""ALTI-Logit (Ferrando et al. 2023, "Explaining How Transformers Use Context to Build Predictions", section 3):
how much each input token adds to the logit of a word the decoder writes, through the attention blocks.

At the decoder row that writes a piece, the final state is the start embedding plus every block's update. Each
attention block's update splits exactly into what each position it reads sends, sum_k alpha_kij f_k(x_j)
(core.studies.contributions: value_vectors, weighted_vectors), plus its output bias. The logit of a direction u
is linear in these parts once every LayerNorm after them has its scale fixed (as ALTI fixes it): u is carried
back through them, u -> centre(gamma * u) / sigma (RMSNorm: no centring), and each part's logit is u . part.
Position j's part is then handed to the input tokens by ALTI+'s rollout of position j (contributions.roll):
encoder outputs to source tokens, decoder positions to source and target tokens. The start embedding's own logit
goes to its token. Feed-forward outputs and biases get no token, as in the paper. Pre-norm and post-norm stacks
are both handled (post-norm: each block's LayerNorm is crossed on the way back).
"""
from __future__ import annotations

import threading

import numpy as np
import torch

from .contributions import Capture, _checked, alti_weights, attention_blocks, roll, transformed_vectors, \
    value_vectors, weighted_vectors


class NormInputs:
    """Forward hooks keeping the input of each named normalisation module (its last call, calling thread only)."""

    def __init__(self, modules: dict):
        self.modules, self.owner, self.seen, self.handles = modules, threading.get_ident(), {}, []

    def __enter__(self):
        for name, m in self.modules.items():
            self.handles.append(m.register_forward_hook(
                lambda mod, args, out, name=name: self._keep(name, args[0])))
        return self

    def _keep(self, name, z):
        if threading.get_ident() == self.owner:
            self.seen[name] = z.detach()[0].float()                                 # (T, d)

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        self.handles = []


def pull_back(norm, z: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The direction on a normalisation's input whose dot product with any part of z is u's with the part's share
    of the output, the scale of z fixed: LayerNorm centre(gamma u) / sigma, RMSNorm gamma u / rms."""
    gamma = norm.weight.float() if getattr(norm, "weight", None) is not None else torch.ones_like(u)
    eps = getattr(norm, "eps", None) or torch.finfo(torch.float32).eps
    if isinstance(norm, torch.nn.LayerNorm):
        g = gamma * u
        return (g - g.mean()) / (z.var(unbiased=False) + eps).sqrt()
    if "rms" in type(norm).__name__.lower():
        return gamma * u / ((z * z).mean() + eps).sqrt()
    raise ValueError(f"ALTI-Logit reads LayerNorm and RMSNorm models; this one normalises with "
                     f"{type(norm).__name__}: use another method.")


def _norms(model, pre: bool) -> dict:
    """The normalisations the way back crosses: the final one (pre-norm), or every decoder block's (post-norm)."""
    if pre:
        return {"final": model.dec_norm}
    return {(n, part): getattr(layer, f"res_{part}").norm for n, layer in enumerate(model.decoder)
            for part in ("self", "cross", "ffn")}


@torch.no_grad()
def logit_contributions(model, src: torch.Tensor, dec: torch.Tensor, word: list, first: int) -> tuple:
    """Each input token's ALTI-Logit for a word written at rows first .. first + len(word) - 1 of one sequence.

    src (1, S) and dec (1, T) ids. The first piece's direction is its row of the output projection (its logit);
    a later piece's is W[piece] - E_p[W], the log-softmax linearised at the model's own distribution.
    Returns (source tokens (S,), decoder input tokens (T,)) as float64 numpy.
    """
    pre = model.cfg.norm == "pre"
    with Capture(model) as cap, NormInputs(_norms(model, pre)) as norms:
        logits, _ = model(src, dec, need_weights=True)
    S, T = src.shape[1], dec.shape[1]
    sizes = {"enc_self": (S, S), "dec_self": (T, T), "cross": (T, S)}
    block, updates = {k: [] for k in sizes}, {"dec_self": [], "cross": []}
    for kind, layers in attention_blocks(model).items():
        for n, (res, mha) in enumerate(layers):
            b = _checked(cap.seen, kind, n, *sizes[kind])
            vecs, _ = transformed_vectors(b, mha, res.norm, pre, kind != "cross")
            block[kind].append(alti_weights(vecs, b["y"][0]).cpu().numpy())
            if kind != "enc_self":
                updates[kind].append(weighted_vectors(b["probs"][0], value_vectors(mha, b["value"][0])))  # (T, C, d)
    rolled = roll(*(np.stack(block[k]).astype(np.float64) for k in ("enc_self", "dec_self", "cross")))
    memory = np.concatenate([rolled["enc_self"][-1], np.zeros((S, T))], 1)             # (S, S + T)
    before = [np.concatenate([np.zeros((T, S)), np.eye(T)], 1)]                         # each layer's input rows
    before += [np.concatenate([rolled["cross"][n], rolled["dec_self"][n]], 1) for n in range(len(model.decoder) - 1)]
    start = cap.seen[("dec_self", 0)]["x"][0].float()                                 # (T, d) the embeddings
    W = model.generator.weight.float()                                                 # (V, d)
    if getattr(model.cfg, "scale_output", False):          # T5 with a tied output: hidden * d_model^-0.5 first
        W = W * model.cfg.d_model ** -0.5
    total = np.zeros(S + T)
    for k, piece in enumerate(word):
        r = first + k
        u = W[piece] if k == 0 else W[piece] - logits[0, r].float().softmax(-1) @ W
        if pre:
            u = pull_back(model.dec_norm, norms.seen["final"][r], u)
        for n in reversed(range(len(model.decoder))):
            if not pre:
                u = pull_back(model.decoder[n].res_ffn.norm, norms.seen[(n, "ffn")][r], u)
                u = pull_back(model.decoder[n].res_cross.norm, norms.seen[(n, "cross")][r], u)
            total += (updates["cross"][n][r] @ u).double().cpu().numpy() @ memory
            if not pre:
                u = pull_back(model.decoder[n].res_self.norm, norms.seen[(n, "self")][r], u)
            total += (updates["dec_self"][n][r] @ u).double().cpu().numpy() @ before[n]
        total[S + r] += float(start[r] @ u)
    return total[:S], total[S:]
