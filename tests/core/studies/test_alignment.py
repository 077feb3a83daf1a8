"""core.studies.alignment on hand-built maps whose AER is known, both shifts, a gold pair of the hand-written fixture
as the page shows it, and scripts/evaluate_alignment.py end to end on a tiny checkpoint."""
from tests.helpers import FIXTURES
import json
from types import SimpleNamespace

import numpy as np
import pytest

import core
from core.studies import alignment as al
from core.studies import alignment_gold as ag
from scripts import evaluate_alignment as script
from scripts.write_card import card_markdown

GOLD = FIXTURES / "alignment_gold"


def diagonal_gold(n: int) -> ag.GoldPair:
    words = [f"w{i}" for i in range(n)]
    sure = {(i, i) for i in range(n)}
    return ag.GoldPair(1, words, words, sure, set(sure))


def one_hot(n_tgt, n_src, cols) -> np.ndarray:
    A = np.zeros((n_tgt, n_src))
    A[np.arange(n_tgt), cols] = 1.0
    return A


def aer_of(A, pair, method="argmax", threshold=0.5) -> dict:
    return al.scores(al.counts(al.predict(A, method, threshold), *ag.gold_masks(pair)))


# ---------------------------------------------------------------- scores on hand-built maps

def test_perfect_diagonal_has_aer_zero():
    pair = diagonal_gold(5)
    assert aer_of(np.eye(5), pair) == {"aer": 0.0, "precision": 1.0, "recall": 1.0}


def test_shifted_diagonal_has_the_known_aer():
    pair = diagonal_gold(5)
    shifted = one_hot(5, 5, [1, 2, 3, 4, 4])             # t -> t + 1; only the last row is right
    # |A∩S| = |A∩P| = 1, |A| = |S| = 5: AER = 1 - (1 + 1) / (5 + 5)
    assert aer_of(shifted, pair) == pytest.approx({"aer": 0.8, "precision": 0.2, "recall": 0.2})
    pair.possible |= {(t, t + 1) for t in range(4)}       # the shifted links now count as possible
    # |A∩S| = 1, |A∩P| = 5: AER = 1 - 6 / 10; precision 5/5, recall 1/5
    assert aer_of(shifted, pair) == pytest.approx({"aer": 0.4, "precision": 1.0, "recall": 0.2})


def test_threshold_method_links_every_cell_over_it():
    A = np.array([[0.6, 0.4, 0.0], [0.3, 0.3, 0.4]])
    assert al.link_set(al.predict(A, "threshold", 0.35)) == {(0, 0), (0, 1), (1, 2)}
    assert al.link_set(al.predict(A, "argmax")) == {(0, 0), (1, 2)}
    with pytest.raises(ValueError, match="unknown method"):
        al.predict(A, "mean")


def test_diagonal_baseline():
    assert al.link_set(al.diagonal_map(3, 6) > 0) == {(0, 1), (1, 3), (2, 5)}
    assert al.link_set(al.diagonal_map(4, 2) > 0) == {(0, 0), (1, 0), (2, 1), (3, 1)}


def test_classify_sorts_links():
    c = al.classify({(0, 0), (1, 1), (2, 0)}, sure={(0, 0), (2, 2)}, possible={(0, 0), (2, 2), (1, 1)})
    assert c == {"correct": {(0, 0)}, "possible": {(1, 1)}, "wrong": {(2, 0)}, "missed": {(2, 2)}}


# ---------------------------------------------------------------- pieces, words and shifts

def fake_result(cross: np.ndarray, src: list, tgt: list):
    """An AttendResult stand-in: cross (N_dec, h, T, S) over src pieces + </s> and <s> + tgt pieces."""
    return SimpleNamespace(cross=cross, src_tokens=src + ["</s>"], tgt_tokens=["<s>"] + tgt,
                           out_tokens=tgt + ["</s>"], truncated=False)


def test_both_shifts_on_a_hand_built_map():
    # 3 source and 3 target words of one piece each; step t (reads tgt_tokens[t]) attends source t;
    # the last step (reads "▁z", writes "</s>") attends source word 2 and "</s>" half and half
    cross = np.zeros((1, 1, 4, 4))
    cross[0, 0, [0, 1, 2], [0, 1, 2]] = 1.0
    cross[0, 0, 3, [2, 3]] = 0.5
    res = fake_result(cross, ["▁a", "▁b", "▁c"], ["▁x", "▁y", "▁z"])
    slots = list(enumerate(range(3)))
    produced = al.word_maps(res, "produced", slots, slots)[0, 0]
    read = al.word_maps(res, "read", slots, slots)[0, 0]
    assert np.allclose(produced, np.eye(3))              # the step that writes word t looks at source t
    assert np.allclose(read, one_hot(3, 3, [1, 2, 2]))   # the step that read it looks one word further on
    pair = diagonal_gold(3)
    assert aer_of(produced, pair)["aer"] == 0.0
    # read: links (0,1) (1,2) (2,2); one of 3 right: AER = 1 - 2/6
    assert aer_of(read, pair)["aer"] == pytest.approx(2 / 3)


