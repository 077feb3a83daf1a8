"""Beyond attention weights: what each token actually contributes to an attention block's output.

Two published answers, computed from ONE forward pass whose attention blocks' inputs and outputs are captured
with forward hooks (core/model is never changed; the hooks record for the calling thread only):

- Norm-based analysis (Kobayashi et al. 2020, "Attention is Not Only a Weight", section 3): head k's output for
  query i is sum_j alpha_kij f_k(x_j) with f_k(x) = (x W_V + b_V)_k W_O^k, W_O^k the rows of W_O that read
  head k. ||alpha_kij f_k(x_j)|| says how much token j moved the output, not only how much it was looked at.
  A whole layer: the heads' vectors summed before the norm, ||sum_k alpha_kij f_k(x_j)||.
- ALTI / ALTI+ (Ferrando et al. 2022a, section 3; 2022b, section 3): the whole block, residual and LayerNorm
  included. Its output y_i = sum_j T_i(x_j) + (biases); a contributor's share is
  max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), normalised over j. The feed-forward sublayers mix nothing and are
  left out, as in the papers. Rolled through the layers (contribution matrices multiplied), the decoder's rows
  split every prediction into what came from the source and what from the target prefix (ALTI+).

Maps have the shapes and labelling of AttendResult's (core.views): enc_self (N, ., S, S), dec_self
(N_dec, ., T, T), cross (N_dec, ., T, S); rows attend, columns are attended; decoder rows are the steps that write.
Pre-norm blocks (x + Sublayer(LN(x))) and post-norm ones (LN(x + Sublayer(x))) are both handled.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import torch

from core.tokenizer import merge_words, word_ids
from core.views import AttentionView, attention_view, check_kind

WEIGHTS = {"attention": "attention weights",
           "norm": "weighted by value size",
           "alti": "contributions"}
EXPLAIN = {
    "attention": "How much each row looks at each column: the softmax weights, every row adding up to 1.",
    "norm": "Each weight times the size of the vector the column's word actually sends, ||α f(x)|| (Kobayashi et "
            "al. 2020), as a share of the row: a word looked at but carrying a tiny vector fades.",
    "alti": "How much each input word has contributed to a row so far, through every layer up to this one, "
            "residual connections and LayerNorm included (ALTI+, Ferrando et al. 2022); decoder rows split "
            "between the source (encoder-decoder) and the words written before (decoder self).",
}


# --------------------------------------------------------------------------- capturing one forward pass

def attention_blocks(model) -> dict:
    """{kind: [(Residual, MultiHeadAttention) per layer]}: the blocks whose inputs and outputs we capture."""
    return {"enc_self": [(layer.res_attn, layer.self_attn) for layer in model.encoder],
            "dec_self": [(layer.res_self, layer.self_attn) for layer in model.decoder],
            "cross": [(layer.res_cross, layer.cross_attn) for layer in model.decoder]}


class Capture:
    """Forward hooks that keep the LAST call of every attention block, for the thread that made them only.

    Per (kind, layer): "x" the block's input (the residual stream, (B, Tq, d_model)), "query", "key" and "value"
    the attention's inputs (B, Tq or Tk, d_model), "mask" its mask (bool, broadcastable to (B, h, Tq, Tk); None
    when it had none), "probs" (B, h, Tq, Tk), "attn_out" the attention's output after W^O (B, Tq, d_model), "y"
    the block's output (B, Tq, d_model). Only passes that computed attention probabilities count (attend's own
    pass does; a translation search before it does not).
    """

    def __init__(self, model):
        self.model, self.owner, self.seen, self.handles = model, threading.get_ident(), {}, []

    def _keep(self, block: tuple, /, **tensors):
        if threading.get_ident() == self.owner:          # another session's pass on the shared model: not ours
            self.seen.setdefault(block, {}).update({k: None if v is None else v.detach() for k, v in tensors.items()})

    def __enter__(self):
        for kind, layers in attention_blocks(self.model).items():
            for n, (res, mha) in enumerate(layers):
                key = (kind, n)
                self.handles.append(res.register_forward_hook(
                    lambda m, args, out, key=key: self._keep(key, x=args[0], y=out[0])))
                self.handles.append(mha.register_forward_hook(
                    lambda m, args, kwargs, out, key=key: self._attention(key, args, kwargs, out), with_kwargs=True))
        return self

    def _attention(self, key, args, kwargs, out):
        names = ("query", "key", "value", "mask")                         # MultiHeadAttention.forward's order
        inputs = {n: args[i] if len(args) > i else kwargs.get(n) for i, n in enumerate(names)}
        inputs["position_bias"] = kwargs.get("position_bias")            # T5's, added to the scores; else None
        probs = out[1][0] if isinstance(out[1], tuple) else out[1]        # need_vectors gives (probs, q, k)
        if probs is not None:
            self._keep(key, **inputs, probs=probs, attn_out=out[0])

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        self.handles = []


# --------------------------------------------------------------------------- one attention block

def value_vectors(mha, value: torch.Tensor) -> torch.Tensor:
    """f_k(x_j) = (x_j W_V + b_V)_k W_O^k for every head k and key j (Kobayashi et al. 2020, eq. 6): (h, Tk, d)."""
    Tk = value.shape[-2]
    v = mha.w_v(value.reshape(Tk, -1)).view(Tk, mha.h, mha.d_k).transpose(0, 1)       # (h, Tk, d_k)
    w_o = mha.w_o.weight.view(-1, mha.h, mha.d_k)                                      # (d, h, d_k)
    return torch.einsum("hsk,dhk->hsd", v, w_o)                                        # (h, Tk, d)


def weighted_vectors(probs: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """sum_k alpha_kij f_k(x_j): what key j adds to query i's output, all heads together (T, S, d)."""
    return torch.einsum("hts,hsd->tsd", probs, f)


