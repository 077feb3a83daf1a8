"""How it writes on a language model (app/lm/writing.py through app/screens/how_it_writes.py), by AppTest, every
value checked against core: what it wrote is core.lm_writing.write's, the bars are the step's probabilities, a
forced token is written and the model goes on from it, sampling follows its seed, "why this token and not that
one?" shows core.lm_contrast's scores; an encoder-only model keeps its one line."""
import base64
import json

import numpy as np
import pytest

from core import load_checkpoint
from core.lm_contrast import lm_contrast
from core.lm_writing import Forcing, write
from core.model.trace import Sampling
from core.paths import REPO

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
from tests.app.lm_fixtures import lm_checkpoints  # noqa: E402
from tests.helpers import run_page  # noqa: E402

COPY = "Q 4 B X 7 M K Q 4 B"             # checkpoints/tiny-copy writes X 7 ... after it (its induction head)
REPO_CHECKPOINTS = REPO / "checkpoints"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return lm_checkpoints(tmp_path_factory.mktemp("lm"))


def run(monkeypatch, checkpoint="tiny-copy", folder=REPO_CHECKPOINTS, **state):
    return run_page("how_it_writes", checkpoint, folder, monkeypatch, **{"lm_text": COPY, "lmw_new": 6, **state})


def bars(at, i=0) -> tuple[list, np.ndarray]:
    """(labels, probabilities) of the i-th Plotly chart's bars (Plotly sends x as a typed array)."""
    data = json.loads(at.get("plotly_chart")[i].proto.spec)["data"][0]
    x = data["x"]
    x = np.frombuffer(base64.b64decode(x["bdata"]), x["dtype"]) if isinstance(x, dict) else np.asarray(x)
    return data["y"], x


def written_code(at) -> str:
    (code,) = [c.value for c in at.code]
    return code


def test_it_writes_what_core_writes_and_the_bars_are_each_steps_probabilities(monkeypatch):
    at = run(monkeypatch)
    lm = load_checkpoint(REPO_CHECKPOINTS / "tiny-copy")
    w = write(lm, COPY, 6)
    assert written_code(at).endswith(" ⟶ " + w.text) and w.text.startswith("X 7")
    for step in (0, 3):
        at.slider(key="lmw_step").set_value(step + 1).run()
        labels, probs = bars(at)
        cands = w.steps[step].candidates
        assert labels[: len(cands)] == [c.piece for c in cands]
        np.testing.assert_allclose(probs[: len(cands)], [c.prob for c in cands], atol=1e-6)
        assert probs[-1] == pytest.approx(w.steps[step].other, abs=1e-6)


@pytest.mark.slow
def test_a_forced_token_is_written_and_the_model_goes_on_from_it(monkeypatch):
    at = run(monkeypatch)
    lm = load_checkpoint(REPO_CHECKPOINTS / "tiny-copy")
    own = write(lm, COPY, 6)
    at.slider(key="lmw_step").set_value(2).run()
    pick = at.selectbox(key="lmw_pick_1")
    token = own.steps[1].candidates[pick.value].token
    at.button(key="lmw_force").click().run()
    forced = write(lm, COPY, 6, forcing=Forcing(1, (token,)))
    assert forced.written[1] == token != own.written[1]
    assert written_code(at).endswith(" ⟶ " + forced.text)
    assert any("your token forced at step 2" in m.value for m in at.markdown)
    at.button(key="lmw_unforce").click().run()
    assert written_code(at).endswith(" ⟶ " + own.text)


@pytest.mark.slow
def test_sampling_draws_what_its_seed_draws(monkeypatch):
    at = run(monkeypatch, lmw_temperature=1.5, lmw_seed=7)
    lm = load_checkpoint(REPO_CHECKPOINTS / "tiny-copy")
    w = write(lm, COPY, 6, Sampling(1.5, 0, 1.0, 7))
    assert written_code(at).endswith(" ⟶ " + w.text)
    _, probs = bars(at)
    cands = w.steps[0].candidates
    np.testing.assert_allclose(probs[: len(cands)], [c.drawn for c in cands], atol=1e-6)   # what it drew from


@pytest.mark.slow
@pytest.mark.parametrize("method", ["erasure", "gradient", "integrated"])
def test_why_this_token_shows_the_contrasts_scores(monkeypatch, method):
    at = run(monkeypatch, lmw_why=True, lmw_method=method)
    lm = load_checkpoint(REPO_CHECKPOINTS / "tiny-copy")
    w = write(lm, COPY, 6)
    other = w.steps[0].candidates[at.selectbox(key="lmw_pick_0").value].token
    c = lm_contrast(lm, w.context(0), [w.steps[0].token], [other], method)
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    z = spec["data"][0]["z"]
    z = np.frombuffer(base64.b64decode(z["bdata"]), z["dtype"]) if isinstance(z, dict) else np.asarray(z)
    np.testing.assert_allclose(z.ravel(), c.scores, atol=1e-5)
    assert f"{c.log_odds:+.2f}" in spec["layout"]["title"]["text"]
    if method == "erasure":                       # the earlier X and the last B, as core's test finds
        assert sorted(c.ranking()[:2]) == [3, 9]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2-tiny", "llama-gqa"])
def test_imported_language_models_write_on_the_page(folder, monkeypatch, name):
    at = run_page("how_it_writes", name, folder, monkeypatch, lmw_new=4, lmw_why=True)
    lm = load_checkpoint(folder / name)
    w = write(lm, at.session_state["lm_text"], 4)
    assert written_code(at).endswith(" ⟶ " + w.text)
    assert not at.info or all("needs a translation model" not in i.value for i in at.info)


def test_an_encoder_only_model_keeps_its_one_line(folder, monkeypatch):
    at = run_page("how_it_writes", "bert-tiny", folder, monkeypatch)
    (said,) = [i.value for i in at.info]
    assert said.startswith("How it writes needs a model that writes (a translation model or a decoder-only "
                           "language model like GPT-2): bert-tiny is a masked language model")
