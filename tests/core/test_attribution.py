"""Contrastive attribution (core.attribution): erasure is two score() calls, integrated gradients are complete,
the same word twice gives zeros, ALTI-Logit adds up to the logit difference where nothing else writes into the
stream, and every question that cannot be asked is refused in words."""
import numpy as np
import pytest
import torch

import core
from core import attribution as A
from tests.helpers import tiny_model

SRC = "a man in a blue shirt is standing on a ladder"
PREFIX = "ein Mann in"
CHOSEN, OTHER = "einem blauen", "der"          # several pieces against fewer: scored as score() scores them


@pytest.fixture(scope="module", params=["pre", "post"])
def tm(request, tokenizer):
    return core.TranslationModel(tiny_model(len(tokenizer), seed=5, norm=request.param), tokenizer)


def word_logprob(score, first: int, n: int) -> float:
    return float(score.logprobs[first: first + n].sum())


def test_erasure_is_two_score_calls_per_word(tm):
    """A word's erasure score is log-odds(whole) - log-odds(without it), each log-odds from score() on the texts."""
    q = A.question(tm, SRC, PREFIX, CHOSEN, OTHER)
    assert tm.target_ids(f"{PREFIX} {CHOSEN}") == q.prefix_ids + q.chosen_ids      # the texts spell the same ids
    c = tm.contrast(SRC, PREFIX, CHOSEN, OTHER, method="erasure")
    words = SRC.split()
    assert c.src_words == words and c.tgt_words == PREFIX.split()

    def log_odds(src, prefix):
        prefix_n = len(tm.target_ids(prefix)) if prefix else 0
        a, b = tm.score(src, [f"{prefix} {CHOSEN}".strip(), f"{prefix} {OTHER}".strip()])
        return word_logprob(a, prefix_n, len(q.chosen_ids)) - word_logprob(b, prefix_n, len(q.other_ids))

    whole = log_odds(SRC, PREFIX)
    assert c.log_odds == pytest.approx(whole, abs=1e-4)
    for k in (0, 4, len(words) - 1):
        left_out = " ".join(words[:k] + words[k + 1:])
        assert c.src_scores[k] == pytest.approx(whole - log_odds(left_out, PREFIX), abs=1e-4), words[k]
    prefix_words = PREFIX.split()
    for k in range(len(prefix_words)):
        left_out = " ".join(prefix_words[:k] + prefix_words[k + 1:])
        assert c.tgt_scores[k] == pytest.approx(whole - log_odds(SRC, left_out), abs=1e-4), prefix_words[k]


def test_integrated_gradients_are_complete(tm):
    """sum of the scores = log-odds(input) - log-odds(baseline), within 0.5% of
    that difference + 0.001 nats at 256 Gauss-Legendre points (the path has kinks: ReLUs, peaked softmaxes; the
    default 64 points miss by a few percent); the baseline really is the zero-embedding input."""
    c = tm.contrast(SRC, PREFIX, CHOSEN, OTHER, method="integrated", steps=256)
    span = c.log_odds - c.baseline_log_odds
    assert abs(span) > 0.05                                    # a difference worth explaining
    assert c.completeness_gap <= 0.005 * abs(span) + 1e-3
    q = A.question(tm, SRC, PREFIX, CHOSEN, OTHER)
    _, _, odds = A._factor_grads(tm, q, np.array([0.0, 1.0]), np.zeros(2))
    assert odds[0] == pytest.approx(c.baseline_log_odds, abs=1e-5)
    assert odds[1] == pytest.approx(c.log_odds, abs=1e-4)


def test_gradient_x_input_is_the_derivative_along_the_embeddings(tm):
    """The scores of gradient x input add up to d/da log-odds(every word embedding times a) at a = 1 (central
    difference), and one word's score to the derivative of scaling that word alone."""
    c = tm.contrast(SRC, PREFIX, CHOSEN, OTHER, method="gradient")
    q = A.question(tm, SRC, PREFIX, CHOSEN, OTHER)
    h = 1e-3
    _, _, odds = A._factor_grads(tm, q, np.array([1 - h, 1 + h]), np.zeros(2))
    assert (c.src_scores.sum() + c.tgt_scores.sum()) == pytest.approx(
        (odds[1] - odds[0]) / (2 * h), rel=0.02, abs=2e-3)


@pytest.mark.parametrize("method", list(A.METHODS))
def test_the_same_word_twice_gives_zeros(tm, method):
    c = tm.contrast(SRC, PREFIX, "Mann", "Mann", method=method)
    assert c.log_odds == 0.0
    assert not c.src_scores.any() and not c.tgt_scores.any() and c.unassigned == 0.0


