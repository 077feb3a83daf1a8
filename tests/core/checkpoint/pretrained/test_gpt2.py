"""Imported GPT-2 models give transformers' logits and attention maps; one opened by its Hub id from a local
imitation of the Hub, then again with no network; what GPT-2 variants ask that is not built is refused by name.

Everything is built here, offline: a tiny byte-level BPE tokenizer and tiny random GPT2LMHeadModels.
"""
import json

import pytest
import torch

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")

from safetensors.torch import load_file, save_file  # noqa: E402

from core.checkpoint import load_checkpoint  # noqa: E402
from core.checkpoint.pretrained import HFImportError, convert_folder, open_pretrained  # noqa: E402
from core.language_model import LanguageModel  # noqa: E402
from tests.core.checkpoint.pretrained.fake_hub import serving  # noqa: E402
from tests.core.checkpoint.pretrained.hf_lm_models import (TEXTS, assert_config_refused,  # noqa: E402
                                                           assert_lm_matches_transformers, build_gpt2, hf_tokenizer,
                                                           imported, load_hf)
from tests.core.checkpoint.pretrained.hf_models import edited_copy  # noqa: E402

REPO = "openai-community/gpt2-tiny"


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    return build_gpt2(tmp_path_factory.mktemp("gpt2") / "gpt2-tiny")


@pytest.fixture(scope="module", params=["hub-layout", "transformers-layout"])
def gpt2(request, tmp_path_factory):
    """(hf_dir, transformers' model with eager attention, our imported LanguageModel): the weights named as
    openai-community/gpt2's file names them, or as save_pretrained does (distilgpt2)."""
    root = tmp_path_factory.mktemp(f"gpt2-{request.param}")
    hf_dir = build_gpt2(root / "gpt2-tiny", hub_layout=request.param == "hub-layout")
    return hf_dir, *imported(hf_dir, root / "ckpt")


def test_logits_and_every_map_match_transformers(gpt2):
    _, hf, lm = gpt2
    assert_lm_matches_transformers(lm, hf)


def test_config_tokenizer_and_card(gpt2):
    hf_dir, hf, lm = gpt2
    assert isinstance(lm, LanguageModel)
    cfg = lm.cfg
    assert (cfg.positions, cfg.activation, cfg.norm, cfg.tie_output, cfg.bos_id) == ("learned", "gelu_tanh", "pre",
                                                                                   True, None)
    assert lm.model.generator.weight is lm.model.tok_embed.weight
    assert json.loads((lm.folder / "config.json").read_text())["family"] == "decoder-only"
    tok = hf_tokenizer(hf_dir)
    for text in TEXTS:
        ids, _ = lm.ids(text)
        assert ids == tok(text)["input_ids"][: cfg.max_len]
    r = lm.attend(TEXTS[1])
    assert r.truncated and len(r.tokens) == cfg.max_len == 64 and r.notices
    assert lm.card.source == "gpt2-tiny (GPT-2), converted from the Hugging Face format"
    assert lm.card.extra["original_config"] == json.loads((hf_dir / "config.json").read_text())


def test_the_default_fp16_weights_stay_close(gpt2_dir, tmp_path):
    lm = load_checkpoint(convert_folder(gpt2_dir, tmp_path / "fp16"))
    hf = load_hf(gpt2_dir)
    ids = lm.ids(TEXTS[0])[0]
    with torch.no_grad():
        theirs = hf(input_ids=torch.tensor([ids])).logits[0]
    assert (lm.logits(ids) - theirs).abs().max() < 0.05       # the half-precision rounding of the weights only


@pytest.mark.parametrize("changes, match", [
    (dict(scale_attn_by_inverse_layer_idx=True), "scale_attn_by_inverse_layer_idx=True: scores divided"),
    (dict(activation_function="quick_gelu"), "activation_function='quick_gelu': only gelu_new"),
    (dict(n_embd=None), "lacks n_embd"),
])
def test_what_is_not_built_is_refused_by_name(gpt2_dir, tmp_path, changes, match):
    assert_config_refused(gpt2_dir, tmp_path, match, **changes)


def test_a_tensor_nobody_reads_is_refused(gpt2_dir, tmp_path):
    bad = edited_copy(gpt2_dir, tmp_path / "bad", "config.json")
    state = load_file(bad / "model.safetensors")
    state["h.0.attn.bias"] = torch.ones_like(state["h.0.attn.bias"])      # not the causal mask: something else
    save_file(state, bad / "model.safetensors")
    with pytest.raises(HFImportError, match=r"does not understand: \['h.0.attn.bias'\]"):
        convert_folder(bad, tmp_path / "out")


@pytest.mark.slow
def test_opened_by_its_hub_id_then_with_no_network(gpt2_dir, tmp_path, monkeypatch):
    with serving({REPO: gpt2_dir}, monkeypatch, tmp_path) as hub:
        lm = open_pretrained(REPO, dtype=torch.float32)
        assert isinstance(lm, LanguageModel) and lm.card.extra["imported_from"]["commit"] == hub.commit(REPO)
        assert {"config.json", "model.safetensors", "tokenizer.json"} <= hub.fetched()
        hub.stop()
        again = open_pretrained(REPO, dtype=torch.float32)                 # the explorer's cache
        assert again.folder == lm.folder
        monkeypatch.setenv("ATTN_EXPLORER_CACHE", str(tmp_path / "another-explorer-cache"))
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        offline = open_pretrained(REPO, dtype=torch.float32)               # converted afresh from the HF cache
        assert offline.folder != lm.folder
    assert_lm_matches_transformers(offline, load_hf(gpt2_dir), TEXTS[:1])
    assert offline.attend(TEXTS[0]).tokens == lm.attend(TEXTS[0]).tokens


def test_greedy_generation_and_candidates_match_transformers(gpt2):
    _, hf, lm = gpt2
    ids = lm.ids(TEXTS[0])[0]
    ours = lm.generate(ids, max_new=20)                                 # with the cache, one position at a time
    with torch.no_grad():
        theirs = hf.generate(torch.tensor([ids]), max_new_tokens=20, do_sample=False, pad_token_id=0,
                             eos_token_id=lm.cfg.eos_id)[0, len(ids):].tolist()
        probs = hf(input_ids=torch.tensor([ids])).logits[0, -1].softmax(-1)
    assert ours == theirs and len(ours) > 3
    top = lm.next_candidates(ids, k=5)
    assert [i for i, _, _ in top] == probs.topk(5).indices.tolist()
    assert abs(top[0][2] - probs.max().item()) < 1e-5 and top[0][1] == lm.tokenizer.pieces([top[0][0]])[0]
    drawn = lm.generate(ids, max_new=10, temperature=1.0, seed=3)
    assert drawn == lm.generate(ids, max_new=10, temperature=1.0, seed=3) and drawn
    assert len(lm.generate(ids, max_new=500)) <= lm.cfg.max_len - len(ids)
