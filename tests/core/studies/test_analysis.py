"""core.studies.analysis / ablation / compare: head scores on hand-built attention where the answer is known,
rollout, ablation, comparisons, and the annotated probe sets."""
import math
import string
import warnings

import numpy as np
import pytest
import torch

import core
from tests.helpers import CORPUS, tiny_model
from core.studies import ablation, analysis, compare

S = 6


def uniform(L=2, h=3, T=S):
    return np.full((L, h, T, T), 1.0 / T)


def shifted_identity(T=S, k=-1):
    """Row i attends only to i + k; a row without such a key attends to itself (rows still sum to 1)."""
    a = np.eye(T, k=k)
    a[a.sum(1) == 0] = np.eye(T)[a.sum(1) == 0]
    return a


def test_previous_token_head_scores_one_and_uniform_heads_score_one_over_s():
    attn = uniform()
    attn[1, 2] = shifted_identity(k=-1)
    prev = analysis.offset_mass(attn, -1)
    assert prev[1, 2] == pytest.approx(1.0)
    assert prev[0, 0] == pytest.approx(1 / S)
    assert analysis.offset_mass(attn, 1)[1, 2] == pytest.approx(0.0)        # it never looks ahead
    assert analysis.offset_mass(attn, 0)[1, 2] == pytest.approx(1 / S)      # row 0 has no previous token: itself


def test_next_token_and_self_heads():
    attn = uniform()
    attn[0, 1] = shifted_identity(k=1)
    attn[1, 0] = np.eye(S)
    assert analysis.offset_mass(attn, 1)[0, 1] == pytest.approx(1.0)
    s = analysis.offset_mass(attn, 0)
    assert s[1, 0] == pytest.approx(1.0) and s[0, 1] == pytest.approx(1 / S)
    assert analysis.mean_distance(attn)[1, 0] == 0
    assert analysis.mean_distance(attn)[0, 1] == pytest.approx((S - 1) / S)   # S-1 rows at distance 1, one at 0


def test_distance_of_a_head_that_always_looks_at_the_first_token():
    attn = np.zeros((1, 1, S, S))
    attn[..., 0] = 1.0
    assert analysis.mean_distance(attn)[0, 0] == pytest.approx(np.mean(np.arange(S)))
    # the decoder leaves out row 0, which has no choice
    assert analysis.mean_distance(attn, first_query=1)[0, 0] == pytest.approx(np.mean(np.arange(1, S)))


def test_entropy_uniform_is_log2_s_and_one_hot_is_zero():
    attn = uniform()
    attn[0, 0] = np.eye(S)
    H = analysis.entropy(attn)
    assert H[1, 1] == pytest.approx(math.log2(S)) and H[0, 0] == pytest.approx(0.0)
    Hn = analysis.entropy(attn, normalised=True)
    assert Hn[1, 1] == pytest.approx(1.0) and Hn[0, 0] == pytest.approx(0.0)
    half = np.zeros((1, 1, 2, 4))
    half[..., :2] = 0.5                                                     # two equal keys: exactly 1 bit
    assert analysis.entropy(half)[0, 0] == pytest.approx(1.0)
    assert analysis.entropy(half, normalised=True)[0, 0] == pytest.approx(0.5)


def test_causal_uniform_attention_has_normalised_entropy_one():
    causal = np.tril(np.ones((S, S)))
    causal /= causal.sum(1, keepdims=True)                                  # row i: uniform over i + 1 keys
    attn = causal[None, None]
    assert analysis.entropy(attn, first_query=1, normalised=True, causal=True)[0, 0] == pytest.approx(1.0)
    assert analysis.entropy(attn, first_query=1)[0, 0] == pytest.approx(np.mean(np.log2(np.arange(2, S + 1))))
    assert analysis.entropy(attn, normalised=True)[0, 0] < 0.8              # judged against all S keys it is not


