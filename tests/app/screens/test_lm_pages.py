"""The pages on language models (tests/app/lm_fixtures.py: tiny random GPT-2, Llama with grouped-query attention,
BERT and RoBERTa converted from transformers, and core's planted induction model): the explorer shows their one
kind of map with the right layers, heads and tokens, and the next-token guess or the [MASK] fillers; What heads do
finds the planted induction head; every page that needs a translation model says so in one line; a link reopens a
view; the notebook draws a language model's map."""
import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core import load_checkpoint
from core.paths import REPO

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
from tests.app.lm_fixtures import lm_checkpoints  # noqa: E402
from tests.helpers import run_page as run  # noqa: E402  one page on one checkpoint, by AppTest

MAIN = str(REPO / "app" / "main.py")
FAMILY = {"gpt2-tiny": "a language model (the paper's decoder alone)",
          "bert-tiny": "a masked language model (the paper's encoder alone)"}
TRANSLATION_ONLY = {"alignment": "Alignment needs", "pronouns": "Which pronoun? needs",
                    "how_it_writes": "How it writes needs", "paper_figures": "The paper's figures need",
                    "lesson": "The lesson needs"}
WRITES = {"how_it_writes"}             # pages that work on a model that writes: a GPT too (not BERT)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return lm_checkpoints(tmp_path_factory.mktemp("lm"))


def chart_map(at: AppTest, i: int = 0) -> np.ndarray:
    """The z of the i-th Plotly chart's first trace (Plotly sends it as a typed array)."""
    z = json.loads(at.get("plotly_chart")[i].proto.spec)["data"][0]["z"]
    return np.frombuffer(base64.b64decode(z["bdata"]), z["dtype"]).reshape([int(n) for n in z["shape"].split(",")])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt2-tiny", "llama-gqa", "bert-tiny", "roberta-tiny", "planted-induction"])
def test_the_explorer_shows_the_one_map_of_each_head_of_a_language_model(folder, monkeypatch, name):
    at = run("explorer", name, folder, monkeypatch)
    model = load_checkpoint(folder / name)
    res = model.attend(at.session_state["lm_text"])
    layers, heads = at.selectbox(key="layer"), at.selectbox(key="head")
    assert (len(layers.options), len(heads.options)) == (model.cfg.N, model.cfg.h) == res.self_attn.shape[:2]
    assert not [s for s in at.segmented_control if s.label == "Attention"]          # one kind of map: no choice
    drawn = chart_map(at)
    assert np.allclose(drawn, res.self_attn[layers.value, heads.value], atol=1e-6)  # the head picked, every token
    decoder = model.cfg.family == "decoder-only"
    assert at.text_area(key="lm_text").label == ("Text for the model to read" if decoder
                                                 else "Text (write [MASK] where a word should be guessed)")
    assert "Sentence to translate" not in [t.label for t in at.text_area]
    (said,) = [c.value for c in at.code]
    if decoder:
        assert np.allclose(np.triu(drawn, 1), 0)                                      # masked: nothing ahead
        text = model.tokenizer.decode([res.next_ids[-1]])            # a byte of a longer character: its piece
        assert said.replace("▁", " ") == (text if "\ufffd" not in text else model.tokenizer.pieces(res.next_ids)[-1])
    else:
        (fills,) = model.fill_mask(at.session_state["lm_text"])
        assert said.startswith(f"position {next(iter(res.fills)) + 1}: ") and f"{fills[0][1]:.0%}" in said
        specials = " ".join(c.value for c in at.caption if "Special tokens" in c.value)
        assert ("CLS" if name == "bert-tiny" else "<s") in specials and "starts every input" in specials
    kv = [c.value for c in at.caption if "Grouped" in c.value]
    assert bool(kv) == (name == "llama-gqa")
    if kv:
        assert "heads 1, 2 share K/V 1" in kv[0] and "heads 3, 4 share K/V 2" in kv[0]


@pytest.mark.slow
@pytest.mark.parametrize("view", ["grid", "lines"])
def test_all_heads_and_the_head_view_draw_on_a_language_model(folder, monkeypatch, view):
    at = run("explorer", "llama-gqa", folder, monkeypatch, view=view)
    assert at.get("plotly_chart")
    if view == "grid":
        assert chart_map(at).shape[0] > 0


@pytest.mark.parametrize("page, name", [(page, name) for page in TRANSLATION_ONLY for name in FAMILY
                                        if page not in WRITES or FAMILY[name] != FAMILY["gpt2-tiny"]])
