"""TranslationModel.attend / translate on bad and unusual input, and the shapes of the maps."""
import numpy as np
import pytest

import core


def _check_maps(r: core.AttendResult, cfg):
    S, T = len(r.src_tokens), len(r.tgt_tokens)
    assert T == len(r.out_tokens)
    assert r.enc_self.shape == (cfg.N, cfg.h, S, S)
    assert r.dec_self.shape == (cfg.n_dec, cfg.h, T, T)
    assert r.cross.shape == (cfg.n_dec, cfg.h, T, S)
    for maps in (r.enc_self, r.dec_self, r.cross):
        assert maps.dtype == np.float32 and np.isfinite(maps).all()
        np.testing.assert_allclose(maps.sum(-1), 1.0, atol=1e-5)
    assert r.src_tokens[-1] == "</s>" and r.tgt_tokens[0] == "<s>" and r.out_tokens[-1] == "</s>"
    assert r.out_tokens[:-1] == r.tgt_tokens[1:]


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


def test_very_long_input_is_truncated(translation_model):
    text = ("ein Mann in einem blauen Hemd steht auf einer Leiter " * 100)[:5000]
    r = translation_model.attend(text, tgt="ein Mann")
    assert r.truncated and r.notices and "too long" in r.notices[0]
    assert len(r.src_tokens) == translation_model.max_source_tokens
    _check_maps(r, translation_model.cfg)
    assert isinstance(translation_model.translate(text, beam=1), str)
    short = translation_model.attend("ein Mann", tgt="ein Mann")
    assert not short.truncated and short.notices == []


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
    assert isinstance(translation_model.translate(text, beam=2), str)


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