@pytest.mark.parametrize("method", list(A.METHODS))
def test_the_first_word_has_no_earlier_words(tm, method):
    """An empty prefix asks about the first word: scores for the source only, the step's attention beside them."""
    c = tm.contrast(SRC, "", "ein", "der", method=method)
    assert c.tgt_words == [] and c.tgt_scores.shape == (0,)
    assert c.src_scores.shape == (len(SRC.split()),) and np.isfinite(c.src_scores).all()
    assert c.cross.shape == (tm.cfg.N_dec, tm.cfg.h, len(SRC.split()))
    assert (c.cross >= 0).all() and (c.cross.sum(-1) <= 1 + 1e-5).all()      # </s> keeps the rest of each row


def test_cross_is_the_step_row_of_attend(tm):
    """The attention beside the scores is the row of attend() that writes the word, pieces summed into words."""
    c = tm.contrast(SRC, PREFIX, CHOSEN, OTHER)
    r = tm.attend(SRC, f"{PREFIX} {CHOSEN}")
    row = r.cross[:, :, len(tm.target_ids(PREFIX))]                               # (N_dec, h, S) pieces
    owner = core.word_ids(r.src_tokens)[:-1]                                       # </s> left out
    words = np.stack([row[..., [p for p, w in enumerate(owner) if w == k]].sum(-1) for k in range(max(owner) + 1)], -1)
    np.testing.assert_allclose(c.cross, words, atol=1e-5)


def test_questions_that_cannot_be_asked_are_refused_in_words(tm):
    with pytest.raises(ValueError, match="too long to explain"):
        tm.contrast("a man " * 2500, PREFIX, CHOSEN, OTHER)
    with pytest.raises(ValueError, match="chosen word.*empty"):
        tm.contrast(SRC, PREFIX, "  ", OTHER)
    with pytest.raises(ValueError, match="other word as text"):
        tm.contrast(SRC, PREFIX, CHOSEN, None)
    with pytest.raises(ValueError, match="reads at most 128"):
        tm.contrast(SRC, "ein Mann " * 100, CHOSEN, OTHER)
    with pytest.raises(ValueError, match="Unknown method"):
        tm.contrast(SRC, PREFIX, CHOSEN, OTHER, method="lime")
    with pytest.raises(ValueError, match="steps must be"):
        tm.contrast(SRC, PREFIX, CHOSEN, OTHER, method="integrated", steps=0)
    with pytest.raises(ValueError, match="empty"):
        tm.contrast("   ", PREFIX, CHOSEN, OTHER)


def test_a_word_the_vocabulary_cannot_spell(tm, monkeypatch):
    """A piece the vocabulary lacks (<unk>) is named in the refusal (this tokenizer falls back on bytes, so its
    unknown is made here)."""
    real = tm.tokenizer.encode
    monkeypatch.setattr(tm.tokenizer, "encode", lambda text, side="src": [tm.cfg.unk_id] if text == "日本" else
                        real(text, side))
    with pytest.raises(ValueError, match="cannot spell '日本'"):
        tm.contrast(SRC, PREFIX, "日本", OTHER)


def test_hooks_touch_only_the_calling_thread(tm):
    """While the factors scale a pass, another thread's pass on the same model is unchanged."""
    import threading
    src = torch.tensor([tm.source_ids(SRC)])
    dec = torch.tensor([[tm.cfg.bos_id] + tm.target_ids(PREFIX)])
    with torch.no_grad():
        before = tm.model(src, dec)
    out = {}
    with A.EmbeddingFactors(tm.model, src, dec, torch.zeros(1, src.shape[1]), torch.zeros(1, dec.shape[1])):
        t = threading.Thread(target=lambda: out.setdefault("x", tm.model(src, dec).detach()))
        t.start()
        t.join()
        with torch.no_grad():
            mine = tm.model(src, dec)
    torch.testing.assert_close(out["x"], before)
    assert not torch.allclose(mine, before)


def test_ids_ask_the_same_question_as_text(tm):
    """A prefix and words given as target ids (as How it writes has them) give the same contrast as the text."""
    by_text = tm.contrast(SRC, PREFIX, CHOSEN, OTHER)
    by_ids = tm.contrast(SRC, tm.target_ids(PREFIX), tm.target_ids(CHOSEN), tm.target_ids(OTHER))
    np.testing.assert_allclose(by_ids.src_scores, by_text.src_scores, atol=1e-6)
    assert by_ids.chosen == CHOSEN and by_ids.prefix == PREFIX
    with pytest.raises(ValueError, match="not start, end or padding"):
        tm.contrast(SRC, PREFIX, [tm.cfg.eos_id], OTHER)
