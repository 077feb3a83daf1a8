"""The erasure test (core/studies/faithfulness.py) and scripts/evaluate_faithfulness.py on a tiny checkpoint."""
import json
import random

import numpy as np
import pytest

import core
from core.studies import faithfulness as fa
from core.studies.contributions import contributions
from scripts import evaluate_faithfulness as script
from tests.helpers import CORPUS, stopping_model

SOURCES = CORPUS[:3] + ["the lazy dog is happy today", "a man is playing in the park"]
GERMAN = [CORPUS[3], CORPUS[4], CORPUS[6], "der faule Hund ist heute fröhlich", "ein Mann spielt im Park"]


@pytest.fixture(autouse=True)
def german(monkeypatch):
    """A random tiny model writes byte soup: it "translates" into fixed German sentences instead."""
    monkeypatch.setattr(core.TranslationModel, "translate", lambda self, texts, beam=4, **kw: GERMAN[:len(texts)])


@pytest.fixture
def tm(tokenizer):
    return core.TranslationModel(stopping_model(len(tokenizer), eos_bias=3.0), tokenizer)


def test_nothing_removed_is_the_models_own_score(tm):
    tgt = "ein Mann in einem blauen Hemd"
    c = contributions(tm, "a man in a blue shirt", tgt)
    src_ids, tgt_ids = fa.sentence_ids(tm, c, tgt)
    lp = fa.masked_logprobs(tm, src_ids, tgt_ids, [set()])
    np.testing.assert_allclose(lp[0], tm.score("a man in a blue shirt", tgt).logprobs, atol=1e-4)


def test_a_removed_word_cannot_be_read(tm):
    """Once a word's pieces are padding, what the word was makes no difference; keeping it does."""
    tgt = "ein Mann in einem blauen Hemd"
    src_ids, tgt_ids = fa.sentence_ids(tm, contributions(tm, "a man in a blue shirt", tgt), tgt)
    other = list(src_ids)
    other[1] = (other[1] + 7) % (len(tm.tokenizer) - 4) + 4                   # another piece in the same place
    removed = fa.masked_logprobs(tm, src_ids, tgt_ids, [{1}])
    np.testing.assert_allclose(fa.masked_logprobs(tm, other, tgt_ids, [{1}]), removed, atol=1e-5)
    assert not np.allclose(fa.masked_logprobs(tm, other, tgt_ids, [set()]),
                           fa.masked_logprobs(tm, src_ids, tgt_ids, [set()]), atol=1e-4)


def test_top_words_follow_each_method(tm):
    c = contributions(tm, "a man in a blue shirt", "ein Mann in einem blauen Hemd")
    targets, tops = fa.top_words(c, random.Random(0))
    assert set(tops) == set(fa.METHODS) and all(len(v) == len(targets) for v in tops.values())
    n_words = max(core.word_ids(c.result.src_tokens))                          # the last word is </s>
    assert all(0 <= w < n_words for v in tops.values() for w in v)
    # a hand-made map: every generated word puts all its weight on source word 2
    c.rolled["cross"][-1][:] = 0
    c.rolled["cross"][-1][:, [p for p, w in enumerate(core.word_ids(c.result.src_tokens)) if w == 2]] = 1
    assert set(fa.top_words(c, random.Random(0))[1]["alti"]) == {2}


def test_measure_and_table(tm):
    f = fa.measure(tm, SOURCES, seed=1)
    rows = fa.table(f)
    assert [r["method"] for r in rows] == list(fa.METHODS)
    assert f.sentences == len(SOURCES) and rows[0]["words"] == sum(len(g.split()) for g in GERMAN)
    nothing = fa.measure(tm, SOURCES[:2], translations=["", "  "])
    assert nothing.sentences == 0 and [why for _, why in nothing.skipped] == ["the translation is empty"] * 2
    assert all(r["words"] == rows[0]["words"] for r in rows)
    json.loads(json.dumps(fa.report(f), allow_nan=False))


@pytest.fixture
def checkpoint(tmp_path, tokenizer):
    data = tmp_path / "data"
    data.mkdir()
    (data / "valid.en").write_text("".join(s + "\n" for s in SOURCES), encoding="utf-8")
    (data / "valid.de").write_text("".join("x\n" for _ in SOURCES), encoding="utf-8")
    folder = tmp_path / "tiny"
    core.save_checkpoint(folder, stopping_model(len(tokenizer), eos_bias=3.0), tokenizer,
                         {"name": "tiny", "data": {"folder": str(data)}})
    return folder


def test_script_prints_the_table_and_writes_the_file(checkpoint, tmp_path, capsys):
    card = (checkpoint / "card.json").read_text()
    assert script.main([str(checkpoint), "--sentences", "3", "--no-progress", "--json", str(tmp_path / "f.json")]) == 0
    out = capsys.readouterr().out
    assert "3 sentences" in out and "random" in out and "most faithful" in out
    saved = json.loads((checkpoint / script.RESULT_FILE).read_text())
    assert saved == json.loads((tmp_path / "f.json").read_text()) and saved["sentences"] == 3
    assert (checkpoint / "card.json").read_text() == card                     # the card is left alone
    (checkpoint / script.RESULT_FILE).unlink()
    assert script.main([str(checkpoint), "--sentences", "2", "--no-progress", "--no-write"]) == 0
    assert not (checkpoint / script.RESULT_FILE).exists()


def test_script_errors_are_worded(checkpoint, tmp_path, capsys):
    assert script.main([str(checkpoint), "--data", str(tmp_path / "nothing"), "--no-progress"]) == 1
    assert "No dev split" in capsys.readouterr().err
    assert script.main([str(checkpoint), "--sentences", "0", "--no-progress"]) == 1
    assert "at least 1" in capsys.readouterr().err


def test_an_nllb_models_language_tokens_are_fed_as_the_translator_feeds_them(tmp_path):
    """NLLB reads [language token] + pieces + </s> and writes [language token] + pieces: the erasure test's ids are
    those, so that nothing removed gives the model's own score (not a sentence skipped as unmatched)."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")
    from core.checkpoint.pretrained import convert_folder as import_model
    from tests.core.checkpoint.pretrained.hf_models import build_m2m100
    import_model(build_m2m100(tmp_path / "nllb-tiny", "nllb", max_positions=256), tmp_path / "nllb",
                 src_lang="eng_Latn", tgt_lang="deu_Latn")
    tm = core.load_checkpoint(tmp_path / "nllb")
    src, tgt = "a man in a blue shirt", "ein Mann in einem blauen Hemd"
    src_ids, tgt_ids = fa.sentence_ids(tm, contributions(tm, src, tgt), tgt)
    assert src_ids[0] == tm.cfg.src_prefix_id and tgt_ids[0] == tm.cfg.tgt_prefix_id
    lp = fa.masked_logprobs(tm, src_ids, tgt_ids, [set()])
    np.testing.assert_allclose(lp[0], tm.score(src, tgt).logprobs, atol=1e-4)
