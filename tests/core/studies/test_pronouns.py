"""TranslationModel.score, the contrastive pronoun set (core/probes/pronouns_en_de.jsonl) and its evaluation."""
import json
import math
import string
import warnings
from collections import Counter

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import core
from core.studies import paper_figures as pf
from core.studies import pronouns as P
from scripts import evaluate_pronouns
from tests.helpers import stopping_model

ITEMS = P.load_pronoun_set()
ARTICLE = {"f": "die", "m": "der", "n": "das"}


# ---------------------------------------------------------------- score

def forward_logprobs(tm, src: str, tgt: str) -> np.ndarray:
    """Per-piece log P of tgt + </s>, from one plain forward pass of the model (independent of score)."""
    cfg = tm.cfg
    s = torch.tensor([tm.tokenizer.encode(src, "src") + [cfg.eos_id]])
    y = tm.tokenizer.encode(tgt, "tgt")
    logits = tm.model(s, torch.tensor([[cfg.bos_id] + y]))[0]              # (T, V)
    gold = torch.tensor(y + [cfg.eos_id])
    per_piece = -F.cross_entropy(logits.double(), gold, reduction="none")
    return per_piece.detach().numpy()


def test_score_is_the_sum_of_the_forward_pass_log_probs(translation_model):
    src = "the quick brown fox jumps over the lazy dog"
    cands = ["der schnelle braune Fuchs", "zwei junge Mädchen spielen im Park", "Hund"]
    results = translation_model.score(src, cands)
    assert [r.tgt for r in results] == cands
    for r, c in zip(results, cands):
        expected = forward_logprobs(translation_model, src, c)
        assert r.pieces[-1] == "</s>" and len(r.pieces) == len(expected) == len(r.logprobs)
        np.testing.assert_allclose(r.logprobs, expected, atol=1e-4)
        assert r.total == pytest.approx(float(expected.sum()), abs=1e-3)
        assert r.total < 0


def test_score_is_batch_invariant(translation_model):
    srcs = ["a man in a blue shirt", "the weather is nice today and the children are happy", "two girls"]
    cands = ["ein Mann", "das Wetter ist heute schön und die Kinder sind fröhlich", "zwei junge Mädchen spielen"]
    together = translation_model.score(srcs, cands)
    alone = [translation_model.score(s, c) for s, c in zip(srcs, cands)]
    small_batches = translation_model.score(srcs, cands, batch_size=2)
    for t, a, b in zip(together, alone, small_batches):
        np.testing.assert_allclose(t.logprobs, a.logprobs, atol=1e-5)
        np.testing.assert_allclose(b.logprobs, a.logprobs, atol=1e-5)
    single = translation_model.score(srcs[0], cands[0])                     # a string gives one result
    assert isinstance(single, core.ScoreResult) and single.total == pytest.approx(alone[0].total, abs=1e-5)


class DigitTokenizer:
    """The toy model's vocabulary as text: '5 9 12' <-> ids [5, 9, 12]."""

    def encode(self, text, side="src"):
        return [int(w) for w in text.split()]

    def pieces(self, ids, side="src"):
        return [str(int(i)) for i in ids]

    def decode(self, ids, side="tgt"):
        return " ".join(str(int(i)) for i in ids)


def test_score_ranks_a_hand_made_pair_on_the_trained_toy_model(toy_model):
    """The toy model reverses sequences: the reversal must score far above a copy with two symbols swapped."""
    tm = core.TranslationModel(toy_model, DigitTokenizer())
    right, wrong = tm.score("5 9 12 7", ["7 12 9 5", "7 9 12 5"])
    assert right.total > wrong.total + 2.0, (right.total, wrong.total)
    assert right.logprobs[0] == pytest.approx(wrong.logprobs[0], abs=1e-6)   # same first piece, same prefix
    assert math.exp(right.total) > 0.5                                        # it is sure of the right one


def test_score_refuses_bad_input_with_readable_messages(translation_model):
    with pytest.raises(ValueError, match="one source for all candidates or one per candidate"):
        translation_model.score(["a man", "a dog"], ["ein Mann"])
    with pytest.raises(ValueError, match="empty"):
        translation_model.score("a man", ["ein Mann", "  "])
    with pytest.raises(ValueError, match="text"):
        translation_model.score("a man", [None])
    assert translation_model.score("a man", []) == []


# ---------------------------------------------------------------- the pronoun set

def words(text: str) -> list[str]:
    return [w.strip(string.punctuation + "„“") for w in text.split()]


