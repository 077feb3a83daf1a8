"""The same contrast on every imported family (tiny random Marian, NLLB, M2M100, FSMT, mBART-50 models built
offline by the importer tests' builders): all four methods run, words leave out language tokens, erasure is the
log-odds without each word, and integrated gradients stay complete."""
import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")

import core  # noqa: E402
from core import attribution as A  # noqa: E402
from core.checkpoint.pretrained import convert_folder  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import build_fsmt, build_m2m100, build_mbart  # noqa: E402
from tests.core.checkpoint.pretrained.test_marian import build_marian, spm_files  # noqa: E402, F401 (a fixture)

SRC = "the quick brown fox jumps over the lazy dog"
PREFIX = "der schnelle braune"
LANGS = {"nllb": ("eng_Latn", "deu_Latn"), "m2m100": ("en", "de"), "mbart": ("en_XX", "de_DE")}


@pytest.fixture(scope="module", params=["marian", "nllb", "m2m100", "fsmt", "mbart"])
def imported(request, spm_files, tmp_path_factory):  # noqa: F811
    kind, root = request.param, tmp_path_factory.mktemp(request.param)
    if kind == "marian":
        hf_dir = build_marian(root / "hf", spm_files, shared=True)
    elif kind == "fsmt":
        hf_dir = build_fsmt(root / "hf")
    elif kind == "mbart":
        hf_dir = build_mbart(root / "hf")
    else:
        hf_dir = build_m2m100(root / "hf", kind)
    src_lang, tgt_lang = LANGS.get(kind, (None, None))
    out = convert_folder(hf_dir, root / "ckpt", dtype=torch.float32, src_lang=src_lang, tgt_lang=tgt_lang)
    return kind, core.load_checkpoint(out)


@pytest.mark.parametrize("method", list(A.METHODS))
def test_every_method_runs_on_every_family(imported, method):
    kind, tm = imported
    c = tm.contrast(SRC, PREFIX, "Fuchs", "Hund", method=method, steps=256)
    assert len(c.src_words) == len(c.src_scores) and len(c.tgt_words) == len(c.tgt_scores) == 3, kind
    assert not any(w in ("eng_Latn", "deu_Latn", "en_XX", "de_DE", "__en__", "__de__") for w in
                   c.src_words + c.tgt_words)
    assert np.isfinite(c.src_scores).all() and np.isfinite(c.tgt_scores).all() and np.isfinite(c.log_odds)
    assert c.cross.shape == (tm.cfg.N_dec, tm.cfg.h, len(c.src_words))
    if method == "integrated":
        span = c.log_odds - c.baseline_log_odds
        assert c.completeness_gap <= 0.02 * abs(span) + 0.01, kind       # random weights: a path with many kinks


def test_erasure_is_the_log_odds_without_each_word(imported):
    kind, tm = imported
    c = tm.contrast(SRC, PREFIX, "Fuchs", "Hund")
    q = A.question(tm, SRC, PREFIX, "Fuchs", "Hund")
    lo = A.log_odds_of(tm, q, [A.without(q, src_words={k}) for k in range(len(q.src_words))])
    np.testing.assert_allclose(c.src_scores, c.log_odds - lo, atol=1e-4, err_msg=kind)
    assert q.src_ids[: len(tm.src_prefix)] == tm.src_prefix                 # the language token stays in front


def test_a_word_the_vocabulary_cannot_spell_is_refused_by_name(imported):
    """Marian's SentencePiece has no byte fallback: a word of characters it never saw is <unk>, refused in words."""
    kind, tm = imported
    if kind != "marian":
        pytest.skip("only Marian's tiny vocabulary lacks these characters without falling back on bytes")
    assert tm.cfg.unk_id in tm.tokenizer.encode("日本", "tgt")
    with pytest.raises(ValueError, match="cannot spell '日本'"):
        tm.contrast(SRC, PREFIX, "日本", "Hund")