def norm_maps(probs: torch.Tensor, f: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(per head ||alpha_kij f_k(x_j)|| (h, T, S), per layer ||sum_k alpha_kij f_k(x_j)|| (T, S)) (Kobayashi 3.2)."""
    return probs * f.norm(dim=-1)[:, None, :], weighted_vectors(probs, f).norm(dim=-1)


def transformed_vectors(block: dict, mha, norm, pre: bool, self_attention: bool):
    """ALTI's T_i(x_j) for every query i and contributor j, and the bias term: sum_j T_i(x_j) + bias = y_i.

    Self-attention: contributors are the positions j (the residual x_i joins j = i). Cross-attention: the
    source positions, then one more, the target stream's own residual x_i. Post-norm: the block's LayerNorm is
    linear once its standard deviation (of the whole sum) is fixed, so it is applied to each vector (ALTI 3.1).
    Returns (T (Tq, n_contributors, d), bias (Tq, d)).
    """
    x, probs = block["x"][0], block["probs"][0]                                        # (Tq, d), (h, Tq, Tk)
    vecs = weighted_vectors(probs, value_vectors(mha, block["value"][0]))              # (Tq, Tk, d)
    if self_attention:
        idx = torch.arange(x.shape[0])
        vecs = vecs.clone()
        vecs[idx, idx] += x                                                            # + delta_ij x_i
    else:
        vecs = torch.cat([vecs, x[:, None, :]], dim=1)                                 # (Tq, Tk + 1, d)
    bias = torch.zeros_like(x) if mha.w_o.bias is None else mha.w_o.bias.expand_as(x)     # T5: no biases
    if pre:
        return vecs, bias
    z = vecs.sum(1) + bias                                                             # (Tq, d): LN's input
    sigma = (z.var(-1, unbiased=False, keepdim=True) + norm.eps).sqrt()                # (Tq, 1)
    vecs = norm.weight * (vecs - vecs.mean(-1, keepdim=True)) / sigma[:, :, None]
    return vecs, norm.weight * (bias - bias.mean(-1, keepdim=True)) / sigma + norm.bias


def alti_weights(vecs: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), each row normalised to add up to 1 (ALTI eq. 8): (Tq, n)."""
    c = (y.abs().sum(-1, keepdim=True) - (y[:, None, :] - vecs).abs().sum(-1)).clamp(min=0)
    return c / c.sum(-1, keepdim=True).clamp(min=1e-12)


# --------------------------------------------------------------------------- a sentence

@dataclass
class Contributions:
    """One sentence's attention, norm-based maps and ALTI+ contributions, labelled like its AttendResult.

    norm[kind] (L, h, R, C): ||alpha f(x)|| of each head; norm_layer[kind] (L, R, C): heads summed as vectors.
    block[kind] (L, R, C): one block's own ALTI contributions (cross: over the encoder's outputs), and
    residual (N_dec, T): the share the cross block keeps from the target stream itself.
    rolled: ALTI+ through every layer up to each one: enc_self (N, S, S) over source tokens; cross (N_dec, T, S)
    over source tokens and dec_self (N_dec, T, T) over the decoder's inputs (<s> + the words written before);
    a decoder row's cross and dec_self parts add up to 1. source_share (T,): each prediction's share from the
    source after the last layer.
    """
    result: object
    norm: dict
    norm_layer: dict
    block: dict
    residual: np.ndarray
    rolled: dict
    source_share: np.ndarray

    def maps(self, kind: str, weights: str) -> np.ndarray:
        """(L, h or 1, R, C) maps of one kind: raw attention, norm-based shares of each row, or rolled ALTI+."""
        check_kind(kind)
        if weights == "attention":
            return getattr(self.result, kind)
        if weights == "norm":
            return row_shares(self.norm[kind])
        if weights == "alti":
            return self.rolled[kind][:, None]
        raise ValueError(f"unknown weights {weights!r}; choose one of {list(WEIGHTS)}")

    def view(self, kind: str, weights: str, words: bool = False, specials: bool = True) -> AttentionView:
        """One kind of map under `weights`, labelled and merged by core.views as every attention map is."""
        return attention_view(self.result, kind, words=words, specials=specials, maps=self.maps(kind, weights))


def row_shares(maps: np.ndarray) -> np.ndarray:
    """Each row divided by its sum (rows of zeros stay zero): sizes become shares of the row."""
    return maps / np.maximum(maps.sum(-1, keepdims=True), 1e-12)


def _np(t: torch.Tensor) -> np.ndarray:
    return t.float().cpu().numpy()


def _checked(seen: dict, kind: str, n: int, rows: int, cols: int) -> dict:
    block = seen.get((kind, n))
    if not block or {"x", "y", "value", "probs"} - set(block) or tuple(block["probs"].shape[-2:]) != (rows, cols):
        raise RuntimeError(f"the forward pass of {kind} layer {n + 1} was not captured as expected "
                           "(has core/model changed its blocks?)")
    return block


@torch.no_grad()
def contributions(tm, src: str, tgt: str | None = None, beam: int = 1) -> Contributions:
    """Attention, norm-based maps and ALTI+ of one sentence (the model's own translation when tgt is None),
    from the one forward pass of tm.attend."""
    model = tm.model
    with Capture(model) as cap:
        res = tm.attend(src, tgt=tgt, beam=beam)
    S, T, pre = len(res.src_tokens), len(res.out_tokens), model.cfg.norm == "pre"
    sizes = {"enc_self": (S, S), "dec_self": (T, T), "cross": (T, S)}
    norm, norm_layer, block = {}, {}, {}
    for kind, layers in attention_blocks(model).items():
        heads, whole, local = [], [], []
        for n, (res_block, mha) in enumerate(layers):
            b = _checked(cap.seen, kind, n, *sizes[kind])
            h_map, l_map = norm_maps(b["probs"][0], value_vectors(mha, b["value"][0]))
            vecs, _ = transformed_vectors(b, mha, res_block.norm, pre, kind != "cross")
            heads.append(h_map)
            whole.append(l_map)
            local.append(alti_weights(vecs, b["y"][0]))
        norm[kind], norm_layer[kind], block[kind] = (_np(torch.stack(x)) for x in (heads, whole, local))
    rolled = roll(block["enc_self"], block["dec_self"], block["cross"])
    return Contributions(res, norm, norm_layer, {**block, "cross": block["cross"][..., :S]},
                         block["cross"][..., S], rolled, rolled["cross"][-1].sum(-1))


def roll(enc: np.ndarray, dec: np.ndarray, cross: np.ndarray) -> dict:
    """ALTI+ rollout (Ferrando et al. 2022b, 3.2): per-layer contribution matrices multiplied through the stack.

    enc (N, S, S), dec (N_dec, T, T), cross (N_dec, T, S + 1) (the last column: the residual). The encoder
    starts from the identity; the decoder's rows start on their own input tokens, [0 | I] over (source, target),
    go through self-attention (C_self R), then cross-attention (C_cross[:, :S] [R_enc, 0] + C_cross[:, S] R).
    """
    S, T = enc.shape[-1], dec.shape[-1]
    r_enc, enc_rolled = np.eye(S, dtype=np.float32), []
    for c in enc:
        r_enc = c @ r_enc
        enc_rolled.append(r_enc)
    memory = np.concatenate([r_enc, np.zeros((S, T), np.float32)], 1)            # (S, S + T)
    r = np.concatenate([np.zeros((T, S), np.float32), np.eye(T, dtype=np.float32)], 1)   # (T, S + T)
    src_part, tgt_part = [], []
    for c_self, c_cross in zip(dec, cross):
        r = c_self @ r
        r = c_cross[:, :S] @ memory + c_cross[:, S:] * r
        src_part.append(r[:, :S])
        tgt_part.append(r[:, S:])
    return {"enc_self": np.stack(enc_rolled), "cross": np.stack(src_part), "dec_self": np.stack(tgt_part)}


def word_shares(contrib: Contributions) -> tuple[list, np.ndarray]:
    """(generated words without </s>, each word's source share): its pieces' mean, as core.views merges rows."""
    rows = contrib.result.out_tokens
    ids = word_ids(rows)
    words = merge_words(rows, ids)
    share = np.array([contrib.source_share[[p for p, w in enumerate(ids) if w == k]].mean()
                      for k in range(len(words))], dtype=np.float32)
    keep = [k for k, w in enumerate(words) if w not in ("</s>", "<s>", "<pad>")]
    return [words[k] for k in keep], share[keep]