def test_punctuation_and_resting_scores():
    pieces = ["▁The", "▁vote", ",", "▁today", ".", "</s>"]
    assert [analysis.is_punctuation(p) for p in pieces] == [False, False, True, False, True, False]
    assert analysis.is_punctuation("▁„") and analysis.is_punctuation("<0x2E>") and not analysis.is_punctuation("<0x41>")
    assert not analysis.is_punctuation("▁") and not analysis.is_punctuation("</s>")
    attn = uniform()
    attn[0, 0] = 0.0
    attn[0, 0, :, 2] = 1.0                                                  # everything to the comma
    attn[1, 1] = 0.0
    attn[1, 1, :, -1] = 1.0                                                 # everything to </s>
    sc = analysis.sentence_scores(attn, pieces)
    assert sc["punctuation"][0, 0] == pytest.approx(1.0) and sc["punctuation"][1, 1] == 0
    assert sc["punctuation"][0, 1] == pytest.approx(2 / S)
    assert sc["eos"][1, 1] == pytest.approx(1.0) and sc["eos"][0, 0] == 0
    assert np.isnan(sc["bos"]).all()
    no_punct = analysis.sentence_scores(uniform(), ["▁a", "▁b", "▁c", "▁d", "▁e", "</s>"])
    assert np.isnan(no_punct["punctuation"]).all()                          # undefined, not 0


def test_decoder_scores_skip_what_the_decoder_cannot_do():
    pieces = ["<s>", "▁Die", "▁Abstimmung", "▁ist", "▁heute", "."]
    attn = np.zeros((1, 2, S, S))
    attn[0, 0, :, 0] = 1.0                                                  # head 0 rests on <s>
    attn[0, 1] = shifted_identity(k=-1)                                     # head 1: previous token
    sc = analysis.sentence_scores(attn, pieces, decoder=True)
    assert np.isnan(sc["next"]).all() and np.isnan(sc["eos"]).all()
    assert sc["bos"][0].tolist() == pytest.approx([1.0, 1 / (S - 1)])       # row 0 (no choice) left out
    assert sc["previous"][0, 1] == pytest.approx(1.0)


ANA_PIECES = ["▁The", "▁Com", "mission", "▁presented", "▁it", "s", "▁report", "▁to", "▁them", ".", "</s>"]


def test_anaphora_mass_sums_the_antecedent_and_averages_the_pronoun():
    attn = np.full((1, 2, len(ANA_PIECES), len(ANA_PIECES)), 1.0 / len(ANA_PIECES))
    attn[0, 1, 4] = 0.0
    attn[0, 1, 4, [1, 2, 0]] = [0.5, 0.3, 0.2]                             # "it" -> "Com"+"mission": 0.8
    attn[0, 1, 5] = 0.0
    attn[0, 1, 5, [1, 6]] = [0.4, 0.6]                                      # "s" -> 0.4
    m = analysis.anaphora_mass(attn, ANA_PIECES, pronoun_index=3, antecedent_index=1)
    assert m[0, 1] == pytest.approx((0.8 + 0.4) / 2)
    assert m[0, 0] == pytest.approx(2 / len(ANA_PIECES))                    # uniform: the antecedent's share
    # "them." : the full stop glued to the pronoun is not one of its rows
    attn[0, 0, 8] = 0.0
    attn[0, 0, 8, 1] = 1.0
    assert analysis.anaphora_mass(attn, ANA_PIECES, 6, 1)[0, 0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="word 12"):
        analysis.anaphora_mass(attn, ANA_PIECES, 12, 1)


def test_rollout_rows_sum_to_one_and_identity_stays_identity():
    rng = np.random.default_rng(0)
    raw = rng.random((4, 3, S, S))
    raw /= raw.sum(-1, keepdims=True)
    r = analysis.rollout(raw)
    assert r.shape == (4, S, S)
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(analysis.rollout(np.broadcast_to(np.eye(S), (3, 2, S, S))),
                               np.broadcast_to(np.eye(S), (3, S, S)))
    one = analysis.rollout(uniform(L=1))[0]                                 # one layer: 0.5 uniform + 0.5 I
    np.testing.assert_allclose(one, 0.5 / S + 0.5 * np.eye(S))
    a1 = 0.5 * raw[0].mean(0) + 0.5 * np.eye(S)
    a2 = 0.5 * raw[1].mean(0) + 0.5 * np.eye(S)
    np.testing.assert_allclose(r[1], a2 @ a1)                               # layer 2 applied after layer 1


# ---- the head finder on a real (tiny) model ----

NEUTRAL = [{"en": "a man in a blue shirt is standing on a ladder .", "de": "ein Mann in einem blauen Hemd steht ."},
           {"en": "the weather is nice today", "de": "das Wetter ist heute schön"}]