def test_the_set_is_large_balanced_and_has_far_and_it_items():
    assert len(ITEMS) >= 100
    assert len({it["id"] for it in ITEMS}) == len(ITEMS) and len({it["en"] for it in ITEMS}) == len(ITEMS)
    fem = [it for it in ITEMS if it["gender"] == "f"]
    assert len(fem) == len(ITEMS) - len(fem)                                 # half feminine, half masc/neuter
    assert Counter(it["pronoun"] for it in ITEMS)["its"] >= 100
    for gender_is_f in (True, False):
        side = [it for it in ITEMS if (it["gender"] == "f") == gender_is_f]
        assert sum(it["pronoun"] in ("it", "they") for it in side) >= 3
        assert sum(it["distance"] >= 8 for it in side) >= 10                 # antecedent far: relative clause between
        assert sum(4 <= it["distance"] <= 7 for it in side) >= 10


@pytest.mark.parametrize("item", ITEMS, ids=lambda it: str(it["id"]))
def test_each_pair_differs_in_the_pronoun_only(item):
    right, wrong = item["de"].split(), item["de_wrong"].split()
    assert len(right) == len(wrong)
    diff = [i for i, (a, b) in enumerate(zip(right, wrong)) if a != b]
    assert len(diff) == 1, diff
    i = diff[0]
    assert (words(item["de"])[i], words(item["de_wrong"])[i]) == (item["form"], item["wrong_form"])
    assert item["form"].islower()                                           # never the capitalised first word
    form, wrong_form, gender = item["form"], item["wrong_form"], item["gender"]
    if item["pronoun"] == "its":
        stems = ("ihr", "sein") if gender == "f" else ("sein", "ihr")
        assert form.startswith(stems[0]) and wrong_form.startswith(stems[1])
        assert form[len(stems[0]):] == wrong_form[len(stems[1]):] in ("", "e", "en", "em", "er", "es")
    else:
        right_pronoun = {"f": "sie", "m": "er", "n": "es"}[gender]
        assert form == right_pronoun
        assert wrong_form in (("er", "es") if gender == "f" else ("sie",))
    assert P.right_for(form, gender) and not P.right_for(wrong_form, gender)


@pytest.mark.parametrize("item", ITEMS, ids=lambda it: str(it["id"]))
def test_each_item_names_its_antecedent_and_pronoun(item):
    en = [w.lower() for w in words(item["en"])]
    assert en.count(item["pronoun"]) == 1
    assert sum(w in ("its", "it", "they") for w in en) == 1                  # one pronoun a sentence
    a, p = en.index(item["antecedent"].lower()), en.index(item["pronoun"])
    assert 0 < a < p and item["distance"] == p - a
    article, noun = item["antecedent_de"].split(" ", 1)[0], item["antecedent_de"].split()[-1]
    assert article == ARTICLE[item["gender"]]                                # the gender agrees with its article
    assert noun in item["de"] or noun[:4] in item["de"]                     # ... and the noun is in the German


