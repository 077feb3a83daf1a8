"""Why this token and not that one on a language model (core.lm_contrast), against hand computations: the log-odds
is log_softmax of the model's logits, a token's erasure score is the log-odds minus that of the prompt without it,
gradient x input is the derivative of scaling the embeddings, integrated gradients add up to the log-odds minus the
zero-embedding baseline's, and the real tiny-copy checkpoint's induction is found."""
import numpy as np
import pytest
import torch

from core import load_checkpoint
from core.lm_contrast import METHODS, lm_contrast
from core.paths import REPO
from tests.core.lm_models import tiny_lm

PROMPT = "w3 w7 w1 w9 w3 w7 w12"
A, B = "w1", "w20"


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def lm(request):
    return tiny_lm(request.param, seed=5)


def log_odds(lm, ids, a=A, b=B, scale=None) -> float:
    """log P(a) - log P(b) after ids (words teacher-forced), by hand; scale: {position: factor} on the token
    embeddings of the prompt's positions, by a hook of the test's own."""
    def word_lp(word):
        w = lm.tokenizer.encode(word)
        seq = torch.tensor([ids + w[:-1]])
        handle = None
        if scale:
            def hook(module, args, out):
                f = torch.ones(out.shape[1])
                for p, v in scale.items():
                    f[p] = v
                return out * f[None, :, None]
            handle = lm.model.tok_embed.register_forward_hook(hook)
        try:
            with torch.no_grad():
                lp = lm.model(seq)[0].double().log_softmax(-1)
        finally:
            if handle:
                handle.remove()
        return sum(float(lp[len(ids) - 1 + i, t]) for i, t in enumerate(w))
    return word_lp(a) - word_lp(b)


def scored(lm, ids) -> list:
    return list(range(1, len(ids))) if lm.cfg.bos_id is not None else list(range(len(ids)))


def test_the_log_odds_and_each_erasure_by_hand(lm):
    ids = lm.ids(PROMPT)[0]
    c = lm_contrast(lm, PROMPT, A, B, "erasure")
    assert c.tokens == PROMPT.split()                                          # Llama's first token: no score
    lp = lm.logits(ids)[-1].double().log_softmax(-1)
    a, b = lm.tokenizer.encode(A)[0], lm.tokenizer.encode(B)[0]
    assert (c.logp_chosen, c.logp_other) == pytest.approx((float(lp[a]), float(lp[b])), abs=1e-5)
    whole = log_odds(lm, ids)
    assert c.log_odds == pytest.approx(whole, abs=1e-5)
    for k, p in enumerate(scored(lm, ids)):
        assert c.scores[k] == pytest.approx(whole - log_odds(lm, ids[:p] + ids[p + 1:]), abs=1e-5)
    assert np.abs(c.scores).max() > 0.05                                       # something to explain


def test_a_word_of_several_tokens_is_scored_teacher_forced(lm):
    ids = lm.ids(PROMPT)[0]
    c = lm_contrast(lm, PROMPT, "w1 w2", "w20", "erasure")
    assert c.log_odds == pytest.approx(log_odds(lm, ids, "w1 w2", "w20"), abs=1e-5)
    assert c.scores[0] == pytest.approx(c.log_odds - log_odds(lm, ids[:scored(lm, ids)[0]] + ids[
        scored(lm, ids)[0] + 1:], "w1 w2", "w20"), abs=1e-5)


def test_gradient_x_input_is_the_derivative_of_scaling_the_embeddings(lm):
    ids = lm.ids(PROMPT)[0]
    c = lm_contrast(lm, PROMPT, A, B, "gradient")
    h, positions = 1e-2, scored(lm, ids)           # float32 logits: a smaller h is noise
    every = (log_odds(lm, ids, scale={p: 1 + h for p in positions})
             - log_odds(lm, ids, scale={p: 1 - h for p in positions})) / (2 * h)
    assert c.scores.sum() == pytest.approx(every, rel=0.01, abs=1e-3)
    for k in (0, len(positions) - 1):
        p = positions[k]
        one = (log_odds(lm, ids, scale={p: 1 + h}) - log_odds(lm, ids, scale={p: 1 - h})) / (2 * h)
        assert c.scores[k] == pytest.approx(one, rel=0.01, abs=1e-3)
    if lm.cfg.bos_id is not None:                                  # the first token's share is unassigned
        first = (log_odds(lm, ids, scale={0: 1 + h}) - log_odds(lm, ids, scale={0: 1 - h})) / (2 * h)
        assert c.unassigned == pytest.approx(first, rel=0.01, abs=1e-3)


