"""app/lesson/figures_gpt.py: the lesson's decoder-only steps draw the shipped tiny-copy GPT's own maps: causal (nothing
right of the diagonal) beside the translation decoder's, and an induction head whose top key is the token after the
first occurrence of the query's token; a missing tiny-copy is said in words."""
import numpy as np
import pytest

from app.checkpoints import untrained_model
from app.figures import architecture
from app.lesson import figures_gpt as G
from app.lesson.figures import FIGURES
from core import load_checkpoint
from core.paths import REPO
from core.studies import copy_task, induction

TINY_COPY = REPO / "checkpoints" / "tiny-copy"
NEWS = REPO / "checkpoints" / "news-small"
pytestmark = pytest.mark.skipif(not (TINY_COPY / "config.json").exists(), reason="checkpoints/tiny-copy is not here")


@pytest.fixture(scope="module")
def model():
    return untrained_model()


@pytest.fixture(scope="module")
def gpt():
    return load_checkpoint(TINY_COPY)


def test_the_steps_are_listed_and_say_what_they_depend_on():
    assert FIGURES["decoder_alone"] is G.FIGURES["decoder_alone"] and FIGURES["decoder_alone"].learned
    assert not FIGURES["induction_head"].uses_checkpoint            # tiny-copy, whatever the class's model


def test_right_of_diagonal_measures_what_it_says():
    causal = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]
    assert G.right_of_diagonal(causal) == 0.0
    assert G.right_of_diagonal(np.full((4, 4), 0.25)) == pytest.approx((0.75 + 0.5 + 0.25 + 0) / 4)


@pytest.mark.slow
@pytest.mark.parametrize("folder", [None, NEWS], ids=["untrained", "news-small"])
def test_decoder_alone_draws_both_models_causal_maps(folder, model, gpt):
    m = model if folder is None else load_checkpoint(folder)
    options = dict(FIGURES["decoder_alone"].options)
    before = FIGURES["decoder_alone"].before(m, options)
    grey = [b[4] for b in architecture.BOXES if b[6] in ("encoder", "cross")]     # what a GPT drops
    greyed = {a.text for a in before.fig.layout.annotations if a.font.color == architecture.DROPPED_TEXT}
    assert set(grey) <= greyed and "<b>Masked</b><br>self-attention" not in greyed and len(grey) == 4
    assert not any(a.font.color == architecture.DROPPED_TEXT for a in architecture.transformer_diagram(False)
                   .layout.annotations)                            # the paper's whole model: nothing greyed
    a = FIGURES["decoder_alone"].answer(m, options)
    left, right = (np.asarray(t.z, dtype=float) for t in a.fig.data)
    np.testing.assert_allclose(left, gpt.attend(options["sequence"]).self_attn[0, 0], atol=1e-6)   # tiny-copy's own
    dec = m.attend(G.sentence(m, options)).view("dec_self")
    n = len(right)
    np.testing.assert_allclose(right, dec.maps[0, 0, :n, :n], atol=1e-6)                          # the class model's
    for z in (left, right):
        assert np.triu(z, k=1).max() == 0.0                        # nothing right of the diagonal
        assert np.tril(z).sum() > 0
    enc = G.right_of_diagonal(m.attend(G.sentence(m, options)).enc_self)
    assert enc > 0.1 and f"whole sentence: {enc:.2f}" in a.fact
    assert "**0.000** in the GPT (8 heads)" in a.fact and "decoder (" in a.fact


def test_the_induction_head_looks_at_the_token_after_the_first_occurrence(model, gpt):
    options = dict(FIGURES["induction_head"].options)
    r = gpt.attend(options["sentence"])
    q = options["query"]
    target = r.tokens.index(r.tokens[q]) + 1                       # after the first occurrence of the query's token
    scores = induction.induction_scores(gpt.model, L=12, batch=64, seed=copy_task.EVAL_SEED)
    layer, head, score = scores.best("induction")
    a = FIGURES["induction_head"].answer(None, options)
    z = np.asarray(a.fig.data[0].z, dtype=float)
    np.testing.assert_allclose(z, r.self_attn[layer, head], atol=1e-6)
    assert int(np.argmax(z[q])) == target and r.tokens[target] == "X"
    assert np.triu(z, k=1).max() == 0.0
    assert f"layer {layer + 1}, head {head + 1} puts **{z[q, target]:.2f}**" in a.fact
    assert f"**{score:.2f}**" in a.fact and score > 0.5
    assert (layer, head) == (1, 0)                                 # tiny-copy's card: layer 2, head 1
    rows = [s for s in a.fig.layout.shapes if s.y0 == q - 0.5]
    assert {(s.x0, s.x1) for s in rows} == {(-0.5, len(r.tokens) - 0.5), (target - 0.5, target + 0.5)}
    assert a.for_class["words"] == r.tokens[: q + 1] and a.for_class["head"] == "layer 2, head 1"
    assert int(np.argmax(a.for_class["weights"])) == target
    before = FIGURES["induction_head"].before(model, options)
    assert "Q 4 **B** …" in before.text and "position 10" in before.text


def test_a_query_that_cannot_copy_is_said(gpt):
    options = dict(FIGURES["induction_head"].options)
    with pytest.raises(ValueError, match="second copy"):
        FIGURES["induction_head"].answer(None, {**options, "query": 3})
    with pytest.raises(ValueError, match="tokens 1 to 14"):
        FIGURES["induction_head"].answer(None, {**options, "query": 40})
    with pytest.raises(ValueError, match="'q' is not one of tiny-copy's tokens"):
        FIGURES["induction_head"].before(None, {**options, "sentence": options["sentence"].replace("Q", "q")})


def test_a_missing_tiny_copy_is_said(tmp_path, monkeypatch, model):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))
    monkeypatch.setattr(G, "REPO", tmp_path)
    for kind in ("decoder_alone", "induction_head"):
        with pytest.raises(ValueError, match="scripts/recipes/tiny-copy.sh"):
            FIGURES[kind].answer(model, dict(FIGURES[kind].options))
