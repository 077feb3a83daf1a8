"""core.studies.atlas: role scores on hand-made maps whose answer is known (previous/next/resting words, a
syntax head chosen on the first half, word alignment under both shifts), the strongest-role rule, examples,
and the whole atlas on a tiny random model (its shape, compact JSON, written and read back)."""
import json
from types import SimpleNamespace

import numpy as np
import pytest

from core.studies import atlas
from core.studies import syntax as sx
from core.studies.alignment_gold import GoldPair, read_gold
from core.studies.conllu import read_conllu
from tests.core.studies.test_syntax import LONG, SHORT, evaluation, one_hot_maps, to_head, to_next, to_start
from tests.helpers import FIXTURES


def to_previous(s, q):
    return q - 1 if q else 1


def tally(sentences, policies):
    t = atlas.EncoderTally()
    for s in sentences:
        t(sx.word_attention(*one_hot_maps(s, policies), s), True)
    return t


def test_encoder_tally_previous_next_and_resting():
    t = tally([SHORT, LONG], [[to_previous, to_next]])
    prev, prev_base = t.roles["previous"].score()
    nxt, _ = t.roles["next"].score()
    assert prev.tolist() == [[100.0, 0.0]] and nxt.tolist() == [[20.0, 100.0]]     # the first word looks next
    # a random pick among the other words: 4 rows of 1/4 (SHORT), 6 rows of 1/6 (LONG), over 10 rows
    assert prev_base == pytest.approx(100 * 2 / 10)
    rest, rest_base = t.roles["resting"].score()
    assert rest.tolist() == [[0.0, 0.0]] and rest_base == pytest.approx(100 * (5 / 6 + 7 / 8) / 12)


def test_resting_on_eos():
    s = SHORT
    attn, tokens = one_hot_maps(s, [[to_next]])
    attn[..., :, -1] = 5.0                                           # every row: most of it on "</s>"
    attn /= attn.sum(-1, keepdims=True)
    t = atlas.EncoderTally()
    t(sx.word_attention(attn, tokens, s), False)
    assert t.roles["resting"].score()[0].tolist() == [[100.0]]
    assert t.roles["next"].score()[0].tolist() == [[100.0]]          # among the other words it still picks the next


def test_strongest_role_margin_and_resting_last():
    one = np.ones((1, 1))
    def scores(**kw):
        return {r: (v * one, b * one) for r, (v, b) in kw.items()}
    assert atlas.strongest(scores(previous=(50, 10), syntax=(60, 30), resting=(90, 5)), 0, 0) == ("previous", 40.0)
    assert atlas.strongest(scores(previous=(15, 10), resting=(90, 5)), 0, 0) == ("resting", 85.0)
    assert atlas.strongest(scores(previous=(19.9, 10), resting=(5, 5)), 0, 0) == (None, pytest.approx(9.9))
    assert atlas.strongest(scores(syntax=(40, 30)), 0, 0) == ("syntax", 10.0)     # exactly the margin counts


def test_syntax_role_chosen_on_the_first_half():
    ev = evaluation([SHORT] * 4 + [LONG] * 4, [[to_next, to_start, to_head]])
    score, baseline, names, per_sentence = atlas.syntax_scores(ev, min_arcs=1)
    assert score.shape == (1, 3) and names[0, 2].endswith("dep->head")
    assert score[0, 2] == 100.0 and baseline[0, 2] < 100.0           # the perfect dep->head head
    assert per_sentence.shape == (8, 1, 3) and per_sentence[:, 0, 2].min() >= 1
    assert atlas.syntax_scores(ev, min_arcs=100) is None


def test_examples_prefer_more_hits_then_short_sentences():
    hits = np.array([1, 3, 3, 0]).reshape(4, 1, 1)
    texts = ["a b", "a b c d", "a b c", "a"]
    assert atlas.examples((hits, np.arange(4)), 0, 0, texts) == [2, 1]
    assert atlas.examples((hits, np.arange(4)), 0, 0, ["x " * 30] * 4) == []          # too long to read


# ----------------------------------------------------------------------------- decoder and cross

