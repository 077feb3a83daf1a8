"""scripts/evaluate_contrast.py on a tiny checkpoint: the table printed, the file written beside the card (and not
with --no-write), the worked sentences skipped with their reason when the translation has no sein-/ihr-."""
import json

import pytest

import core
from core.studies import contrast_faithfulness as cf
from scripts import evaluate_contrast as script
from tests.helpers import stopping_model


@pytest.fixture
def checkpoint(tmp_path, tokenizer):
    folder = tmp_path / "tiny"
    core.save_checkpoint(folder, stopping_model(len(tokenizer), eos_bias=3.0), tokenizer, {"name": "tiny"})
    return folder


@pytest.mark.slow
def test_script_prints_the_table_and_writes_the_file(checkpoint, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(core.TranslationModel, "translate", lambda self, texts, beam=4, **kw:
                        ["Das Gesetz wird nie perfekt sein, aber seine Anwendung", "Die Bank erhöhte Zinsen."])
    card = (checkpoint / "card.json").read_text()
    args = [str(checkpoint), "--items", "2", "--steps", "4", "--no-progress"]
    assert script.main(args + ["--json", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "3 cases (1 skipped)" in out and "best_head" in out and "most faithful" in out
    saved = json.loads((checkpoint / cf.RESULT_FILE).read_text())
    assert saved == json.loads((tmp_path / "c.json").read_text()) and saved["cases"] == 3
    assert "no sein-/ihr-" in saved["skipped"][0] and saved["examples"][0]["chosen"] in ("seine", "ihre")
    assert cf.read_result(checkpoint)["table"] == saved["table"]
    assert (checkpoint / "card.json").read_text() == card
    (checkpoint / cf.RESULT_FILE).unlink()
    assert script.main(args + ["--items", "1", "--no-write"]) == 0
    assert not (checkpoint / cf.RESULT_FILE).exists() and cf.read_result(checkpoint) is None


def test_errors_are_worded(checkpoint, tmp_path, capsys):
    assert script.main([str(checkpoint), "--items", "-1", "--no-progress"]) == 1
    assert "--items must be 0 or more" in capsys.readouterr().err
    (checkpoint / cf.RESULT_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="run scripts/evaluate_contrast.py again"):
        cf.read_result(checkpoint)