def test_load_pronoun_set_explains_a_bad_line(tmp_path):
    good = json.dumps({k: ITEMS[0][k] for k in P.FIELDS})
    path = tmp_path / "set.jsonl"
    path.write_text(good + "\n\n" + '{"en": "The bank raised its rates."}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 3: missing or empty de, de_wrong"):
        P.load_pronoun_set(path)
    path.write_text(good + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        P.load_pronoun_set(path)
    path.write_text(good + "\n", encoding="utf-8")
    assert P.load_pronoun_set(path)[0]["distance"] == ITEMS[0]["distance"]


# ---------------------------------------------------------------- evaluation

def test_summarize_counts_by_hand():
    rows = [dict(gender="f", pronoun="its", distance=1, correct=True),
            dict(gender="f", pronoun="its", distance=9, correct=False),
            dict(gender="f", pronoun="it", distance=5, correct=False),
            dict(gender="m", pronoun="its", distance=2, correct=True),
            dict(gender="n", pronoun="its", distance=8, correct=True)]
    s = P.summarize(rows)
    assert (s["accuracy"], s["feminine"], s["masc_neut"]) == (0.6, round(1 / 3, 4), 1.0)
    assert s["by_distance"] == {"1-3 words": 1.0, "4-7 words": 0.0, "8+ words": 0.5}
    assert s["by_pronoun"] == {"it": 0.0, "its": 0.75}
    assert (s["items"], s["feminine_items"], s["masc_neut_items"]) == (5, 3, 2)
    assert "separation" not in s                                   # no log-probabilities, no lean


def test_separation_ignores_a_lean_that_accuracy_does_not():
    def item(gender, lean):  # an item whose feminine form is `lean` nats more probable than the other
        right = lean if gender == "f" else -lean
        return dict(gender=gender, pronoun="its", distance=1, logp_right=right, logp_wrong=0.0, correct=right > 0)

    apart = [item("f", 1.0), item("f", 2.0), item("m", -1.0), item("n", 0.5)]
    for shift in (0.0, -3.0):                                      # every item 3 nats further towards sein-
        rows = [item(r["gender"], P.feminine_lean(r) + shift) for r in apart]
        s = P.summarize(rows)
        assert s["separation"] == 1.0                              # each feminine item leans more than each other
        assert s["feminine_lean"] == pytest.approx(0.625 + shift)
    assert P.summarize(rows)["feminine"] == 0.0                    # while the shifted model gets no feminine right
    assert P.separation([item("f", 0.0)], [item("m", 0.0)]) == 0.5   # ties count half
    assert P.separation([], apart) is None


def test_evaluate_compares_the_two_scores_of_each_item(translation_model):
    items = ITEMS[:3] + ITEMS[-3:]
    results = P.evaluate(translation_model, items, batch_size=4)
    for it, r in zip(items, results):
        right = forward_logprobs(translation_model, it["en"], it["de"]).sum()
        wrong = forward_logprobs(translation_model, it["en"], it["de_wrong"]).sum()
        assert r["logp_right"] == pytest.approx(right, abs=1e-3) and r["logp_wrong"] == pytest.approx(wrong, abs=1e-3)
        assert r["correct"] == (right > wrong)
    short = P.pronoun_accuracy(translation_model, items)
    assert set(short) == {"accuracy", "feminine", "masc_neut", "separation", "feminine_lean"}


def test_form_probabilities_are_the_next_word_probabilities(translation_model):
    src, tgt = "The bank raised its interest rates.", "Die Bank erhöhte ihre Zinsen."
    choice = P.form_probabilities(translation_model, src, tgt, "its")
    assert (choice.prefix, choice.written, choice.word) == ("Die Bank erhöhte", "ihre", 3)
    assert list(choice.table.form) == list(P.POSSESSIVES)
    tok = translation_model.tokenizer
    for form, logp in zip(choice.table.form, choice.table.logprob):
        n = len(tok.encode(f"{choice.prefix} {form}", "tgt")) - len(tok.encode(choice.prefix, "tgt"))
        per_piece = forward_logprobs(translation_model, src, f"{choice.prefix} {form}")
        assert logp == pytest.approx(per_piece[-1 - n:-1].sum(), abs=1e-4), form
    assert choice.table.share.sum() == pytest.approx(1.0)
    assert choice.chosen == choice.table.form[choice.table.logprob.idxmax()]
    fem = choice.table[choice.table.form.str.startswith("ihr")].share.sum()
    assert choice.feminine_share == pytest.approx(fem)
    start = P.form_probabilities(translation_model, "Its rates rose.", "Seine Zinsen stiegen.")
    assert start.prefix == "" and start.written == "Seine" and start.chosen[0].isupper()
    it = P.form_probabilities(translation_model, "The bank said it would close.", "Die Bank sagte, sie schließe.", "it")
    assert list(it.table.form) == ["er", "es", "sie"] and it.written == "sie"
    assert P.form_probabilities(translation_model, src, "Die Bank erhöhte die Zinsen.") is None



def test_shares_stay_defined_when_every_probability_underflows(tokenizer):
    """A model sure of </s> (its logit 2000 above the rest) gives every form log P near -2000 a piece: exp() is 0
    for all of them, yet their shares are still the softmax of their log-probabilities, without a warning."""
    tm = core.TranslationModel(stopping_model(len(tokenizer), eos_bias=2000.0), tokenizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                                 # "invalid value encountered in divide"
        choice = P.form_probabilities(tm, "The bank raised its interest rates.", "Die Bank erhöhte ihre Zinsen.")
        lean = choice.feminine_share
    t = choice.table
    assert (t.probability == 0).all() and (t.logprob < -1000).all()      # the case: nothing left to divide
    assert np.isfinite(t.share).all() and t.share.sum() == pytest.approx(1.0)
    expected = np.exp(t.logprob - t.logprob.max())
    np.testing.assert_allclose(t.share, expected / expected.sum())
    assert t.form[t.share.idxmax()] == choice.chosen and 0 <= lean <= 1


def test_shares_of_forms_without_a_finite_log_probability():
    np.testing.assert_allclose(P.shares(np.array([-np.inf, -np.inf])), [0.5, 0.5])     # nothing tells them apart
    np.testing.assert_allclose(P.shares(np.array([-np.inf, np.log(0.25), np.log(0.75)])), [0.0, 0.25, 0.75])

def test_the_sentence_test_and_where_the_model_looked(translation_model):
    item = ITEMS[0]
    right, wrong = P.sentence_test(translation_model, item)
    result = P.evaluate(translation_model, [item])[0]
    assert (round(right, 4), round(wrong, 4)) == (result["logp_right"], result["logp_wrong"])
    res = translation_model.attend(item["en"], tgt=item["de"])
    choice = P.form_probabilities(translation_model, item["en"], item["de"], item["pronoun"])
    g = P.gaze(res, item["pronoun"], item["antecedent"], choice.written)
    enc, cross = res.view("enc_self", words=True), res.view("cross", words=True)
    assert g.enc.rows == enc.rows and np.allclose(g.cross.maps, cross.maps)
    assert enc.rows[g.pronoun_word] == item["pronoun"] and enc.cols[g.antecedent_word] == item["antecedent"]
    assert cross.rows[g.written_word].startswith(choice.written)
    assert g.layer == pf.best_layer(pf.dependency_scores(enc, item["pronoun"], [item["antecedent"]]), k=2)
    with pytest.raises(ValueError, match="does not contain the word 'elephant'"):
        P.gaze(res, item["pronoun"], "elephant", choice.written)


def test_finding_the_pronoun_and_a_first_guess_at_its_antecedent():
    assert P.find_pronoun("The minister criticised the bank for its high fees.") == (6, "its")
    assert P.find_pronoun("Nothing to see here.") is None
    words_ = "The minister criticised the bank for its high fees.".split()
    assert words_[P.guess_antecedent(words_, 6)] == "bank"
    assert P.find_form("Der Rat, sagte er, genehmigte seinen Haushalt.") == 5
    assert P.find_form("Der Rat sagte, er komme.", "it") == 3


def test_evaluate_pronouns_writes_one_key_of_the_card(tmp_path, tokenizer, capsys):
    folder = tmp_path / "ckpt"
    torch.manual_seed(0)
    model = core.Transformer(core.preset("tiny", vocab_size=len(tokenizer), max_len=128)).eval()
    core.save_checkpoint(folder, model, tokenizer, {"name": "ckpt", "test": {"bleu": 1.0}})
    small = tmp_path / "small.jsonl"
    small.write_text("".join(json.dumps({k: it[k] for k in P.FIELDS}) + "\n" for it in ITEMS[:4] + ITEMS[-4:]))
    out = tmp_path / "items.json"
    assert evaluate_pronouns.main([str(folder), "--set", str(small), "--json", str(out)]) == 0
    card = json.loads((folder / "card.json").read_text())
    assert card["test"] == {"bleu": 1.0} and card["pronouns"]["items"] == 8     # the rest of the card is kept
    detail = json.loads(out.read_text())
    expected = sum(r["logp_right"] > r["logp_wrong"] for r in detail["items"]) / 8
    assert card["pronouns"]["accuracy"] == pytest.approx(expected)
    assert card["pronouns"]["feminine_items"] == card["pronouns"]["masc_neut_items"] == 4
    head = card["pronouns"]["anaphora_head"]                    # held out: chosen on one half, scored on the other
    assert {"layer", "head", "hit_rate_second_half", "chance"} <= set(head)
    assert 1 <= head["layer"] <= model.cfg.N and 1 <= head["head"] <= model.cfg.h
    assert 0 <= head["hit_rate_second_half"] <= 1 and 0 < head["chance"] < 1
    spread = head["random_halvings"]                            # the same rule over many random halvings
    assert spread["splits"] == 1000 and 0 <= spread["p05"] <= spread["mean"] <= spread["p95"] <= 1
    assert evaluate_pronouns.main([str(tmp_path / "missing")]) == 1
    assert "no checkpoint folder" in capsys.readouterr().err


def test_the_verb_sein_is_not_the_possessive():
    assert P.find_form("Das Gesetz wird nie perfekt sein, aber seine Anwendung") == 7
    assert P.find_form("Er will sein") is None
    assert P.find_form("Sein Hund will nur sein.") == 0
    assert P.find_form("Die Bank erhöhte ihre Zinsen.") == 3