ANAPHORA = [{"text": "the quick brown fox jumps over its lazy dog", "pronoun": "its", "pronoun_index": 6,
             "antecedent": "fox", "antecedent_index": 3}]


def test_head_scores_batched_equal_scores_from_attend(translation_model):
    tm = translation_model
    df = analysis.head_scores(tm, NEUTRAL, ANAPHORA, batch_size=2)          # one padded batch of two
    N, Nd, h = tm.cfg.N, tm.cfg.N_dec, tm.cfg.h
    assert len(df) == (N + Nd) * h and df.attrs["sentences"] == {"enc_self": 3, "dec_self": 2, "anaphora": 1}
    alone = [tm.attend(p["en"], tgt=p["de"]) for p in NEUTRAL]
    enc = [analysis.sentence_scores(r.enc_self, r.src_tokens) for r in alone]
    a = tm.attend(ANAPHORA[0]["text"], tgt="x")
    enc.append(analysis.sentence_scores(a.enc_self, a.src_tokens))
    expected = np.mean([e["previous"] for e in enc], axis=0)
    np.testing.assert_allclose(analysis.score_grid(df, "previous"), expected, atol=1e-5)
    np.testing.assert_allclose(analysis.score_grid(df, "anaphora"),
                               analysis.anaphora_mass(a.enc_self, a.src_tokens, 6, 3), atol=1e-5)
    r = tm.attend(NEUTRAL[1]["en"], tgt=NEUTRAL[1]["de"])
    dec = [analysis.sentence_scores(r.dec_self, r.tgt_tokens, decoder=True) for r in alone]
    np.testing.assert_allclose(analysis.score_grid(df, "bos", "dec_self"), np.mean([d["bos"] for d in dec], 0),
                               atol=1e-5)
    assert r.dec_self.shape[0] == Nd
    for s in ("previous", "self", "eos", "punctuation", "entropy_norm", "anaphora"):
        v = df.loc[df.attention == "enc_self", s]
        assert ((v >= -1e-6) & (v <= 1 + 1e-6)).all(), s
    assert df.loc[df.attention == "dec_self", "next"].isna().all()


def test_every_head_score_in_padded_batches_is_the_mean_of_single_sentence_scores(translation_model):
    """The whole table, from several padded batches, against scores of each sentence attended alone."""
    tm = translation_model
    neutral, anaphora = analysis.load_neutral()[:5], analysis.load_anaphora()[:4]
    df = analysis.head_scores(tm, neutral, anaphora, batch_size=3)
    enc, dec = [], []
    for text, tgt, a in [(p["en"], p["de"], None) for p in neutral] + [(a["text"], None, a) for a in anaphora]:
        r = tm.attend(text, tgt=tgt or "x")
        s = analysis.sentence_scores(r.enc_self, r.src_tokens)
        lines_up = a is not None and len([p for p in r.src_tokens if p.startswith("\u2581")]) == len(text.split())
        s["anaphora"] = (analysis.anaphora_mass(r.enc_self, r.src_tokens, a["pronoun_index"], a["antecedent_index"])
                         if lines_up else np.full(s["self"].shape, np.nan))
        enc.append(s)
        if tgt is not None:
            dec.append(analysis.sentence_scores(r.dec_self, r.tgt_tokens, decoder=True))
            np.testing.assert_allclose(dec[-1]["bos"], r.dec_self[..., 1:, 0].mean(-1), atol=1e-6)
    assert df.attrs["sentences"] == {"enc_self": len(enc), "dec_self": len(dec),
                                     "anaphora": sum(np.isfinite(s["anaphora"]).all() for s in enc)}
    for kind, per_sentence in (("enc_self", enc), ("dec_self", dec)):
        for name in analysis.SCORES:
            stack = np.stack([s.get(name, np.full(s["self"].shape, np.nan)) for s in per_sentence])
            with warnings.catch_warnings():                 # a score no sentence defines: the mean of nothing
                warnings.simplefilter("ignore", RuntimeWarning)
                expected = np.nanmean(stack, 0)
            np.testing.assert_allclose(analysis.score_grid(df, name, kind), expected, atol=1e-5,
                                       err_msg=f"{kind} {name}")


