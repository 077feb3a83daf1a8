"""When do heads appear? The paper's Figure 3 and 4 scores, and a pronoun hit rate, at each attention snapshot.

core.training.probes.Probes saves, every few training steps, the attention maps of a few probe
sentences (snapshots/step_*.npz, described by snapshots/probes.json; core.checkpoint.snapshots reads and
writes them). From each snapshot we take:

  Figure 3   the best head's share of 'making' on 'more difficult' (core.studies.paper_figures.figure3), when a
             probe sentence has these words (news runs: newstest2013 line 8 is the paper's sentence);
  Figure 4   the best head's share of 'its' on 'Law', the antecedent (core.studies.paper_figures.figure4), and,
             for that same head, its share on 'application' and its next-word score;
  pronouns   on our annotated pronoun set (core/probes/anaphora_en.jsonl), the hit rate of a head: the
             share of sentences where the word the pronoun attends to most, itself and </s> aside, is
             its antecedent (Clark et al. 2019's "antecedent selection"). Reported for the best Figure 4
             head and for the head with the best hit rate on the set (an upper bound: picked on the set), and
             held out: the best head on the first half of the set, scored on the second half.

Snapshots hold the pronoun sentences (keys "pronoun_<j>", the pronoun's rows only) and the paper's two
sentences only if Probes recorded them, which it does since this module exists; older snapshots give
the Figure 3/4 curves of news runs only. `model_scores` scores the final weights, which always works.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .analysis import load_anaphora, word_pieces
from .paper_figures import FIGURE3_SENTENCE, FIGURE45_SENTENCE, figure3, figure4, find_words_in_pieces
from core.checkpoint.snapshots import SnapshotError, load_snapshot
from core.tokenizer import clean_text, merge_words, word_ids
from core.views import SPECIALS, to_words

PAPER_SENTENCES = (FIGURE3_SENTENCE, FIGURE45_SENTENCE)
NEEDS = {3: ("making", "more difficult"), 4: ("its", "Law", "application")}   # words each figure's score needs
FINDERS = {3: figure3, 4: figure4}


# ---- pronoun probes: the antecedent-selection hit of each head ----

def pronoun_rows(enc: np.ndarray, pieces: list[str], pronoun_index: int) -> np.ndarray:
    """(N, h, S, S) encoder self-attention -> (N, h, r, S): the rows of the pronoun's r pieces."""
    return enc[:, :, word_pieces(pieces, pronoun_index)]


def pronoun_hits(rows: np.ndarray, pieces: list[str], pronoun_index: int, antecedent_index: int) -> np.ndarray:
    """(N, h) bool: does the pronoun attend most to its antecedent (itself and </s> left out)?

    rows: (N, h, r, S), the pronoun's piece rows. Its word-level row is their mean, summed per word.
    """
    row = np.asarray(rows, dtype=np.float32).mean(-2, keepdims=True)     # (N, h, 1, S): the pronoun, one word
    words, _, labels = to_words(row, ["pronoun"], list(pieces))
    words = words[..., 0, :]                                             # (N, h, W)
    skip = [pronoun_index] + [w for w, text in enumerate(labels) if text in SPECIALS]
    words[..., skip] = -np.inf
    return words.argmax(-1) == antecedent_index


def _candidates(pieces: list[str], pronoun_index: int) -> int:
    """How many words a pronoun may pick (itself and specials aside): 1 / this is a random pick's hit rate."""
    return sum(1 for w, text in enumerate(merge_words(pieces)) if w != pronoun_index and text not in SPECIALS)


def lines_up(text: str, pieces: list[str]) -> bool:
    """True when the tokenizer's words are the text's whitespace words (+ </s>), so word indices agree."""
    return max(word_ids(pieces)) == len(text.split())


def record_pronouns(tm, anaphora: list[dict] | None = None) -> tuple[dict, list[dict]]:
    """({"pronoun_<j>": (N, h, r, S) float16}, [{text, src_tokens, pronoun_index, antecedent_index}]) for Probes.

    One batched encoder pass over the pronoun set; sentences whose words do not line up are left out.
    """
    anaphora = load_anaphora() if anaphora is None else anaphora
    arrays, meta = {}, []
    for a, r in zip(anaphora, tm.attend_batch([a["text"] for a in anaphora], encoder_only=True)):
        pieces = r.src_tokens
        if not lines_up(a["text"], pieces):
            continue
        arrays[f"pronoun_{len(meta)}"] = pronoun_rows(r.enc_self, pieces, a["pronoun_index"]).astype(np.float16)
        meta.append({"text": a["text"], "src_tokens": pieces, "pronoun_index": a["pronoun_index"],
                     "antecedent_index": a["antecedent_index"]})
    return arrays, meta


