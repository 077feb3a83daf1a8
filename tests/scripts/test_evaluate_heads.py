"""scripts/evaluate_heads.py on tiny saved checkpoints: a decoder-only one whose layer 2 head 1 is an induction head
by construction (core.studies.planted_induction) is named so, with the counts, in the table and the JSON, which
holds the scores of the loaded model; a translation checkpoint and a too long --L are refused in words."""
import json

import numpy as np
import pytest

import core
from core.checkpoint.folder import load_model
from core.studies import induction as ind
from core.studies.planted_induction import HEADS, planted_induction_model
from scripts import evaluate_heads as script
from tests.helpers import tiny_model


@pytest.fixture
def planted_checkpoint(tmp_path):
    return core.save_checkpoint(tmp_path / "planted", planted_induction_model(vocab_size=16, L=8),
                                card={"name": "planted"})


def test_the_planted_induction_head_is_named_with_its_counts(planted_checkpoint, capsys):
    assert script.main([str(planted_checkpoint), "--sequences", "24", "--batch-size", "5", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert "24 sequences of [bos] + 2 x 8 random tokens (seed 3)" in printed      # L: the model's 17 positions
    assert "over the 8 positions of the second copy, previous over 16, sink over 13" in printed
    assert "top induction 2.1 " in printed and "top previous  1.1 " in printed and "top duplicate 2.2 " in printed
    assert "(it copies from context)" in printed
    out = json.loads((planted_checkpoint / script.FILE).read_text())
    assert (out["sequences"], out["L"], out["seed"]) == (24, 8, 3)
    assert out["best"]["induction"]["layer"] == HEADS["induction"][0] + 1 == 2
    assert out["best"]["induction"]["head"] == HEADS["induction"][1] + 1 == 1
    assert len(out["heads"]) == 6 and set(out["heads"][0]) == {"layer", "head", *ind.SCORES}
    # the JSON holds the scores of the saved (float16) model as the study computes them
    again = ind.induction_scores(load_model(planted_checkpoint), L=8, batch=24, seed=3)
    grid = np.array([[h["induction"] for h in out["heads"] if h["layer"] == layer] for layer in (1, 2)])
    np.testing.assert_allclose(grid, again.induction, atol=1e-5)
    assert out["loss_gap"] == pytest.approx(again.loss_gap, abs=1e-5) and out["loss_gap"] < -2


def test_json_elsewhere_and_worded_refusals(planted_checkpoint, tmp_path, tokenizer, capsys):
    other = tmp_path / "out" / "h.json"
    assert script.main([str(planted_checkpoint), "--sequences", "4", "--json", str(other)]) == 0
    assert json.loads(other.read_text())["sequences"] == 4 and not (planted_checkpoint / script.FILE).exists()
    assert script.main([str(planted_checkpoint), "--L", "9"]) == 1
    assert "use L <= 8" in capsys.readouterr().err
    translation = core.save_checkpoint(tmp_path / "tiny", tiny_model(len(tokenizer)), tokenizer, {"name": "tiny"})
    assert script.main([str(translation)]) == 1
    assert "decoder-only language models" in capsys.readouterr().err
    assert script.main([str(tmp_path / "missing")]) == 1
    assert "There is no checkpoint folder" in capsys.readouterr().err