def test_the_decoder_rests_on_its_start_token_whatever_its_name():
    """Marian's decoder starts with <pad>: the bos score is the mass on position 0, not on a "<s>" label."""
    attn = np.tile(np.array([[1.0, 0, 0], [0.7, 0.3, 0], [0.2, 0.5, 0.3]]), (1, 1, 1, 1))   # (1, 1, 3, 3)
    for start in ("<s>", "<pad>"):
        scores = analysis.sentence_scores(attn, [start, "\u2581Haus", "</s>"], decoder=True)
        np.testing.assert_allclose(scores["bos"], [[(0.7 + 0.2) / 2]])


def test_rank_heads_and_score_grid():
    import pandas as pd
    df = pd.DataFrame({"attention": "enc_self", "layer": [0, 0, 1, 1], "head": [0, 1, 0, 1],
                       "previous": [0.1, 0.9, 0.5, np.nan], "entropy": [2.0, 0.5, 1.0, 3.0]})
    grid = analysis.score_grid(df, "previous")
    assert grid.shape == (2, 2) and grid[0, 1] == 0.9 and np.isnan(grid[1, 1])
    top = analysis.rank_heads(df, "previous")
    assert list(zip(top.layer, top["head"])) == [(0, 1), (1, 0), (0, 0)]   # NaN left out
    assert analysis.rank_heads(df, "entropy", top=1)[["layer", "head"]].values.tolist() == [[0, 1]]


# ---- ablation ----

def test_ablating_no_head_changes_nothing_and_a_whole_layer_changes_the_output(translation_model):
    model = translation_model.model
    torch.manual_seed(0)
    src, tgt = torch.randint(4, 300, (2, 7)), torch.randint(4, 300, (2, 5))
    normal = model(src, tgt)
    assert torch.equal(model(src, tgt, head_mask=model.ablate_heads([])), normal)
    for kind in ("enc_self", "dec_self", "cross"):
        mask = model.ablate_heads([(kind, 0, h) for h in range(model.cfg.h)])
        assert not torch.allclose(model(src, tgt, head_mask=mask), normal, atol=1e-4), kind
    assert torch.equal(model(src, tgt), normal)                            # the model itself never changed
    texts = ["the weather is nice today", "two young girls"]
    assert ablation.translate_without(translation_model, texts, ()) == translation_model.translate(texts, beam=1)


@pytest.mark.slow
def test_sweep_reports_progress_and_one_row_per_head(translation_model):
    tm, calls = translation_model, []
    refs = ["ein Mann", "das Wetter ist schön", "zwei Mädchen"]
    srcs = ["a man", "the weather is nice", "two girls"]
    sweep = ablation.sweep_layer(tm, srcs, refs, "enc_self", 1, progress=lambda d, t, m: calls.append((d, t)))
    h = tm.cfg.h
    assert sweep["head"].tolist() == list(range(h)) and (sweep.layer == 1).all()
    np.testing.assert_allclose(sweep["delta"], sweep["bleu"] - sweep["base_bleu"])
    assert calls[0] == (0, h + 1) and calls[-1] == (h + 1, h + 1) and len(calls) == h + 2
    one = ablation.ablation_bleu(tm, srcs, refs, [("enc_self", 1, 2)])
    assert one.bleu == pytest.approx(sweep.loc[2, "bleu"]) and one.delta == pytest.approx(sweep.loc[2, "delta"])
    assert ablation.bleu(refs, refs) == pytest.approx(100.0)


def test_dev_slice_prefers_the_checkpoints_validation_data(translation_model, tmp_path):
    (tmp_path / "valid.en").write_text("one\ntwo\nthree\n", encoding="utf-8")
    (tmp_path / "valid.de").write_text("eins\nzwei\ndrei\n", encoding="utf-8")
    tm = core.TranslationModel(translation_model.model, translation_model.tokenizer,
                               {"data": {"folder": str(tmp_path)}})
    src, ref, where = ablation.dev_slice(tm, n=2)
    assert (src, ref) == (["one", "two"], ["eins", "zwei"]) and "validation" in where
    src, ref, where = ablation.dev_slice(translation_model, n=5, root=tmp_path)
    assert len(src) == len(ref) == 5 and "built-in" in where


# ---- comparing checkpoints ----

def test_js_divergence_bounds():
    p = np.array([[1.0, 0.0], [0.5, 0.5]])
    q = np.array([[0.0, 1.0], [0.5, 0.5]])
    np.testing.assert_allclose(compare.js_divergence(p, q), [1.0, 0.0])