def sentence_hits(items: list[tuple]) -> np.ndarray:
    """items [(pieces, rows (N, h, r, S), pronoun_index, antecedent_index)] -> (sentences, N, h) bool hits."""
    return np.stack([pronoun_hits(rows, p, i, a) for p, rows, i, a in items])


def hit_rates(items: list[tuple]) -> tuple[np.ndarray, float]:
    """items as for sentence_hits -> (hit rate (N, h), chance)."""
    chance = float(np.mean([1.0 / max(_candidates(p, i), 1) for p, _, i, _ in items]))
    return sentence_hits(items).mean(0), chance


# ---- one time point: a snapshot, or the final weights ----

def scores_at(step: int, source: str, maps: dict, pronouns: list[tuple]) -> dict:
    """One row of the emergence table. maps: {figure: (enc (N, h, S, S), tokens, sentence)} for those present."""
    row = {"step": int(step), "source": source}
    for number, (enc, tokens, sentence) in maps.items():
        try:
            found = FINDERS[number](enc, tokens, sentence)
        except ValueError:   # the words are not there (a sentence cut to a small model's length)
            continue
        best, f = found.best, f"fig{number}_"
        row.update({f + "layer": int(best.layer), f + "head": int(best["head"]), f + "score": float(best.score),
                    f + "others": float(best.others), f + "chance": found.chance, f + "threshold": found.threshold,
                    f + "linked": found.linked})
        if found.linked:   # the best head that links the words (it may not be the best-scoring one)
            link = found.linking.iloc[0]
            row.update({f + "link_layer": int(link.layer), f + "link_head": int(link["head"]),
                        f + "link_score": float(link.score)})
        if number == 4:
            row.update(fig4_application=float(best["→ application"]), fig4_next_word=float(best["next word"]))
    if pronouns:
        rates, chance = hit_rates(pronouns)
        top = np.unravel_index(int(np.argmax(rates)), rates.shape)
        row.update(hit_chance=chance, pronoun_sentences=len(pronouns), hit_best=float(rates[top]),
                   hit_best_layer=int(top[0]), hit_best_head=int(top[1]))
        if "fig4_layer" in row:
            row["hit_rate"] = float(rates[row["fig4_layer"], row["fig4_head"]])
        row.update(held_out_hits(pronouns))
    return row


def held_out_hits(pronouns: list[tuple]) -> dict:
    """The best head chosen on the first half of the pronoun sentences, scored on the second half.

    hit_best is an upper bound (picked and scored on the same sentences); this is what the head does on
    sentences it was not chosen on. Empty with fewer than 4 sentences.
    """
    if len(pronouns) < 4:
        return {}
    half = len(pronouns) // 2
    chosen_on, _ = hit_rates(pronouns[:half])
    scored, chance = hit_rates(pronouns[half:])
    layer, head = np.unravel_index(int(np.argmax(chosen_on)), chosen_on.shape)
    return {"hit_held_out": float(scored[layer, head]), "hit_held_out_layer": int(layer),
            "hit_held_out_head": int(head), "hit_held_out_chance": chance,
            "hit_held_out_sentences": len(pronouns) - half}


def held_out_spread(pronouns: list[tuple], splits: int = 1000, seed: int = 0) -> dict:
    """held_out_hits over `splits` random halvings of the pronoun sentences instead of the one fixed halving.

    With ~23 sentences on the scoring side one sentence moves the held-out rate by ~4 points, so one halving's
    figure depends on which sentences fell on which side: the mean and the 5th and 95th percentiles over many
    halvings say how much. Empty with fewer than 4 sentences.
    """
    if len(pronouns) < 4:
        return {}
    hits = sentence_hits(pronouns).reshape(len(pronouns), -1).astype(np.float32)   # (n, N * h)
    n, half = len(hits), len(hits) // 2
    orders = np.random.default_rng(seed).permuted(np.tile(np.arange(n), (splits, 1)), axis=1)   # (splits, n)
    chosen = hits[orders[:, :half]].mean(1).argmax(1)                    # each halving's head, as for held_out_hits
    rates = hits[orders[:, half:], chosen[:, None]].mean(1)              # (splits,): its hit rate on the rest
    p05, p95 = np.percentile(rates, [5, 95])
    return {"mean": float(rates.mean()), "p05": float(p05), "p95": float(p95), "splits": splits,
            "sentences_second_half": n - half}


