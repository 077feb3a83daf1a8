"""A language model writing step by step (core.lm_writing): each step's probabilities are softmax of the model's
logits after what it had read, greedy and seeded sampling write what LanguageModel.generate writes, a forced token
is written and the model goes on from it, each step's attention is the row of a pass over what it had read, and
what cannot be asked is refused in words."""
import numpy as np
import pytest
import torch

from core import load_checkpoint
from core.lm_writing import FORCED, GREEDY, SAMPLED, Forcing, write
from core.model.trace import Sampling
from core.paths import REPO
from tests.core.lm_models import tiny_lm

PROMPT = "w3 w7 w1 w9 w3 w7"


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def lm(request):
    return tiny_lm(request.param, seed=3, eos_id=None)


def next_probs(lm, ids) -> np.ndarray:
    """softmax of the model's logits after `ids`, by hand: one plain forward pass, no cache."""
    return lm.logits(ids)[-1].double().softmax(-1).numpy()


@pytest.mark.parametrize("sampling", [None, Sampling(temperature=1.5, seed=4)])
def test_each_steps_probabilities_are_softmax_of_the_logits(lm, sampling):
    w = write(lm, PROMPT, max_new=8, sampling=sampling, k=5)
    assert len(w.steps) == 8 and len(w.written) == 8 and w.ids[: w.prompt_len] == lm.ids(PROMPT)[0]
    for s, step in enumerate(w.steps):
        p = next_probs(lm, w.context(s))
        top = np.argsort(-p, kind="stable")[:5]
        assert [c.token for c in step.candidates] == top.tolist()                  # likeliest first
        np.testing.assert_allclose([c.prob for c in step.candidates], p[top], atol=1e-5)
        assert step.prob == pytest.approx(p[step.token], abs=1e-5)
        assert step.other == pytest.approx(1 - p[top].sum(), abs=1e-5)
        drawn = p if sampling is None else np.exp(np.log(p) / 1.5) / np.exp(np.log(p) / 1.5).sum()
        np.testing.assert_allclose([c.drawn for c in step.candidates], drawn[top], atol=1e-5)
        assert step.how == (GREEDY if sampling is None else SAMPLED)
        if sampling is None:
            assert step.token == int(p.argmax())


def test_greedy_and_seeded_sampling_write_what_generate_writes(lm):
    ids = lm.ids(PROMPT)[0]
    assert write(lm, PROMPT, 10).written == lm.generate(ids, 10)
    for seed in (0, 1, 2):
        w = write(lm, ids, 10, Sampling(temperature=2.0, seed=seed))
        assert w.written == lm.generate(ids, 10, temperature=2.0, seed=seed)
        assert w.written == write(lm, ids, 10, Sampling(temperature=2.0, seed=seed)).written     # the same seed
    drawn = {tuple(write(lm, ids, 10, Sampling(temperature=2.0, seed=s)).written) for s in range(4)}
    assert len(drawn) > 1                                                        # other seeds, other tokens


def test_top_k_draws_only_among_the_k_likeliest(lm):
    w = write(lm, PROMPT, 10, Sampling(temperature=3.0, top_k=2, seed=0), k=6)
    for step in w.steps:
        assert step.token in [c.token for c in step.candidates[:2]]
        assert [c.drawn for c in step.candidates[2:]] == [0.0] * 4
        assert sum(c.drawn for c in step.candidates[:2]) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("at", [0, 3])
def test_a_forced_token_is_written_and_the_model_goes_on_from_it(lm, at):
    own = write(lm, PROMPT, 8)
    token = own.steps[at].candidates[2].token                    # the model's third choice, not its own
    w = write(lm, PROMPT, 8, forcing=Forcing(at, (token,)))
    assert w.written[:at] == own.written[:at]                     # the steps before are the model's own
    assert w.written[at] == token and w.steps[at].how == FORCED
    assert w.steps[at].prob == pytest.approx(next_probs(lm, w.context(at))[token], abs=1e-5)
    assert w.context(at + 1)[-1] == token                          # the next step read it
    rest = write(lm, own.ids[: own.prompt_len + at] + [token], 8 - at - 1).written
    assert w.written[at + 1:] == rest                              # and continued from there, greedy
    assert [s.how for s in w.steps[at + 1:]] == [GREEDY] * len(rest)


def test_a_forced_word_of_several_tokens_is_written_token_by_token(lm):
    word = lm.tokenizer.encode("w20 w21")
    w = write(lm, PROMPT, 6, forcing=Forcing(1, tuple(word)))
    assert w.written[1:3] == word and [s.how for s in w.steps[1:3]] == [FORCED, FORCED]
    assert w.steps[3].how == GREEDY


def test_each_steps_attention_is_the_row_that_chose(lm):
    w = write(lm, PROMPT, 6)
    assert w.attention.shape == (lm.cfg.N, lm.cfg.h, len(w.ids), len(w.ids))
    for s in (0, 5):
        _, attns = lm.model(torch.tensor([w.context(s)]), need_weights=True)
        by_hand = torch.cat(attns)[:, :, -1].detach().numpy()             # (N, h, P + s)
        np.testing.assert_allclose(w.looked(s), by_hand, atol=1e-5)
        np.testing.assert_allclose(w.looked(s).sum(-1), 1.0, atol=1e-5)


def test_it_stops_at_the_end_of_text_and_at_max_len():
    lm = tiny_lm("gpt2", seed=1, max_len=12, eos_id=1)
    push = {"end": 50.0}

    def end_of_text(module, args, out):                               # the end of text, always (or never)
        out = out.clone()
        out[..., 1] += push["end"]
        return out
    handle = lm.model.generator.register_forward_hook(end_of_text)
    try:
        w = write(lm, "w1 w2", 5)
        assert w.written == [1] and w.stopped == "end of text" and w.text == "<eos>"
        w = write(lm, "w1 w2", 5, forcing=Forcing(0, (5,)))           # forced before it: it stops after
        assert w.written == [5, 1]
        push["end"] = -50.0
        w = write(lm, "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10", 5)
        assert len(w.ids) == 12 and w.stopped == "max_len" and len(w.steps) == 2
    finally:
        handle.remove()


def test_what_cannot_be_asked_is_refused_in_words(lm):
    if lm.cfg.bos_id is None:                      # Llama's first token alone is a prompt
        with pytest.raises(ValueError, match="no tokens: write a few words"):
            write(lm, "", 5)
    with pytest.raises(ValueError, match="Write from 1 to 200 tokens"):
        write(lm, PROMPT, 500)
    with pytest.raises(ValueError, match="after the last step"):
        write(lm, PROMPT, 4, forcing=Forcing(4, (3,)))
    with pytest.raises(ValueError, match="vocabulary"):
        write(lm, PROMPT, 4, forcing=Forcing(1, (10**6,)))
    with pytest.raises(ValueError, match="as text, not dict"):
        write(lm, {"text": PROMPT}, 4)


def test_the_tiny_copy_checkpoint_copies_after_a_repeat():
    """checkpoints/tiny-copy (a real 2-layer model trained here): after 'Q 4 B X 7 M K Q 4 B' it writes the
    continuation of the first 'Q 4 B': X, then 7."""
    lm = load_checkpoint(REPO / "checkpoints" / "tiny-copy")
    w = write(lm, "Q 4 B X 7 M K Q 4 B", 2)
    assert w.tokenizer.pieces(w.written) == ["X", "7"]
    assert w.steps[0].candidates[0].piece == "X" and w.steps[0].prob > 0.5