def test_compare_same_model_is_zero_and_another_model_is_not(translation_model, tokenizer):
    tm = translation_model
    other = core.TranslationModel(tiny_model(len(tokenizer), seed=1), tokenizer)
    same = compare.compare_results(*compare.attend_both(tm, tm, "a man in a blue shirt"))
    assert set(same.maps) == {"enc_self", "dec_self", "cross"} and same.level["enc_self"] == "pieces"
    for kind in same.js:
        np.testing.assert_allclose(same.js[kind], 0.0, atol=1e-6)
    diff = compare.compare_results(*compare.attend_both(tm, other, "a man in a blue shirt", tgt="ein Mann"))
    assert diff.a.tgt == diff.b.tgt == "ein Mann"
    assert (diff.js["enc_self"] > 1e-4).all() and diff.js["cross"].shape == (tm.cfg.N_dec, tm.cfg.h)


def test_compare_notes_name_kinds_as_the_page_does(translation_model, tokenizer):
    """A model with one more layer: each kind's note says which layers are compared, in words, not "enc_self"."""
    tm = translation_model
    deeper = core.TranslationModel(tiny_model(len(tokenizer), seed=1, N=tm.cfg.N + 1), tokenizer)
    cmp = compare.compare_results(*compare.attend_both(tm, deeper, "a man in a blue shirt", tgt="ein Mann"))
    assert cmp.js["enc_self"].shape == (tm.cfg.N, tm.cfg.h)
    assert any(n.startswith("Encoder self-attention: the models have") for n in cmp.notes)
    assert not any(kind in n for n in cmp.notes for kind in ("enc_self", "dec_self", "cross:"))


def test_compare_across_tokenizers_goes_word_by_word(translation_model):
    import io
    import sentencepiece as spm
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(CORPUS * 20), model_writer=buf, vocab_size=320,
                                   model_type="unigram", pad_id=0, unk_id=1, bos_id=2, eos_id=3, byte_fallback=True,
                                   hard_vocab_limit=False, minloglevel=2)
    tok2 = core.Tokenizer(buf.getvalue())
    other = core.TranslationModel(tiny_model(len(tok2), seed=2), tok2)
    text = "the lazy fox jumps"
    ra, rb = compare.attend_both(translation_model, other, text, tgt="der faule Fuchs")
    assert ra.src_tokens != rb.src_tokens                                   # the test needs different pieces
    cmp = compare.compare_results(ra, rb)
    assert cmp.level["enc_self"] == "words" and cmp.labels["enc_self"][0] == ["the", "lazy", "fox", "jumps", "</s>"]
    np.testing.assert_allclose(cmp.maps["enc_self"][1].sum(-1), 1.0, atol=1e-5)
    assert any("word by word" in n for n in cmp.notes)


# ---- the probe sets ----

PRONOUNS = {"it", "its", "they", "their", "them", "he", "his", "she", "her", "which", "who"}


def _word(text, i):
    return text.split()[i].strip(string.punctuation + "„“”").lower()


def test_anaphora_set_validates():
    items = analysis.load_anaphora()
    assert len(items) >= 40 and len({a["text"] for a in items}) == len(items)
    for a in items:
        assert a["pronoun"].lower() in PRONOUNS, a
        assert _word(a["text"], a["pronoun_index"]) == a["pronoun"].lower(), a
        assert _word(a["text"], a["antecedent_index"]) == a["antecedent"].lower(), a
        assert a["antecedent_index"] != a["pronoun_index"]
        assert core.clean_text(a["text"]) == a["text"]                     # word indices survive cleaning


def test_anaphora_word_indices_line_up_with_tokenizer_words(tokenizer):
    for a in analysis.load_anaphora():
        pieces = tokenizer.pieces(tokenizer.encode(a["text"])) + ["</s>"]
        words = core.merge_words(pieces)
        assert len(words) == len(a["text"].split()) + 1
        assert words[a["pronoun_index"]].lower().startswith(a["pronoun"].lower())


def test_neutral_probe_set():
    items = analysis.load_neutral()
    assert len(items) >= 40 and len({p["en"] for p in items}) == len(items)
    assert all(p["en"].strip() and p["de"].strip() for p in items)