def test_integrated_gradients_add_up_to_the_change_from_the_zero_baseline():
    """On GPT-2's kind (learned positions, LayerNorm after the residual stream): the sum is the log-odds minus the
    log-odds with every prompt token's embedding zero (positions kept), within 0.5% at 256 points."""
    lm = tiny_lm("gpt2", seed=5)
    ids = lm.ids(PROMPT)[0]
    c = lm_contrast(lm, PROMPT, A, B, "integrated", steps=256)
    baseline = log_odds(lm, ids, scale={p: 0.0 for p in range(len(ids))})
    assert c.baseline_log_odds == pytest.approx(baseline, abs=1e-4)
    span = c.log_odds - baseline
    assert abs(span) > 0.05
    assert abs(c.scores.sum() - span) <= 0.005 * abs(span) + 1e-3
    assert c.completeness_gap == pytest.approx(abs(c.scores.sum() - span), abs=1e-5)


def test_integrated_gradients_keep_llamas_first_token():
    lm = tiny_lm("llama", seed=5)
    ids = lm.ids(PROMPT)[0]
    c = lm_contrast(lm, PROMPT, A, B, "integrated", steps=32)
    baseline = log_odds(lm, ids, scale={p: 0.0 for p in range(1, len(ids))})      # the first token kept
    assert c.baseline_log_odds == pytest.approx(baseline, abs=1e-4) and c.unassigned == 0.0
    assert c.completeness_gap is not None and np.isfinite(c.scores).all()


@pytest.mark.parametrize("method", list(METHODS))
def test_the_same_token_twice_gives_zeros(lm, method):
    c = lm_contrast(lm, PROMPT, A, A, method)
    assert c.log_odds == 0.0 and not c.scores.any() and c.unassigned == 0.0


def test_the_attention_beside_it_is_the_predicting_row(lm):
    ids = lm.ids(PROMPT)[0]
    c = lm_contrast(lm, ids, A, B)
    with torch.no_grad():
        _, attns = lm.model(torch.tensor([ids]), need_weights=True)
    row = torch.cat(attns)[:, :, -1, scored(lm, ids)].numpy()
    np.testing.assert_allclose(c.attention, row, atol=1e-5)
    assert c.attention.shape == (lm.cfg.N, lm.cfg.h, len(c.tokens))


def test_what_cannot_be_asked_is_refused_in_words(lm):
    with pytest.raises(ValueError, match="Unknown method 'alti_logit'"):
        lm_contrast(lm, PROMPT, A, B, "alti_logit")
    with pytest.raises(ValueError, match="first word as text: '' has no tokens"):
        lm_contrast(lm, PROMPT, "", B)
    with pytest.raises(ValueError, match="second word must be tokens of the model's vocabulary"):
        lm_contrast(lm, PROMPT, A, [10**6])
    with pytest.raises(ValueError, match="shorten the prompt"):
        lm_contrast(lm, [2] * 32, A, "w1 w2")
    if lm.cfg.bos_id is None:
        with pytest.raises(ValueError, match="two tokens at least"):
            lm_contrast(lm, "w3", A, B, "erasure")


def test_the_tiny_copy_checkpoint_looks_back_at_what_followed_the_repeat():
    """checkpoints/tiny-copy writes X after 'Q 4 B X 7 M K Q 4 B' (X followed the first 'Q 4 B'): leaving out
    that X or the last B (the token its induction head matches) moves 'X rather than B' most."""
    lm = load_checkpoint(REPO / "checkpoints" / "tiny-copy")
    c = lm_contrast(lm, "Q 4 B X 7 M K Q 4 B", "X", "B", "erasure")
    assert c.log_odds > 1.0
    assert sorted(c.ranking()[:2]) == [3, 9] and c.tokens[3] == "X" and c.tokens[9] == "B"
