"""Our Transformer against torch.nn.Transformer built from the same weights (paper, section 3).

The reference takes only our weights. Everything else is its own: torch's encoder and decoder layers
(pre- or post-norm), its final LayerNorms, masks and attention, the sqrt(d_model) embedding scale and
the sinusoids written out in conftest.pe_formula. So a bug in our embedding, positions, layer order or
normalisation cannot hide in the reference. We compare log-probabilities (our fused attention path)
and every attention map (our explicit need_weights path).
"""
import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import core
from tests.helpers import pe_formula
from core.paths import REPO

PAD, BOS, EOS = 0, 2, 3


class Reference:
    """torch.nn.Transformer with a core.Transformer's weights, and its own embedding, positions and output.

    cfg is the plain config dict (as in config.json), read here without core.TransformerConfig.
    """

    def __init__(self, model: core.Transformer, cfg: dict):
        d, pre = cfg["d_model"], cfg["norm"] == "pre"
        n_enc, n_dec = cfg["N"], cfg.get("N_dec") or cfg["N"]
        eps = cfg.get("layer_norm_eps", 1e-5)
        kw = dict(d_model=d, nhead=cfg["h"], dim_feedforward=cfg["d_ff"], dropout=0.0, activation="relu",
                  layer_norm_eps=eps, batch_first=True, norm_first=pre)
        # a pre-norm stack ends with a LayerNorm; a post-norm one is already normalised
        final = (lambda: nn.LayerNorm(d, eps=eps)) if pre else (lambda: None)
        encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**kw), n_enc, norm=final(),
                                        enable_nested_tensor=False)
        decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(**kw), n_dec, norm=final())
        self.net = nn.Transformer(d, cfg["h"], n_enc, n_dec, cfg["d_ff"], dropout=0.0, batch_first=True,
                                  norm_first=pre, custom_encoder=encoder, custom_decoder=decoder).eval()
        self.d_model = d
        self._copy_weights(model)
        # tied weights (3.4): one matrix embeds source and target and projects onto the vocabulary
        self.E = model.src_embed.weight.detach().clone()
        assert cfg.get("pe_layout", "interleaved") == "interleaved", "the paper's sinusoid layout only"
        self.src_pe = self.tgt_pe = None                # None: the paper's sinusoids
        if cfg["positions"] == "learned":               # learned positions: weights, one table for each side
            self.src_pe = model.src_pos.table.detach().clone()
            self.tgt_pe = model.tgt_pos.table.detach().clone()
        dec = self.net.decoder.layers
        self.mhas = ([layer.self_attn for layer in self.net.encoder.layers]
                     + [m for layer in dec for m in (layer.self_attn, layer.multihead_attn)])   # call order

    @torch.no_grad()
    def _copy_weights(self, model):
        def attn(dst: nn.MultiheadAttention, src):
            dst.in_proj_weight.copy_(torch.cat([src.w_q.weight, src.w_k.weight, src.w_v.weight]))
            dst.in_proj_bias.copy_(torch.cat([src.w_q.bias, src.w_k.bias, src.w_v.bias]))
            copy(dst.out_proj, src.w_o)

        def copy(dst, src):
            dst.weight.copy_(src.weight)
            dst.bias.copy_(src.bias)

        for ours, theirs in zip(model.encoder, self.net.encoder.layers, strict=True):
            attn(theirs.self_attn, ours.self_attn)
            copy(theirs.linear1, ours.ffn.w_1), copy(theirs.linear2, ours.ffn.w_2)
            copy(theirs.norm1, ours.res_attn.norm), copy(theirs.norm2, ours.res_ffn.norm)
        for ours, theirs in zip(model.decoder, self.net.decoder.layers, strict=True):
            attn(theirs.self_attn, ours.self_attn)
            attn(theirs.multihead_attn, ours.cross_attn)
            copy(theirs.linear1, ours.ffn.w_1), copy(theirs.linear2, ours.ffn.w_2)
            copy(theirs.norm1, ours.res_self.norm), copy(theirs.norm2, ours.res_cross.norm)
            copy(theirs.norm3, ours.res_ffn.norm)
        if self.net.encoder.norm is not None:
            copy(self.net.encoder.norm, model.enc_norm)
            copy(self.net.decoder.norm, model.dec_norm)

    def _embed(self, ids, table):
        T = ids.size(1)
        pe = pe_formula(T, self.d_model).float() if table is None else table[:T]
        return F.embedding(ids, self.E) * math.sqrt(self.d_model) + pe               # (B, T, d_model)

    def run(self, src, tgt):
        """src (B, S), tgt (B, T) ids -> log-probs (B, T, vocab) and {kind: [(B, h, Tq, Tk) per layer]}."""
        T = tgt.size(1)
        src_pad = src == PAD
        tgt_pad = tgt == PAD
        tgt_pad[:, 0] = False                      # the start token is a real position, even if it is <pad>
        causal = torch.ones(T, T, dtype=torch.bool).triu(1)                 # True: may not attend
        calls = []
        hooks = [m.register_forward_pre_hook(lambda m, a, kw: calls.append((m, a, kw)), with_kwargs=True)
                 for m in self.mhas]
        try:
            # grad stays on: torch's fast inference path would bypass the attention modules and the hooks
            out = self.net(self._embed(src, self.src_pe), self._embed(tgt, self.tgt_pe), tgt_mask=causal,
                           src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                           memory_key_padding_mask=src_pad)
        finally:
            for h in hooks:
                h.remove()
        assert [c[0] for c in calls] == self.mhas, "torch skipped an attention module (fast path?)"
        logp = F.linear(out, self.E).log_softmax(-1).detach()
        maps = []
        for m, args, kw in calls:                  # the same inputs again, now asking torch for the weights
            kw = {**kw, "need_weights": True, "average_attn_weights": False, "is_causal": False}
            maps.append(m(*args, **kw)[1].detach())
        n = len(self.net.encoder.layers)
        return logp, {"enc_self": maps[:n], "dec_self": maps[n::2], "cross": maps[n + 1::2]}


