"""TranslationModel.attend_batch: padded batches cut back to each sentence's own maps, encoder-only results,
and the per-head query and key vectors that reproduce every map through softmax(q k^T / sqrt(d_k))."""
import numpy as np
import pytest
import torch

import core
from tests.helpers import tiny_model

KINDS = ("enc_self", "dec_self", "cross")
# different source and target lengths, so that a batch pads both sides
PAIRS = [("a man in a blue shirt is standing on a ladder", "ein Mann in einem blauen Hemd steht auf einer Leiter"),
         ("two girls", "zwei junge Mädchen spielen im Park"),
         ("the weather is nice today and the children are happy", "das Wetter"),
         ("Grüße aus München", None)]                       # None: the model's own translation


@pytest.fixture(scope="module")
def deep_pre_norm(tokenizer):
    """A tiny pre-norm model with 3 encoder and 2 decoder layers (the shipped layout: N != N_dec, pre-norm)."""
    return core.TranslationModel(tiny_model(len(tokenizer), seed=3, N=3, N_dec=2, norm="pre"), tokenizer)


def softmax_of(q, k, causal: bool) -> np.ndarray:
    """softmax(q k^T / sqrt(d_k) + mask) in float64, written out here: q (..., R, d_k), k (..., C, d_k)."""
    scores = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) / np.sqrt(q.shape[-1])
    if causal:                                          # a decoder position sees itself and the positions before
        scores = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


@pytest.mark.parametrize("which", ["translation_model", "deep_pre_norm"])
def test_a_sentence_in_a_padded_batch_has_its_maps_alone(which, request):
    tm = request.getfixturevalue(which)
    batch = tm.attend_batch([s for s, _ in PAIRS], [t for _, t in PAIRS], batch_size=len(PAIRS), vectors=True)
    assert len({len(r.src_tokens) for r in batch}) == len(PAIRS) and len({len(r.tgt_tokens) for r in batch}) > 2
    for (src, tgt), r in zip(PAIRS, batch):
        alone = tm.attend(src, tgt)
        assert (r.src, r.tgt, r.teacher_forced) == (alone.src, alone.tgt, tgt is not None)
        assert (r.src_tokens, r.tgt_tokens, r.out_tokens) == (alone.src_tokens, alone.tgt_tokens, alone.out_tokens)
        for kind in KINDS:
            assert getattr(r, kind).shape == getattr(alone, kind).shape, kind
            np.testing.assert_allclose(getattr(r, kind), getattr(alone, kind), atol=1e-5, err_msg=kind)
        assert alone.vectors is None                       # off unless asked for
        alone_qk = tm.attend_batch([src], [tgt], vectors=True)[0].vectors
        for kind in KINDS:
            for got, want in zip(r.vectors[kind], alone_qk[kind]):
                np.testing.assert_allclose(got, want, atol=1e-5, err_msg=kind)


@pytest.mark.parametrize("which", ["translation_model", "deep_pre_norm"])
def test_queries_and_keys_reproduce_every_map(which, request):
    tm = request.getfixturevalue(which)
    cfg = tm.cfg
    results = tm.attend_batch([s for s, _ in PAIRS], [t for _, t in PAIRS], batch_size=3, vectors=True)
    for r in results:
        S, T = len(r.src_tokens), len(r.tgt_tokens)
        shapes = {"enc_self": (cfg.N, S, S), "dec_self": (cfg.N_dec, T, T), "cross": (cfg.N_dec, T, S)}
        for kind, (layers, rows, cols) in shapes.items():
            q, k = r.vectors[kind]
            assert q.dtype == k.dtype == np.float32
            assert q.shape == (layers, cfg.h, rows, cfg.d_k) and k.shape == (layers, cfg.h, cols, cfg.d_k), kind
            np.testing.assert_allclose(softmax_of(q, k, causal=kind == "dec_self"), getattr(r, kind),
                                       atol=1e-5, err_msg=kind)


