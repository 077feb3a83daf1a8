"""The decoder-only model (core/model/decoder_only.py): shapes, causality, head ablation, grouped-query attention,
rotary positions, the cache, and its config."""
import json
import math

import pytest
import torch

from core.model.decoder_only import DecoderOnly
from core.model.decoder_only_config import DecoderOnlyConfig
from core.model.families import build_model, config_from_dict
from core.model.rotary import RotaryEmbedding, inverse_frequencies

VARIANTS = {
    "gpt2": dict(),
    "llama": dict(positions="rotary", h_kv=2, rms_norm=True, gated_ffn=True, activation="silu", bias=False),
    "qwen2": dict(positions="rotary", h_kv=1, rms_norm=True, gated_ffn=True, activation="silu", bias=False,
                  qkv_bias=True, tie_output=False),
    "neox": dict(positions="rotary", rotary_dim=4, parallel_residual=True, activation="gelu", tie_output=False),
    "attention-only": dict(d_ff=0, positions="sinusoidal"),
    "no-positions": dict(positions="none", norm="post"),
}


def tiny(seed=0, **kw) -> DecoderOnly:
    torch.manual_seed(seed)
    cfg = DecoderOnlyConfig(**{**dict(vocab_size=40, N=2, d_model=32, d_ff=64, h=4, max_len=64), **kw})
    model = DecoderOnly(cfg).eval()
    with torch.no_grad():       # larger weights than GPT-2's init: peaked maps, so that a wrong mask shows
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0, 0.3)
    return model


@pytest.fixture(params=sorted(VARIANTS))
def model(request):
    return tiny(**VARIANTS[request.param])


@torch.no_grad()
def test_shapes_rows_and_the_fused_path(model):
    x = torch.randint(0, 40, (2, 11))
    logits, attns = model(x, need_weights=True)
    assert logits.shape == (2, 11, 40) and len(attns) == 2
    for a in attns:
        assert a.shape == (2, 4, 11, 11)
        torch.testing.assert_close(a.sum(-1), torch.ones(2, 4, 11))
        assert torch.all(a.triu(1) == 0)                  # nothing right of the diagonal
    torch.testing.assert_close(model(x), logits, atol=1e-5, rtol=0)   # torch's fused kernel: the same logits


@torch.no_grad()
def test_a_later_token_never_changes_an_earlier_logit_or_map(model):
    x = torch.randint(0, 40, (1, 12))
    y = x.clone()
    y[0, 7:] = (y[0, 7:] + 1) % 40
    (lx, ax), (ly, ay) = model(x, need_weights=True), model(y, need_weights=True)
    torch.testing.assert_close(lx[:, :7], ly[:, :7], atol=1e-6, rtol=0)
    assert not torch.allclose(lx[:, 7:], ly[:, 7:])
    for a, b in zip(ax, ay):
        torch.testing.assert_close(a[..., :7, :7], b[..., :7, :7], atol=1e-6, rtol=0)


@torch.no_grad()
def test_generation_with_the_cache_equals_the_whole_pass(model):
    x = torch.randint(0, 40, (2, 10))
    cache = [{} for _ in range(model.cfg.N)]
    steps = [model(x[:, :5], cache=cache), model(x[:, 5:6], cache=cache), model(x[:, 6:], cache=cache)]
    torch.testing.assert_close(torch.cat(steps, 1), model(x), atol=1e-5, rtol=0)


@torch.no_grad()
def test_head_mask_switches_off_exactly_that_head():
    model = tiny(**VARIANTS["llama"])
    x = torch.randint(0, 40, (1, 9))
    torch.testing.assert_close(model(x, head_mask=torch.ones(2, 4)), model(x))
    mask = model.ablate_heads([(1, 2)])
    assert mask.sum() == 7 and mask[1, 2] == 0
    ablated = model(x, head_mask=mask)
    # independently: the same head's columns of W^O set to zero in a copy of the weights
    d_k = model.cfg.d_k
    model.layers[1].self_attn.w_o.weight[:, 2 * d_k: 3 * d_k] = 0.0
    torch.testing.assert_close(ablated, model(x), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="one row per layer"):
        model(x, head_mask=torch.ones(4, 2))
    with pytest.raises(ValueError, match="no head 2.0"):
        model.ablate_heads([(2, 0)])


@torch.no_grad()
def test_grouped_query_attention_equals_heads_with_repeated_keys_and_values():
    """A model of 6 query heads over 2 key/value heads is the one of 6 full heads whose K and V weights repeat each
    group's: same logits, same 6 maps per layer."""
    gqa = tiny(**{**VARIANTS["llama"], "h": 6, "h_kv": 2, "d_model": 36})
    assert gqa.kv_groups() == [[0, 1, 2], [3, 4, 5]]
    full = DecoderOnly(DecoderOnlyConfig(**{**gqa.cfg.__dict__, "h_kv": None})).eval()
    state = gqa.state_dict()
    d_k = gqa.cfg.d_k
    for i in range(gqa.cfg.N):
        for w in ("w_k", "w_v"):
            key = f"layers.{i}.self_attn.{w}.weight"
            state[key] = state[key].view(2, d_k, -1).repeat_interleave(3, dim=0).reshape(6 * d_k, -1)
    full.load_state_dict(state)
    assert full.kv_groups() == [[j] for j in range(6)]
    x = torch.randint(0, 40, (2, 8))
    (lg, ag), (lf, af) = gqa(x, need_weights=True), full(x, need_weights=True)
    torch.testing.assert_close(lg, lf, atol=1e-5, rtol=0)
    for a, b in zip(ag, af):
        assert a.shape == (2, 6, 8, 8)
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)
    _, vectors = gqa(x, need_vectors=True)
    probs, q, k = vectors[0]
    assert q.shape == k.shape == (2, 6, 8, d_k)
    assert torch.equal(k[:, 0], k[:, 2]) and torch.equal(k[:, 3], k[:, 5]) and not torch.equal(k[:, 0], k[:, 3])
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k) + torch.full((8, 8), float("-inf")).triu(1)
    torch.testing.assert_close(scores.softmax(-1), probs, atol=1e-6, rtol=0)


