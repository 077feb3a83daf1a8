"""scripts/evaluate_syntax.py end to end on a tiny random checkpoint and a hand-made CoNLL-U fixture: the table,
the JSON's exact shape, the card's summary (and nothing else of the card), CARD.md's line, readable errors."""
import json

import pytest

import core
from scripts import evaluate_syntax as script
from scripts.write_card import card_markdown
from tests.helpers import FIXTURES, tiny_model

MINI = FIXTURES / "syntax" / "mini.conllu"       # four hand-made sentences
ROW_KEYS = {"relation", "direction", "n", "layer", "head", "accuracy", "baseline", "offset", "syntactic"}


@pytest.fixture
def tiny_checkpoint(tmp_path, tokenizer):
    folder = tmp_path / "tiny"
    core.save_checkpoint(folder, tiny_model(len(tokenizer)), tokenizer, {"name": "tiny", "test": {"bleu": 1.0}})
    return folder


def test_the_command_prints_the_table_writes_the_json_and_the_card(tiny_checkpoint, tmp_path, capsys):
    before = json.loads((tiny_checkpoint / "card.json").read_text())
    out = tmp_path / "syntax.json"
    args = [str(tiny_checkpoint), "--conllu", str(MINI), "--json", str(out), "--min-arcs", "1", "--no-progress"]
    assert script.main(args) == 0
    printed = capsys.readouterr().out
    assert "4 sentences used, 0 skipped" in printed and "chosen on the first 2 sentences" in printed
    assert "relation  direction" in printed and "syntactic heads by layer:" in printed
    result = json.loads(out.read_text())
    assert set(result) == {"sentences", "skipped", "relations"}
    assert (result["sentences"], result["skipped"]) == (4, 0)
    assert result["relations"] and all(set(r) == ROW_KEYS for r in result["relations"])
    first = result["relations"][0]
    assert 1 <= first["layer"] <= 2 and 1 <= first["head"] <= 4                 # tiny: N=2, h=4, from 1
    assert {r["direction"] for r in result["relations"]} == {"dep->head", "head->dep"}
    assert all(isinstance(r["syntactic"], bool) and isinstance(r["offset"], int) for r in result["relations"])
    card = json.loads((tiny_checkpoint / "card.json").read_text())
    assert {k: v for k, v in card.items() if k != "syntax"} == before
    s = card["syntax"]
    assert (s["sentences"], s["skipped"], s["relations_scored"]) == (4, 0, len(result["relations"]))
    assert s["syntactic"] == [{k: r[k] for k in ("relation", "direction", "layer", "head", "accuracy", "baseline",
                                                 "offset", "n")} for r in result["relations"] if r["syntactic"]]
    assert sum(len(v) for v in s["layers"].values()) == len(s["syntactic"])
    assert s["conllu"].endswith("tests/fixtures/syntax/mini.conllu")
    md = card_markdown(core.checkpoint.read_card(tiny_checkpoint))
    assert "- Syntax against gold dependency parses (4 sentences of" in md
    assert "python scripts/evaluate_syntax.py checkpoints/tiny" in md
    # a --limit run leaves the card alone
    assert script.main([str(tiny_checkpoint), "--conllu", str(MINI), "--limit", "2", "--no-progress"]) == 0
    assert json.loads((tiny_checkpoint / "card.json").read_text()) == card
    assert "No relation has 20 arcs in each half" in capsys.readouterr().out


def test_errors_are_worded(tiny_checkpoint, tmp_path, capsys):
    assert script.main([str(tiny_checkpoint), "--conllu", str(tmp_path / "missing.conllu"), "--no-progress"]) == 1
    assert "does not exist" in capsys.readouterr().err
    bad = tmp_path / "bad.conllu"
    bad.write_text("1 I PRON 0 root\n")
    assert script.main([str(tiny_checkpoint), "--conllu", str(bad), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: bad.conllu, line 1: 1 columns where 10 were expected. Is this a CoNLL-U file?")
    assert script.main([str(tmp_path / "no-checkpoint"), "--conllu", str(MINI), "--no-progress"]) == 1
    assert capsys.readouterr().err.startswith("error:")
    assert script.main([str(tiny_checkpoint), "--conllu", str(MINI), "--limit", "-1"]) == 1
    assert "--limit cannot be negative" in capsys.readouterr().err