PAIR = GoldPair(1, "a b c d".split(), "w x y z".split(), {(0, 1), (1, 0), (2, 3), (3, 2)},
                {(0, 1), (1, 0), (2, 3), (3, 2)})
GOLD = {0: 1, 1: 0, 2: 3, 3: 2}                      # target word -> its source word


class PairModel:
    """attend_batch teacher-forced, one piece a word: decoder head 0 looks at the previous piece, head 1 at <s>;
    cross head 0 reads the source of the word its row writes ("produced"), head 1 of the word it has just read."""
    cfg = SimpleNamespace(N=1, N_dec=1, h=2)

    def attend_batch(self, sources, targets, progress=None):
        T, S = 5, 5                                        # <s> + 4 target pieces; 4 source pieces + </s>
        dec = np.full((1, 2, T, T), 1e-3)
        cross = np.full((1, 2, T, S), 1e-3)
        for t in range(T):
            dec[0, 0, t, max(t - 1, 0)] = dec[0, 1, t, 0] = 1.0
            cross[0, 0, t, GOLD.get(t, 4)] = 1.0           # row t writes target word t
            cross[0, 1, t, GOLD.get(t - 1, 4)] = 1.0       # row t has read target word t - 1
        if progress:
            progress(len(sources), len(sources))
        return [SimpleNamespace(src=s, tgt=t, src_tokens=["▁a", "▁b", "▁c", "▁d", "</s>"],
                                tgt_tokens=["<s>", "▁w", "▁x", "▁y", "▁z"], dec_self=dec, cross=cross,
                                truncated=False) for s, t in zip(sources, targets)]


def test_decoder_and_cross_roles_on_known_maps():
    dec, cross, texts = atlas.decoder_roles(PairModel(), [PAIR, PAIR])
    assert texts == [("a b c d", "w x y z")] * 2
    prev, base = dec.scores["previous"]
    assert prev[0].tolist() == [100.0, 25.0]                      # row 1's previous piece is <s>: head 1 too
    assert base[0, 0] == pytest.approx(100 * (1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4)
    assert cross.scores["next_source"][0][0].tolist() == [100.0, 0.0]     # AER 0 for head 0, 1 for head 1
    assert cross.scores["alignment"][0][0].tolist() == [0.0, 100.0]
    assert cross.scores["alignment"][1][0, 0] == 0.0              # the diagonal gets none of these links
    assert atlas.strongest(cross.scores, 0, 1)[0] == "alignment"


# ----------------------------------------------------------------------------- the whole atlas

def test_compute_write_and_read_the_atlas(translation_model, tmp_path):
    sentences = read_conllu(FIXTURES / "syntax" / "mini.conllu")
    pairs = read_gold(FIXTURES / "alignment_gold")
    seen = []
    a = atlas.compute_atlas(translation_model, sentences, pairs, "tiny", progress=lambda *x: seen.append(x))
    cfg = translation_model.cfg
    assert [len(a["heads"][k]) for k in atlas.KINDS] == [cfg.N * cfg.h, cfg.N_dec * cfg.h, cfg.N_dec * cfg.h]
    assert seen[-1] == (1, 1, "Done") and all(0 <= d <= 1 for d, _, _ in seen)
    for entries in a["heads"].values():
        for e in entries:
            assert e["role"] in (None, *atlas.ROLES) and e["layer"] >= 1 and e["head"] >= 1
            assert all(0 <= i < len(a["sentences"]) for i in e.get("examples", []))
    assert set(a["heads"]["enc_self"][0]["scores"]) >= {"previous", "next", "resting"}
    assert set(a["heads"]["cross"][0]["scores"]) == {"alignment", "next_source", "resting"}
    atlas.write_atlas(tmp_path, a)
    assert atlas.read_atlas(tmp_path) == json.loads(json.dumps(a)) and "\n" not in (tmp_path / atlas.FILE).read_text()
    assert atlas.read_atlas(tmp_path / "none") is None
    only_decoder = atlas.compute_atlas(translation_model, None, pairs)
    assert set(only_decoder["heads"]) == {"dec_self", "cross"} and set(only_decoder["corpus"]) == {"dec_self", "cross"}
    assert set(atlas.roles_by_layer(a, "cross")) == set(range(1, cfg.N_dec + 1))
