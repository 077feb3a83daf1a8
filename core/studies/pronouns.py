"""Does the model resolve 'its'? A contrastive pronoun test for English -> German.

English 'its' becomes German sein- when its antecedent is masculine or neuter (der Rat, das Unternehmen)
and ihr- when it is feminine (die Bank); 'it' becomes er / es / sie. Each item of the set pairs the right
German with the same sentence where only that word has the other stem, and the model passes an item when it
gives the right sentence the higher probability (contrastive evaluation, as in Sennrich 2017 and
Müller et al. 2018). A model that always writes sein- scores about 50% overall and 0% on feminine items.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .paper_figures import best_layer, dependency_scores, find_words
from core.checkpoint.jsonl import read_jsonl
from core.tokenizer import bare_word, clean_text, strip_punctuation
from core.views import AttentionView, sentence_only

PRONOUN_SET = Path(__file__).parent / "probes" / "pronouns_en_de.jsonl"
ENDINGS = ("", "e", "en", "em", "er", "es")                 # the endings of ein-words: case, gender, number
POSSESSIVES = tuple(stem + e for stem in ("sein", "ihr") for e in ENDINGS)
PERSONAL = ("er", "es", "sie")
FORMS = {"its": POSSESSIVES, "it": PERSONAL, "they": PERSONAL}   # English pronoun -> German forms it can become
FEMININE = {"f"}                                                 # genders: "f", "m", "n"
DISTANCES = ((1, 3, "1-3 words"), (4, 7, "4-7 words"), (8, None, "8+ words"))
FIELDS = ("en", "de", "de_wrong", "pronoun", "antecedent", "gender", "form", "wrong_form")


def stem(form: str) -> str | None:
    """'sein' or 'ihr' for a possessive, the pronoun for er / es / sie, None for any other word."""
    form = form.lower()
    if form in POSSESSIVES:
        return "sein" if form.startswith("sein") else "ihr"
    return form if form in PERSONAL else None


def is_feminine_form(form: str) -> bool:
    """True for ihr- and sie, the forms that agree with a feminine antecedent (and with plurals)."""
    return stem(form) in ("ihr", "sie")


def right_for(form: str, gender: str) -> bool:
    """Whether `form` agrees with an antecedent of German gender "f", "m" or "n"."""
    return is_feminine_form(form) == (gender in FEMININE)


def word_distance(en: str, antecedent: str, pronoun: str) -> int:
    """Words from the antecedent to the pronoun in the English sentence (1: the next word)."""
    words = en.split()
    a = find_words(words, antecedent)[0]
    return find_words(words[a:], pronoun)[0]               # the first pronoun after the antecedent


def distance_bin(d: int) -> str:
    """The label of the distance bin that d falls in."""
    return next(label for lo, hi, label in DISTANCES if d >= lo and (hi is None or d <= hi))


def load_pronoun_set(path=PRONOUN_SET) -> list[dict]:
    """The items of a JSON-lines pronoun set, each with its word distance added; ValueError on a bad line."""
    items = []
    for n, item in read_jsonl(path, numbered=True):
        if not isinstance(item, dict):
            raise ValueError(f"{path}, line {n}: not a JSON object")
        missing = [f for f in FIELDS if not isinstance(item.get(f), str) or not item[f]]
        if missing:
            raise ValueError(f"{path}, line {n}: missing or empty {', '.join(missing)}")
        if item["gender"] not in ("f", "m", "n") or item["pronoun"] not in FORMS:
            raise ValueError(f"{path}, line {n}: gender must be f, m or n and pronoun one of {list(FORMS)}")
        item["distance"] = word_distance(item["en"], item["antecedent"], item["pronoun"])
        items.append(item)
    return items


def evaluate(tm, items: list[dict], batch_size: int = 128) -> list[dict]:
    """Score every item's right and wrong German in one batched teacher-forced pass; one result per item."""
    srcs = [it["en"] for it in items for _ in (0, 1)]
    tgts = [t for it in items for t in (it["de"], it["de_wrong"])]
    scores = tm.score(srcs, tgts, batch_size=batch_size)
    out = []
    for k, it in enumerate(items):
        right, wrong = scores[2 * k].total, scores[2 * k + 1].total
        out.append({"id": it.get("id", k + 1), "gender": it["gender"], "pronoun": it["pronoun"],
                    "distance": it["distance"], "form": it["form"], "wrong_form": it["wrong_form"],
                    "logp_right": round(right, 4), "logp_wrong": round(wrong, 4), "correct": right > wrong})
    return out


