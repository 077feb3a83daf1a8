"""The model against torch.nn.Transformer, the label-smoothed loss and head ablation."""
import math

import pytest
import torch
from torch import nn

import core
from conftest import tiny_model

N, D, H, FF = 2, 32, 4, 64


def _reference_from(model: core.Transformer) -> nn.Transformer:
    """torch.nn.Transformer (post-norm, no final LayerNorm) holding our model's weights."""
    enc_layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation="relu", batch_first=True,
                                           norm_first=False)
    dec_layer = nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, activation="relu", batch_first=True,
                                           norm_first=False)
    ref = nn.Transformer(D, H, N, N, FF, dropout=0.0, batch_first=True, norm_first=False,
                         custom_encoder=nn.TransformerEncoder(enc_layer, N, norm=None, enable_nested_tensor=False),
                         custom_decoder=nn.TransformerDecoder(dec_layer, N, norm=None)).eval()

    def copy_attn(dst: nn.MultiheadAttention, src: core.MultiHeadAttention):
        dst.in_proj_weight.copy_(torch.cat([src.w_q.weight, src.w_k.weight, src.w_v.weight]))
        dst.in_proj_bias.copy_(torch.cat([src.w_q.bias, src.w_k.bias, src.w_v.bias]))
        dst.out_proj.weight.copy_(src.w_o.weight)
        dst.out_proj.bias.copy_(src.w_o.bias)

    def copy(dst, src):
        dst.weight.copy_(src.weight)
        dst.bias.copy_(src.bias)

    with torch.no_grad():
        for ours, theirs in zip(model.encoder, ref.encoder.layers):
            copy_attn(theirs.self_attn, ours.self_attn)
            copy(theirs.linear1, ours.ffn.w_1), copy(theirs.linear2, ours.ffn.w_2)
            copy(theirs.norm1, ours.res_attn.norm), copy(theirs.norm2, ours.res_ffn.norm)
        for ours, theirs in zip(model.decoder, ref.decoder.layers):
            copy_attn(theirs.self_attn, ours.self_attn)
            copy_attn(theirs.multihead_attn, ours.cross_attn)
            copy(theirs.linear1, ours.ffn.w_1), copy(theirs.linear2, ours.ffn.w_2)
            copy(theirs.norm1, ours.res_self.norm), copy(theirs.norm2, ours.res_cross.norm)
            copy(theirs.norm3, ours.res_ffn.norm)
    return ref


@pytest.mark.parametrize("src_padding", [False, True])
def test_matches_torch_nn_transformer(src_padding):
    model = tiny_model(50, N=N, d_model=D, h=H, d_ff=FF, norm="post", activation="relu", dropout=0.0)
    # break LayerNorm's default (1, 0) so that a mix-up of norm1/norm2/norm3 would show
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.2)
    ref = _reference_from(model)
    g = torch.Generator().manual_seed(3)
    src = torch.randint(4, 50, (3, 9), generator=g)
    tgt = torch.randint(4, 50, (3, 7), generator=g)
    if src_padding:
        src[0, 5:], src[1, 2:] = 0, 0
    with torch.no_grad():
        memory, src_mask, _ = model.encode(src)
        ours = model.decode(tgt, memory, src_mask)[0]
        src_x = model._embed(src, model.src_embed, model.src_pos)
        tgt_x = model._embed(tgt, model.tgt_embed, model.tgt_pos)
        causal = torch.triu(torch.ones(7, 7, dtype=torch.bool), diagonal=1)   # True: may not attend
        pad = src == 0
        theirs = ref(src_x, tgt_x, tgt_mask=causal, src_key_padding_mask=pad, memory_key_padding_mask=pad)
        ref_memory = ref.encoder(src_x, src_key_padding_mask=pad)
    assert torch.allclose(memory[~pad], ref_memory[~pad], atol=1e-5)
    assert torch.allclose(ours, theirs, atol=1e-5), (ours - theirs).abs().max()


# --- label-smoothed cross entropy ------------------------------------------------------------

