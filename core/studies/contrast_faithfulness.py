"""Which explanation of "why this word and not that one?" to trust: erase the source words it ranks highest and
see whether the model changes its mind (an erasure test, as in DeYoung et al. 2020's comprehensiveness).

Cases: the pronoun test's items (core/studies/probes/pronouns_en_de.jsonl: at the German possessive or personal
pronoun, the model's preferred form against the other gender's, teacher-forced on the reference German before it)
and the worked sentences (the paper's 'its' sentence and the pronoun page's own, on the model's own greedy
translation). For each case every ranker orders the source words by how much they push towards the preferred form:
the four methods of core.attribution, the step's cross-attention (mean of all layers and heads), the single best
head (the one whose top word costs most on these same cases: an optimistic bound for attention) and a random order.
The top 1 and top 3 are erased together (their pieces deleted, as erasure deletes them), and we count how often
the preference flips and how far the log-odds log P(preferred) - log P(other) falls. Erasure's own ranking is the
ceiling for the top 1 (for the top 3, the best three alone, not the best three together).
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

import numpy as np

from core import attribution as A
from core.tokenizer import clean_text, strip_punctuation

from .faithfulness import read_saved
from .paper_figures import FIGURES
from .pronouns import POSSESSIVES, find_form, load_pronoun_set

METHODS = list(A.METHODS)
RANKERS = {**{m: A.METHODS[m] for m in METHODS},
           "attention": "the step's cross-attention, every layer and head averaged",
           "best_head": "the one cross-attention head whose top word costs most here (chosen on these cases)",
           "random": "source words in a random order (the baseline)"}
TOPS = (1, 3)
WORKED = [FIGURES[4][1], "The bank raised its interest rates."]
RESULT_FILE = "contrast_faithfulness.json"      # beside faithfulness.json in a checkpoint folder


@dataclass
class Case:
    """One contrast to explain: the source, the German before the pronoun, the two forms (in either order)."""
    src: str
    prefix: str
    form: str
    other: str
    origin: str


def other_stem(form: str) -> str | None:
    """The same ending on the other possessive stem (seine <-> ihre), capitals kept; None for any other word."""
    low = form.lower()
    if low not in POSSESSIVES:
        return None
    swapped = ("ihr" + low[4:]) if low.startswith("sein") else ("sein" + low[3:])
    return swapped.capitalize() if form[:1].isupper() else swapped


def pronoun_cases(items: list[dict]) -> list[Case]:
    """One case per item of the pronoun set: the reference German up to its pronoun, its form against the wrong one."""
    out = []
    for it in items:
        words = clean_text(it["de"]).split()
        i = find_form(it["de"], it["pronoun"])
        if i is not None:
            out.append(Case(it["en"], " ".join(words[:i]), strip_punctuation(words[i]),
                            it["wrong_form"], f"pronoun test {it.get('id', '')}".strip()))
    return out


def worked_cases(tm, sentences=WORKED) -> tuple[list[Case], list[str]]:
    """Cases from the model's own greedy translations of the worked sentences: (cases, why any was left out)."""
    cases, skipped = [], []
    for src, tgt in zip(sentences, tm.translate(list(sentences), beam=1)):
        words = clean_text(tgt).split()
        i = find_form(tgt, "its")
        other = None if i is None else other_stem(strip_punctuation(words[i]))
        if other is None:
            skipped.append(f"'{src[:40]}…': the translation has no sein-/ihr- ({tgt[:60]})")
            continue
        cases.append(Case(src, " ".join(words[:i]), strip_punctuation(words[i]), other, "worked sentence"))
    return cases, skipped


@dataclass
class Outcome:
    """Per ranker and k: the log-odds falls and whether the preference flipped, one entry per case."""
    falls: dict = field(default_factory=lambda: {(r, k): [] for r in RANKERS for k in TOPS})
    flips: dict = field(default_factory=lambda: {(r, k): [] for r in RANKERS for k in TOPS})
    head_falls: dict = field(default_factory=dict)      # (layer, head, k) -> falls, to pick the best head
    head_flips: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=lambda: {m: 0.0 for m in METHODS})
    cases: int = 0
    skipped: list = field(default_factory=list)
    examples: list = field(default_factory=list)


def rankings(tm, case: Case, steps: int, seconds: dict, rng: random.Random):
    """(the question, {ranker: word order}, {(layer, head): word order}, {method: Contrast}) of one case, the
    model's preferred form as `chosen`."""
    chosen, other = case.form, case.other
    contrasts = {}
    for method in METHODS:
        t0 = time.perf_counter()
        c = tm.contrast(case.src, case.prefix, chosen, other, method=method, steps=steps)
        if method == "erasure" and c.log_odds < 0:                  # the model prefers the other form
            chosen, other = other, chosen
            c = tm.contrast(case.src, case.prefix, chosen, other, method=method, steps=steps)
        seconds[method] += time.perf_counter() - t0
        contrasts[method] = c
    q = A.question(tm, case.src, case.prefix, chosen, other)
    orders = {m: c.ranking() for m, c in contrasts.items()}
    cross = contrasts["erasure"].cross                                           # (N_dec, h, W)
    orders["attention"] = [int(i) for i in np.argsort(-cross.mean((0, 1)), kind="stable")]
    heads = {(n, k): [int(i) for i in np.argsort(-cross[n, k], kind="stable")] for n in range(cross.shape[0])
             for k in range(cross.shape[1])}
    orders["random"] = rng.sample(range(len(q.src_words)), len(q.src_words))
    return q, orders, heads, contrasts