def test_words_of_several_pieces_mean_rows_and_sum_columns():
    # source: "▁ab" "c" = word 0, "▁d" = word 1; target: "▁x" "y" = word 0
    cross = np.zeros((1, 1, 3, 4))
    cross[0, 0, 0] = [0.2, 0.2, 0.6, 0.0]                 # writes "▁x"
    cross[0, 0, 1] = [0.4, 0.4, 0.0, 0.2]                 # writes "y": 0.2 on </s>
    cross[0, 0, 2] = [0.0, 0.0, 0.0, 1.0]                 # writes </s>
    res = fake_result(cross, ["▁ab", "c", "▁d"], ["▁x", "y"])
    A = al.word_maps(res, "produced", [(0, 0), (1, 0), (2, 1)], [(0, 0), (1, 0)])[0, 0]
    # mean of the two rows: word 0 gets (0.4 + 0.8) / 2 = 0.6, word 1 (0.6 + 0) / 2 = 0.3; renormalised over 0.9
    assert np.allclose(A, [[0.6 / 0.9, 0.3 / 0.9]])


def test_candidates_and_select():
    maps = np.random.default_rng(0).random((2, 3, 4, 5))
    labels, stack = al.candidates(maps)
    assert len(labels) == len(stack) == 2 * 3 + 2 + 1
    assert labels[0] == (1, 1) and labels[5] == (2, 3) and labels[6] == (1, "mean") and labels[-1] == ("all", "mean")
    assert np.allclose(stack[5], al.select(maps, 2, 3)) and np.allclose(stack[5], maps[1, 2])
    assert np.allclose(stack[7], maps[1].mean(0)) and np.allclose(al.select(maps, "all", "mean"), maps.mean((0, 1)))


def test_one_sentence_pair_as_the_page_shows_it(translation_model):
    pair = ag.read_gold(GOLD)[1]
    src, tgt = ag.model_text(pair)
    res = translation_model.attend(src, tgt=tgt)
    sentence = al.sentence_maps(res, pair)
    assert (sentence.rows, sentence.cols, sentence.translation) == (pair.tgt_words, pair.src_words, res.tgt)
    for shift in al.SHIFTS:                               # the maps of the gold slots, under every shift
        assert np.allclose(sentence.maps[shift], al.word_maps(res, shift, *al.gold_slots(res, pair)))
    found = al.head_links(sentence, 1, 2, "read", pair=pair)
    attn = al.select(sentence.maps["read"], 1, 2)
    mask = al.predict(attn)
    assert np.allclose(found.attn, attn) and found.links == al.classify(al.link_set(mask), pair.sure, pair.possible)
    assert found.gold == {"sure": pair.sure, "possible": pair.possible - pair.sure}
    assert found.scores == aer_of(attn, pair)
    loose = al.head_links(sentence, "all", "mean", "produced", "threshold", 0.2, pair)
    assert loose.links["correct"] | loose.links["possible"] | loose.links["wrong"] == \
        al.link_set(al.select(sentence.maps["produced"], "all", "mean") >= 0.2)
    own = al.sentence_maps(translation_model.attend("the lazy dog", tgt="der faule Hund"))
    assert own.cols == ["the", "lazy", "dog"] and own.rows == ["der", "faule", "Hund"]
    mine = al.head_links(own, 1, "mean", "produced")
    assert mine.gold is None and mine.scores is None and set(mine.links) == {"model"} and len(mine.links["model"]) == 3
    with pytest.raises(ag.AlignmentError, match="empty"):
        al.sentence_maps(SimpleNamespace(src_tokens=["</s>"], tgt_tokens=["<s>"], cross=None))


# ---------------------------------------------------------------- a corpus, the report and the script

def by_hand_diagonal_aer(pairs) -> float:
    """Corpus AER of the diagonal baseline with plain loops, independent of counts() and predict()."""
    a_s = a_p = n_a = n_s = 0
    for p in pairs:
        T, S = len(p.tgt_words), len(p.src_words)
        links = {(t, min(int((t + 0.5) * S / T), S - 1)) for t in range(T)}
        a_s, a_p = a_s + len(links & p.sure), a_p + len(links & p.possible)
        n_a, n_s = n_a + len(links), n_s + len(p.sure)
    return 1 - (a_s + a_p) / (n_a + n_s)


