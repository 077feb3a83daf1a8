"""TranslationModel.attend / translate on bad and unusual input, and the shapes of the maps."""
import numpy as np
import pytest
import torch

import core


def _check_maps(r: core.AttendResult, cfg):
    S, T = len(r.src_tokens), len(r.tgt_tokens)
    assert T == len(r.out_tokens)
    assert r.enc_self.shape == (cfg.N, cfg.h, S, S)
    assert r.dec_self.shape == (cfg.N_dec, cfg.h, T, T)
    assert r.cross.shape == (cfg.N_dec, cfg.h, T, S)
    for maps in (r.enc_self, r.dec_self, r.cross):
        assert maps.dtype == np.float32 and np.isfinite(maps).all()
        np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
    assert r.src_tokens[-1] == "</s>" and r.tgt_tokens[0] == "<s>" and r.out_tokens[-1] == "</s>"
    assert r.out_tokens[:-1] == r.tgt_tokens[1:]


def _source_ids(tm, text):
    """The source ids: the cleaned text's pieces, cut to the model's limit, + </s>."""
    return tm.tokenizer.encode(core.clean_text(text), "src")[: tm.max_source_tokens - 1] + [tm.cfg.eos_id]


def _decode(tm, src_ids, beam, alpha=0.6):
    """Target ids (no <s>, </s>) by beam search written the slow, plain way: each hypothesis' whole
    prefix goes through the model at every step, no cache, no batch; beam 1 is greedy search.
    At most source length + 50 tokens, </s> included, within the position table (paper, 6.1); a
    hypothesis that ends scores log P / ((5 + |Y|) / 6)^alpha, and decoding stops once `beam` have ended.
    """
    cfg, model = tm.cfg, tm.model
    limit = min(len(src_ids) + 50, cfg.max_len - 1)
    src = torch.tensor([src_ids])
    live, ended = [(0.0, [cfg.bos_id])], []
    for t in range(limit):
        cands = []
        for score, seq in live:
            with torch.no_grad():
                logp = model(src, torch.tensor([seq]))[0, -1].float().log_softmax(-1).tolist()
            words = [cfg.eos_id] if t + 1 >= limit else range(len(logp))     # only </s> at the limit
            cands += [(score + logp[w], seq + [w]) for w in words]
        live = []
        for score, seq in sorted(cands, key=lambda c: -c[0]):
            if seq[-1] == cfg.eos_id:
                ended.append((score / ((5 + len(seq) - 1) / 6) ** alpha, seq[1:-1]))
            else:
                live.append((score, seq))
            if len(live) == beam or len(ended) >= beam:
                break
        if len(ended) >= beam or not live:
            break
    return max(ended, key=lambda e: e[0])[1]


def _check_translation(tm, text, expected_ids, beam):
    """translate() gives the expected ids' text, and attend() decodes the same pieces (many byte pieces
    print alike, so the pieces are compared too)."""
    assert tm.translate(text, beam=beam) == tm.tokenizer.decode(expected_ids, "tgt")
    assert tm.attend(text, beam=beam).tgt_tokens[1:] == tm.tokenizer.pieces(expected_ids, "tgt")


@pytest.mark.parametrize("text", ["", "   ", "\n\t  \r\n", "\x00\x01\x7f"])
def test_empty_input_is_a_readable_error(translation_model, text):
    with pytest.raises(ValueError, match="empty"):
        translation_model.attend(text)
    with pytest.raises(ValueError, match="empty"):
        translation_model.translate(text)
    with pytest.raises(ValueError, match="empty"):
        translation_model.translate(["a fine sentence", text])


def test_empty_target_and_non_text(translation_model):
    with pytest.raises(ValueError, match="empty"):
        translation_model.attend("a man", tgt="  ")
    with pytest.raises(ValueError, match="text"):
        translation_model.attend(None)
    with pytest.raises(ValueError, match="text"):
        translation_model.attend("a man", tgt=42)


@pytest.mark.slow
def test_very_long_input_is_truncated(translation_model):
    text = ("ein Mann in einem blauen Hemd steht auf einer Leiter " * 100)[:5000]
    r = translation_model.attend(text, tgt="ein Mann")
    assert r.truncated and r.notices and "too long" in r.notices[0]
    assert len(r.src_tokens) == translation_model.max_source_tokens
    _check_maps(r, translation_model.cfg)
    # the translation is that of the kept pieces: decoded here the slow way, with no cache
    ids = _source_ids(translation_model, text)
    assert len(ids) == translation_model.max_source_tokens
    _check_translation(translation_model, text, _decode(translation_model, ids, beam=1), beam=1)
    short = translation_model.attend("ein Mann", tgt="ein Mann")
    assert not short.truncated and short.notices == []


@pytest.mark.slow
@pytest.mark.parametrize("text", [
    "a\x00b\x07c\x1b[31m red\x1b[0m",                 # control characters
    "ok 😀👍🏽 👩\u200d👩\u200d👧 🇩🇪",                 # emoji, ZWJ sequences, flags
    "مرحبا بالعالم",                                   # right to left
    "\u202eevil\u202c שלום ok \u200f",                  # bidi overrides and marks
    "Grüße Привет 你好 مرحبا hello 123",               # mixed scripts
    "\ufeff\u00a0x\u3000y",                            # BOM, no-break and ideographic spaces
])
def test_unusual_input_gives_a_result(translation_model, text):
    r = translation_model.attend(text)
    assert not r.teacher_forced
    _check_maps(r, translation_model.cfg)
    ids = _source_ids(translation_model, text)
    assert r.src_tokens == translation_model.tokenizer.pieces(ids, "src")
    for beam in (1, 2):
        _check_translation(translation_model, text, _decode(translation_model, ids, beam), beam)


def test_teacher_forced_shapes(translation_model, tokenizer):
    src, tgt = "the quick brown fox", "der schnelle braune Fuchs"
    r = translation_model.attend(src, tgt=tgt)
    assert r.teacher_forced and r.src == src and r.tgt == tgt
    assert len(r.src_tokens) == len(tokenizer.encode(src)) + 1
    assert len(r.tgt_tokens) == len(tokenizer.encode(tgt)) + 1
    _check_maps(r, translation_model.cfg)


def test_free_running_attend_matches_translate(translation_model):
    src = "zwei junge Mädchen spielen im Park"
    r = translation_model.attend(src)
    assert r.tgt == translation_model.translate(src, beam=1)
    assert translation_model.translate([src, src], beam=1) == [r.tgt, r.tgt]