def test_the_pages_that_need_a_translation_say_why_in_one_line(folder, monkeypatch, page, name):
    at = run(page, name, folder, monkeypatch)
    (said,) = [i.value for i in at.info]
    if page in WRITES:                 # BERT: a model that writes is wanted, a GPT would do
        assert said == (f"{TRANSLATION_ONLY[page]} a model that writes (a translation model or a decoder-only "
                        f"language model like GPT-2): {name} is {FAMILY[name]}, which fills blanks but does not "
                        "write. Pick such a checkpoint in the sidebar.")
    else:
        assert said == (f"{TRANSLATION_ONLY[page]} a translation model: {name} is {FAMILY[name]}. "
                        "Pick a translation checkpoint in the sidebar.")
    assert [b.label for b in at.button] == ["Switch to (untrained model)"]    # the only translation model here


@pytest.mark.slow
@pytest.mark.parametrize("page", ["checkpoint", "scaled_attention", "watch_it_learn", "positional_encoding",
                                  "lr_schedule", "qk", "how_it_writes"])
def test_the_other_pages_render_on_a_language_model(folder, monkeypatch, page):
    run(page, "gpt2-tiny", folder, monkeypatch)


@pytest.mark.slow
def test_the_head_finder_ranks_the_planted_induction_head_first(folder, monkeypatch):
    at = run("heads", "planted-induction", folder, monkeypatch)
    score = at.selectbox(key="lm_heads_score")
    assert score.options[:4] == ["induction", "duplicate token", "previous token", "first-token sink"]
    assert score.value == "induction"
    ranked = at.dataframe[0].value
    assert (ranked.iloc[0]["layer"], ranked.iloc[0]["head"]) == (2, 1)        # core.studies.planted_induction
    (best,) = [i.value for i in at.info]
    assert "induction\\: layer 2, head 1" in best and "previous token\\: layer 1, head 1" in best
    at.selectbox(key="lm_heads_score").set_value("previous").run()
    assert (at.dataframe[0].value.iloc[0]["layer"], at.dataframe[0].value.iloc[0]["head"]) == (1, 1)


@pytest.mark.slow
def test_an_encoder_only_model_has_its_own_roles_and_the_other_tabs_say_why(folder, monkeypatch):
    at = run("heads", "bert-tiny", folder, monkeypatch)
    assert at.selectbox(key="lm_heads_score").options[:4] == ["previous token", "next token", "[CLS] sink",
                                                              "[SEP] sink"]
    at = run("heads", "bert-tiny", folder, monkeypatch, heads_tab="Syntax")
    assert [i.value for i in at.info] == ["The syntax scores need a translation model: bert-tiny is a masked "
                                          "language model (the paper's encoder alone). Pick a translation "
                                          "checkpoint in the sidebar."]
    run("heads", "bert-tiny", folder, monkeypatch, heads_tab="Rollout")


def test_a_link_to_a_language_models_view_reopens_it(folder, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(folder))
    at = AppTest.from_file(MAIN, default_timeout=180)
    at.query_params.update(checkpoint="llama-gqa", text="the cat sat on the mat", layer="2", head="3", view="grid")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    s = at.session_state
    assert (s["checkpoint"], s["lm_text"], s["layer"], s["head"], s["view"]) == \
        ("llama-gqa", "the cat sat on the mat", 1, 2, "grid")
    assert at.query_params["head"] == "3" and at.query_params["checkpoint"] == "llama-gqa"
    sizes = [c.value for c in at.sidebar.caption if "N=2 layers" in c.value]
    assert sizes and sizes[0].startswith("A language model (the paper's decoder alone): N=2 layers, h=4 heads "
                                         "sharing 2 key/value heads")


def test_the_notebook_loads_a_language_model_and_draws_its_map(folder):
    from app.notebook import head_map, load, model_view
    lm = load(str(folder / "gpt2-tiny"))
    assert type(lm).__name__ == "LanguageModel"
    fig = head_map(lm, "the quick brown fox", layer=2, head=3)
    assert fig.layout.title.text.startswith("Masked self-attention, layer 2 of 2, head 3 of 4")
    assert np.allclose(np.asarray(fig.data[0].z, dtype=np.float32), lm.attend("the quick brown fox").self_attn[1, 2])
    model_view(lm, "the quick brown fox")
    with pytest.raises(ValueError, match="There is no layer 3"):
        head_map(lm, "the quick brown fox", layer=3, head=1)
