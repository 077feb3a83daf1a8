"""Which encoder heads follow English syntax, measured against gold dependency parses (the paper's Figure 5).

The paper says that "many of the attention heads exhibit behaviour that seems related to the structure of the
sentence". Clark et al. 2019 ("What Does BERT Look At?") and Voita et al. 2019 ("Analyzing Multi-Head
Self-Attention", an NMT encoder) measure it: for each dependency relation, how often a head's strongest link
from a word lands on that word's syntactic partner, against the best fixed-offset baseline ("always the next
word"). This module does the same for our encoders, on Universal Dependencies (UD) treebanks in CoNLL-U: it
holds the scoring (pieces onto words, a corpus evaluation, the report, figure5_arcs); the parses it scores against
(UDSentence: read from CoNLL-U, the Figure 5 sentence, typed text parsed by spaCy) come from core.studies.conllu.

Words. The raw sentence (`# text = `) goes to the model; its SentencePiece pieces are mapped onto the UD words by
the characters they spell (whitespace ignored, counted in UTF-8 bytes so that byte-fallback pieces count too).
UD splits "don't" into "do" "n't", so a piece may straddle two words: it goes to the word it overlaps most (the
first on a tie), and a word left without a piece of its own is *unmapped*: its arcs are not scored (counted).
A sentence whose pieces spell another text (<unk>, a cut), or with fewer than two mapped words, is skipped (counted).
Word-level attention as everywhere in the project (core.tokenizer.merge_attention): attention *to* a word is the
sum over its pieces, *from* a word the mean over its pieces' rows; "</s>" is dropped.

Scores. An arc is (dependent, head, relation): the universal part of DEPREL before ":", except nmod:poss, which
is reported as "poss" (as Clark et al. do). Each arc is read in two directions: dep->head (the dependent's row
should point at its head) and head->dep (the head's row should point at the dependent). A head *follows* an
arc when the argmax of the query word's row over the OTHER words (never itself) is the gold partner. A head's
accuracy for a relation and direction is the share of its arcs it follows. The baseline is the best fixed
relative offset (partner = query + k words) for that relation and direction. The best head and the offset are
chosen on the first half of the sentences (file order); both are reported on the second half, with its number
of arcs. Voita et al.'s rule: the head is *syntactic* when its held-out accuracy beats the held-out baseline by
at least SYNTACTIC_MARGIN = 10 points. Only relations with at least MIN_ARCS arcs in each half are reported.

Layers and heads count from 1 in `SyntaxReport.rows` (what the command prints and writes), from 0 in arrays and
in figure5_arcs' table (as in core.studies.paper_figures).
"""
from __future__ import annotations

import bisect
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from core.tokenizer import clean_text, merge_attention
from core.views import sentence_only

from .alignment_gold import piece_bytes
from .conllu import SyntaxDataError, UDSentence, read_figure5

DIRECTIONS = ("dep->head", "head->dep")
MIN_ARCS = 20               # a relation is reported when each half has at least this many of its arcs
SYNTACTIC_MARGIN = 10.0     # Voita et al. 2019: syntactic = held-out accuracy >= baseline + 10 points


# --------------------------------------------------------------------------- pieces -> words

def _word_bytes(word: str) -> bytes:
    """A UD word as the model's pieces spell it: NFKC (as core.tokenizer.clean_text), no whitespace, UTF-8."""
    return "".join(unicodedata.normalize("NFKC", word).split()).encode("utf-8")


def piece_words(pieces: list[str], words: list[str]) -> list[int]:
    """The UD word each piece (no "</s>") belongs to, by the characters they spell.

    A piece that straddles two words goes to the one it overlaps most (the first on a tie); a lone "▁" to
    the word after it. Raises SyntaxDataError when the pieces spell another text (an <unk>, a cut).
    """
    spans = [piece_bytes(p) for p in pieces]
    if any(b is None for b in spans):
        raise SyntaxDataError("the model's tokenizer turned part of it into an unknown piece (<unk>)")
    word_bytes = [_word_bytes(w) for w in words]
    if b"".join(spans) != b"".join(word_bytes):
        raise SyntaxDataError("the model's pieces spell a different text than the gold words (cut, or changed "
                              "by normalisation)")
    ends = np.cumsum([len(b) for b in word_bytes]).tolist()     # word k covers bytes [ends[k-1], ends[k])
    out, pos = [], 0
    for b in spans:
        if not b:
            out.append(None)                                     # a lone "▁": the next word's, below
            continue
        start, stop = pos, pos + len(b)
        first, last = bisect.bisect_right(ends, start), bisect.bisect_right(ends, stop - 1)
        overlap = [min(stop, ends[w]) - max(start, ends[w - 1] if w else 0) for w in range(first, last + 1)]
        out.append(first + int(np.argmax(overlap)))
        pos = stop
    following = len(words) - 1
    for i in range(len(out) - 1, -1, -1):
        out[i] = following if out[i] is None else out[i]
        following = out[i]
    return out


