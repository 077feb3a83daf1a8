"""scripts/export_figures.py on a tiny checkpoint in tmp_path: the JSON always, the images if kaleido can draw."""
import json

import pytest

import core
from tests.helpers import stopping_model
from core.studies import paper_figures as pf
from scripts import export_figures


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, tokenizer):
    """A tiny random model that stops translating at once (conftest.stopping_model)."""
    folder = tmp_path_factory.mktemp("ckpt") / "tiny-export"
    return core.save_checkpoint(folder, stopping_model(len(tokenizer)), tokenizer,
                                {"name": "tiny-export", "trained_here": True})


def test_json_names_the_heads_core_finds(checkpoint, tmp_path, capsys):
    out = tmp_path / "figs"
    assert export_figures.main([str(checkpoint), "--out", str(out), "--no-images"]) == 0
    summary = json.loads((out / "heads.json").read_text())
    assert summary["checkpoint"] == "tiny-export" and set(summary["figures"]) == {"3", "4", "5"}
    model = core.load_checkpoint(checkpoint)
    cfg = model.cfg
    for f in summary["figures"].values():
        assert len(f["scores"]) == cfg.N * cfg.h and f["paper_layer"] == 4
        assert [s["score"] for s in f["scores"]] == sorted((s["score"] for s in f["scores"]), reverse=True)
    r = model.attend(pf.FIGURE45_SENTENCE, tgt="Das Gesetz")     # encoder attention does not depend on tgt
    expected = pf.figure4(r.enc_self, r.src_tokens)
    f4 = summary["figures"]["4"]
    assert (f4["layer"], f4["heads"]) == (expected.layer, expected.heads) and len(f4["heads"]) == 2
    assert f4["src_tokens"] == r.src_tokens
    assert summary["figures"]["3"]["heads"] and len(summary["figures"]["3"]["heads"]) == cfg.h
    assert "Figure 4: layer" in capsys.readouterr().out
    assert not list(out.glob("*.png"))


def test_missing_checkpoint_is_a_readable_error(tmp_path, capsys):
    assert export_figures.main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")]) == 2
    assert "Cannot load the checkpoint" in capsys.readouterr().err


@pytest.mark.slow
def test_images_are_written(checkpoint, tmp_path):
    from app.figures.export import export_problem
    problem = export_problem(True)
    if problem:
        pytest.skip(problem)
    out = tmp_path / "figs"
    # one figure only: kaleido starts a browser, which takes 5-20 s on a busy machine
    assert export_figures.main([str(checkpoint), "--out", str(out), "--format", "png", "--figures", "4"]) == 0
    assert {p.name for p in out.iterdir()} == {"figure4_full.png", "figure4_its.png", "figure4_scores.png",
                                               "heads.json"}
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in out.glob("*.png"))