def test_evaluate_and_report(translation_model):
    pairs = ag.read_gold(GOLD)
    ev = al.evaluate(translation_model, pairs)
    r = al.report(ev)
    L, h = translation_model.cfg.N_dec, translation_model.cfg.h
    assert r["pairs"] == 4 and r["scored"] == 4 and r["skipped"] == 0 and r["halves"]["first"] == 2
    assert len(r["heads"]) == 2 * (L * h + L + 1)
    assert {x["shift"] for x in r["heads"]} == set(al.SHIFTS)
    assert min(x["layer"] for x in r["heads"] if x["layer"] != "all") == 1
    singles = [x for x in r["heads"] if x["head"] != "mean"]
    assert r["selected"]["aer_first_half"] == min(x["aer_first_half"] for x in singles)
    assert r["diagonal"]["aer"] == pytest.approx(by_hand_diagonal_aer(pairs), abs=1e-4)
    assert r["diagonal"]["aer_second_half"] == pytest.approx(by_hand_diagonal_aer(pairs[2:]), abs=1e-4)
    # one head's corpus AER again, through link sets instead of masks
    a_s = a_p = n_a = n_s = 0
    for p in pairs:
        src, tgt = ag.model_text(p)
        res = translation_model.attend(src, tgt=tgt)
        A = al.select(al.word_maps(res, "read", *al.gold_slots(res, p)), 1, 2)
        links = {(t, int(np.argmax(row))) for t, row in enumerate(A)}
        a_s, a_p = a_s + len(links & p.sure), a_p + len(links & p.possible)
        n_a, n_s = n_a + len(links), n_s + len(p.sure)
    row = next(x for x in r["heads"] if (x["layer"], x["head"], x["shift"]) == (1, 2, "read"))
    assert row["aer"] == pytest.approx(1 - (a_s + a_p) / (n_a + n_s), abs=1e-4)
    assert len(r["grid"]["read"]) == L and len(r["grid"]["read"][0]) == h + 1
    assert r["grid"]["read"][0][1] == row["aer"]


def test_report_on_one_pair_is_valid_json(translation_model):
    r = al.report(al.evaluate(translation_model, ag.read_gold(GOLD)[:1]))
    rule = "chosen on the first 1 of 1 given pairs, scored on the rest"
    assert r["halves"] == {"first": 1, "second": 0, "rule": rule}
    assert r["selected"]["aer_second_half"] is None and r["diagonal"]["aer_second_half"] is None
    json.loads(json.dumps(r, allow_nan=False))


@pytest.fixture
def tiny_checkpoint(tmp_path, tokenizer):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = core.Transformer(core.preset("tiny", vocab_size=len(tokenizer))).eval()
    folder = tmp_path / "tiny"
    core.save_checkpoint(folder, model, tokenizer, {"name": "tiny", "test": {"bleu": 1.0}})
    return folder


def test_script_writes_json_and_only_the_alignment_key(tiny_checkpoint, tmp_path, capsys):
    before = json.loads((tiny_checkpoint / "card.json").read_text())
    out = tmp_path / "align.json"
    assert script.main([str(tiny_checkpoint), "--gold", str(GOLD), "--json", str(out), "--no-progress"]) == 0
    assert "best head (chosen on the first 2 pairs)" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["pairs"] == 4 and result["skipped"] == 0 and len(result["heads"]) == 2 * (2 * 4 + 2 + 1)
    assert set(result["selected"]) >= {"layer", "head", "shift", "aer_second_half"}
    card = json.loads((tiny_checkpoint / "card.json").read_text())
    assert {k: v for k, v in card.items() if k != "alignment"} == before
    assert "heads" not in card["alignment"] and card["alignment"]["selected"] == result["selected"]
    # the other way is kept beside it, and a --limit run leaves the card alone
    assert script.main([str(tiny_checkpoint), "--gold", str(GOLD), "--as-tokenized", "--no-progress"]) == 0
    card2 = json.loads((tiny_checkpoint / "card.json").read_text())
    assert card2["alignment"]["selected"] == result["selected"]
    assert card2["alignment"]["as_tokenized_result"]["pairs"] == 4
    assert script.main([str(tiny_checkpoint), "--gold", str(GOLD), "--limit", "2", "--no-progress"]) == 0
    assert json.loads((tiny_checkpoint / "card.json").read_text()) == card2
    md = card_markdown(card2)
    assert "Word alignment (4 of 4 RWTH de-en gold pairs" in md and "tokenised text unchanged" in md


def test_script_errors_are_worded(tiny_checkpoint, tmp_path, capsys):
    assert script.main([str(tiny_checkpoint), "--gold", str(tmp_path / "nothing"), "--no-progress"]) == 1
    assert "lacks src.en" in capsys.readouterr().err
    assert script.main([str(tmp_path / "no-checkpoint"), "--gold", str(GOLD), "--no-progress"]) == 1
    assert capsys.readouterr().err.startswith("error:")