@dataclass
class SentenceAttention:
    """One sentence's encoder self-attention on its UD words.

    maps (N, h, M, M): word-level, rows and columns the M mapped words in order ("</s>" dropped, rows not
    renormalised); words: the UD index of each row and column; unmapped: UD words without a piece of their own.
    """
    sentence: UDSentence
    maps: np.ndarray
    words: list
    unmapped: list

    def partners(self) -> np.ndarray:
        """(N, h, M): for each head and mapped word, the UD index of the OTHER word it attends most."""
        m = self.maps.copy()
        M = m.shape[-1]
        m[..., np.arange(M), np.arange(M)] = -np.inf
        return np.asarray(self.words)[m.argmax(-1)]

    def head_arcs(self, layer: int, head: int) -> list[tuple[int, int]]:
        """(word, the word it attends most) for every mapped word of one head (0-based), in UD indices."""
        return list(zip(self.words, self.partners()[layer, head].tolist()))


def word_attention(attn: np.ndarray, tokens: list[str], sentence: UDSentence) -> SentenceAttention:
    """Piece-level (N, h, S, S) encoder self-attention of `tokens` (source pieces + "</s>") on the sentence's
    UD words; SyntaxDataError when they cannot be mapped or fewer than two words get a piece."""
    pieces = list(tokens[:-1]) if tokens and tokens[-1] == "</s>" else list(tokens)
    assign = piece_words(pieces, sentence.words)
    mapped = sorted(set(assign))
    if len(mapped) < 2:
        raise SyntaxDataError("fewer than two of its words have a piece of their own")
    compact = {w: i for i, w in enumerate(mapped)}
    ids = [compact[w] for w in assign]
    n = len(pieces)
    maps = merge_attention(np.asarray(attn, dtype=np.float32)[..., :n, :n], ids, ids)
    return SentenceAttention(sentence, maps, mapped, sorted(set(range(len(sentence.words))) - set(mapped)))


def sentence_attention(result, sentence: UDSentence) -> SentenceAttention:
    """word_attention of an AttendResult (attend or attend_batch, encoder_only=True is enough)."""
    if result.truncated:
        raise SyntaxDataError("the sentence is longer than the model takes")
    result = sentence_only(result)                                      # the sentence's words: no prompt (T5)
    return word_attention(result.enc_self, result.src_tokens, sentence)


# --------------------------------------------------------------------------- a corpus

@dataclass
class Evaluation:
    """Every scored arc (both directions) of a corpus and, for each, which heads follow it.

    relations, directions (0: dep->head, 1: head->dep), offsets (partner - query, in words), first (the
    arc's sentence is in the selection half) and sentence (its index in `texts`, the used sentences' raw text)
    have one entry per directed arc; hits (arcs, N, h) bool; mass (arcs, N, h) the query word's attention on
    its partner.
    """
    n_layers: int
    n_heads: int
    n_sentences: int = 0
    n_first: int = 0                   # sentences in the selection half: the first n_sentences // 2
    used: int = 0
    used_first: int = 0                # used sentences of the selection half
    skipped: list = field(default_factory=list)       # (sentence id or line, reason)
    unmapped_words: int = 0
    dropped_arcs: int = 0              # arcs not scored because a word of theirs has no piece
    relations: list = field(default_factory=list)
    directions: list = field(default_factory=list)
    offsets: list = field(default_factory=list)
    first: list = field(default_factory=list)
    hits: list = field(default_factory=list)
    mass: list = field(default_factory=list)
    sentence: list = field(default_factory=list)
    texts: list = field(default_factory=list)
    seconds: float = 0.0

    def add(self, sa: SentenceAttention, first: bool) -> None:
        """Count one sentence's arcs."""
        pred = sa.partners()                                     # (N, h, M) UD indices
        row = {w: i for i, w in enumerate(sa.words)}
        self.used += 1
        self.used_first += first
        self.unmapped_words += len(sa.unmapped)
        self.texts.append(sa.sentence.text)
        for dep, head, rel in sa.sentence.arcs():
            if dep not in row or head not in row:
                self.dropped_arcs += 1
                continue
            for direction, (q, p) in enumerate(((dep, head), (head, dep))):
                self.relations.append(rel)
                self.directions.append(direction)
                self.offsets.append(p - q)
                self.first.append(first)
                self.hits.append(pred[..., row[q]] == p)
                self.mass.append(sa.maps[..., row[q], row[p]])
                self.sentence.append(self.used - 1)


