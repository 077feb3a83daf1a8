"""core.studies.step_by_step: a real head's q, k, v and every step of its attention, checked against the weights
computed here independently and against the maps the model itself reports through attend."""
import math
import threading

import numpy as np
import pytest
import torch

from core.studies import step_by_step as sbs
from tests.helpers import pe_formula

SRC = "the quick brown fox jumps over the lazy dog"
TGT = "der schnelle braune Fuchs springt über den faulen Hund"     # teacher-forced: the random model's own is noise


def heads(x: torch.Tensor, linear, h: int) -> np.ndarray:
    """x (T, d_model) @ W^T + b, split into h heads: (h, T, d_k), float64, written out here."""
    y = x.detach().double() @ linear.weight.detach().double().T + linear.bias.detach().double()
    return np.stack(np.split(y.numpy(), h, axis=1))


def test_first_encoder_layer_from_the_embeddings_and_the_position_formula(translation_model):
    """Layer 1's input is the embedding times sqrt(d_model) plus the paper's position table (post-norm: no
    LayerNorm before the sublayer): its q, k and v follow from the weights alone."""
    tm, net = translation_model, translation_model.model
    assert net.cfg.norm == "post"
    steps = sbs.capture(tm, SRC, kind="enc_self", layer=0)
    ids = torch.tensor(tm.tokenizer.encode(SRC, "src") + [net.cfg.eos_id])
    d = net.cfg.d_model
    x = net.src_embed.weight.detach().double()[ids] * math.sqrt(d) + pe_formula(len(ids), d)
    att = net.encoder[0].self_attn
    for name, lin in (("q", att.w_q), ("k", att.w_k), ("v", att.w_v)):
        np.testing.assert_allclose(getattr(steps, name), heads(x, lin, net.cfg.h), atol=1e-5, err_msg=name)
    assert steps.rows == steps.cols == tm.attend(SRC).src_tokens


@pytest.mark.parametrize("kind,layer", [("enc_self", 1), ("dec_self", 0), ("dec_self", 1), ("cross", 1)])
def test_every_step_matches_the_models_own_map_vectors_and_output(translation_model, kind, layer):
    tm, net = translation_model, translation_model.model
    module = net.attention_modules()[kind][layer]
    outputs = []
    hook = module.register_forward_hook(lambda m, args, out: outputs.append(out[0].detach()))
    try:
        steps = sbs.capture(tm, SRC, TGT, kind=kind, layer=layer)
    finally:
        hook.remove()
    res = tm.attend_batch([SRC], [TGT], vectors=True)[0]
    q, k = res.vectors[kind]                                          # the model's own (N, h, R|C, d_k)
    np.testing.assert_allclose(steps.q, q[layer], atol=1e-5)
    np.testing.assert_allclose(steps.k, k[layer], atol=1e-5)
    reported = steps.result.view(kind).maps[layer]                    # what attend says this layer's heads do
    for h in range(steps.h):
        w = steps.weights(h)
        np.testing.assert_allclose(w, reported[h], atol=1e-5)
        np.testing.assert_allclose(w, res.view(kind).maps[layer, h], atol=1e-5)
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-12)
    if kind == "dec_self":                                           # no looking ahead: exactly 0 above the diagonal
        assert not steps.mask[np.triu_indices(len(steps.rows), 1)].any()
        assert (steps.weights(0)[~steps.mask] == 0).all()
    # the values: every head's weighted values, concatenated and through W^O, give the layer's own output
    concat = np.concatenate([steps.output(h) for h in range(steps.h)], axis=1)                 # (R, d_model)
    out = concat @ module.w_o.weight.detach().double().numpy().T + module.w_o.bias.detach().double().numpy()
    np.testing.assert_allclose(out, outputs[-1][0].double().numpy(), atol=1e-5)
    if kind == "cross":                                              # keys and values come from the encoder output
        memory = net.encode(torch.tensor([tm.tokenizer.encode(SRC, "src") + [net.cfg.eos_id]]))[0][0]
        np.testing.assert_allclose(steps.v, heads(memory.detach(), module.w_v, net.cfg.h), atol=1e-5)


def test_a_walk_adds_up(translation_model):
    steps = sbs.capture(translation_model, SRC, TGT, kind="dec_self", layer=1)
    w = sbs.walk(steps, head=2, row=3, n_shown=4)
    assert w.shown == [0, 1, 2, 3] and w.q.shape == (steps.d_k,)
    np.testing.assert_allclose(w.dots, w.k @ w.q)
    np.testing.assert_allclose(w.dots_shown, w.k[:, :4] @ w.q[:4])
    np.testing.assert_allclose(w.scaled[w.allowed], w.dots[w.allowed] / math.sqrt(steps.d_k))
    assert w.allowed.tolist() == [True] * 4 + [False] * (len(steps.cols) - 4)      # step 4 reads <s> and 3 pieces
    assert w.weights[~w.allowed].sum() == 0 and w.weights.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(w.output, w.weights @ w.v)
    with pytest.raises(ValueError, match="out of range"):
        sbs.walk(steps, head=steps.h, row=0)


def test_bad_input_is_refused_in_words(translation_model):
    with pytest.raises(ValueError, match="no cross layer 3"):
        sbs.capture(translation_model, SRC, kind="cross", layer=2)
    with pytest.raises(ValueError, match="empty"):
        sbs.capture(translation_model, "   ", kind="enc_self")
    with pytest.raises(ValueError, match="unknown attention kind"):
        sbs.capture(translation_model, SRC, kind="self")


@pytest.mark.slow
def test_sessions_capturing_at_once_do_not_mix(translation_model):
    """The hook records the calling thread's calls only: two threads on one shared model keep their own sentences."""
    texts = ["the dog", "two young girls are playing in the park today"]
    out = {}

    def one(text):
        for _ in range(5):
            out[text] = sbs.capture(translation_model, text, kind="enc_self", layer=1)
            assert out[text].q.shape[1] == len(out[text].rows)
    threads = [threading.Thread(target=one, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [len(out[t].rows) for t in texts] == [len(translation_model.attend(t).src_tokens) for t in texts]


@pytest.mark.parametrize("kind", ["dec_self", "cross"])
def test_the_models_own_translation_is_followed_after_its_search(tokenizer, kind):
    """Without a target the model translates first (incremental decoding calls the same modules, one piece at a
    time); the steps are those of the teacher-forced pass over its translation that attend reports."""
    from core import TranslationModel
    from tests.helpers import stopping_model
    tm = TranslationModel(stopping_model(len(tokenizer), eos_bias=3.0), tokenizer)    # stops after a few pieces
    steps = sbs.capture(tm, SRC, kind=kind, layer=1)
    assert len(steps.result.out_tokens) > 1 and steps.q.shape[1] == len(steps.result.out_tokens)
    for h in range(steps.h):
        np.testing.assert_allclose(steps.weights(h), steps.reported[h], atol=1e-5)
