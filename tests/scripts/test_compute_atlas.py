"""scripts/compute_atlas.py on a tiny random checkpoint and the hand-made fixtures: the atlas file, the roles by
layer it prints, and what a model of other languages gets."""
import json

import pytest

import core
from core.studies import atlas
from scripts import compute_atlas as script
from tests.helpers import FIXTURES, tiny_model


@pytest.fixture
def tiny_checkpoint(tmp_path, tokenizer):
    folder = tmp_path / "tiny"
    core.save_checkpoint(folder, tiny_model(len(tokenizer)), tokenizer, {"name": "tiny"})
    return folder


def test_the_atlas_is_written_into_the_checkpoint(tiny_checkpoint, capsys):
    result = script.main([str(tiny_checkpoint), "--conllu", str(FIXTURES / "syntax" / "mini.conllu"),
                          "--gold", str(FIXTURES / "alignment_gold"), "--no-progress"])
    assert json.loads((tiny_checkpoint / atlas.FILE).read_text()) == json.loads(json.dumps(result))
    printed = capsys.readouterr().out
    assert "enc_self, layer 1: " in printed and "cross, layer 2: " in printed and "written to" in printed
    assert result["checkpoint"] == "tiny" and "4 sentences" in result["corpus"]["enc_self"]


def test_other_languages_get_the_roles_that_fit(tmp_path):
    sentences, pairs, notes = atlas.load_corpora(("fr", "en"))
    assert sentences is None and pairs is None and len(notes) == 2 and "English source" in notes[0]
    sentences, pairs, notes = atlas.load_corpora(("en", "fr"), FIXTURES / "syntax" / "mini.conllu")
    assert len(sentences) == 4 and pairs is None and "English -> German" in notes[0]
    _, pairs, notes = atlas.load_corpora(("en", "de"), FIXTURES / "syntax" / "mini.conllu", tmp_path)
    assert pairs is None and "lacks src.en" in notes[0]


def test_a_language_model_gets_its_atlas(tmp_path, capsys):
    from tests.app.lm_fixtures import planted_checkpoint
    folder = planted_checkpoint(tmp_path / "planted-induction")
    result = script.main([str(folder), "--no-progress"])
    assert json.loads((folder / atlas.FILE).read_text()) == json.loads(json.dumps(result))
    printed = capsys.readouterr().out
    assert "self, layer 2: " in printed and "induction 1" in printed.split("self, layer 2: ")[1].splitlines()[0]
    assert "self, layer 1: " in printed and "previous 1" in printed
