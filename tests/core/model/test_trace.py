"""The traced search is beam_search (and greedy) step by step: same winner, honest probabilities, seeded sampling."""
import numpy as np
import pytest
import torch

import core
from core.model.trace import FINISHED, FORCED, KEPT, Sampling, traced_search
from tests.helpers import tiny_model


@pytest.fixture(scope="module")
def random_case():
    """An untrained model: it rarely ends, so the searches run into the length limit and beams differ."""
    model = tiny_model(30, seed=7)
    src = torch.randint(4, 30, (4, 6), generator=torch.Generator().manual_seed(2))
    src[:, -1] = 3
    return model, src


@pytest.mark.parametrize("beam", [1, 2, 4])
@pytest.mark.parametrize("which", ["toy", "random"])
def test_traced_winner_is_the_search_s(which, beam, toy_model, toy_eval, random_case):
    model, src = (toy_model, toy_eval[0][:6]) if which == "toy" else random_case
    for s in src:
        one = s[None, : int((s != 0).sum())]
        expected = (core.greedy_search(model, one, max_extra=8) if beam == 1
                    else core.beam_search(model, one, beam=beam, max_extra=8))[0]
        assert traced_search(model, one, beam=beam, max_extra=8).best == expected


def test_every_step_is_recorded(random_case):
    model, src = random_case
    tr = traced_search(model, src[:1], beam=3, max_extra=8, top_k=5)
    assert len(tr.steps[0].hyps) == 1 and all(1 <= len(s.hyps) <= 3 for s in tr.steps)
    V = model.cfg.vocab_size
    for t, step in enumerate(tr.steps):
        for h in step.hyps:
            assert len(h.tokens) == t
            assert abs(sum(c.prob for c in h.candidates) + h.other - 1) < 1e-4        # a distribution over V
            assert h.logprobs.shape == (V,) and h.cross.shape == (model.cfg.N_dec, model.cfg.h, src.size(1))
            assert h.dec_self.shape == (model.cfg.N_dec, model.cfg.h, t + 1)
            np.testing.assert_allclose(h.cross.sum(-1), 1, atol=1e-5)
            assert [c.prob for c in h.candidates[:5]] == sorted((c.prob for c in h.candidates[:5]), reverse=True)
        if t + 1 < len(tr.steps):        # each kept candidate is a hypothesis of the next step, its parent this one
            nxt = tr.steps[t + 1].hyps
            kept = [(i, c) for i, h in enumerate(step.hyps) for c in h.candidates if c.fate == KEPT]
            assert sorted(c.child for _, c in kept) == list(range(len(nxt)))
            for i, c in kept:
                assert nxt[c.child].parent == i and nxt[c.child].tokens[-1] == c.token
                assert abs(nxt[c.child].logprob - c.total) < 1e-4
    ends = [c for s in tr.steps for h in s.hyps for c in h.candidates if c.fate == FINISHED]
    assert len(ends) == len(tr.finished) and tr.winner.score == max(f.score for f in tr.finished)
    assert tr.path()[-1] == (tr.winner.step, tr.winner.parent) and len(tr.path()) == len(tr.best) + 1


def test_forced_prefix_comes_first(random_case):
    model, src = random_case
    forced = [5, 6, 7]
    tr = traced_search(model, src[:1], beam=2, forced=forced, max_extra=8)
    assert tr.best[:3] == forced and all(s.forced for s in tr.steps[:3]) and not tr.steps[3].forced
    taken = [next(c for c in s.hyps[0].candidates if c.fate == FORCED) for s in tr.steps[:3]]
    assert [c.token for c in taken] == forced


def test_sampling_repeats_with_its_seed(random_case):
    model, src = random_case
    one = src[:1]
    draws = [traced_search(model, one, sampling=Sampling(1.5, seed=seed), max_extra=8).best for seed in (1, 1, 2, 3)]
    assert draws[0] == draws[1] and (draws[0] != draws[2] or draws[0] != draws[3])
    # a vanishing temperature is greedy
    assert traced_search(model, one, sampling=Sampling(1e-4), max_extra=8).best == core.greedy_search(model, one,
                                                                                                       max_extra=8)[0]


def test_sampling_distribution_cuts():
    logp = torch.tensor([0.5, 0.3, 0.15, 0.05]).log()
    np.testing.assert_allclose(Sampling(top_k=2).distribution(logp), [0.625, 0.375, 0, 0], atol=1e-6)
    np.testing.assert_allclose(Sampling(top_p=0.7).distribution(logp), [0.625, 0.375, 0, 0], atol=1e-6)
    flat = Sampling(temperature=1e6).distribution(logp)
    np.testing.assert_allclose(flat, 0.25, atol=1e-4)
    for bad in (dict(temperature=0), dict(top_p=0), dict(top_k=-1)):
        with pytest.raises(ValueError):
            Sampling(**bad)


def test_the_recorder_keeps_only_its_own_threads_passes(random_case):
    """A shared model: a search in another thread while a trace records is neither recorded nor changed."""
    import threading
    from core.model.trace import AttentionRecorder
    model, src = random_case
    expected = core.beam_search(model, src, beam=2, max_extra=8)
    got = []
    with AttentionRecorder(model) as rec:
        other = threading.Thread(target=lambda: got.append(core.beam_search(model, src, beam=2, max_extra=8)))
        other.start()
        other.join()
        assert rec.maps == {"dec_self": [], "cross": []}
    assert got == [expected]
    assert all(not m._forward_hooks for layer in model.decoder for m in (layer.self_attn, layer.cross_attn))