def evaluate(tm, sentences: list[UDSentence], batch_size: int = 48, chunk: int = 512,
             progress=None, on_sentence=None) -> Evaluation:
    """Run every sentence's raw text through the encoder (attend_batch, encoder_only=True, `chunk` sentences
    at a time to bound memory) and record which heads follow each gold arc.

    progress: optional callable(done, total), after each batch. on_sentence: optional callable(SentenceAttention,
    first) after each used sentence is counted, for other scores of the same maps (core.studies.atlas).
    """
    t0 = time.time()
    ev = Evaluation(tm.cfg.N, tm.cfg.h, n_sentences=len(sentences), n_first=len(sentences) // 2)
    usable = []
    for k, s in enumerate(sentences):
        if not clean_text(s.text):
            ev.skipped.append((s.where, "it has no text"))
        elif not s.arcs():
            ev.skipped.append((s.where, "one word: no arc to score"))
        else:
            usable.append(k)
    done = len(sentences) - len(usable)                        # progress counts the sentences skipped above as done
    for start in range(0, len(usable), chunk):
        part = usable[start: start + chunk]
        def tick(n, _total, before=done):
            if progress is not None:
                progress(before + n, len(sentences))
        results = tm.attend_batch([sentences[k].text for k in part], batch_size=batch_size, encoder_only=True,
                                  progress=tick)
        for k, res in zip(part, results):
            try:
                sa = sentence_attention(res, sentences[k])
            except SyntaxDataError as e:
                ev.skipped.append((sentences[k].where, str(e)))
                continue
            ev.add(sa, k < ev.n_first)
            if on_sentence is not None:
                on_sentence(sa, k < ev.n_first)
        done += len(part)
    ev.seconds = time.time() - t0
    return ev


# --------------------------------------------------------------------------- choosing on one half, reporting the other

def is_syntactic(accuracy: float, baseline: float) -> bool:
    """Voita et al.'s rule on held-out percentages: at least SYNTACTIC_MARGIN points over the baseline."""
    return bool(round(accuracy - baseline, 6) >= SYNTACTIC_MARGIN)     # round: 60.000000001 - 50 is 10


def best_offset(offsets: np.ndarray) -> int:
    """The relative offset most arcs have (ties: the smaller distance, then the one to the left)."""
    counts = Counter(int(k) for k in offsets)
    return min(counts, key=lambda k: (-counts[k], abs(k), k))


@dataclass
class SyntaxReport:
    """What a corpus says: one row per relation and direction with enough arcs, and every head's held-out score.

    rows: {"relation", "direction", "n" (held-out arcs), "layer", "head" (the head chosen on the first half,
    1-based), "accuracy", "baseline" (held-out, %), "offset" (the baseline's, chosen on the first half),
    "syntactic" (Voita's rule)}. heldout: (relation, direction) -> (N, h) held-out accuracy of every head in %,
    for a heads x relations grid (minus the row's baseline).
    """
    rows: list
    heldout: dict
    sentences: int
    skipped: int
    skipped_reasons: list
    unmapped_words: int
    dropped_arcs: int
    halves: dict
    min_arcs: int
    seconds: float

    def to_json(self) -> dict:
        """The command's JSON: {"sentences", "skipped", "relations": rows}."""
        return {"sentences": self.sentences, "skipped": self.skipped, "relations": self.rows}

    @property
    def syntactic(self) -> list:
        """The rows whose head is syntactic."""
        return [r for r in self.rows if r["syntactic"]]

    def layers(self) -> dict:
        """1-based layer -> the relations ("nsubj dep->head") whose syntactic head sits in it, layers in order."""
        out = {}
        for r in sorted(self.syntactic, key=lambda r: (r["layer"], r["head"])):
            out.setdefault(r["layer"], []).append(f"{r['relation']} {r['direction']}")
        return out


def report(ev: Evaluation, min_arcs: int = MIN_ARCS) -> SyntaxReport:
    """The best head and the best offset of each relation and direction, chosen on the first half of the
    sentences and scored on the second; only relations with >= min_arcs arcs in each half."""
    if not ev.used:
        first_reason = f" (the first reason: {ev.skipped[0][1]})" if ev.skipped else ""
        raise SyntaxDataError(f"none of the {ev.n_sentences} sentences could be used{first_reason}.")
    rels, dirs = np.asarray(ev.relations), np.asarray(ev.directions, dtype=int)
    offsets, first = np.asarray(ev.offsets, dtype=int), np.asarray(ev.first, dtype=bool)
    hits = np.asarray(ev.hits, dtype=bool).reshape(len(rels), ev.n_layers, ev.n_heads)
    total = Counter(rels[dirs == 0].tolist())
    rows, heldout = [], {}
    for rel in sorted(total, key=lambda r: (-total[r], r)):
        for d, direction in enumerate(DIRECTIONS):
            sel = (rels == rel) & (dirs == d)
            one, two = sel & first, sel & ~first
            if one.sum() < min_arcs or two.sum() < min_arcs:
                continue
            acc_one, acc_two = hits[one].mean(0), hits[two].mean(0)        # (N, h)
            layer, head = np.unravel_index(int(np.argmax(acc_one)), acc_one.shape)   # first max: lowest layer
            k = best_offset(offsets[one])
            accuracy, baseline = 100 * float(acc_two[layer, head]), 100 * float(np.mean(offsets[two] == k))
            heldout[rel, direction] = 100 * acc_two
            rows.append({"relation": rel, "direction": direction, "n": int(two.sum()), "layer": int(layer) + 1,
                         "head": int(head) + 1, "accuracy": round(accuracy, 1), "baseline": round(baseline, 1),
                         "offset": k, "syntactic": is_syntactic(accuracy, baseline)})
    return SyntaxReport(rows, heldout, ev.used, len(ev.skipped), sorted({why for _, why in ev.skipped}),
                        ev.unmapped_words, ev.dropped_arcs,
                        {"first": ev.n_first, "second": ev.n_sentences - ev.n_first}, min_arcs, round(ev.seconds, 1))


def card_summary(rep: SyntaxReport, conllu: str) -> dict:
    """What a model card keeps: the syntactic heads by relation and layer, and how many sentences gave them."""
    keys = ("relation", "direction", "layer", "head", "accuracy", "baseline", "offset", "n")
    return {"conllu": conllu, "sentences": rep.sentences, "skipped": rep.skipped, "halves": rep.halves,
            "relations_scored": len(rep.rows), "min_arcs": rep.min_arcs,
            "rule": (f"best head and offset chosen on the first half of the sentences; syntactic when its held-out "
                     f"accuracy is >= the offset baseline + {SYNTACTIC_MARGIN:g} points (Voita et al. 2019)"),
            "syntactic": [{k: r[k] for k in keys} for r in rep.syntactic],
            "layers": {str(layer): rels for layer, rels in rep.layers().items()},
            "seconds": rep.seconds}


# --------------------------------------------------------------------------- the paper's Figure 5 sentence

def figure5_arcs(attn: np.ndarray, tokens: list[str], parse: UDSentence | None = None) -> pd.DataFrame:
    """Every head (0-based) on one gold-parsed sentence (default: the paper's, read_figure5): which gold arcs
    its strongest links follow, in both directions.

    Columns: layer, head, score (share of the sentence's directed arcs it follows), followed (how many), arcs
    (how many there are), relation and direction (the relation it follows most often; None if none),
    relation_followed and relation_arcs (its arcs followed, of that relation and direction's arcs), links (the
    followed arcs as (query word, partner word, relation, direction), UD indices). Best score first.
    """
    parse = read_figure5() if parse is None else parse
    sa = word_attention(attn, tokens, parse)
    pred, row = sa.partners(), {w: i for i, w in enumerate(sa.words)}
    directed = [(q, p, rel, direction) for dep, head, rel in parse.arcs()
                for direction, (q, p) in zip(DIRECTIONS, ((dep, head), (head, dep))) if q in row and p in row]
    of = Counter((rel, direction) for _, _, rel, direction in directed)
    records = []
    for layer in range(pred.shape[0]):
        for head in range(pred.shape[1]):
            links = [a for a in directed if pred[layer, head, row[a[0]]] == a[1]]
            got = Counter((rel, direction) for _, _, rel, direction in links)
            main = min(got, key=lambda k: (-got[k], -got[k] / of[k], k)) if got else (None, None)
            records.append({"layer": layer, "head": head, "score": len(links) / len(directed) if directed else 0.0,
                            "followed": len(links), "arcs": len(directed), "relation": main[0],
                            "direction": main[1], "relation_followed": got.get(main, 0),
                            "relation_arcs": of.get(main, 0), "links": links})
    return pd.DataFrame(records).sort_values(["score", "layer", "head"], ascending=[False, True, True],
                                             ignore_index=True)