def probe_for(sentences: list[dict], number: int) -> int | None:
    """Index of the first probe sentence holding the words Figure `number` scores, or None."""
    for i, s in enumerate(sentences):
        try:
            for phrase in NEEDS[number]:
                find_words_in_pieces(s["src_tokens"], phrase)
        except (ValueError, KeyError):
            continue
        return i
    return None


def snapshot_scores(probes: dict, snapshots: list[tuple], progress=None) -> tuple[pd.DataFrame, list[int]]:
    """(one row per readable snapshot, steps whose file could not be read) from probes.json and [(step, path)].

    progress: called as progress(done, total) after each file, for a progress bar.
    """
    sentences, pron = probes.get("sentences", []), probes.get("pronouns", [])
    at = {n: i for n in FINDERS if (i := probe_for(sentences, n)) is not None}
    rows, unreadable = [], []
    for k, (step, path) in enumerate(snapshots):
        try:
            arrays = load_snapshot(path, [f"{i}_enc_self" for i in at.values()]
                                   + [f"pronoun_{j}" for j in range(len(pron))])
            maps = {n: (arrays[f"{i}_enc_self"], sentences[i]["src_tokens"], sentences[i]["src"])
                    for n, i in at.items()}
            items = [(p["src_tokens"], arrays[f"pronoun_{j}"], p["pronoun_index"], p["antecedent_index"])
                     for j, p in enumerate(pron) if f"pronoun_{j}" in arrays]
            rows.append(scores_at(step, "snapshot", maps, items))
        except (SnapshotError, KeyError, ValueError):   # cut short, or another run's (maps missing or misshapen)
            unreadable.append(int(step))
        if progress is not None:
            progress(k + 1, len(snapshots))
    return pd.DataFrame(rows), unreadable


def model_scores(tm, step: int, anaphora: list[dict] | None = None, spread: bool = False) -> dict:
    """The same row for a loaded model (the shipped, averaged weights): one batched encoder pass.

    spread: also "hit_held_out_spread", the held-out hit rate over random halvings (held_out_spread).
    """
    anaphora = load_anaphora() if anaphora is None else anaphora
    texts = [clean_text(s) for s in PAPER_SENTENCES] + [a["text"] for a in anaphora]
    out = tm.attend_batch(texts, encoder_only=True)
    maps = {n: (out[k].enc_self, out[k].src_tokens, texts[k]) for k, n in enumerate((3, 4))}
    items = [(r.src_tokens, pronoun_rows(r.enc_self, r.src_tokens, a["pronoun_index"]), a["pronoun_index"],
              a["antecedent_index"]) for a, r in zip(anaphora, out[2:]) if lines_up(a["text"], r.src_tokens)]
    row = scores_at(step, "final weights", maps, items)
    if spread and (found := held_out_spread(items)):
        row["hit_held_out_spread"] = found
    return row


def paper_probes(dev_sources) -> list[tuple]:
    """[(None, sentence, None)] for the paper's Figure 3 and 4-5 sentences missing from the dev probes."""
    have = {clean_text(s) for s in dev_sources}
    return [(None, s, None) for s in PAPER_SENTENCES if clean_text(s) not in have]


def appearance(table: pd.DataFrame, number: int) -> dict | None:
    """When Figure `number`'s head appeared in the snapshots: the first step where a head links the words.

    None if no snapshot scored it. Keys: appeared, first_step, linked (snapshots where a head links them,
    core.studies.paper_figures.FigureHeads.linked), snapshots, best (the snapshot with the highest best-head score:
    step, layer, head, score, threshold, chance), first and last (the linking head of the first and the
    last snapshot: step, layer, head, score; None where no head links there).
    """
    f = f"fig{number}_"
    if table.empty or f + "score" not in table or table[f + "score"].isna().all():
        return None
    part = table[table[f + "score"].notna()]
    linked = part[part[f + "linked"].astype(bool)]
    best = part.loc[part[f + "score"].idxmax()]
    def link(r):
        return None if not bool(r[f + "linked"]) else {
            "step": int(r.step), "layer": int(r[f + "link_layer"]), "head": int(r[f + "link_head"]),
            "score": float(r[f + "link_score"])}
    part = part.sort_values("step")
    return {"appeared": not linked.empty, "first_step": int(linked.step.min()) if not linked.empty else None,
            "linked": len(linked), "snapshots": len(part),
            "first": link(linked.sort_values("step").iloc[0]) if not linked.empty else None,
            "last": link(part.iloc[-1]),
            "best": {"step": int(best.step), "layer": int(best[f + "layer"]), "head": int(best[f + "head"]),
                     "score": float(best[f + "score"]), "threshold": float(best[f + "threshold"]),
                     "chance": float(best[f + "chance"])}}