def _accuracy(rows) -> float | None:
    rows = list(rows)
    return round(sum(r["correct"] for r in rows) / len(rows), 4) if rows else None


def feminine_lean(r: dict) -> float:
    """log P(the sentence with the feminine form) - log P(the other): every item contrasts ihr-/sie with
    sein-/er/es, the right one first for a feminine antecedent."""
    margin = r["logp_right"] - r["logp_wrong"]
    return margin if r["gender"] in FEMININE else -margin


def separation(fem: list[dict], other: list[dict]) -> float | None:
    """P(a feminine item leans more to the feminine form than a masculine/neuter item does): the area under
    the ROC curve of feminine_lean. 0.5 when the model ignores the antecedent's gender, 1.0 when it always
    tells them apart; unlike the accuracies, a shift of every item towards ihr- (or sein-) does not change it."""
    a, b = [feminine_lean(r) for r in fem], [feminine_lean(r) for r in other]
    if not a or not b:
        return None
    wins = sum((x > y) + 0.5 * (x == y) for x in a for y in b)
    return round(wins / (len(a) * len(b)), 4)


def summarize(results: list[dict]) -> dict:
    """Accuracy overall, for feminine and for masculine/neuter antecedents, by distance and by pronoun; with the
    items' log-probabilities, also the mean lean to the feminine form (nats) and the genders' separation."""
    fem = [r for r in results if r["gender"] in FEMININE]
    other = [r for r in results if r["gender"] not in FEMININE]
    by_distance = {label: _accuracy(r for r in results if distance_bin(r["distance"]) == label)
                   for _, _, label in DISTANCES}
    summary = {"accuracy": _accuracy(results), "feminine": _accuracy(fem), "masc_neut": _accuracy(other),
               "by_distance": {k: v for k, v in by_distance.items() if v is not None},
               "distance_items": {label: sum(distance_bin(r["distance"]) == label for r in results)
                                  for _, _, label in DISTANCES},
               "by_pronoun": {p: _accuracy(r for r in results if r["pronoun"] == p)
                              for p in sorted({r["pronoun"] for r in results})},
               "items": len(results), "feminine_items": len(fem), "masc_neut_items": len(other)}
    if results and all("logp_right" in r for r in results):
        summary["feminine_lean"] = round(float(np.mean([feminine_lean(r) for r in results])), 4)
        summary["separation"] = separation(fem, other)
    return summary


def pronoun_accuracy(tm, items: list[dict] | None = None) -> dict:
    """{"accuracy", "feminine", "masc_neut", "separation", "feminine_lean"} on the pronoun set: the short record
    training logs (separation shows whether the genders are told apart when a lean hides it from the accuracies)."""
    summary = summarize(evaluate(tm, load_pronoun_set() if items is None else items))
    return {k: summary[k] for k in ("accuracy", "feminine", "masc_neut", "separation", "feminine_lean") if k in summary}


def find_form(text: str, pronoun: str = "its") -> int | None:
    """Index (in whitespace words) of the first German word that `pronoun` can become, or None. A bare 'sein'
    before punctuation or at the end is the verb, not the possessive ('... perfekt sein, aber seine ...')."""
    forms = FORMS.get(pronoun, POSSESSIVES)
    words = clean_text(text).split()

    def is_verb(i: int, w: str) -> bool:
        return bare_word(w) == "sein" and (strip_punctuation(w) != w or i == len(words) - 1)

    return next((i for i, w in enumerate(words) if bare_word(w) in forms and not is_verb(i, w)), None)


def find_pronoun(en: str) -> tuple[int, str] | None:
    """(word index, pronoun) of the first 'its', 'it' or 'they' of an English sentence, or None."""
    return next(((i, bare_word(w)) for i, w in enumerate(en.split()) if bare_word(w) in FORMS), None)