def test_label_smoothed_loss_by_hand():
    eps, V = 0.1, 4
    logits = torch.tensor([[[2.0, 0.5, -1.0, 0.0], [0.1, 0.2, 0.3, 3.0], [9.0, -9.0, 9.0, -9.0]]])
    target = torch.tensor([[0, 3, 1]])                     # last position is padding (pad_id = 1 here)
    loss, n = core.label_smoothed_loss(logits, target, eps, pad_id=1)
    total = 0.0
    for t in range(2):
        logp = [x - math.log(sum(math.exp(y) for y in logits[0, t].tolist())) for x in logits[0, t].tolist()]
        q = [eps / V + (1 - eps if c == target[0, t] else 0.0) for c in range(V)]   # smoothed target
        total += -sum(qc * lc for qc, lc in zip(q, logp))
    assert int(n) == 2
    assert loss.item() == pytest.approx(total / 2, rel=1e-6)
    plain, _ = core.label_smoothed_loss(logits, target, 0.0, pad_id=1)
    assert plain.item() != pytest.approx(loss.item(), rel=1e-3)


def test_label_smoothed_loss_ignores_padding():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 11)
    target = torch.randint(1, 11, (2, 5))
    target[0, 3:], target[1, 4:] = 0, 0
    loss, n = core.label_smoothed_loss(logits, target, 0.1, pad_id=0)
    changed = logits.clone()
    changed[0, 3:] = torch.randn(2, 11) * 10
    changed[1, 4:] = torch.randn(1, 11) * 10
    assert int(n) == 7
    assert core.label_smoothed_loss(changed, target, 0.1, pad_id=0)[0].item() == pytest.approx(loss.item(), rel=1e-6)
    changed[0, 0] += torch.randn(11)                      # a real position does count
    assert core.label_smoothed_loss(changed, target, 0.1, pad_id=0)[0].item() != pytest.approx(loss.item())


# --- head ablation ---------------------------------------------------------------------------

@pytest.fixture
def ablation_case():
    model = tiny_model(40)
    g = torch.Generator().manual_seed(5)
    src, tgt = torch.randint(4, 40, (2, 6), generator=g), torch.randint(4, 40, (2, 5), generator=g)
    with torch.no_grad():
        return model, src, tgt, model(src, tgt)


def test_ablating_no_head_is_exact(ablation_case):
    model, src, tgt, base = ablation_case
    with torch.no_grad(), model.ablate_heads([]):
        assert torch.equal(model(src, tgt), base)


@pytest.mark.parametrize("kind", ["enc_self", "dec_self", "cross"])
def test_ablating_a_layer_changes_output_and_restores(kind, ablation_case):
    model, src, tgt, base = ablation_case
    with torch.no_grad():
        with model.ablate_heads([(kind, 1, h) for h in range(model.cfg.h)]):
            ablated = model(src, tgt)
        assert not torch.allclose(ablated, base, atol=1e-3)
        assert all(m.head_mask is None for ms in model.attention_modules().values() for m in ms)
        assert torch.equal(model(src, tgt), base)


def test_ablating_one_head_equals_zeroing_its_slice_of_w_o(ablation_case):
    model, src, tgt, base = ablation_case
    d_k = model.cfg.d_k
    with torch.no_grad():
        with model.ablate_heads([("cross", 0, 2)]):
            ablated = model(src, tgt)
        w_o = model.decoder[0].cross_attn.w_o.weight
        saved = w_o.clone()
        w_o[:, 2 * d_k: 3 * d_k] = 0
        zeroed = model(src, tgt)
        w_o.copy_(saved)
    assert torch.allclose(ablated, zeroed, atol=1e-6)
    assert not torch.allclose(ablated, base, atol=1e-4)


def test_ablation_restores_after_error(ablation_case):
    model, src, tgt, base = ablation_case
    with pytest.raises(ValueError, match="no head"):
        with model.ablate_heads([("enc_self", 0, 0), ("enc_self", 0, 99)]):
            pass
    with pytest.raises(RuntimeError):
        with model.ablate_heads([("dec_self", 0, 1)]):
            raise RuntimeError("inside")
    with torch.no_grad():
        assert torch.equal(model(src, tgt), base)
