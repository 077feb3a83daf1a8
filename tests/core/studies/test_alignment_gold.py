"""core.studies.alignment_gold: the TALP parser and the gold files on a hand-written fixture, and the model's pieces
matched to gold words (detokenised text, pieces spelling two words, byte pieces)."""
import pytest

from core.studies import alignment_gold as ag
from tests.helpers import FIXTURES

GOLD = FIXTURES / "alignment_gold"


def test_talp_is_english_first_one_based_and_possible_includes_sure():
    sure, possible = ag.parse_talp("1-2 3p1 2-2", n_src=3, n_tgt=2)
    # "i-j": English (source) i, German (target) j  ->  link (target j-1, source i-1)
    assert sure == {(1, 0), (1, 1)}
    assert possible == {(1, 0), (1, 1), (0, 2)}


@pytest.mark.parametrize("line, problem", [("1-x", "cannot read"), ("1:2", "cannot read"), ("4-1", "outside"),
                                           ("0-1", "outside"), ("1p3", "outside")])
def test_talp_errors_are_worded(line, problem):
    with pytest.raises(ag.AlignmentError, match=problem):
        ag.parse_talp(line, n_src=3, n_tgt=2)


def test_read_gold_on_the_fixture():
    pairs = ag.read_gold(GOLD)
    assert [p.line for p in pairs] == [1, 2, 3, 4]
    two = pairs[1]
    assert two.src_words[4] == "playing" and two.tgt_words[3] == "spielen"
    assert (3, 4) in two.sure                             # "5-4": playing - spielen, sure
    assert (3, 3) in two.possible - two.sure              # "4p4": are - spielen, possible only
    assert (4, 5) in two.sure and (4, 6) in two.sure      # "im" is "in the"
    assert len(two.sure) == 8 and len(two.possible) == 9
    four = pairs[3]
    assert four.sure >= {(3, 1), (1, 3)} and (0, 0) in four.possible - four.sure


def test_read_gold_errors(tmp_path):
    with pytest.raises(ag.AlignmentError, match="lacks src.en, tgt.de, gold.talp"):
        ag.read_gold(tmp_path)
    (tmp_path / "src.en").write_text("a b\nc\n")
    (tmp_path / "tgt.de").write_text("x y\n")
    (tmp_path / "gold.talp").write_text("1-1\n")
    with pytest.raises(ag.AlignmentError, match="different numbers of lines"):
        ag.read_gold(tmp_path)


def test_missing_default_gold_names_the_command_not_a_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_SHARED", str(tmp_path / "empty"))
    with pytest.raises(ag.AlignmentError, match=r"not on this machine yet: `python scripts/get_data.py eval` "
                                                r"\(3.8 MB\) fetches them \(for research use only") as e:
        ag.read_gold()
    assert str(tmp_path) not in str(e.value) and ag.default_gold() == tmp_path / "empty/eval/rwth-deen-alignment"


# ---------------------------------------------------------------- gold words and the model's pieces

def test_detokenize():
    assert ag.detokenize(["we", "do", "n't", "cherry-pick", "."]) == "we do n't cherry-pick."
    assert ag.detokenize(["the", "rapporteur", "'s", "view", ",", "(", "A5", ")", "is", '"', "good", '"', "."]) == \
        'the rapporteur\'s view, (A5) is "good".'


def test_piece_slots():
    assert ag.piece_slots(["▁Hello", ",", "▁world", "."], ["Hello", ",", "world", "."]) == \
        [(0, 0), (1, 1), (2, 2), (3, 3)]
    # one piece spelling two gold words belongs to both
    assert ag.piece_slots(["▁end", '",'], ["end", '"', ","]) == [(0, 0), (1, 1), (1, 2)]
    # byte-fallback pieces and a lone "▁" (it starts the next word)
    assert ag.piece_slots(["▁gr", "<0xC3>", "<0xBC>", "n", "▁", "x"], ["grün", "x"]) == \
        [(0, 0), (1, 0), (2, 0), (3, 0), (4, 1), (5, 1)]
    with pytest.raises(ag.AlignmentError, match="different text"):
        ag.piece_slots(["▁Hello"], ["Hallo"])
    with pytest.raises(ag.AlignmentError, match="unknown piece"):
        ag.piece_slots(["▁Hello", "<unk>"], ["Hello", "?"])