def guess_antecedent(words: list[str], pronoun_at: int) -> int:
    """A first guess at the antecedent: the last word after a 'the' before the pronoun (else the first word)."""
    after_the = [i + 1 for i in range(pronoun_at - 1) if bare_word(words[i]) == "the"]
    return after_the[-1] if after_the else 0


@dataclass
class FormChoice:
    """The model's probability of each German form at the position where the target has one."""
    prefix: str               # the German words before it
    written: str              # the form the target has there
    word: int                 # its index among the target's words
    table: pd.DataFrame       # form, stem, logprob, probability, share (of these forms), chosen
    chosen: str               # the most probable form

    @property
    def feminine_share(self) -> float:
        """How much of the forms' probability goes to the feminine ones (ihr- / sie)."""
        return float(self.table.loc[self.table.form.map(is_feminine_form), "share"].sum())


def shares(logp: np.ndarray) -> np.ndarray:
    """Each form's share of the forms' total probability: a softmax over their log-probabilities.

    Taken from the largest log-probability, so that it stays defined when every probability underflows to 0 (a
    model sure of another word gives the forms log P of -1000 and below); equal shares when no form has a finite
    log-probability, as nothing then tells them apart."""
    finite = np.isfinite(logp)
    if not finite.any():
        return np.full(len(logp), 1.0 / len(logp))
    p = np.where(finite, np.exp(logp - logp[finite].max()), 0.0)        # the largest is exp(0) = 1: no underflow
    return p / p.sum()


def form_probabilities(tm, src: str, tgt: str, pronoun: str = "its") -> FormChoice | None:
    """P(the decoder writes each form next | source, German words before the form); None if tgt has no form.

    A form of several pieces gets the product of its pieces' probabilities.
    """
    words = clean_text(tgt).split()
    i = find_form(tgt, pronoun)
    if i is None:
        return None
    written = strip_punctuation(words[i])
    prefix = " ".join(words[:i])
    forms = [f.capitalize() if written[:1].isupper() else f for f in FORMS.get(pronoun, POSSESSIVES)]
    scores = tm.score(src, [f"{prefix} {f}".strip() for f in forms])
    # the form's pieces are the last ones before </s>: SentencePiece splits words independently
    logp = np.array([s.logprobs[-1 - len(tm.tokenizer.encode(f, "tgt")): -1].sum() for s, f in zip(scores, forms)],
                    dtype=np.float64)
    table = pd.DataFrame({"form": forms, "stem": [stem(f) for f in forms], "logprob": logp,
                          "probability": np.exp(logp), "share": shares(logp)})
    chosen = forms[int(np.argmax(logp))]
    table["chosen"] = table.form == chosen
    return FormChoice(prefix, written, i, table, chosen)


def sentence_test(tm, item: dict) -> tuple[float, float]:
    """(log P of the item's right German, log P of its wrong German), as evaluate scores an item."""
    right, wrong = tm.score(item["en"], [item["de"], item["de_wrong"]])
    return right.total, wrong.total


@dataclass
class Gaze:
    """Where the model looked when it wrote the form: word views and the words that matter in them."""
    enc: AttentionView        # encoder self-attention, words
    cross: AttentionView      # encoder-decoder attention, words (rows: the word each decoder step writes)
    pronoun_word: int         # the pronoun among the source words
    antecedent_word: int      # its antecedent among them
    written_word: int         # the decoder row that writes the form
    layer: int                # the encoder layer whose two best heads look most from the pronoun at the antecedent


def gaze(result, pronoun: str, antecedent: str, written: str) -> Gaze:
    """The Gaze of a teacher-forced AttendResult (source with `pronoun` and `antecedent`, German with `written`);
    ValueError, worded for the reader, when a word is not in the sentence."""
    result = sentence_only(result)                                      # the sentence's words: no prompt (T5)
    enc, cross = result.view("enc_self", words=True), result.view("cross", words=True)
    pronoun_word = find_words(enc.rows, pronoun)[0]
    antecedent_word = find_words(enc.cols, antecedent)[0]
    written_word = find_words(cross.rows, written)[0]           # decoder rows: the word each step writes
    layer = best_layer(dependency_scores(enc, pronoun, [antecedent]), k=2)
    return Gaze(enc, cross, pronoun_word, antecedent_word, written_word, layer)