def measure(tm, cases: list[Case], steps: int = A.DEFAULT_STEPS, seed: int = 0, progress=None) -> Outcome:
    """The erasure test of every ranker on `cases` (see the module's docstring)."""
    out, rng = Outcome(), random.Random(seed)
    for n, case in enumerate(cases):
        try:
            q, orders, heads, contrasts = rankings(tm, case, steps, out.seconds, rng)
        except ValueError as e:
            out.skipped.append(f"{case.origin}: {e}")
        else:
            _erase(tm, q, orders, heads, contrasts["erasure"].log_odds, out)
            out.cases += 1
            if case.origin == "worked sentence":
                out.examples.append(_example(case, contrasts))
        if progress:
            progress(n + 1, len(cases))
    return out


def _erase(tm, q, orders: dict, heads: dict, whole: float, out: Outcome) -> None:
    """One batched pass with every ranker's (and every head's) top 1 and top 3 erased."""
    keys = [(r, k) for r in orders for k in TOPS] + [(h, k) for h in heads for k in TOPS]
    order_of = {**orders, **heads}
    lo = A.log_odds_of(tm, q, [A.without(q, src_words=set(order_of[r][:k])) for r, k in keys])
    for (r, k), value in zip(keys, lo):
        falls, flips = (out.falls, out.flips) if r in orders else (out.head_falls, out.head_flips)
        falls.setdefault((r, k), []).append(float(whole - value))
        flips.setdefault((r, k), []).append(bool(value < 0 <= whole))


def _example(case: Case, contrasts: dict) -> dict:
    """What a worked sentence shows: each method's top three source words and the attention's."""
    c = contrasts["erasure"]
    att = c.cross.mean((0, 1))
    return {"src": case.src, "prefix": case.prefix, "chosen": c.chosen, "other": c.other,
            "log_odds": round(c.log_odds, 3),
            "top": {m: [c.src_words[i] for i in contrasts[m].ranking()[:3]] for m in contrasts},
            "attention_top": [c.src_words[i] for i in np.argsort(-att, kind="stable")[:3]]}


def _row(name: str, k: int, falls: list, flips: list) -> dict:
    d = np.asarray(falls, dtype=np.float64)
    n = len(d)
    return {"ranker": name, "top": k, "cases": n, "flipped": round(float(np.mean(flips)), 4) if n else None,
            "mean_fall": round(float(d.mean()), 4) if n else None,
            "stderr": round(float(d.std(ddof=1) / np.sqrt(n)), 4) if n > 1 else None}


def report(out: Outcome) -> dict:
    """The table (one row per ranker and k), the best head, the worked examples and timings, as JSON."""
    best = max({h for h, _ in out.head_falls}, key=lambda h: np.mean(out.head_falls[(h, 1)]), default=None)
    rows = []
    for r in RANKERS:
        for k in TOPS:
            if r == "best_head":
                falls, flips = (out.head_falls.get((best, k), []), out.head_flips.get((best, k), []))
            else:
                falls, flips = out.falls[(r, k)], out.flips[(r, k)]
            rows.append(_row(r, k, falls, flips))
    scored = [x for x in rows if x["top"] == 1 and x["ranker"] not in ("erasure", "random")
              and x["mean_fall"] is not None]
    winner = max(scored, key=lambda x: x["mean_fall"], default=None)
    return {"cases": out.cases, "skipped": out.skipped, "rankers": RANKERS,
            "best_head": None if best is None else {"layer": best[0] + 1, "head": best[1] + 1},
            "rule": "for each case the model's preferred form is 'chosen'; the source words a ranker puts first are "
                    "erased together (pieces deleted) and the log-odds log P(chosen) - log P(other) is scored again; "
                    "fall = before minus after (nats), flipped = the other form is now preferred",
            "table": rows, "most_faithful": winner["ranker"] if winner else None,
            "seconds_per_case": {m: round(s / max(out.cases, 1), 3) for m, s in out.seconds.items()},
            "examples": out.examples}


NAMES = {"erasure": "erasure (the ceiling)", "gradient": "gradient x input", "integrated": "integrated gradients",
         "alti_logit": "ALTI-Logit", "attention": "attention (mean)", "best_head": "the best head", "random": "random"}


def verdict(result: dict, top: int = 1) -> str:
    """One sentence a page can show: how often erasing each ranker's top word(s) flipped the preference."""
    rows = [r for r in result["table"] if r["top"] == top and r["flipped"] is not None]
    parts = ", ".join(f"{NAMES.get(r['ranker'], r['ranker'])} {r['flipped']:.0%}" for r in rows)
    words = "top word" if top == 1 else f"top {top} words"
    return (f"Measured on this checkpoint ({result['cases']} pronoun choices): erasing each explanation's {words} "
            f"flipped the model's choice in {parts} of cases.")


def read_result(folder) -> dict | None:
    """A checkpoint folder's saved result, or None when it has none; ValueError when it is garbled."""
    return read_saved(folder, RESULT_FILE, "scripts/evaluate_contrast.py")


def all_cases(tm, limit: int = 0) -> tuple[list[Case], list[str]]:
    """The worked sentences' cases and the pronoun test's (the first `limit` items; 0: all), and what was skipped."""
    items = load_pronoun_set()
    worked, skipped = worked_cases(tm)
    return worked + pronoun_cases(items[:limit] if limit else items), skipped

