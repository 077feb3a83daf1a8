"""Norm-based maps (Kobayashi et al. 2020) and ALTI+ (Ferrando et al. 2022): the decompositions add up to what the
modules really output, hand-made cases give the known answers, in the post-norm and the pre-norm layouts."""
import threading

import numpy as np
import pytest
import torch

import core
from core.studies import contributions as C
from tests.helpers import tiny_model

SENTENCE = "a man in a blue shirt is standing on a ladder"
TARGET = "ein Mann in einem blauen Hemd steht auf einer Leiter"


@pytest.fixture(scope="module", params=["post", "pre"])
def tm(request, tokenizer):
    """A tiny random model in each layout, its LayerNorms given random gains and biases (else they are 1 and 0)."""
    model = tiny_model(len(tokenizer), seed=3, norm=request.param)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(1 + 0.3 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.2 * torch.randn(m.bias.shape, generator=g))
    return core.TranslationModel(model, tokenizer)


def captured(tm):
    with C.Capture(tm.model) as cap:
        res = tm.attend(SENTENCE, tgt=TARGET)
    return res, cap.seen


def test_weighted_value_vectors_plus_output_bias_are_the_module_output(tm):
    """sum_j alpha_ij f(x_j) + b_O equals MultiHeadAttention's own output, for every kind and layer."""
    res, seen = captured(tm)
    for kind, layers in C.attention_blocks(tm.model).items():
        for n, (_, mha) in enumerate(layers):
            b = seen[kind, n]
            f = C.value_vectors(mha, b["value"][0])                           # (h, Tk, d)
            out = C.weighted_vectors(b["probs"][0], f).sum(1) + mha.w_o.bias
            torch.testing.assert_close(out, b["attn_out"][0], atol=1e-5, rtol=1e-4)
            np.testing.assert_allclose(b["probs"][0].numpy(), getattr(res, kind)[n], atol=1e-6)


def test_alti_vectors_add_up_to_the_block_output(tm):
    """sum_j T_i(x_j) + bias = y_i through the residual and (post-norm) the block's LayerNorm."""
    _, seen = captured(tm)
    pre = tm.cfg.norm == "pre"
    for kind, layers in C.attention_blocks(tm.model).items():
        for n, (res, mha) in enumerate(layers):
            vecs, bias = C.transformed_vectors(seen[kind, n], mha, res.norm, pre, kind != "cross")
            torch.testing.assert_close(vecs.sum(1) + bias, seen[kind, n]["y"][0], atol=1e-4, rtol=1e-4)


def test_value_vectors_of_a_hand_made_module():
    """W_V = W_O = I, no biases: head k's f(x) is x with only head k's dimensions kept."""
    mha = core.MultiHeadAttention(4, 2)
    with torch.no_grad():
        for lin in (mha.w_v, mha.w_o):
            lin.weight.copy_(torch.eye(4))
            lin.bias.zero_()
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 6.0, 8.0]])
    f = C.value_vectors(mha, x)
    torch.testing.assert_close(f[0], torch.tensor([[1.0, 2.0, 0, 0], [0, 0, 0, 0]]))
    torch.testing.assert_close(f[1], torch.tensor([[0, 0, 3.0, 4.0], [0, 0, 6.0, 8.0]]))
    probs = torch.tensor([[[0.5, 0.5]], [[0.9, 0.1]]])                          # (h=2, T=1, S=2)
    heads, layer = C.norm_maps(probs, f)
    # head 0: 0.5 * |(1, 2)| and 0.5 * 0; head 1: 0.9 * 5 and 0.1 * 10
    torch.testing.assert_close(heads[:, 0], torch.tensor([[0.5 * 5 ** 0.5, 0.0], [4.5, 1.0]]))
    # the layer: heads' vectors summed before the norm: |(0.5, 1, 2.7, 3.6)| and |(0, 0, 0.6, 0.8)|
    torch.testing.assert_close(layer[0], torch.tensor([(0.25 + 1 + 2.7 ** 2 + 3.6 ** 2) ** 0.5, 1.0]))


