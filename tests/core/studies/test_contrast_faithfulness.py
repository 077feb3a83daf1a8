"""Which explanation of a contrast to trust (core.studies.contrast_faithfulness): the cases are built from the
pronoun test as its items say, erasure's own top word is the ceiling of every ranker's, and the report is JSON."""
import json

import numpy as np
import pytest

import core
from core.studies import contrast_faithfulness as cf
from core.studies.pronouns import load_pronoun_set
from tests.helpers import tiny_model

CASES = [cf.Case("a man in a blue shirt is standing on a ladder", "ein Mann in", "einem", "der", "hand-made"),
         cf.Case("two young girls are playing in the park", "zwei junge", "Mädchen", "Hund", "hand-made"),
         cf.Case("the weather is nice today", "", "das", "der", "worked sentence")]


@pytest.fixture(scope="module")
def tm(tokenizer):
    return core.TranslationModel(tiny_model(len(tokenizer), seed=2, norm="pre"), tokenizer)


def test_other_stem():
    assert [cf.other_stem(w) for w in ("seine", "ihren", "Seinem", "Ihrer", "ihr", "der")] == \
        ["ihre", "seinen", "Ihrem", "Seiner", "sein", None]


def test_pronoun_cases_follow_the_items():
    items = load_pronoun_set()
    cases = cf.pronoun_cases(items)
    assert len(cases) == len(items)
    for it, c in zip(items, cases):
        assert it["de"].startswith(f"{c.prefix} {c.form}".strip()) and c.other == it["wrong_form"]
        assert c.src == it["en"]


def test_erasures_top_word_is_the_ceiling_of_every_ranker(tm):
    """Every ranker erases one word at top 1; erasure's is the word whose loss costs most, case by case."""
    out = cf.measure(tm, CASES, steps=4, seed=0)
    assert out.cases == len(CASES) and not out.skipped
    ceiling = np.array(out.falls[("erasure", 1)])
    for r in cf.RANKERS:
        if r != "best_head":
            assert (np.array(out.falls[(r, 1)]) <= ceiling + 1e-6).all(), r
    for h in {h for h, _ in out.head_falls}:
        assert (np.array(out.head_falls[(h, 1)]) <= ceiling + 1e-6).all(), h
    assert len(out.examples) == 1 and set(out.examples[0]["top"]) == set(cf.METHODS)


def test_a_flip_is_a_fall_below_zero(tm):
    out = cf.measure(tm, CASES, steps=4, seed=0)
    whole = [tm.contrast(c.src, c.prefix, c.form, c.other).log_odds for c in CASES]
    whole = np.abs(whole)                                          # the preferred form is put first
    for key, falls in [*out.falls.items(), *out.head_falls.items()]:
        if not falls:                                              # best_head's rows come from head_falls
            continue
        flips = out.flips[key] if key in out.flips else out.head_flips[key]
        np.testing.assert_array_equal(flips, np.array(falls) > whole + 1e-9, err_msg=str(key))


def test_report_is_json_with_a_row_per_ranker_and_top(tm):
    r = cf.report(cf.measure(tm, CASES[:2], steps=4, seed=1))
    assert [(x["ranker"], x["top"]) for x in r["table"]] == [(k, t) for k in cf.RANKERS for t in cf.TOPS]
    assert 1 <= r["best_head"]["layer"] <= tm.cfg.N_dec and 1 <= r["best_head"]["head"] <= tm.cfg.h
    assert r["most_faithful"] in cf.RANKERS and r["most_faithful"] not in ("erasure", "random")
    json.loads(json.dumps(r, allow_nan=False))


def test_a_case_that_cannot_be_asked_is_skipped_with_its_reason(tm):
    out = cf.measure(tm, [cf.Case("a man", "ein Mann", "", "der", "hand-made")], steps=4)
    assert out.cases == 0 and "chosen word" in out.skipped[0]