def compare(model, ref, src, tgt, atol_logp=1e-4, atol_maps=1e-5):
    """Our log-probs (fused and explicit paths) and attention maps against the reference's."""
    ref_logp, ref_maps = ref.run(src, tgt)
    with torch.no_grad():
        fused = model(src, tgt).log_softmax(-1)
        logits, attns = model(src, tgt, need_weights=True)
    torch.testing.assert_close(fused, ref_logp, atol=atol_logp, rtol=0)
    torch.testing.assert_close(logits.log_softmax(-1), ref_logp, atol=atol_logp, rtol=0)
    for kind in ("enc_self", "dec_self", "cross"):
        ours = getattr(attns, kind)
        assert len(ours) == len(ref_maps[kind]), kind
        for layer, (a, b) in enumerate(zip(ours, ref_maps[kind])):
            where = f"{kind} layer {layer}"
            torch.testing.assert_close(a, b, atol=atol_maps, rtol=0, msg=lambda m, w=where: f"{w}: {m}")
    return ref_maps


# The shipped layout (pre-norm, 6 encoder and 3 decoder layers, tied embeddings), the paper's post-norm,
# and learned positions (Table 3, row E); a small d_model keeps it fast.
LAYOUTS = [("pre", "sinusoidal"), ("post", "sinusoidal"), ("pre", "learned"), ("post", "learned")]


def small_config(norm, positions):
    return dict(vocab_size=50, N=6, N_dec=3, d_model=32, d_ff=64, h=4, dropout=0.0, max_len=64,
                positions=positions, norm=norm, share_embeddings=True)


@pytest.mark.parametrize("norm,positions", LAYOUTS)
def test_matches_torch_nn_transformer(norm, positions):
    cfg = small_config(norm, positions)
    torch.manual_seed(0)
    model = core.Transformer(core.TransformerConfig(**cfg)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:             # off LayerNorm's (1, 0), so that a mixed-up or missing norm shows
                p.add_(torch.randn_like(p) * 0.3)
    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, 50, (3, 9), generator=g)
    tgt = torch.randint(4, 50, (3, 7), generator=g)
    tgt[:, 0] = BOS
    src[0, 5:], src[1, 3:] = PAD, PAD           # padded sources...
    tgt[1, 4:] = PAD                            # ...and a padded target
    maps = compare(model, Reference(model, cfg), src, tgt)
    # the maps are real attention: rows sum to 1, padded keys and future positions get exactly 0
    assert [len(maps[k]) for k in ("enc_self", "dec_self", "cross")] == [6, 3, 3]
    assert all(float(m[0, :, :, 5:].abs().max()) == 0 for m in maps["enc_self"] + maps["cross"])
    assert all(float(m.triu(1).abs().max()) == 0 for m in maps["dec_self"])
    if positions == "learned":      # weights that training reaches: one table for each side
        model(src, tgt).log_softmax(-1)[:, :, 5].sum().backward()
        params = dict(model.named_parameters())
        for side in ("src_pos.table", "tgt_pos.table"):
            grad = params[side].grad if side in params else None
            assert grad is not None and grad.abs().sum() > 0, side


@pytest.mark.parametrize("name", ["news-small", "multi30k-small"])
def test_shipped_checkpoint_matches_torch_nn_transformer(name):
    folder = REPO / "checkpoints" / name
    if not (folder / "model.safetensors").exists():
        pytest.skip(f"checkpoints/{name} is not in this checkout (it is shipped with the repository)")
    cfg = json.loads((folder / "config.json").read_text())
    tm = core.load_checkpoint(folder)
    src_text = "A man in a blue shirt is standing on a ladder and paints the wall."
    tgt_text = "Ein Mann in einem blauen Hemd steht auf einer Leiter und streicht die Wand."
    src = torch.tensor([tm.tokenizer.encode(src_text, "src") + [cfg["eos_id"]]])
    tgt = torch.tensor([[cfg["bos_id"]] + tm.tokenizer.encode(tgt_text, "tgt")])
    ref_maps = compare(tm.model, Reference(tm.model, cfg), src, tgt)
    # ...and the maps the app shows are those maps
    r = tm.attend(src_text, tgt=tgt_text)
    assert (len(r.src_tokens), len(r.tgt_tokens)) == (src.size(1), tgt.size(1))
    for kind in ("enc_self", "dec_self", "cross"):
        expected = torch.cat(ref_maps[kind]).numpy()                  # (layers, h, Tq, Tk)
        np.testing.assert_allclose(getattr(r, kind), expected, atol=1e-5, err_msg=kind)