def test_alti_weights_known_answers():
    y = torch.tensor([[1.0, -2.0, 3.0]])
    same, zero, half, opposite = y, torch.zeros_like(y), y / 2, -y
    np.testing.assert_allclose(C.alti_weights(torch.stack([same, zero], 1), y).numpy(), [[1.0, 0.0]])
    np.testing.assert_allclose(C.alti_weights(torch.stack([half, half], 1), y).numpy(), [[0.5, 0.5]])
    np.testing.assert_allclose(C.alti_weights(torch.stack([same, opposite], 1), y).numpy(), [[1.0, 0.0]])


def test_rollout_known_answers():
    S, T = 3, 2
    enc = np.stack([np.eye(S, dtype=np.float32)] * 2)
    dec = np.stack([np.eye(T, dtype=np.float32)])
    keep_own = np.concatenate([np.zeros((T, S)), np.ones((T, 1))], 1).astype(np.float32)   # all residual
    r = C.roll(enc, dec, keep_own[None])
    assert r["cross"][-1].sum() == 0 and np.allclose(r["dec_self"][-1], np.eye(T))
    # everything from source word 0, whose encoder output is half word 0, half word 2
    mix = np.array([[0.5, 0, 0.5], [0, 1, 0], [0, 0, 1]], np.float32)
    to_first = np.zeros((T, S + 1), np.float32)
    to_first[:, 0] = 1
    r = C.roll(np.stack([np.eye(S, dtype=np.float32), mix]), dec, to_first[None])
    np.testing.assert_allclose(r["cross"][-1], [[0.5, 0, 0.5]] * T)
    assert np.allclose(r["dec_self"][-1], 0)


def test_a_sentence_maps_and_shares(tm):
    c = C.contributions(tm, SENTENCE, TARGET)
    res, cfg = c.result, tm.cfg
    S, T = len(res.src_tokens), len(res.out_tokens)
    assert c.norm["cross"].shape == (cfg.N_dec, cfg.h, T, S) and c.norm_layer["enc_self"].shape == (cfg.N, S, S)
    assert c.rolled["enc_self"].shape == (cfg.N, S, S) and c.rolled["dec_self"].shape == (cfg.N_dec, T, T)
    # a decoder row's shares from the source and from the prefix add up to 1, every layer
    np.testing.assert_allclose(c.rolled["cross"].sum(-1) + c.rolled["dec_self"].sum(-1), 1, atol=1e-5)
    np.testing.assert_allclose(c.rolled["enc_self"].sum(-1), 1, atol=1e-5)
    np.testing.assert_allclose(c.block["cross"].sum(-1) + c.residual, 1, atol=1e-5)
    assert np.all(np.triu(c.rolled["dec_self"][0], 1) == 0)                     # no look-ahead
    assert np.all((c.source_share >= 0) & (c.source_share <= 1 + 1e-6))
    for weights in C.WEIGHTS:
        v = c.view("cross", weights, words=True, specials=False)
        a = res.view("cross", words=True, specials=False)
        assert (v.rows, v.cols) == (a.rows, a.cols) and v.maps.shape[-2:] == a.maps.shape[-2:]
    np.testing.assert_allclose(c.maps("enc_self", "norm").sum(-1), 1, atol=1e-5)
    words, share = C.word_shares(c)
    assert len(words) == len(share) == len(TARGET.split())
    with pytest.raises(ValueError, match="choose one of"):
        c.maps("cross", "gradients")


def test_norm_differs_from_attention_when_values_differ(tm):
    """A key whose value vector is zero keeps its attention weight but gets no norm-based share."""
    c = C.contributions(tm, SENTENCE, TARGET)
    raw, norm = c.result.enc_self, c.maps("enc_self", "norm")
    assert not np.allclose(raw, norm, atol=1e-3)


def test_capture_ignores_other_threads(tm):
    """Another session's pass on the shared model, during ours, is not recorded."""
    with C.Capture(tm.model) as cap:
        t = threading.Thread(target=lambda: tm.attend("two young girls", tgt="zwei junge Mädchen"))
        t.start()
        t.join()
    assert cap.seen == {}
