"""The typed model card (core.checkpoint.card): older cards read, unknown keys survive, writes re-read first."""
import json
from pathlib import Path

import pytest

from core.checkpoint import card as card_module
from core.checkpoint.card import Card, as_card, read_card, update_card, write_card
from core.paths import CHECKPOINTS, REPO

OLD_CARD = {   # a card from before the prose sections and the recipe (one "notes" paragraph), with a key of its own
    "name": "old", "trained_here": True, "notes": "why these sizes",
    "training": {"preset": "small", "steps": 120}, "stopped_by": "budget", "from_the_future": {"x": [1, 2]},
}


def test_an_old_card_reads_with_defaults(tmp_path):
    (tmp_path / "card.json").write_text(json.dumps(OLD_CARD))
    card = read_card(tmp_path)
    assert card.notes == "why these sizes" and card.steps == 120 and card.stopped_by == "budget"
    assert card.data_notes is card.training_notes is card.evaluation_notes is card.limitations is card.recipe is None
    assert card.test is None and card.data == {} and card.extra == {"from_the_future": {"x": [1, 2]}}
    assert read_card(tmp_path / "none").name == "none"                  # no card.json: a default card


def test_unknown_keys_and_the_order_are_written_back(tmp_path):
    (tmp_path / "card.json").write_text(json.dumps(OLD_CARD, indent=2))
    write_card(tmp_path, read_card(tmp_path))
    assert json.loads((tmp_path / "card.json").read_text()) == OLD_CARD
    assert list(json.loads((tmp_path / "card.json").read_text())) == list(OLD_CARD)   # same keys, same order
    update_card(tmp_path, limitations="captions only", recipe="scripts/recipes/old.sh", stopped_by=None)
    d = json.loads((tmp_path / "card.json").read_text())
    assert list(d) == ["name", "trained_here", "notes", "limitations", "recipe", "training", "from_the_future"]
    assert d["from_the_future"] == {"x": [1, 2]} and "stopped_by" not in d      # None: left out


def test_a_new_card_writes_only_what_is_set():
    assert Card(name="a", limitations="l").to_dict() == {"name": "a", "limitations": "l"}
    assert as_card(None) == Card() and as_card({"name": "b"}).name == "b"
    assert Card.from_dict({"data": "not a dict", "training": None}).data == {}


def test_update_card_rereads_before_writing(tmp_path, monkeypatch):
    """An evaluation that takes minutes must not undo what another script wrote into the card meanwhile."""
    write_card(tmp_path, Card(name="c", notes="n"))
    stale = read_card(tmp_path)                                          # read at the start of a long run
    update_card(tmp_path, test={"bleu": 1.0})                            # another script writes meanwhile
    written = []
    real = card_module.write_json
    monkeypatch.setattr(card_module, "write_json", lambda p, d: (written.append(d), real(p, d)))
    update_card(tmp_path, pronouns={"accuracy": 0.5})
    d = json.loads((tmp_path / "card.json").read_text())
    assert d["test"] == {"bleu": 1.0} and d["pronouns"] == {"accuracy": 0.5} and d["notes"] == "n"
    assert stale.test is None and written == [d]
    with pytest.raises(TypeError, match="no field 'colour'"):
        update_card(tmp_path, colour="red")


@pytest.mark.parametrize("text", ["{not json", "\xff\xfe", "[1, 2]"])
def test_a_card_that_is_not_json_gives_a_readable_error(tmp_path, text):
    (tmp_path / "card.json").write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError) as e:
        read_card(tmp_path)
    assert str(tmp_path / "card.json") in str(e.value)
    assert "not valid JSON" in str(e.value) or "should hold a JSON object" in str(e.value)


def _strings(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


@pytest.mark.parametrize("name", ["news-small", "multi30k-small"])
def test_the_shipped_cards(name):
    """They read as they are written (a rewrite changes no byte), name no machine's folders, and have a recipe."""
    folder = CHECKPOINTS / name
    text = (folder / "card.json").read_text(encoding="utf-8")
    card = read_card(folder)
    assert json.dumps(card.to_dict(), indent=2, ensure_ascii=False) == text
    assert not [s for s in _strings(json.loads(text)) if s.startswith(("/", "~")) or str(REPO.parent) in s]
    assert card.recipe == f"scripts/recipes/{name}.sh" and (REPO / card.recipe).is_file()
    assert all(getattr(card, f) for f in ("notes", "data_notes", "training_notes", "evaluation_notes", "limitations"))
    assert Path(card.data_name) == Path("data") / card.data_name.split("/")[-1]
