"""An induction head by construction: a 2-layer attention-only DecoderOnly whose weights are set by hand.

Olsson et al. 2022's two-head circuit (K-composition), written into the weights instead of learned:

  the residual stream    four blocks of one-hot directions: the token (V), the position (P = max_len), "the token
                         before me" (V, written by layer 0) and "the next token" (V, written by layer 1, read out)
  layer 0, head 0        previous-token head: its query at position i is position i - 1, its keys are positions;
                         it copies the token it attends to (i - 1's) into "the token before me"
  layer 1, head 0        induction head: its query is the current token, its keys are "the token before me", so
                         it attends to the position right after an earlier occurrence of the current token, and
                         copies that position's token into "the next token", which the output projection reads
  layer 1, head 1        duplicate-token head: query and key the token, minus the position itself (offset -L on
                         [bos] + r + r: one off from the induction stripe)
  layer 1, head 2        a fixed-offset positional head at i - (L - 2) (two off from it, the other side)
  layer 0, heads 1, 2    nothing: zero weights, uniform attention, nothing written

Norms are RMSNorm with unit weights: they rescale each position's stream but keep its directions, so the one-hot
blocks stay readable after them. `sharpness` is how much more a matching key scores than another (in the softmax's
logits): the larger, the closer to one-hot each head's attention. Used by the tests of the induction scores, the
head finder and the atlas.
"""
from __future__ import annotations

import torch

from core.model.decoder_only import DecoderOnly
from core.model.decoder_only_config import DecoderOnlyConfig

HEADS = {"previous": (0, 0), "induction": (1, 0), "duplicate": (1, 1), "offset": (1, 2)}   # (layer, head) from 0


def planted_induction_model(vocab_size: int = 16, L: int = 8, sharpness: float = 12.0) -> DecoderOnly:
    """The model above for [bos] + r + r sequences of L random tokens per copy (bos_id 0, max_len 2L + 1)."""
    V, P = vocab_size, 2 * L + 1
    tok, pos, before, nxt = 0, V, V + P, 2 * V + P                 # where each block of the stream starts
    cfg = DecoderOnlyConfig(vocab_size=V, N=2, d_model=3 * V + P, d_ff=0, h=3, d_kv=V + P, max_len=P,
                            positions="learned", rms_norm=True, bias=False, tie_output=False, bos_id=0)
    model = DecoderOnly(cfg)
    d, dk = cfg.d_model, cfg.d_k
    # RMSNorm scales a stream of n unit one-hots by sqrt(d / n): a score of query and key weights 1 is then
    # (d / n) / sqrt(d_k). c0, c1 make a match score `sharpness` more than a miss in layer 0 (2 blocks filled) and
    # in layer 1 (3 blocks: layer 0 writes "before" at unit size)
    c0, c1 = (sharpness * dk ** 0.5 / (d / n) for n in (2, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        for norm in [model.norm] + [layer.res_attn.norm for layer in model.layers]:
            norm.weight.fill_(1.0)
        model.tok_embed.weight[:, tok: tok + V] = torch.eye(V)
        model.pos.table[:, pos: pos + P] = torch.eye(P)
        a0, a1 = (layer.self_attn for layer in model.layers)
        q0, k0, v0 = (w.weight.view(3, dk, -1) for w in (a0.w_q, a0.w_k, a0.w_v))   # (h, d_k, d_model)
        o0 = a0.w_o.weight.view(-1, 3, dk)                           # (d_model, h, d_k)
        for i in range(1, P):                                        # layer 0 head 0: position i looks at i - 1
            q0[0, i - 1, pos + i] = c0
        k0[0, :P, pos: pos + P] = torch.eye(P)
        v0[0, :V, tok: tok + V] = torch.eye(V)                       # ... and writes that token into "before"
        o0[before: before + V, 0, :V] = torch.eye(V) / (d / 2) ** 0.5   # unit size
        q1, k1, v1 = (w.weight.view(3, dk, -1) for w in (a1.w_q, a1.w_k, a1.w_v))
        o1 = a1.w_o.weight.view(-1, 3, dk)
        q1[0, :V, tok: tok + V] = c1 * torch.eye(V)                   # layer 1 head 0: my token ...
        k1[0, :V, before: before + V] = torch.eye(V)                 # ... against "the token before you"
        v1[0, :V, tok: tok + V] = torch.eye(V)                       # copy your token into "next"
        o1[nxt: nxt + V, 0, :V] = torch.eye(V)
        q1[1, :V, tok: tok + V] = c1 * torch.eye(V)                   # head 1: same token, not myself
        q1[1, V: V + P, pos: pos + P] = -c1 * torch.eye(P)
        k1[1, :V, tok: tok + V] = torch.eye(V)
        k1[1, V: V + P, pos: pos + P] = torch.eye(P)
        for i in range(L - 2, P):                                    # head 2: position i looks at i - (L - 2)
            q1[2, V + i - (L - 2), pos + i] = c1
        k1[2, V: V + P, pos: pos + P] = torch.eye(P)
        model.generator.weight[:, nxt: nxt + V] = torch.eye(V)
    return model.eval()
