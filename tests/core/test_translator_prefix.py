"""TranslationModel with language tokens (NLLB, M2M100: cfg.src_prefix_id, cfg.tgt_prefix_id): first on each side
of every map, forced first in every translation, and never in the text."""
import pytest
import torch

import core

SRC_LANG, TGT_LANG = 10, 11          # two ids of the tiny tokenizer, standing in for eng_Latn and deu_Latn


@pytest.fixture(scope="module")
def tm(tokenizer):
    torch.manual_seed(0)
    cfg = core.preset("tiny", vocab_size=len(tokenizer), src_prefix_id=SRC_LANG, tgt_prefix_id=TGT_LANG)
    return core.TranslationModel(core.Transformer(cfg), tokenizer)


def test_ids_start_with_the_language(tm):
    pieces = tm.tokenizer.encode("the quick fox", "src")
    assert tm.source_ids("the quick fox") == [SRC_LANG] + pieces + [tm.cfg.eos_id]
    assert tm.target_ids("der Fuchs") == [TGT_LANG] + tm.tokenizer.encode("der Fuchs", "tgt")


def test_maps_translations_and_scores(tm):
    lang = tm.tokenizer.pieces([SRC_LANG, TGT_LANG])
    r = tm.attend("the quick fox", "der Fuchs")
    assert r.src_tokens[0] == lang[0] and r.tgt_tokens[1] == lang[1] and r.out_tokens[0] == lang[1]
    assert r.tgt == "der Fuchs" and r.enc_self.shape[-1] == len(r.src_tokens)
    free = tm.attend("the quick fox")
    assert free.out_tokens[0] == lang[1]                            # forced, so a model's own maps start alike
    assert tm.translate("the quick fox", beam=1) == free.tgt
    ids = tm.tokenizer.encode("der Fuchs", "tgt")
    assert tm.text([TGT_LANG] + ids) == tm.tokenizer.decode(ids, "tgt") == "der Fuchs"
    s = tm.score("the quick fox", "der Fuchs")
    assert s.pieces[0] == lang[1] and len(s.logprobs) == len(tm.target_ids("der Fuchs")) + 1


def test_a_cut_source_keeps_its_language_token(tm):
    r = tm.attend("the quick fox " * 200)
    assert r.truncated and r.src_tokens[0] == tm.tokenizer.pieces([SRC_LANG])[0]
    assert len(r.src_tokens) == tm.max_source_tokens
