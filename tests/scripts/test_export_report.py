"""scripts/export_report.py: one offline HTML report per sentence, from the command line or a file; a language
model's has its self-attention and the head finder's grids."""
import re

import numpy as np
import pytest

import core
from scripts import export_report
from tests.helpers import stopping_model


def test_one_file_per_sentence_and_readable_refusals(tokenizer, tmp_path, capsys):
    folder = tmp_path / "tiny"
    core.save_checkpoint(folder, stopping_model(len(tokenizer)), tokenizer, {"name": "tiny"})
    listed = tmp_path / "sentences.txt"
    listed.write_text("the lazy dog\n\n", encoding="utf-8")
    out = tmp_path / "reports"
    assert export_report.main([str(folder), "the quick brown fox", "--out", str(out), "--file", str(listed)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["01_the-quick-brown-fox.html", "02_the-lazy-dog.html"]
    assert "MB)" in capsys.readouterr().out
    assert export_report.main([str(folder), "--out", str(out)]) == 2                       # no sentences
    assert export_report.main([str(tmp_path / "none"), "a b", "--out", str(out)]) == 2     # no checkpoint
    assert "Cannot load the checkpoint" in capsys.readouterr().err


def test_a_language_model_gets_its_maps_and_head_grids(tmp_path, capsys):
    from tests.app.figures.test_report import data_of
    from tests.app.lm_fixtures import planted_checkpoint
    folder = planted_checkpoint(tmp_path / "planted-induction")
    out = tmp_path / "reports"
    assert export_report.main([str(folder), "w1 w2 w3 w1 w2", "--out", str(out), "--pieces"]) == 0
    said = capsys.readouterr()
    assert "--pieces changes nothing" in said.err and "wrote" in said.out
    (path,) = out.iterdir()
    page = path.read_text(encoding="utf-8")
    data = data_of(page)
    lm = core.load_checkpoint(folder)
    res = lm.attend("w1 w2 w3 w1 w2")
    assert list(data["kinds"]) == ["self"] and data["kinds"]["self"]["name"] == "Masked self-attention"
    np.testing.assert_allclose(np.asarray(data["kinds"]["self"]["maps"]) / data["scale"], res.self_attn,
                               atol=0.5 / data["scale"])
    assert data["heads"] == 3 and "Its guess for the next token" in page and "English:" not in page
    grids = re.findall(r'Plotly\.newPlot\("figure(\d)"', page)
    assert grids == ["0", "1", "2", "3"]
    assert "Masked self-attention: induction" in page and "Masked self-attention: first-token sink" in page
    assert "sequences of 8 random tokens repeated twice" in page


def test_an_encoder_only_model_gets_its_fillers_and_its_own_grids(tmp_path):
    pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
    from core.checkpoint.pretrained import convert_folder
    from tests.core.checkpoint.pretrained.encoder_models import build_encoder
    folder = convert_folder(build_encoder(tmp_path / "hf-bert", "bert"), tmp_path / "bert-tiny")
    out = tmp_path / "reports"
    assert export_report.main([str(folder), "The capital of France is [MASK].", "--out", str(out)]) == 0
    page = next(out.iterdir()).read_text(encoding="utf-8")
    lm = core.load_checkpoint(folder)
    (position,) = lm.attend("The capital of France is [MASK].").fills
    assert f"[MASK] at position {position + 1}:" in page
    assert "Self-attention: [CLS] sink" in page and "Self-attention: induction" not in page
    assert "English probe sentences" in page
