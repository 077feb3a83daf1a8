"""core.studies.syntax: pieces onto UD words, and heads scored against gold arcs on hand-built attention where the
right head and the right offset are known; the held-out split, Voita's rule, Figure 5's arcs."""
from types import SimpleNamespace

import numpy as np
import pytest

import core
from core.studies import conllu
from core.studies import syntax as sx
from core.studies.paper_figures import FIGURE45_SENTENCE
from tests.helpers import stopping_model


def ud(words, heads, deprels, text=None):
    """A UDSentence from 1-based heads (0: root), as a CoNLL-U file writes them."""
    return conllu.UDSentence(text or " ".join(words), list(words), [h - 1 for h in heads], list(deprels))


# ----------------------------------------------------------------------------- pieces -> words

def test_piece_words_by_characters_and_overlap():
    words = ["I", "do", "n't", "like", "cats", "."]
    # "▁don" spells "do" + "n" of "n't": it straddles two words and goes to the one it overlaps most, "do"
    assert sx.piece_words(["▁I", "▁don", "'", "t", "▁like", "▁cats", "."], words) == [0, 1, 2, 2, 3, 4, 5]
    # "▁cats." straddles "cats" and ".": "." keeps no piece of its own
    assert sx.piece_words(["▁I", "▁do", "n't", "▁like", "▁cats."], words) == [0, 1, 2, 3, 4]
    # a tie goes to the first word; a lone "▁" to the word after it; byte-fallback pieces count as their bytes
    assert sx.piece_words(["▁", "ab", "<0xC3>", "<0xA4>"], ["a", "b", "ä"]) == [0, 0, 2, 2]


def test_piece_words_refuses_another_text():
    with pytest.raises(conllu.SyntaxDataError, match="unknown piece"):
        sx.piece_words(["▁I", "<unk>"], ["I", "do"])
    with pytest.raises(conllu.SyntaxDataError, match="different text"):
        sx.piece_words(["▁I", "▁d"], ["I", "do"])


def test_word_attention_sums_columns_and_averages_rows_without_eos():
    s = ud(["I", "do", "n't", "go"], [4, 4, 4, 0], ["nsubj", "aux", "advmod", "root"], "I don't go")
    tokens = ["▁I", "▁don", "'", "t", "▁go", "</s>"]               # "n't" is two pieces, "</s>" is dropped
    attn = np.random.default_rng(0).dirichlet(np.ones(6), size=(1, 1, 6))
    sa = sx.word_attention(attn, tokens, s)
    assert sa.words == [0, 1, 2, 3] and sa.unmapped == [] and sa.maps.shape == (1, 1, 4, 4)
    a = attn[0, 0]
    assert sa.maps[0, 0, 2, 1] == pytest.approx((a[2, 1] + a[3, 1]) / 2)          # from n't: mean of its rows
    assert sa.maps[0, 0, 0, 2] == pytest.approx(a[0, 2] + a[0, 3])                # to n't: sum of its columns
    assert np.all(sa.maps.sum(-1) < 1)                                            # </s> took its share away


# ----------------------------------------------------------------------------- heads against gold arcs

# "the dog saw a cat" (det offsets +1) and "the big dog saw a small cat" (det offsets +2)
SHORT = ud("the dog saw a cat".split(), [2, 3, 0, 5, 3], ["det", "nsubj", "root", "det", "obj"])
LONG = ud("the big dog saw a small cat".split(), [3, 3, 4, 0, 7, 7, 4],
          ["det", "amod", "nsubj", "root", "det", "amod", "obj"])


def one_hot_maps(sentence, policies):
    """Piece-level (N, h, S, S) maps, one piece per word + "</s>", where head (l, k) of `policies` sends each word's
    row (almost all of it) to policies[l][k](sentence, word); and the tokens."""
    n = len(sentence.words)
    N, h = len(policies), len(policies[0])
    attn = np.full((N, h, n + 1, n + 1), 0.01)
    for layer in range(N):
        for head in range(h):
            for q in range(n):
                attn[layer, head, q, policies[layer][head](sentence, q)] = 1.0
    attn /= attn.sum(-1, keepdims=True)
    return attn, ["▁" + w for w in sentence.words] + ["</s>"]