def test_queries_are_the_projected_input_before_scaling(translation_model):
    """Layer 1's encoder queries and cross-attention keys, recomputed from the weights: x W^Q + b, split into
    heads, with no 1/sqrt(d_k) (the tiny model is post-norm, so layer 1 reads the embeddings themselves)."""
    tm, (src, tgt) = translation_model, PAIRS[0]
    r = tm.attend_batch([src], [tgt], vectors=True)[0]
    m, cfg = tm.model, tm.cfg
    ids = torch.tensor([tm.tokenizer.encode(src) + [cfg.eos_id]])
    S = ids.size(1)

    def heads(x, linear):                               # (1, T, d_model) -> (h, T, d_k)
        return linear(x)[0].view(-1, cfg.h, cfg.d_k).transpose(0, 1).numpy()

    with torch.no_grad():
        x = m.src_embed(ids) * cfg.d_model ** 0.5 + core.sinusoidal_table(S, cfg.d_model)
        np.testing.assert_allclose(r.vectors["enc_self"][0][0], heads(x, m.encoder[0].self_attn.w_q), atol=1e-5)
        np.testing.assert_allclose(r.vectors["enc_self"][1][0], heads(x, m.encoder[0].self_attn.w_k), atol=1e-5)
        memory = m.encode(ids)[0]
        np.testing.assert_allclose(r.vectors["cross"][1][-1], heads(memory, m.decoder[-1].cross_attn.w_k),
                                   atol=1e-5)


@pytest.mark.slow
def test_free_running_entries_are_the_models_own_translation(translation_model):
    tm = translation_model
    srcs = ["zwei junge Mädchen spielen im Park", "the quick brown fox"]
    batch = tm.attend_batch(srcs, [None, "der Fuchs"])
    assert batch[0].tgt == tm.translate(srcs[0], beam=1) and not batch[0].teacher_forced
    assert batch[1].tgt == "der Fuchs" and batch[1].teacher_forced
    assert [r.tgt for r in tm.attend_batch(srcs, beam=2)] == tm.translate(srcs, beam=2)
    mask = tm.model.ablate_heads([("enc_self", 0, 1), ("cross", 1, 0)])
    off = tm.attend_batch(srcs, head_mask=mask)
    assert [r.tgt for r in off] == tm.translate(srcs, beam=1, head_mask=mask)
    np.testing.assert_allclose(off[0].cross, tm.attend(srcs[0], head_mask=mask).cross, atol=1e-5)


def test_encoder_only_results(translation_model):
    tm = translation_model
    srcs = [s for s, _ in PAIRS]
    done = []
    enc = tm.attend_batch(srcs, encoder_only=True, batch_size=2, vectors=True, progress=lambda *a: done.append(a))
    assert done == [(2, 4), (4, 4)]
    for src, r in zip(srcs, enc):
        full = tm.attend(src, tgt="x")
        assert r.dec_self is None and r.cross is None and r.tgt == "" and r.tgt_tokens == r.out_tokens == []
        assert set(r.vectors) == {"enc_self"}
        view, want = r.view("enc_self", words=True), full.view("enc_self", words=True)
        assert (view.rows, view.cols) == (want.rows, want.cols)
        np.testing.assert_allclose(view.maps, want.maps, atol=1e-5)
        with pytest.raises(ValueError, match="only the encoder"):
            r.view("cross")
    with pytest.raises(ValueError, match="leave the targets out"):
        tm.attend_batch(srcs[:1], ["x"], encoder_only=True)


def test_bad_batches_say_which_sentence(translation_model):
    with pytest.raises(ValueError, match="Sentence 2 of 3: .*empty"):
        translation_model.attend_batch(["a man", "  ", "two girls"])
    with pytest.raises(ValueError, match="one target"):
        translation_model.attend_batch(["a man", "two girls"], ["ein Mann"])
    assert translation_model.attend_batch([]) == []
    for nothing in (None, 3):
        with pytest.raises(ValueError, match="a sentence or a list of sentences"):
            translation_model.attend_batch(nothing)
    with pytest.raises(ValueError, match="as text, not NoneType"):
        translation_model.attend_batch(["a man", None])
