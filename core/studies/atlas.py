"""An atlas of every head: each head of each kind (encoder self, decoder self, cross) named by its strongest role
over a corpus, measured against that role's baseline.

Every role is a hit rate in % (how often the head's strongest link is the one the role says) beside the hit rate
of its baseline, and a head *has* a role when it beats the baseline by at least MARGIN = 10 points (the margin of
Voita et al. 2019's rule, core.studies.syntax). Its role is the one it beats by most; resting (on </s> or <s>: the
way a head does nothing, Clark et al. 2019) is named only for a head with no other role. A head with none says so.

Encoder self-attention, on the gold-parsed English sentences of UD English EWT dev (words, core.studies.syntax):
  previous, next   the word's strongest link to another word is the word before (after) it; baseline: a random
                   pick among the other words (1 / (words - 1) a row)
  syntax           it follows a dependency relation (the head's best relation and direction, and that relation's
                   best fixed offset as baseline, chosen on the first half of the sentences, scored on the second)
  long             it follows dependencies 8+ words long (core.studies.long_arcs: held-out, against the best
                   fixed offset)
  anaphora         a pronoun's strongest link is its antecedent (core/studies/probes/anaphora_en.jsonl,
                   core.studies.emergence); baseline: a random pick among the pronoun's candidates
  resting          a word's row puts more on </s> than on any word; baseline: 1 / (words + 1)
Decoder self-attention and cross-attention, teacher-forced on the English-German gold-aligned pairs (RWTH):
  previous         (decoder) a target piece's row is strongest on the piece before it; baseline: 1 / visible
  alignment        (cross) one link per German word to the English word its row attends most, the row being the
                   step that has just read it (Shift-Att): 100 - AER against the gold links; baseline: the
                   diagonal (core.studies.alignment)
  next_source      (cross) the same with the row that writes the word: it looks at the source word being
                   translated next
  resting          (decoder) row strongest on <s>; (cross) on </s>; baseline: 1 / visible keys
Layers and heads count from 0 in arrays, from 1 in the atlas JSON. Each head keeps the corpus sentences where it
does its role most (EXAMPLES of them, short ones), so that a page can open them in the explorer.
"""
from __future__ import annotations

import datetime
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.checkpoint.atomic import atomic_write
from core.views import sentence_only

from . import alignment as al
from . import long_arcs as la
from . import syntax as sx
from .alignment_gold import AlignmentError, gold_masks, model_text, read_gold
from .analysis import load_anaphora
from .conllu import SyntaxDataError, read_conllu
from .emergence import hit_rates, lines_up, pronoun_rows, sentence_hits

KINDS = ("enc_self", "dec_self", "cross")
ROLES = {   # name -> what a student reads
    "previous": "looks at the previous token",
    "next": "looks at the next word",
    "syntax": "follows a syntactic relation",
    "long": "follows dependencies 8+ words long",
    "anaphora": "points from a pronoun to its antecedent",
    "alignment": "aligns each word with its source word (100 - AER)",
    "next_source": "looks at the source word being translated next (100 - AER)",
    "resting": "rests on </s> or <s> (does nothing)",
    "induction": "an induction head: looks at the token after the previous occurrence of its own",
    "duplicate": "looks at the previous occurrence of its own token",
    "sink": "parks its attention on the first token, [CLS] or [SEP] (does nothing)",
}
RESTING = ("resting", "sink")   # the roles of a head that does nothing: named only for a head with no other role
LM_KIND = "self"                # a language model's one kind of map (core.studies.lm_atlas)
EVERY_KIND = (*KINDS, LM_KIND)
MARGIN = 10.0           # points over the baseline for a role to count (Voita et al. 2019's margin)
EXAMPLES = 2            # sentences kept per head
SHORT = 25              # words: longer sentences are not kept as examples (they must read in the explorer)
FILE = "atlas.json"


# --------------------------------------------------------------------------- counting hits

