"""The model learns to reverse sequences; greedy and beam search decode it (toy model from conftest)."""
import math

import pytest
import torch

import core
from tests.helpers import tiny_model


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
    from core.model.decoding import length_penalty
    assert length_penalty(1, 0.6) == pytest.approx(1.0)
    assert length_penalty(7, 0.6) == pytest.approx(2 ** 0.6)
    assert length_penalty(7, 0.0) == 1.0


# --- which finished hypothesis wins ------------------------------------------------------------

BOS, EOS, A, B, C, D = 2, 3, 4, 5, 6, 7     # 8.. are fillers


def bigram_table(V: int = 28) -> torch.Tensor:
    """(V, V) log P(next | previous): <s> A </s> is likelier than <s> B C D </s>, but shorter.

    Fillers (8..V-1) take the probability left over and almost never end, so the only hypotheses
    that end early are the two candidates.
    """
    fillers = slice(8, V)
    p = torch.full((V, V), 1e-9, dtype=torch.float64)
    p[BOS, A], p[BOS, B] = math.exp(-2.0), math.exp(-2.1)
    p[A, EOS] = p[B, C] = p[C, D] = p[D, EOS] = 0.97
    p[:, fillers] += ((1 - p.sum(1)) / (V - 8))[:, None]
    return (p / p.sum(1, keepdim=True)).log().float()


def bigram_model(logp: torch.Tensor) -> core.Transformer:
    """A real Transformer whose next-token log-probs are logp[previous token].

    Every sublayer's output projection is zero and the learned positions are zero, so the decoder's
    output is LayerNorm(sqrt(d_model) * embedding of the last token); with one-hot embeddings these
    V vectors are linearly independent, and the output projection is solved to map them onto logp.
    """
    V = logp.size(0)
    cfg = core.TransformerConfig(vocab_size=V, N=1, N_dec=1, d_model=V + 4, d_ff=8, h=4, dropout=0.0,
                                 max_len=32, positions="learned", norm="pre", share_embeddings=False)
    model = core.Transformer(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if any(k in name for k in ("w_o.", "ffn.w_2.", "pos.table")):
                p.zero_()
        model.tgt_embed.weight.copy_(torch.eye(V, cfg.d_model))
        src = torch.tensor([[A, EOS]] * V)
        memory, src_mask, _ = model.encode(src)
        hidden = model.decode(torch.arange(V)[:, None], memory, src_mask)[0][:, 0]     # (V, d_model)
        w = torch.linalg.pinv(hidden.double()) @ logp.double()     # (d_model, V); lstsq's default CPU driver
        model.generator.weight.copy_(w.T.float())
        steps = model.project(hidden)
    torch.testing.assert_close(steps.log_softmax(-1), logp, atol=1e-4, rtol=0)       # the model is the table
    return model


def test_length_penalty_changes_the_winner():
    logp = bigram_table()
    model = bigram_model(logp)
    short = float(logp[BOS, A] + logp[A, EOS])                                     # <s> A </s>
    long = float(logp[BOS, B] + logp[B, C] + logp[C, D] + logp[D, EOS])            # <s> B C D </s>
    lp2, lp4 = (7 / 6) ** 0.6, (9 / 6) ** 0.6                   # GNMT's ((5 + |Y|) / 6)^0.6, |Y| counts </s>
    assert short > long and short / lp2 < long / lp4                        # the case is what we meant
    src = torch.tensor([[A, EOS], [B, EOS]])
    assert core.beam_search(model, src, beam=4, alpha=0.6, max_extra=6) == [[B, C, D]] * 2
    assert core.beam_search(model, src, beam=4, alpha=0.0, max_extra=6) == [[A]] * 2   # no penalty
    assert core.greedy_search(model, src, max_extra=6) == [[A]] * 2
