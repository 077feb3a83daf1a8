"""The model learns to reverse sequences; greedy and beam search decode it (toy model from conftest)."""
import pytest
import torch

import core
from conftest import tiny_model


def _accuracy(hyps, expected):
    return sum(h == e for h, e in zip(hyps, expected)) / len(expected)


def test_toy_model_learns_to_reverse(toy_model, toy_eval):
    src, tgt, expected = toy_eval
    with torch.no_grad():
        logits = toy_model(src, tgt[:, :-1])
    real = tgt[:, 1:] != 0
    token_acc = (logits.argmax(-1) == tgt[:, 1:])[real].float().mean().item()
    assert token_acc > 0.99
    assert _accuracy(core.greedy_search(toy_model, src, max_extra=5), expected) >= 0.97


def test_beam_search_decodes_toy_task(toy_model, toy_eval):
    src, _, expected = toy_eval
    assert _accuracy(core.beam_search(toy_model, src, beam=4, max_extra=5), expected) >= 0.97


def test_batched_decoding_equals_one_by_one(toy_model, toy_eval):
    src, _, _ = toy_eval
    src = src[:8]
    for search in (core.greedy_search, lambda m, s: core.beam_search(m, s, beam=3)):
        batched = search(toy_model, src)
        single = [search(toy_model, s[None, : int((s != 0).sum())])[0] for s in src]
        assert batched == single


@pytest.fixture(scope="module")
def random_case():
    """An untrained model: it rarely emits </s>, so decoding runs into the length limit."""
    model = tiny_model(30, seed=7)
    src = torch.randint(4, 30, (6, 7), generator=torch.Generator().manual_seed(2))
    src[:, -1] = 3
    src[1, 3:], src[1, 3], src[4, 5:], src[4, 5] = 0, 3, 0, 3
    return model, src


@pytest.mark.parametrize("which", ["toy", "random"])
def test_beam_one_equals_greedy(which, toy_model, toy_eval, random_case):
    model, src = (toy_model, toy_eval[0][:50]) if which == "toy" else random_case
    assert core.beam_search(model, src, beam=1, max_extra=8) == core.greedy_search(model, src, max_extra=8)


@pytest.mark.parametrize("which", ["toy", "random"])
def test_cached_greedy_equals_uncached(which, toy_model, toy_eval, random_case):
    model, src = (toy_model, toy_eval[0][:50]) if which == "toy" else random_case
    cached = core.greedy_search(model, src, max_extra=8, use_cache=True)
    uncached = core.greedy_search(model, src, max_extra=8, use_cache=False)
    assert cached == uncached
    assert any(len(h) > 3 for h in cached)


def test_cached_decoder_states_equal_full_pass(toy_model, toy_eval):
    src, tgt, _ = toy_eval
    src, tgt = src[:4], tgt[:4, :4]
    with torch.no_grad():
        memory, src_mask, _ = toy_model.encode(src)
        full = toy_model.decode(tgt, memory, src_mask)[0]
        cache = [{} for _ in toy_model.decoder]
        steps = [toy_model.decode(tgt[:, t:t + 1], memory, src_mask, cache=cache, start=t)[0] for t in range(4)]
    assert torch.allclose(torch.cat(steps, 1), full, atol=1e-5)


@pytest.mark.parametrize("which", ["toy", "random"])
def test_beam_four_results_are_valid(which, toy_model, toy_eval, random_case):
    model, src = (toy_model, toy_eval[0][:20]) if which == "toy" else random_case
    max_extra = 6
    hyps = core.beam_search(model, src, beam=4, max_extra=max_extra)
    assert len(hyps) == src.size(0)
    src_len = (src != 0).sum(1).tolist()
    for h, L in zip(hyps, src_len):
        assert all(isinstance(t, int) and 0 <= t < model.cfg.vocab_size for t in h)
        assert model.cfg.pad_id not in h and model.cfg.eos_id not in h
        assert len(h) <= L + max_extra - 1          # room for </s> within the limit


def test_length_penalty():
    from core.decoding import length_penalty
    assert length_penalty(1, 0.6) == pytest.approx(1.0)
    assert length_penalty(7, 0.6) == pytest.approx(2 ** 0.6)
    assert length_penalty(7, 0.0) == 1.0

