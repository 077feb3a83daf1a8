"""core.studies.long_arcs: heads scored by arc length on hand-built maps whose right head and offset are known,
the held-out choice, and the sentence a student reads."""
import numpy as np
import pytest

from core.studies import conllu
from core.studies import long_arcs as la
from core.studies import syntax as sx
from tests.core.studies.test_syntax import evaluation, ud

# ten words: the first depends on the last (9 words away, the "8+" bucket), every other word on the next one
CHAIN = ud([f"w{i}" for i in range(10)], [10, *range(3, 11), 0], ["nsubj"] + ["dep"] * 8 + ["root"])


def long_head(s, q):
    """Follows the long arc both ways; otherwise looks at the next word (follows the short arcs dep->head)."""
    return {0: 9, 9: 0}.get(q, q + 1)


def previous(s, q):
    """The previous word (the first word: the second): follows the short arcs head->dep, no long one."""
    return q - 1 if q else 1


def first_half_only(s, q):
    return long_head(s, q) if s.sent_id == "one" else previous(s, q)


def test_bucket_of_lengths_both_directions():
    assert la.bucket_of(np.array([1, -2, 3, -4, 5, 7, -8, 30])).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]


def test_the_long_head_and_the_offset_baseline():
    rep = la.report(evaluation([CHAIN] * 4, [[previous, long_head]]), min_arcs=1)
    long, short = rep.row("8+"), rep.row("1-2")
    # +9 and -9 once each a sentence: the offset is -9 (a tie goes to the left), right for half of them
    assert (long["layer"], long["head"], long["follows"], long["offset"], long["baseline"]) == (1, 2, 100.0, -9, 50.0)
    assert long["ratio"] == 2.0 and long["n"] == 4
    assert long["mass"] == pytest.approx(1 / 1.1, abs=1e-3)          # one_hot_maps: 1 of 1 + 10 x 0.01 per row
    assert rep.follows["8+"].tolist() == [[0.0, 100.0]]
    # short arcs: each head follows one direction of them; the tie goes to the first head
    assert (short["head"], short["follows"], short["baseline"]) == (1, 50.0, 50.0)
    assert rep.row("3-4") is None and rep.by_layer() == {"1-2": [50.0], "8+": [100.0]}
    assert rep.rank(0, 0) == 2 and rep.rank(0, 1) == 1


def test_the_head_is_chosen_on_the_first_half():
    one, two = (conllu.UDSentence(CHAIN.text, CHAIN.words, CHAIN.heads, CHAIN.deprels, sid) for sid in ("one", "two"))
    rep = la.report(evaluation([one, one, two, two], [[previous, first_half_only]]), min_arcs=1)
    assert (rep.row()["head"], rep.row()["follows"]) == (2, 0.0)            # chosen on the first half, wrong after
    assert rep.chosen_on["8+"][0, 1] == 100.0 and rep.halves == {"first": 2, "second": 2}


def test_sentence_line_and_card_summary():
    rep = la.report(evaluation([CHAIN] * 4, [[previous, long_head]]), min_arcs=1)
    card = la.card_summary(rep, "x.conllu", figure_head=(0, 0))
    assert (card["length"], card["layer"], card["head"], card["ratio"]) == ("8+", 1, 2, 2.0)
    assert card["figure_head"] == {"layer": 1, "head": 1, "follows": {"1-2": 50.0, "8+": 0.0}, "rank": 2}
    assert card["grid"] == [[0.0, 100.0]]
    line = la.sentence_line(card, 0, 0)
    assert line.startswith("Over 2 held-out sentences, layer 1 head 2 follows dependencies 8+ words long 2.0 "
                           "times as often as any fixed offset (100.0% of 4 arcs; the best offset, -9 words: 50.0%)")
    assert line.endswith("layer 1 head 1, the one this sentence picks, does so in 0.0% of them (rank 2 of 2).")
    assert la.sentence_line(card, 0, 1).endswith("the one this sentence picks, is that head.")
    assert la.sentence_line(card, 3, 0) is None                       # a head the corpus did not score
    short = la.card_summary(la.report(evaluation([CHAIN] * 4, [[previous]]), min_arcs=5), "x.conllu")
    assert short["layer"] is None and la.sentence_line(short, 0, 0) is None


def test_random_halvings_choose_and_score_on_other_sentences():
    ev = evaluation([CHAIN] * 8, [[previous, long_head]])
    spread = la.random_halvings(ev, splits=20)
    assert spread["splits"] == 20 and spread["head"] == {"layer": 1, "head": 2, "chosen": 20}
    assert spread["follows"] == {"mean": 100.0, "p05": 100.0, "p95": 100.0} and spread["ratio"]["mean"] == 2.0
    assert la.random_halvings(evaluation([CHAIN] * 2, [[previous]]), "5-7") == {}       # no arc of that length


def test_nothing_usable():
    with pytest.raises(conllu.SyntaxDataError, match="none of the 3"):
        la.report(sx.Evaluation(1, 1, n_sentences=3))
