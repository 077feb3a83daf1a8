"""Imported NLLB and M2M100 models agree with transformers' M2M100ForConditionalGeneration: teacher-forced logits,
every attention map, greedy output and the tokenizer's ids.

Everything is built here, offline: tiny vocabularies (a tokenizer.json for NLLB, a SentencePiece model and
vocab.json for M2M100) and tiny random models.
"""
import json
import shutil
import warnings

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (pip install -r requirements-dev.txt)")
from transformers import AutoTokenizer, M2M100ForConditionalGeneration, M2M100Tokenizer  # noqa: E402

import core  # noqa: E402
from core.checkpoint.pretrained import HFImportError  # noqa: E402
from core.checkpoint.pretrained import convert_folder as import_model  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import (SENTENCES, TARGET,  # noqa: E402
                                                        assert_greedy_with_language_token,
                                                        assert_matches_transformers, build_m2m100)

LANGS = {"nllb": ("eng_Latn", "deu_Latn"), "m2m100": ("en", "de")}


def hf_tokenizer(folder, kind):
    src, tgt = LANGS[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "nllb":
            return AutoTokenizer.from_pretrained(folder, src_lang=src, tgt_lang=tgt)
        return M2M100Tokenizer(str(folder / "vocab.json"), str(folder / "sentencepiece.bpe.model"), src_lang=src,
                               tgt_lang=tgt)


@pytest.fixture(scope="module", params=["nllb", "m2m100"])
def imported(request, tmp_path_factory):
    """(kind, hf_dir, transformers model with eager attention, their tokenizer, our imported TranslationModel)."""
    kind, root = request.param, tmp_path_factory.mktemp(request.param)
    hf_dir = build_m2m100(root / f"{kind}-tiny", kind)
    hf = M2M100ForConditionalGeneration.from_pretrained(hf_dir, attn_implementation="eager").eval()
    src, tgt = LANGS[kind]
    out = import_model(hf_dir, root / "ckpt", dtype=torch.float32, src_lang=src, tgt_lang=tgt)
    return kind, hf_dir, hf, hf_tokenizer(hf_dir, kind), core.load_checkpoint(out)


def test_token_ids_match_their_tokenizer(imported):
    kind, _, _, tok, tm = imported
    for s in SENTENCES + [TARGET, "Zebras jump: 42!", "Grüße aus München"]:
        assert tm.source_ids(s) == tok(s)["input_ids"]                         # [lang] + pieces + </s>
        assert tm.target_ids(s) + [tm.cfg.eos_id] == tok(text_target=s)["input_ids"]
    assert tm.tokenizer.pieces([tm.cfg.src_prefix_id])[0] == ("eng_Latn" if kind == "nllb" else "__en__")


def test_config_and_card(imported):
    kind, hf_dir, hf, tok, tm = imported
    cfg = tm.cfg
    assert (cfg.norm, cfg.pe_layout, cfg.pos_offset, cfg.bos_id, cfg.eos_id, cfg.pad_id) == ("pre", "fairseq", 2, 2,
                                                                                                2, 1)
    assert cfg.src_prefix_id == tok(TARGET)["input_ids"][0]
    assert cfg.tgt_prefix_id == tok(text_target=TARGET)["input_ids"][0]
    assert cfg.vocab_size == hf.config.vocab_size and len(tm.tokenizer) == cfg.vocab_size
    assert tm.card.trained_here is False
    assert tm.card.extra["languages"] == {"source": LANGS[kind][0], "target": LANGS[kind][1]}
    assert tm.card.source.endswith("converted from the Hugging Face format")
    assert kind in tm.card.source.lower().replace("-", "")
    assert tm.card.extra["original_config"] == json.loads((hf_dir / "config.json").read_text())


@pytest.mark.parametrize("src", SENTENCES)
def test_logits_and_attention_match_transformers(imported, src):
    _, _, hf, _, tm = imported
    assert_matches_transformers(tm, hf, src)


def test_the_language_token_is_a_piece_of_each_side(imported):
    kind, _, _, _, tm = imported
    r = tm.attend(SENTENCES[1], TARGET)
    lang = {"nllb": ("eng_Latn", "deu_Latn"), "m2m100": ("__en__", "__de__")}[kind]
    assert r.src_tokens[0] == lang[0] and r.src_tokens[-1] == "</s>"
    assert r.tgt_tokens[:2] == ["</s>", lang[1]] and r.out_tokens[0] == lang[1] and r.out_tokens[-1] == "</s>"
    assert r.tgt == TARGET                       # the language token is not text
    assert tm.text(tm.target_ids(TARGET)) == TARGET


@pytest.mark.slow
def test_greedy_matches_generate(imported):
    _, _, hf, tok, tm = imported
    assert_greedy_with_language_token(tm, hf, tok, SENTENCES[:2])


def test_a_batch_gives_each_sentence_its_own_maps(imported):
    """Padding must not move fairseq's positions: a sentence's maps in a batch are its maps alone."""
    tm = imported[-1]
    batch = tm.attend_batch(SENTENCES, [TARGET] * 3)
    for s, r in zip(SENTENCES, batch):
        np.testing.assert_allclose(r.enc_self, tm.attend(s, TARGET).enc_self, atol=1e-5)


def test_unknown_language_is_a_readable_error(imported, tmp_path):
    kind, hf_dir, *_ = imported
    with pytest.raises(HFImportError, match="'xx_Zzzz' is not a language of this model"):
        import_model(hf_dir, tmp_path / "out", src_lang="xx_Zzzz", tgt_lang=LANGS[kind][1])
    assert not (tmp_path / "out").exists()


def test_no_tokenizer_is_a_readable_error(imported, tmp_path):
    folder = tmp_path / "no-tokenizer"
    shutil.copytree(imported[1], folder)
    for name in ("tokenizer.json", "sentencepiece.bpe.model"):
        (folder / name).unlink(missing_ok=True)
    with pytest.raises(HFImportError, match="has no tokenizer"):
        import_model(folder, tmp_path / "out")
