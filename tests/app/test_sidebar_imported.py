"""app/sidebar.py's captions of a checkpoint's card: an imported model (core.checkpoint.pretrained, from a tiny
local FSMT model) says where it came from, its languages and whom to credit, and claims no training data; a model
trained here names its data only as far as its card does; a card missing fields or holding odd ones shows what it
can."""
import json
import shutil

import pytest
from streamlit.testing.v1 import AppTest

from app.sidebar import imported_captions, is_imported, origin, scores_line, trained_on
from core.checkpoint import Card

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
from core.checkpoint.pretrained import convert_folder as import_model  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import build_fsmt  # noqa: E402


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """checkpoints/ with an imported FSMT model (en -> de) and two copies of it whose card.json lacks every field
    but its name, or holds fields of the wrong kind (as a hand-edited card may)."""
    root = tmp_path_factory.mktemp("sidebar")
    folder = import_model(build_fsmt(root / "wmt19-tiny"), root / "checkpoints" / "fsmt-tiny")
    cards = {"bare": {"name": "bare", "trained_here": False},
             "odd": {"name": "odd", "trained_here": False, "source": 5, "credit": ["x"], "languages": "en-de",
                     "imported_from": {"folder": "/models/opus-mt-en-de"}, "test": "not a table", "demo": "news",
                     "data": "not a dict"}}
    for name, card in cards.items():
        shutil.copytree(folder, folder.parent / name)
        (folder.parent / name / "card.json").write_text(json.dumps(card))
    return folder.parent


def show_sidebar():
    from app.sidebar import sidebar
    sidebar()


def run_sidebar(checkpoint: str, folder, monkeypatch) -> AppTest:
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(folder))
    at = AppTest.from_function(show_sidebar, default_timeout=120)
    at.session_state["checkpoint"] = checkpoint
    at.session_state["checkpoint_picked"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
    return at


def test_an_imported_model_says_where_it_came_from_and_claims_no_training_data(checkpoints, monkeypatch):
    at = run_sidebar("fsmt-tiny", checkpoints, monkeypatch)
    assert [i.value for i in at.sidebar.info] == [
        "Imported, not trained here: wmt19-tiny (FSMT), converted from the Hugging Face format."]
    captions = [c.value for c in at.sidebar.caption]
    assert captions[0] == "Translates English → German."
    assert captions[1].startswith("Credit: fairseq's WMT19 news translation models") and captions[1].endswith(".")
    assert captions[2].startswith("N=2 encoder / 2 decoder layers")
    assert len(captions) == 3 and not any("Trained on" in c for c in captions)


@pytest.mark.parametrize("checkpoint, said", [("bare", "its card does not say where from"),
                                              ("odd", "from the folder /models/opus-mt-en-de")])
def test_a_card_missing_fields_or_holding_odd_ones_shows_what_it_can(checkpoints, monkeypatch, checkpoint, said):
    at = run_sidebar(checkpoint, checkpoints, monkeypatch)
    assert [i.value for i in at.sidebar.info] == [f"Imported, not trained here: {said}."]
    captions = [c.value for c in at.sidebar.caption]
    assert len(captions) == 1 and captions[0].startswith("N=2 encoder")     # no languages, credit, data or test


def card(**fields) -> Card:
    return Card.from_dict({"name": "m", **fields})


def test_a_model_trained_here_names_its_data_only_as_far_as_its_card_does():
    assert trained_on(card(demo={"domain": "captions"})).startswith("Trained on image captions (Multi30k)")
    assert trained_on(card(data={"folder": "data/wmt-en-de"})) == "Trained on the data in data/wmt-en-de."
    assert trained_on(card(name="multi30k-small")) is None         # no guess from the checkpoint's name
    assert trained_on(card(demo={"domain": "poetry"}, data={"folder": 3})) is None
    assert trained_on(card(trained_here=False, demo={"domain": "news"})) is None     # imported: never


def test_what_counts_as_imported_and_what_its_card_adds():
    assert not is_imported(card()) and is_imported(card(trained_here=False))
    assert is_imported(card(source="Helsinki-NLP/opus-mt-en-de (Marian)"))          # a card that names a source
    nllb = card(trained_here=False, source="nllb (NLLB-200)", credit="NLLB-200 by Meta AI.",
                languages={"source": "eng_Latn", "target": "fra_Latn"})
    assert origin(nllb) == "nllb (NLLB-200)"
    assert imported_captions(nllb) == ["Translates English → French.", "Credit: NLLB-200 by Meta AI."]
    assert scores_line(card(test={"split": "test", "bleu": 27.3, "chrf": 55, "ok": True})) == "bleu 27.3, chrf 55"