def test_rotary_scores_depend_only_on_the_offset():
    rope = RotaryEmbedding(8, base=100.0)
    torch.manual_seed(0)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)
    cos, sin = rope.angles(40)

    def score(m, n):
        return (rope.rotate(q, cos[m], sin[m]) * rope.rotate(k, cos[n], sin[n])).sum().item()
    for offset in (0, 3, 17):
        values = [score(n + offset, n) for n in (0, 5, 21)]
        assert max(values) - min(values) < 1e-4, (offset, values)
    assert abs(score(3, 0) - score(4, 0)) > 1e-3             # and it does depend on the offset


def test_rotary_turns_each_pair_as_a_complex_number_and_leaves_the_rest():
    """Independently: dimensions (i, i + r/2) as the complex number x_i + j x_{i+r/2}, times e^{j m theta_i}."""
    r, d_k, base, m = 6, 10, 10000.0, 7
    rope = RotaryEmbedding(r, base)
    x = torch.randn(1, 1, 1, d_k)
    cos, sin = rope.angles(1, start=m)
    ours = rope.rotate(x, cos, sin)[0, 0, 0]
    theta = torch.tensor([base ** (-2 * i / r) for i in range(r // 2)])
    z = torch.complex(x[0, 0, 0, : r // 2], x[0, 0, 0, r // 2: r]) * torch.exp(1j * m * theta)
    torch.testing.assert_close(ours[: r // 2], z.real, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours[r // 2: r], z.imag, atol=1e-5, rtol=0)
    assert torch.equal(ours[r:], x[0, 0, 0, r:])


def test_llama3_scaling_slows_only_the_low_frequencies():
    scaling = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 64}
    plain, scaled = inverse_frequencies(16, 500000.0), inverse_frequencies(16, 500000.0, scaling)
    wavelen = 2 * math.pi / plain
    assert torch.equal(scaled[wavelen < 16], plain[wavelen < 16])              # short waves: kept
    torch.testing.assert_close(scaled[wavelen > 64], plain[wavelen > 64] / 8)  # longer than the context: / factor
    between = (wavelen >= 16) & (wavelen <= 64)
    assert between.any() and torch.all(scaled[between] < plain[between])
    assert torch.all(scaled[between] > plain[between] / 8)
    with pytest.raises(ValueError, match="'yarn' is not built"):
        DecoderOnlyConfig(positions="rotary", rope_scaling={"rope_type": "yarn", "factor": 4.0})


@torch.no_grad()
def test_1024_tokens_with_every_map():
    model = tiny(**{**VARIANTS["llama"], "max_len": 1024})
    logits, attns = model(torch.randint(0, 40, (1, 1024)), need_weights=True)
    assert logits.shape == (1, 1024, 40) and attns[-1].shape == (1, 4, 1024, 1024)
    with pytest.raises(ValueError, match="1025 tokens are more than this model's 1024"):
        model(torch.randint(0, 40, (1, 1025)))


def test_attention_only_layers_have_no_ffn_and_tied_output_is_the_embedding():
    model = tiny(**VARIANTS["attention-only"])
    assert not any("ffn" in name for name, _ in model.named_parameters())
    assert model.generator.weight is model.tok_embed.weight
    assert tiny(**VARIANTS["neox"]).generator.weight is not tiny(**VARIANTS["neox"]).tok_embed.weight


def test_config_round_trip_and_refusals():
    cfg = DecoderOnlyConfig(**{**dict(vocab_size=40, N=2, d_model=32, d_ff=64, h=4), **VARIANTS["llama"]})
    d = json.loads(cfg.to_json())
    assert d["family"] == "decoder-only"
    assert config_from_dict(d) == cfg and isinstance(build_model(config_from_dict(d)), DecoderOnly)
    with pytest.raises(ValueError, match="equal groups"):
        DecoderOnlyConfig(h=12, h_kv=5)
    with pytest.raises(ValueError, match="positions"):
        DecoderOnlyConfig(positions="alibi")
    with pytest.raises(ValueError, match="unknown config keys"):
        config_from_dict({**d, "sliding_window": 4})
    with pytest.raises(ValueError, match="family 'mamba'"):
        config_from_dict({**d, "family": "mamba"})


@torch.no_grad()
def test_a_model_for_weights_filled_from_a_state_is_the_same_model(model):
    empty = DecoderOnly.for_weights(model.cfg)
    assert {k for k, _ in empty.named_buffers()} == {k for k, _ in model.named_buffers()}
    for (name, a), (_, b) in zip(empty.named_buffers(), model.named_buffers()):
        assert torch.equal(a, b), name                                  # the fixed tables, computed again
    empty.load_state_dict(model.state_dict())
    assert (empty.generator.weight is empty.tok_embed.weight) == model.cfg.tie_output
    x = torch.randint(0, 40, (1, 9))
    assert torch.equal(empty.eval()(x), model(x))