@dataclass
class Tally:
    """One role's hits of every head, sentence by sentence: hits (N, h) and chance (the baseline's expected hits)
    and rows (how many rows could hit) per sentence; sentence: its index into the corpus' texts."""
    hits: list = field(default_factory=list)
    chance: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    sentence: list = field(default_factory=list)

    def add(self, hits: np.ndarray, chance: float, rows: int, sentence: int) -> None:
        if rows:
            self.hits.append(hits)
            self.chance.append(chance)
            self.rows.append(rows)
            self.sentence.append(sentence)

    def score(self) -> tuple[np.ndarray, float]:
        """(hit rate of every head (N, h) in %, the baseline's in %)."""
        n = max(sum(self.rows), 1)
        return 100 * np.sum(self.hits, 0) / n, 100 * sum(self.chance) / n

    def per_sentence(self) -> tuple[np.ndarray, np.ndarray]:
        """(hits (sentences, N, h), their corpus indices) for choosing examples."""
        return np.asarray(self.hits), np.asarray(self.sentence)


def row_hits(maps: np.ndarray, rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """(..., Tq, Tk) maps -> (...) how many of `rows` have their argmax at the matching entry of `keys`."""
    if not len(rows):
        return np.zeros(maps.shape[:-2], dtype=int)
    return (maps[..., rows, :].argmax(-1) == keys).sum(-1)


class EncoderTally:
    """previous, next and resting of one corpus' SentenceAttentions (an on_sentence of syntax.evaluate)."""

    def __init__(self):
        self.roles = {r: Tally() for r in ("previous", "next", "resting")}
        self.n = 0

    def __call__(self, sa: sx.SentenceAttention, first: bool) -> None:
        m = sa.maps.copy()                                           # (N, h, M, M) words, "</s>" left out
        M = m.shape[-1]
        eos = 1.0 - m.sum(-1)                                        # what the row gave "</s>"
        resting = (eos > m.max(-1)).sum(-1)                          # (N, h)
        m[..., np.arange(M), np.arange(M)] = -np.inf                 # the strongest link to ANOTHER word
        idx = np.arange(M)
        # neighbours in the sentence's own words: a word without a piece breaks the chain
        words = np.asarray(sa.words)
        has_prev = idx[1:][words[1:] - words[:-1] == 1]
        self.roles["previous"].add(row_hits(m, has_prev, has_prev - 1), len(has_prev) / max(M - 1, 1),
                                   len(has_prev), self.n)
        has_next = has_prev - 1
        self.roles["next"].add(row_hits(m, has_next, has_next + 1), len(has_next) / max(M - 1, 1),
                               len(has_next), self.n)
        self.roles["resting"].add(resting, M / (M + 1), M, self.n)
        self.n += 1


def arc_tally(ev: sx.Evaluation, select: np.ndarray) -> np.ndarray:
    """(sentences, N, h): how many of the selected directed arcs each head follows in each used sentence."""
    hits = np.asarray(ev.hits, dtype=bool).reshape(-1, ev.n_layers, ev.n_heads)[select]
    out = np.zeros((ev.used, ev.n_layers, ev.n_heads))
    np.add.at(out, np.asarray(ev.sentence, dtype=int)[select], hits)
    return out


# --------------------------------------------------------------------------- roles of a head

@dataclass
class RoleScores:
    """One kind's role scores: role -> (score (N, h), baseline (N, h)) in %, detail -> (N, h) strings (the
    relation a syntax head follows), examples: role -> (hits (sentences, N, h), corpus indices)."""
    scores: dict = field(default_factory=dict)
    detail: dict = field(default_factory=dict)
    examples: dict = field(default_factory=dict)
    sentences: int = 0             # the corpus sentences scored (the anaphora set aside)

    def put(self, role: str, score: np.ndarray, baseline, per_sentence=None) -> None:
        self.scores[role] = (np.asarray(score, dtype=float), np.broadcast_to(np.asarray(baseline, float),
                                                                              np.shape(score)))
        if per_sentence is not None:
            self.examples[role] = per_sentence


def strongest(scores: dict, layer: int, head: int) -> tuple[str | None, float]:
    """(the head's role, its margin in points): the working role it beats the baseline by most, if by at least
    MARGIN; else resting if that does; else (None, best margin)."""
    margins = {r: float(s[layer, head] - b[layer, head]) for r, (s, b) in scores.items()}
    working = {r: m for r, m in margins.items() if r not in RESTING}
    best = max(working, key=working.get) if working else None
    if best is not None and working[best] >= MARGIN:
        return best, working[best]
    resting = {r: m for r, m in margins.items() if r in RESTING}
    rest = max(resting, key=resting.get) if resting else None
    if rest is not None and resting[rest] >= MARGIN:
        return rest, resting[rest]
    return None, max(margins.values(), default=0.0)


def syntax_scores(ev: sx.Evaluation, min_arcs: int = sx.MIN_ARCS):
    """(score (N, h), baseline (N, h), relation names (N, h), per-sentence hits (sentences, N, h) of each head's
    relation): for each head the relation and direction it beats its offset baseline by most on the first half
    of the sentences, scored on the second; None when no relation has min_arcs arcs in each half."""
    rels, dirs = np.asarray(ev.relations), np.asarray(ev.directions, dtype=int)
    offsets, first = np.asarray(ev.offsets, dtype=int), np.asarray(ev.first, dtype=bool)
    hits = np.asarray(ev.hits, dtype=bool).reshape(len(rels), ev.n_layers, ev.n_heads)
    found = []                                     # (name, select, margin on the first half, held-out, baseline)
    for rel in sorted(set(rels.tolist())):
        for d, direction in enumerate(sx.DIRECTIONS):
            sel = (rels == rel) & (dirs == d)
            one, two = sel & first, sel & ~first
            if one.sum() < min_arcs or two.sum() < min_arcs:
                continue
            k = sx.best_offset(offsets[one])
            found.append((f"{rel} {direction}", sel, 100 * (hits[one].mean(0) - np.mean(offsets[one] == k)),
                          100 * hits[two].mean(0), 100 * float(np.mean(offsets[two] == k))))
    if not found:
        return None
    pick = np.argmax(np.stack([f[2] for f in found]), 0)                    # (N, h): each head's relation
    score = np.choose(pick, [f[3] for f in found])
    baseline = np.asarray([f[4] for f in found])[pick]
    names = np.asarray([f[0] for f in found], dtype=object)[pick]
    tallies = np.stack([arc_tally(ev, f[1]) for f in found])                # (R, sentences, N, h)
    per_sentence = np.take_along_axis(tallies, pick[None, None], 0)[0]
    return score, baseline, names, per_sentence


def encoder_roles(tm, sentences: list, progress=None) -> tuple[RoleScores, list]:
    """The encoder's roles on gold-parsed sentences (and the anaphora set); (RoleScores, texts of the corpus)."""
    tally = EncoderTally()
    ev = sx.evaluate(tm, sentences, progress=progress, on_sentence=tally)
    out, texts = RoleScores(), list(ev.texts)
    out.sentences = ev.used
    for role, t in tally.roles.items():
        if t.hits:                                       # a role no row could hit (one-word sentences) is left out
            out.put(role, *t.score(), t.per_sentence())
    if found := syntax_scores(ev):
        score, baseline, names, per_sentence = found
        out.put("syntax", score, baseline, (per_sentence, np.arange(ev.used)))
        out.detail["syntax"] = names
    try:
        rep = la.report(ev)
    except sx.SyntaxDataError:
        rep = None
    if rep is not None and (row := rep.row(la.LONG)):
        long = la.bucket_of(ev.offsets) == la.BUCKETS.index(next(b for b in la.BUCKETS if b[0] == la.LONG))
        out.put("long", rep.follows[la.LONG], row["baseline"], (arc_tally(ev, long), np.arange(ev.used)))
    anaphora_role(tm, out, texts)
    return out, texts


def anaphora_role(tm, out: RoleScores, texts: list) -> None:
    """The anaphora role on the annotated pronoun set; its sentences join `texts`."""
    items, where = [], []
    sets = load_anaphora()
    for a, r in zip(sets, tm.attend_batch([a["text"] for a in sets], encoder_only=True)):
        r = sentence_only(r)                                            # the sentence's words: no prompt (T5)
        if lines_up(a["text"], r.src_tokens) and not r.truncated:
            items.append((r.src_tokens, pronoun_rows(r.enc_self, r.src_tokens, a["pronoun_index"]),
                          a["pronoun_index"], a["antecedent_index"]))
            where.append(len(texts))
            texts.append(a["text"])
    if not items:
        return
    rates, chance = hit_rates(items)
    out.put("anaphora", 100 * rates, 100 * chance, (sentence_hits(items).astype(float), np.asarray(where)))


def attend_pairs(tm, pairs: list, progress=None, chunk: int = 128):
    """The AttendResults of gold pairs teacher-forced on their German, `chunk` pairs at a time (bounded memory)."""
    for start in range(0, len(pairs), chunk):
        part = pairs[start: start + chunk]
        def tick(done, _total, before=start):
            if progress is not None:
                progress(before + done, len(pairs))
        results = tm.attend_batch(*zip(*(model_text(p) for p in part)), progress=tick)
        yield from (sentence_only(r) for r in results)                 # the sentence's words: no prompt (T5)


def decoder_roles(tm, pairs: list, progress=None) -> tuple[RoleScores, RoleScores, list]:
    """Decoder self- and cross-attention roles on gold-aligned pairs, teacher-forced; (dec, cross, pair texts)."""
    dec = {"previous": Tally(), "resting": Tally()}
    cross_rest, texts = Tally(), []
    aer = {shift: [] for shift in al.SHIFTS}
    diagonal = []
    for pair, res in zip(pairs, attend_pairs(tm, pairs, progress)):
        try:
            slots = al.gold_slots(res, pair)
        except (AlignmentError, ValueError):
            continue
        n = len(texts)
        texts.append((res.src, res.tgt))
        T = res.dec_self.shape[-1]
        rows = np.arange(1, T)                                  # row 0 (<s>) sees only itself
        visible = float(np.sum(1.0 / (rows + 1)))
        dec["previous"].add(row_hits(res.dec_self, rows, rows - 1), visible, len(rows), n)
        dec["resting"].add(row_hits(res.dec_self, rows, np.zeros_like(rows)), visible, len(rows), n)
        S = res.cross.shape[-1]
        cross_rest.add(row_hits(res.cross, np.arange(T), np.full(T, S - 1)), T / S, T, n)
        S_gold, P_gold = gold_masks(pair)
        for shift in al.SHIFTS:
            maps = al.word_maps(res, shift, *slots)                 # (N_dec, h, W_tgt, W_src)
            aer[shift].append(al.counts(al.predict(maps), S_gold, P_gold))       # (N_dec, h, 4)
        diagonal.append(al.counts(al.predict(al.diagonal_map(*S_gold.shape)), S_gold, P_gold))
    d, c = RoleScores(), RoleScores()
    if not texts:
        return d, c, texts
    for role, t in dec.items():
        if t.hits:
            d.put(role, *t.score(), t.per_sentence())
    c.put("resting", *cross_rest.score(), cross_rest.per_sentence())
    base = 100 * (1 - al.scores(np.sum(diagonal, 0))["aer"])
    for role, shift in (("alignment", "read"), ("next_source", "produced")):
        per_pair = np.asarray(aer[shift])                             # (pairs, N_dec, h, 4)
        total = per_pair.sum(0)
        score = 100 * (1 - np.vectorize(lambda *x: al.scores(x)["aer"])(*np.moveaxis(total, -1, 0)))
        right = per_pair[..., 0] + per_pair[..., 1]                   # |A∩S| + |A∩P|: hits of a pair
        c.put(role, score, base, (right, np.arange(len(texts))))
    return d, c, texts


# --------------------------------------------------------------------------- the atlas

def load_corpora(languages: tuple[str, str], conllu=None, gold=None) -> tuple[list | None, list | None, list]:
    """(UD sentences, gold pairs, notes) for a model translating languages (source, target), two-letter codes:
    the encoder roles need an English source, the decoder and cross roles English -> German. conllu, gold: the
    files (None: the evaluation data, read in place). A missing corpus is None, with a note saying why."""
    sentences = pairs = None
    notes = []
    if languages[0] != "en":
        notes.append("The encoder's roles need a model with an English source (the gold parses and the anaphora "
                     "set are English).")
    else:
        try:
            sentences = read_conllu(conllu)
        except SyntaxDataError as e:
            notes.append(f"The encoder's roles need the gold parses: {e}")
    if tuple(languages) != ("en", "de"):
        notes.append("The decoder and cross-attention roles need an English -> German model (the gold word "
                     "alignments are English-German).")
    else:
        try:
            pairs = read_gold(gold)
        except AlignmentError as e:
            notes.append(f"The decoder and cross-attention roles need the gold alignments: {e}")
    return sentences, pairs, notes


def examples(per_sentence, layer: int, head: int, texts: list, k: int = EXAMPLES) -> list[int]:
    """The corpus indices of the k short sentences where head (layer, head) hits its role most often."""
    hits, where = per_sentence
    def words(i):
        t = texts[i]
        return len((t[0] if isinstance(t, tuple) else t).split())
    order = sorted(range(len(where)), key=lambda j: (-hits[j][layer, head], words(where[j])))
    return [int(where[j]) for j in order if hits[j][layer, head] > 0 and words(where[j]) <= SHORT][:k]


def head_entries(rs: RoleScores, texts: list, offset: int, shape: tuple) -> list:
    """One dict per head (1-based layer and head): its role, margin, every role's [score, baseline], examples
    (indices into the atlas' sentences, `offset` onwards)."""
    out = []
    for layer in range(shape[0]):
        for head in range(shape[1]):
            role, margin = strongest(rs.scores, layer, head)
            entry = {"layer": layer + 1, "head": head + 1, "role": role, "margin": round(margin, 1),
                     "scores": {r: [round(float(s[layer, head]), 1), round(float(b[layer, head]), 1)]
                                for r, (s, b) in rs.scores.items()}}
            if role in rs.detail:
                entry["detail"] = str(rs.detail[role][layer, head])
            if role in rs.examples:
                entry["examples"] = [offset + i for i in examples(rs.examples[role], layer, head, texts)]
            out.append(entry)
    return out


def compute_atlas(tm, sentences: list | None, pairs: list | None, name: str = "", progress=None) -> dict:
    """Every head's roles: encoder roles on `sentences` (UD, None: skipped, e.g. a source that is not English),
    decoder and cross roles on `pairs` (gold-aligned English-German, None: skipped). progress(done, total, text)."""
    t0 = time.time()
    heads, sentences_out, corpus = {}, [], {}
    def stage(text, base, share):
        return None if progress is None else lambda done, total: progress(base + share * done / max(total, 1), 1,
                                                                           text)
    if sentences:
        rs, texts = encoder_roles(tm, sentences, stage("Encoder heads on gold-parsed sentences", 0.0, 0.6))
        corpus["enc_self"] = (f"UD English EWT dev ({rs.sentences:,} sentences) and the anaphora set "
                              f"({len(texts) - rs.sentences} sentences)")
        heads["enc_self"] = head_entries(rs, texts, len(sentences_out), (tm.cfg.N, tm.cfg.h))
        sentences_out += [[t, None] for t in texts]
    if pairs:
        d, c, texts = decoder_roles(tm, pairs, stage("Decoder heads on gold-aligned pairs", 0.6, 0.4))
        if texts:
            corpus["dec_self"] = corpus["cross"] = f"RWTH English-German gold alignments ({len(texts)} pairs)"
            for kind, rs in (("dec_self", d), ("cross", c)):
                heads[kind] = head_entries(rs, texts, len(sentences_out), (tm.cfg.N_dec, tm.cfg.h))
            sentences_out += [list(t) for t in texts]
    if progress is not None:
        progress(1, 1, "Done")
    return atlas_dict(name, corpus, heads, sentences_out, t0)


def atlas_dict(name: str, corpus: dict, heads: dict, sentences: list, t0: float) -> dict:
    """The atlas JSON: heads of each kind, keeping of `sentences` only the examples (renumbered), dated and timed
    from t0 (time.time() when the computation began)."""
    used = sorted({i for entries in heads.values() for e in entries for i in e.get("examples", [])})
    renumber = {old: new for new, old in enumerate(used)}                 # keep only the example sentences
    for entries in heads.values():
        for e in entries:
            if "examples" in e:
                e["examples"] = [renumber[i] for i in e["examples"]]
    return {"checkpoint": name, "date": datetime.date.today().isoformat(), "corpus": corpus, "margin": MARGIN,
            "seconds": round(time.time() - t0, 1), "heads": heads, "sentences": [sentences[i] for i in used]}


def roles_by_layer(atlas: dict, kind: str) -> dict:
    """1-based layer -> {role or "none": how many heads}, for a report."""
    out = {}
    for e in atlas["heads"].get(kind, []):
        layer = out.setdefault(e["layer"], {})
        layer[e["role"] or "none"] = layer.get(e["role"] or "none", 0) + 1
    return out


def write_atlas(folder, atlas: dict) -> None:
    """The atlas into a checkpoint folder (FILE), compact JSON, atomically."""
    atomic_write(Path(folder) / FILE, json.dumps(atlas, ensure_ascii=False, separators=(",", ":")))


def read_atlas(folder) -> dict | None:
    """A checkpoint's atlas, None when it has none (or an unreadable one)."""
    try:
        return json.loads((Path(folder) / FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
