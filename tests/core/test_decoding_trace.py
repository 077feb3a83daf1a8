"""TranslationModel.trace: the translation translate() gives, token for token, on the shipped checkpoints and on
models shaped like the imported ones; forced prefixes as score() sees them; attention as attend() sees it."""
import io
from pathlib import Path

import numpy as np
import pytest
import torch

import core
from core.checkpoint.snapshots import read_probes
from core.model.trace import FORCED, Sampling
from tests.helpers import CORPUS, tiny_model

REPO = Path(__file__).resolve().parents[2]
FIGURE4 = ("The Law will never be perfect, but its application should be just - this is what we are missing, "
           "in my opinion.")


def shipped(name: str) -> core.TranslationModel:
    folder = REPO / "checkpoints" / name
    if not (folder / "model.safetensors").exists():
        pytest.skip(f"checkpoints/{name} is not in this checkout (it is shipped with the repository)")
    return core.load_checkpoint(folder)


@pytest.fixture(scope="module")
def news():
    return shipped("news-small")


def _same_as_translate(tm, text: str, beam: int):
    tr = tm.trace(text, beam=beam)
    ids = tm._search_ids([tm.source_ids(text)], beam, 0.6, 1)[0]
    assert tr.tokens == ids, (text, beam)                          # token for token
    assert tr.translation == tm.translate([text], beam=beam)[0]
    return tr


@pytest.mark.slow
def test_figure4_sentence_traces_as_translate(news):
    for beam in (1, 4):
        tr = _same_as_translate(news, FIGURE4, beam)
        for step in tr.steps:
            for h in step.hyps:
                assert abs(sum(c.prob for c in h.candidates) + h.other - 1) < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("name", ["news-small", "multi30k-small"])
def test_probe_sentences_trace_as_translate(name):
    tm = shipped(name)
    for probe in read_probes(tm.folder):
        for beam in (1, 4):
            _same_as_translate(tm, probe["src"], beam)


def test_forced_prefix_is_scored_as_score(news):
    prefix = "Das Recht wird"
    tr = news.trace(FIGURE4, beam=4, prefix=prefix)
    n = len(news.target_ids(prefix))
    assert tr.forced == n and tr.tokens[:n] == news.target_ids(prefix) and tr.translation.startswith(prefix)
    forced = [next(c for c in s.hyps[0].candidates if c.fate == FORCED) for s in tr.steps[:n]]
    scored = news.score(FIGURE4, prefix)
    np.testing.assert_allclose(np.log([c.prob for c in forced]), scored.logprobs[:n], atol=1e-4)
    assert abs(forced[-1].total - scored.logprobs[:n].sum()) < 1e-3
    assert tr.steps[n].hyps[0].logprob == pytest.approx(forced[-1].total)


def test_winning_path_attention_is_attend_s(news):
    tr = news.trace(FIGURE4, beam=4)
    res = news.attend(FIGURE4, tgt=tr.translation)
    assert res.src_tokens == tr.src_tokens
    np.testing.assert_allclose(tr.search.path_cross(), res.cross, atol=1e-5)
    assert tr.cross_over_words(res.cross).shape[-1] == len(tr.source_words()[0])


def test_sampling_with_a_seed_repeats(news):
    a, b = (news.trace(FIGURE4, sampling=Sampling(temperature=1.2, top_p=0.9, seed=4)) for _ in range(2))
    assert a.tokens == b.tokens and a.translation


SRC_LANG, TGT_LANG = 10, 11


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["nllb", "marian", "fsmt"])
def test_imported_shapes_trace_as_translate(shape, tokenizer):
    """A language token forced first (NLLB, M2M100), <pad> never written (Marian), two vocabularies (FSMT)."""
    V = len(tokenizer)
    options = {"nllb": dict(src_prefix_id=SRC_LANG, tgt_prefix_id=TGT_LANG),
               "marian": dict(forbid_pad_output=True, final_logits_bias=True),
               "fsmt": dict(src_vocab_size=V, share_embeddings=False)}[shape]
    tm = core.TranslationModel(tiny_model(V, seed=3, **options), tokenizer)
    for beam in (1, 4):
        tr = _same_as_translate(tm, "the quick brown fox", beam)
        if shape == "nllb":
            first = tr.steps[0].hyps[0].candidates[0]
            assert first.token == TGT_LANG and first.prob == pytest.approx(1.0) and tr.tokens[0] == TGT_LANG
            assert tm.tokenizer.pieces([TGT_LANG])[0] not in tr.translation
    if shape == "nllb":      # a prefix of words comes after the language token
        tr = tm.trace("the quick brown fox", prefix="der Fuchs")
        assert tr.tokens[:1] == [TGT_LANG] and tr.forced == 1 + len(tokenizer.encode("der Fuchs", "tgt"))


@pytest.mark.slow
def test_bad_input_is_worded(translation_model):
    tm = translation_model
    for empty in ("", "   ", None):
        with pytest.raises(ValueError, match="empty|text"):
            tm.trace(empty)
    long = tm.trace("the quick fox " * 400, beam=2)
    assert long.notices and long.search.limit <= tm.cfg.max_len - 1
    for odd in ("?!… ---", "这是一个句子。", "Ünïcödé ß"):
        assert isinstance(tm.trace(odd, beam=2).translation, str)
    cut = tm.trace("the fox", prefix="der Fuchs " * 200, beam=1)
    assert any("cut" in n for n in cut.notices) and len(cut.tokens) <= cut.search.limit
    with pytest.raises(ValueError, match="start, end or padding"):
        tm.trace("the fox", prefix=[tm.cfg.eos_id])
    with pytest.raises(ValueError, match="beam"):
        tm.trace("the fox", beam=0)


def test_a_word_the_vocabulary_cannot_spell(translation_model):
    """Without byte fallback an unseen letter is <unk>: refused with the word named."""
    import sentencepiece as spm
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(CORPUS * 20), model_writer=buf, vocab_size=100,
                                   pad_id=0, unk_id=1, bos_id=2, eos_id=3, hard_vocab_limit=False, minloglevel=2)
    tok = core.Tokenizer(buf.getvalue())
    tm = core.TranslationModel(tiny_model(len(tok)), tok)
    with pytest.raises(ValueError, match="cannot spell 'Ж'"):
        tm.trace("the fox", prefix="Ж")
    pieces = tm.trace("the fox", prefix="Fuchsschwanz", beam=1)      # split into pieces: each forced in turn
    assert pieces.forced == len(tok.encode("Fuchsschwanz", "tgt")) > 1
    torch.testing.assert_close(torch.tensor(pieces.tokens[:pieces.forced]),
                               torch.tensor(tok.encode("Fuchsschwanz", "tgt")))
