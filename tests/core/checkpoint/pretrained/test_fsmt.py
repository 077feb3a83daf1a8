"""Imported FSMT models (fairseq's WMT19) agree with transformers' FSMTForConditionalGeneration: teacher-forced
logits, every attention map, greedy output and the tokenizer's ids.

Everything is built here, offline: tiny BPE merges and two vocabularies of different sizes over Moses tokens, and a
tiny random model.
"""
import json
import shutil
import warnings

import pytest
import torch

transformers = pytest.importorskip("transformers",
                                   reason="transformers is not installed (pip install -r requirements-dev.txt)")
from transformers import FSMTForConditionalGeneration, FSMTTokenizer  # noqa: E402

import core  # noqa: E402
from core.checkpoint.pretrained import HFImportError  # noqa: E402
from core.checkpoint.pretrained import convert_folder as import_model  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import (EXTRA_EN, SENTENCES, TARGET,  # noqa: E402
                                                        assert_greedy_matches_generate, assert_matches_transformers,
                                                        build_fsmt)


def hf_tokenizers(folder):
    """transformers' FSMTTokenizer for the source side, and one with the sides swapped to make target ids (its own
    tokenizer only ever encodes source text)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [FSMTTokenizer(langs=langs, src_vocab_file=str(folder / a), tgt_vocab_file=str(folder / b),
                              merges_file=str(folder / "merges.txt"))
                for langs, a, b in [(["en", "de"], "vocab-src.json", "vocab-tgt.json"),
                                    (["de", "en"], "vocab-tgt.json", "vocab-src.json")]]


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """(hf_dir, transformers model, their source and target tokenizers, our imported TranslationModel)."""
    root = tmp_path_factory.mktemp("fsmt")
    hf_dir = build_fsmt(root / "wmt19-tiny")
    hf = FSMTForConditionalGeneration.from_pretrained(hf_dir).eval()
    out = import_model(hf_dir, root / "ckpt", dtype=torch.float32)
    return (hf_dir, hf, *hf_tokenizers(hf_dir), core.load_checkpoint(out))


def test_token_ids_match_their_tokenizer(imported):
    _, _, src_tok, tgt_tok, tm = imported
    for s in SENTENCES + EXTRA_EN + [TARGET, "Zebras jump: 42!", "x\U0001F600y «quoted»"]:
        assert tm.source_ids(s) == src_tok(s)["input_ids"]                      # pieces + </s>
        assert tm.target_ids(s) + [tm.cfg.eos_id] == tgt_tok(s)["input_ids"]


def test_config_and_card(imported):
    hf_dir, hf, _, _, tm = imported
    cfg = tm.cfg
    assert (cfg.norm, cfg.pe_layout, cfg.pos_offset, cfg.bos_id, cfg.share_embeddings) == ("post", "fairseq", 2, 2,
                                                                                            False)
    assert (cfg.source_vocab_size, cfg.vocab_size) == (hf.config.src_vocab_size, hf.config.tgt_vocab_size)
    assert cfg.source_vocab_size != cfg.vocab_size and cfg.src_prefix_id is None and cfg.tgt_prefix_id is None
    assert tm.card.trained_here is False and tm.card.extra["languages"] == {"source": "en", "target": "de"}
    assert tm.card.source == "wmt19-tiny (FSMT), converted from the Hugging Face format"


@pytest.mark.parametrize("src", SENTENCES + EXTRA_EN[:1])
def test_logits_and_attention_match_transformers(imported, src):
    hf, tm = imported[1], imported[-1]
    assert_matches_transformers(tm, hf, src)


@pytest.mark.slow
def test_greedy_matches_generate(imported):
    _, hf, src_tok, _, tm = imported
    assert_greedy_matches_generate(tm, hf, src_tok, SENTENCES[:2])
    assert tm.translate(SENTENCES[0], beam=3)


def test_pieces_are_shown_as_words(imported):
    """▁ marks each word's first piece (a word: what the text has between spaces), entities become characters."""
    tm = imported[-1]
    r = tm.attend(EXTRA_EN[0], TARGET)
    words = core.merge_words(r.src_tokens[:-1])
    assert words == EXTRA_EN[0].split()
    assert all("</w>" not in p and "&quot;" not in p for p in r.src_tokens)


def test_languages_are_fixed(imported, tmp_path):
    with pytest.raises(HFImportError, match="translates en -> de only"):
        import_model(imported[0], tmp_path / "out", src_lang="de", tgt_lang="en")


def test_missing_merges_and_lowercasing_are_readable_errors(imported, tmp_path):
    folder = tmp_path / "broken"
    shutil.copytree(imported[0], folder)
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    with pytest.raises(HFImportError, match="lower-case"):
        import_model(folder, tmp_path / "out")
    (folder / "merges.txt").unlink()
    with pytest.raises(HFImportError, match="lacks merges.txt"):
        import_model(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists()
