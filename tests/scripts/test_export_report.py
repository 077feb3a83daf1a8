"""scripts/export_report.py: one offline HTML report per sentence, from the command line or a file."""
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