def to_head(s, q):
    """A perfect dep->head head (the root looks at the next word)."""
    return s.heads[q] if s.heads[q] >= 0 else (q + 1) % len(s.words)


def to_next(s, q):
    return (q + 1) % len(s.words)


def to_start(s, q):
    """Looks at the first word (the second from the first word): follows nothing here."""
    return 1 if q == 0 else 0


def evaluation(sentences, policies):
    ev = sx.Evaluation(len(policies), len(policies[0]), n_sentences=len(sentences), n_first=len(sentences) // 2)
    for k, s in enumerate(sentences):
        ev.add(sx.word_attention(*one_hot_maps(s, policies), s), k < ev.n_first)
    return ev


def row(rep, relation, direction):
    return next(r for r in rep.rows if (r["relation"], r["direction"]) == (relation, direction))


def test_the_right_head_and_the_right_offset():
    sentences = [SHORT, SHORT, SHORT, LONG] + [SHORT, LONG, LONG, LONG]          # first half mostly +1, then +2
    rep = sx.report(evaluation(sentences, [[to_next, to_start], [to_start, to_head]]), min_arcs=1)
    det = row(rep, "det", "dep->head")
    # layer 2 head 2 (1-based) follows every arc; the offset +1 was chosen on the first half (6 of 8 det arcs)
    # and holds for 2 of the other 8: 25%
    assert (det["layer"], det["head"], det["accuracy"], det["offset"], det["baseline"]) == (2, 2, 100.0, 1, 25.0)
    assert det["n"] == 8 and det["syntactic"] is True
    nsubj = row(rep, "nsubj", "dep->head")                                       # always the next word: +1
    assert (nsubj["offset"], nsubj["baseline"], nsubj["accuracy"], nsubj["syntactic"]) == (1, 100.0, 100.0, False)
    assert nsubj["layer"] == 1 and nsubj["head"] == 1             # the next-word head ties, and comes first
    obj = row(rep, "obj", "head->dep")                                          # saw -> cat: +2 in SHORT, +3 in LONG
    assert (obj["offset"], obj["baseline"], obj["n"]) == (2, 25.0, 4)
    assert rep.heldout["det", "dep->head"].shape == (2, 2) and rep.heldout["det", "dep->head"][1, 1] == 100.0
    # "the first word" follows det head->dep on "the dog" (50%, over a 25% baseline): syntactic too, in layer 1
    assert row(rep, "det", "head->dep")["layer"] == 1 and row(rep, "det", "head->dep")["syntactic"]
    assert rep.layers() == {1: ["det head->dep"], 2: ["det dep->head", "obj dep->head"]}
    assert rep.to_json() == {"sentences": 8, "skipped": 0, "relations": rep.rows}


def first_only(s, q):
    """Right on the SHORT sentences (the first half below), wrong on the others."""
    return to_head(s, q) if s is SHORT else to_start(s, q)


def second_only(s, q):
    return to_head(s, q) if s is LONG else to_start(s, q)


def test_the_head_is_chosen_on_the_first_half_and_scored_on_the_second():
    rep = sx.report(evaluation([SHORT] * 4 + [LONG] * 4, [[to_start, first_only, second_only]]), min_arcs=1)
    det = row(rep, "det", "dep->head")
    assert (det["layer"], det["head"]) == (1, 2)              # perfect on the first half ...
    assert det["accuracy"] == 0.0 and det["syntactic"] is False   # ... and wrong on the held-out one
    assert rep.heldout["det", "dep->head"][0, 2] == 100.0      # the grid shows the head that is right there
    assert rep.halves == {"first": 4, "second": 4}


def test_min_arcs_and_nothing_usable():
    ev = evaluation([SHORT] * 4, [[to_head]])
    assert sx.report(ev, min_arcs=5).rows == []               # two sentences a half: 4 det arcs, 2 nsubj, 2 obj
    assert {r["relation"] for r in sx.report(ev, min_arcs=3).rows} == {"det"}
    assert {r["relation"] for r in sx.report(ev, min_arcs=2).rows} == {"det", "nsubj", "obj"}
    with pytest.raises(conllu.SyntaxDataError, match="none of the 3 sentences could be used.*no text"):
        sx.report(sx.Evaluation(1, 1, n_sentences=3, skipped=[("s1", "it has no text")]))


def test_voitas_rule():
    assert sx.is_syntactic(60.000000001, 50.0) and sx.is_syntactic(70.0, 60.000000000001)
    assert not sx.is_syntactic(59.9, 50.0) and not sx.is_syntactic(100.0, 100.0)


def test_best_offset_ties_go_to_the_nearer_then_the_left():
    assert sx.best_offset(np.array([2, 2, -1, -1, 3])) == -1
    assert sx.best_offset(np.array([1, -1])) == -1 and sx.best_offset(np.array([3, 3, 1])) == 3


class FakeModel:
    """What evaluate needs of a TranslationModel: cfg and attend_batch(encoder_only=True), one piece a word."""
    cfg = SimpleNamespace(N=1, h=2)

    def __init__(self, sentences):
        self.by_text = {s.text: s for s in sentences}
        self.calls = []

    def attend_batch(self, texts, batch_size, encoder_only, progress):
        assert encoder_only
        self.calls.append(len(texts))
        out = []
        for t in texts:
            attn, tokens = one_hot_maps(self.by_text[t], [[to_head, to_next]])
            out.append(SimpleNamespace(enc_self=attn, src_tokens=tokens, truncated=t.startswith("cut")))
        progress(len(texts), len(texts))
        return out


def test_evaluate_runs_chunks_and_counts_what_it_skips():
    cut = ud(["cut", "here"], [0, 1], ["root", "dep"])
    empty = ud(["x"], [0], ["root"], text="  ")
    sentences = [SHORT, cut, empty, LONG, SHORT, LONG]
    tm, seen = FakeModel(sentences), []
    ev = sx.evaluate(tm, sentences, chunk=2, progress=lambda done, total: seen.append((done, total)))
    assert tm.calls == [2, 2, 1] and seen == [(3, 6), (5, 6), (6, 6)]     # the empty one counts as done at once
    assert ev.used == 4 and ev.n_first == 3
    assert sorted(why for _, why in ev.skipped) == ["it has no text", "the sentence is longer than the model takes"]
    assert np.asarray(ev.first).sum() == 2 * 4            # SHORT: 4 arcs, both directions, in the first half


# ----------------------------------------------------------------------------- the paper's Figure 5 sentence

def test_figure5_arcs_name_the_relation_a_head_follows():
    s = conllu.read_figure5()
    attn, tokens = one_hot_maps(s, [[to_next, to_start], [to_start, to_head]])
    df = sx.figure5_arcs(attn, tokens)
    best = df.iloc[0]
    assert (best.layer, best["head"], best.followed, best.arcs) == (1, 1, 24, 48) and best.score == 0.5
    # it follows every dep->head arc; nsubj and punct have 4 each, and the tie goes by name
    assert (best.relation, best.direction, best.relation_followed, best.relation_arcs) == \
        ("nsubj", "dep->head", 4, 4)
    assert (1, 5, "nsubj", "dep->head") in best.links                           # Law -> perfect
    assert len(df) == 4 and df.score.is_monotonic_decreasing


def test_figure5_arcs_on_a_real_tokenizer(tokenizer):
    tm = core.TranslationModel(stopping_model(len(tokenizer)), tokenizer)     # max_len 256: the sentence fits
    res = tm.attend_batch([FIGURE45_SENTENCE], encoder_only=True)[0]
    sa = sx.sentence_attention(res, conllu.read_figure5())
    assert sa.maps.shape[-1] == len(sa.words) and len(sa.words) + len(sa.unmapped) == 25
    assert len(sa.head_arcs(0, 0)) == len(sa.words)
    df = sx.figure5_arcs(res.enc_self, res.src_tokens)
    assert len(df) == tm.cfg.N * tm.cfg.h
    assert df.arcs.iloc[0] <= 48 and (df.followed <= df.arcs).all()
