"""Imported mBART-50 models agree with transformers' MBartForConditionalGeneration: teacher-forced logits, every
attention map, greedy output and the tokenizer's ids (from tokenizer.json, and from sentencepiece.bpe.model alone).

Everything is built here, offline: a tiny SentencePiece model, transformers' MBart50Tokenizer over it, and a tiny
random model with learned positions, a LayerNorm on the embeddings and GELU.
"""
import shutil
import warnings

import pytest
import torch

transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (pip install -r requirements-dev.txt)")
from transformers import AutoTokenizer, MBartForConditionalGeneration  # noqa: E402

import core  # noqa: E402
from core.checkpoint.pretrained import HFImportError  # noqa: E402
from core.checkpoint.pretrained import convert_folder as import_model  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import (SENTENCES, TARGET,  # noqa: E402
                                                        assert_greedy_with_language_token,
                                                        assert_matches_transformers, build_mbart, edited_copy)

EXAMPLES = SENTENCES + [TARGET, "Zebras jump: 42!", "Grüße aus München"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """(hf_dir, transformers model with eager attention, their tokenizer, our imported TranslationModel)."""
    root = tmp_path_factory.mktemp("mbart")
    hf_dir = build_mbart(root / "mbart-50-tiny")
    hf = MBartForConditionalGeneration.from_pretrained(hf_dir, attn_implementation="eager").eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tok = AutoTokenizer.from_pretrained(hf_dir, src_lang="en_XX", tgt_lang="de_DE")
    out = import_model(hf_dir, root / "ckpt", dtype=torch.float32, src_lang="en_XX", tgt_lang="de_DE")
    return hf_dir, hf, tok, core.load_checkpoint(out)


def test_token_ids_match_their_tokenizer(imported):
    _, _, tok, tm = imported
    for s in EXAMPLES:
        assert tm.source_ids(s) == tok(s)["input_ids"]                         # en_XX + pieces + </s>
        assert tm.target_ids(s) + [tm.cfg.eos_id] == tok(text_target=s)["input_ids"]


def test_without_tokenizer_json_the_sentencepiece_model_gives_the_same_ids(imported, tmp_path):
    hf_dir, _, tok, _ = imported
    folder = tmp_path / "spm-only"
    shutil.copytree(hf_dir, folder)
    (folder / "tokenizer.json").unlink()
    tm = core.load_checkpoint(import_model(folder, tmp_path / "ckpt", src_lang="en_XX", tgt_lang="de_DE"))
    assert isinstance(tm.tokenizer, core.Tokenizer)               # SentencePiece, not tokenizer.json
    for s in EXAMPLES:
        assert tm.source_ids(s) == tok(s)["input_ids"]


def test_config_and_card(imported):
    _, hf, tok, tm = imported
    cfg = tm.cfg
    assert (cfg.norm, cfg.positions, cfg.activation, cfg.embed_norm, cfg.final_logits_bias) == ("pre", "learned",
                                                                                                 "gelu", True, True)
    assert (cfg.bos_id, cfg.eos_id, cfg.pad_id, cfg.max_len) == (2, 2, 1, 128)
    assert cfg.src_prefix_id == tok.convert_tokens_to_ids("en_XX") == tok(TARGET)["input_ids"][0]
    assert cfg.tgt_prefix_id == tok.convert_tokens_to_ids("de_DE")
    assert tm.card.trained_here is False and tm.card.extra["languages"] == {"source": "en_XX", "target": "de_DE"}
    assert "(mBART-50, en_XX -> de_DE)" in tm.card.source and tm.card.credit.startswith("mBART-50")


@pytest.mark.parametrize("src", SENTENCES)
def test_logits_and_attention_match_transformers(imported, src):
    hf, tm = imported[1], imported[-1]
    assert_matches_transformers(tm, hf, src)


@pytest.mark.slow
def test_greedy_matches_generate(imported):
    _, hf, tok, tm = imported
    assert_greedy_with_language_token(tm, hf, tok, SENTENCES[:2])


def test_unknown_language_lists_the_models_codes(imported, tmp_path):
    with pytest.raises(HFImportError, match="'de_XX' is not a language of this model.* 52 codes: .*de_DE, en_XX"):
        import_model(imported[0], tmp_path / "out", src_lang="en_XX", tgt_lang="de_XX")
    assert not (tmp_path / "out").exists()


def test_the_first_mbart_is_refused_with_the_reason(imported, tmp_path):
    folder = edited_copy(imported[0], tmp_path / "cc25", "tokenizer_config.json", tokenizer_class="MBartTokenizer")
    with pytest.raises(HFImportError, match="language code after the sentence"):
        import_model(folder, tmp_path / "out")


def test_the_paper_model_has_none_of_mbarts_options():
    """The options are off by default: the paper's model has no embedding LayerNorm and keeps ReLU."""
    cfg = core.preset("tiny")
    model = core.Transformer(cfg)
    assert not cfg.embed_norm and cfg.activation == "relu" and model.src_embed_norm is None
    assert not any("embed_norm" in name for name in model.state_dict())
