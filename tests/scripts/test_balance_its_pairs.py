"""scripts/balance_its_pairs.py: a copy of a prepared data folder whose ihr- and sein- pairs for 'its' are balanced."""
import json

import pytest

from scripts import balance_its_pairs as b

PAIRS = [  # (English, German, the kind balance_its_pairs should see)
    ("The Commission is giving up its monopoly.", "Die Kommission gibt ihr Monopol auf.", "ihr"),
    ("The city lost its mayor.", "Die Stadt verlor ihren Bürgermeister.", "ihr"),
    ("Its voice was heard.", "Ihre Stimme wurde gehört.", "ihr"),
    ("The council and its members.", "Der Rat und seine Mitglieder.", "sein"),
    ("The country and its people.", "Das Land und seine Menschen.", "sein"),
    ("The party and its leader.", "Die Partei und ihr Vorsitzender.", "ihr"),
    ("The house is old.", "Das Haus ist alt.", None),                              # no 'its'
    ("Its aim must be clear.", "Das Ziel muss klar sein.", None),                  # bare 'sein' is the verb
    ("The group and its head met their staff.", "Die Gruppe und ihr Chef trafen ihre Leute.", None),  # 'their'
    ("The bank and its staff, his friends.", "Die Bank und seine Leute.", None),   # 'his' could be 'sein'
    ("Its team and her team.", "Seine Mannschaft und ihre Mannschaft.", None),     # both forms
    ("They ask for your support.", "Sie bitten um Ihre Unterstützung.", None),     # formal 'Ihre', no 'its'
]


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train.en").write_text("".join(e + "\n" for e, _, _ in PAIRS), encoding="utf-8")
    (folder / "train.de").write_text("".join(d + "\n" for _, d, _ in PAIRS), encoding="utf-8")
    (folder / "train.origin").write_text("".join(f"corpus{i}\n" for i in range(len(PAIRS))), encoding="utf-8")
    for name in ("valid.en", "valid.de", "test.en", "test.de"):
        (folder / name).write_text(f"{name}\n", encoding="utf-8")
    (folder / "spm.model").write_bytes(b"\x00spm")
    (folder / "prep_report.json").write_text(json.dumps({"corpus": "somewhere"}), encoding="utf-8")
    return folder


@pytest.mark.parametrize("en, de, kind", PAIRS)
def test_its_kind(en, de, kind):
    assert b.its_kind(en, de) == kind


def test_repeats_balance_the_kinds():
    assert b.repeats({"ihr": 4, "sein": 2}, 1) == {"ihr": 0, "sein": 1}          # 4 and 4
    assert b.repeats({"ihr": 671, "sein": 782}, 4) == {"ihr": 4, "sein": 3}      # 3,355 and 3,128
    assert b.repeats({"ihr": 0, "sein": 3}, 2) == {"ihr": 0, "sein": 1}          # nothing to repeat of a missing kind


def test_balanced_copy(data, tmp_path, capsys):
    out = tmp_path / "balanced"
    assert b.main(["--data", str(data), "--out", str(out), "--factor", "2"]) == 0
    assert "copies added" in capsys.readouterr().out
    en = (out / "train.en").read_text(encoding="utf-8").splitlines()
    de = (out / "train.de").read_text(encoding="utf-8").splitlines()
    origin = (out / "train.origin").read_text(encoding="utf-8").splitlines()
    assert len(en) == len(de) == len(origin)
    assert en[: len(PAIRS)] == [e for e, _, _ in PAIRS]                            # the originals first, unchanged
    added = list(zip(en[len(PAIRS):], de[len(PAIRS):]))
    # 4 ihr-pairs and 2 sein-pairs, factor 2: each kind reaches 8: one more copy of each ihr-, three of each sein-
    assert sum(b.its_kind(*p) == "ihr" for p in added) == 4
    assert sum(b.its_kind(*p) == "sein" for p in added) == 6
    assert all((e, d) in {(pe, pd) for pe, pd, _ in PAIRS} for e, d in added)     # each copy a pair, lines in step
    for name in ("valid.en", "test.de", "spm.model"):
        assert (out / name).read_bytes() == (data / name).read_bytes()
    report = json.loads((out / "prep_report.json").read_text())
    assert report["corpus"] == "somewhere"                                         # the card still names the corpus
    assert report["its_balance"]["pairs"] == {"ihr": 4, "sein": 2} and report["its_balance"]["added"] == 10


def test_errors_are_worded(data, tmp_path, capsys):
    assert b.main(["--data", str(tmp_path / "none"), "--out", str(tmp_path / "x")]) == 2
    assert "prepare_data.py" in capsys.readouterr().err
    assert b.main(["--data", str(data), "--out", str(data)]) == 2
    assert "new folder" in capsys.readouterr().err
    assert b.main(["--data", str(data), "--out", str(tmp_path / "x"), "--factor", "0.5"]) == 2
    (data / "train.de").write_text("one line\n", encoding="utf-8")
    assert b.main(["--data", str(data), "--out", str(tmp_path / "y")]) == 1
    assert "prepare the data again" in capsys.readouterr().err
