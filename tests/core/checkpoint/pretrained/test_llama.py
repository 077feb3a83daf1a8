"""Imported Llama-architecture models (Llama with grouped-query attention, a Llama 3.2-like one with its rescaled
rotary frequencies and <|begin_of_text|>, Qwen2 with its q/k/v biases) give transformers' logits and attention maps;
what a family asks that is not built (sliding windows, mixture of experts, soft caps, other rope scalings) is
refused by name, by the Hub before any weight is downloaded.

Everything is built here, offline: a tiny byte-level BPE tokenizer and tiny random LlamaForCausalLM and
Qwen2ForCausalLM models.
"""
import json

import pytest
import torch

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")

from core.checkpoint.pretrained import HFImportError, convert_folder, pretrained_checkpoint  # noqa: E402
from tests.core.checkpoint.pretrained.fake_hub import serving  # noqa: E402
from tests.core.checkpoint.pretrained.hf_lm_models import (LLAMA_VARIANTS, TEXTS,  # noqa: E402
                                                           assert_config_refused, assert_lm_matches_transformers,
                                                           build_llama, hf_tokenizer, imported)
from tests.core.checkpoint.pretrained.hf_models import edited_copy  # noqa: E402


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("llama")
    return {v: build_llama(root / v, v) for v in LLAMA_VARIANTS}


@pytest.fixture(scope="module", params=sorted(LLAMA_VARIANTS))
def llama(request, folders, tmp_path_factory):
    """(variant, hf_dir, transformers' model with eager attention, our imported LanguageModel)."""
    hf_dir = folders[request.param]
    return request.param, hf_dir, *imported(hf_dir, tmp_path_factory.mktemp("ckpt") / request.param)


def test_logits_and_every_map_match_transformers(llama):
    _, _, hf, lm = llama
    assert_lm_matches_transformers(lm, hf)


def test_grouped_query_heads_rotary_settings_and_tokens(llama):
    variant, hf_dir, hf, lm = llama
    cfg, c = lm.cfg, hf.config
    assert (cfg.h, cfg.h_kv) == (c.num_attention_heads, c.num_key_value_heads) and cfg.h_kv < cfg.h
    g = cfg.h // cfg.h_kv
    assert lm.kv_groups() == [list(range(j * g, (j + 1) * g)) for j in range(cfg.h_kv)]
    assert cfg.positions == "rotary" and cfg.rms_norm and cfg.gated_ffn and cfg.activation == "silu"
    hub_config = json.loads((hf_dir / "config.json").read_text())
    assert cfg.rope_base == hub_config["rope_theta"] and cfg.tie_output == hub_config["tie_word_embeddings"]
    assert (cfg.rope_scaling or {}).get("rope_type") == ("llama3" if variant == "llama3" else None)
    assert cfg.qkv_bias == (variant == "qwen2") and not cfg.bias
    tok = hf_tokenizer(hf_dir)
    for text in TEXTS:
        assert lm.ids(text)[0] == tok(text)["input_ids"][: cfg.max_len]   # Llama 3's <|begin_of_text|> first too
    assert (cfg.bos_id is not None) == (variant == "llama3")
    if variant == "llama3":
        assert lm.attend(TEXTS[0]).tokens[0] == "<|begin_of_text|>"
    if variant == "qwen2":                                             # ids beyond tokenizer.json: padding
        assert cfg.vocab_size == len(lm.tokenizer) == tok.vocab_size + 16
        assert lm.tokenizer.pieces([cfg.vocab_size - 1]) == ["<unk>"]


QWEN_REFUSED = [
    (dict(use_sliding_window=True, sliding_window=16), "sliding_window=16: sliding-window attention"),
    (dict(rope_scaling={"rope_type": "yarn", "factor": 4.0}), "rope_scaling type 'yarn': only llama3"),
    (dict(hidden_act="relu2"), "hidden_act='relu2'"),
]
# Families whose config.json says what is not built, whatever their model_type: named, not merely "unknown"
OTHER_FAMILIES = [
    (dict(model_type="mistral", sliding_window=4096), "'mistral' model, with what the explorer does not build"
                                                      ":\n  - sliding_window=4096"),
    (dict(model_type="mixtral", num_local_experts=8), "num_local_experts=8: a mixture of experts"),
    (dict(model_type="gemma2", attn_logit_softcapping=50.0), "attn_logit_softcapping=50.0: soft caps"),
    (dict(model_type="qwen2_moe", num_experts=60), "num_experts=60: a mixture of experts"),
    (dict(model_type="phi3"), "'phi3' model; the explorer reads .*GPT-2.*Llama / SmolLM2 / Qwen2.*GPT-NeoX"),
]


def other_family(folder, config: dict):
    """A folder of another family's model: its config.json, and weights never read."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    for name in ("model.safetensors", "tokenizer.json"):
        (folder / name).write_bytes(b"never read")
    return folder


@pytest.mark.parametrize("changes, match", QWEN_REFUSED)
def test_what_is_not_built_is_refused_by_name(folders, tmp_path, changes, match):
    assert_config_refused(folders["qwen2"], tmp_path, match, **changes)


@pytest.mark.parametrize("config, match", OTHER_FAMILIES)
def test_other_families_say_what_is_not_built(tmp_path, config, match):
    with pytest.raises(HFImportError, match=match):
        convert_folder(other_family(tmp_path / "other", config), tmp_path / "out")


@pytest.mark.parametrize("kind", ["qwen2-window", "mixtral"])
def test_the_hub_refuses_it_before_any_weight_is_downloaded(folders, tmp_path, monkeypatch, kind):
    (changes, match), = [QWEN_REFUSED[0]] if kind == "qwen2-window" else [OTHER_FAMILIES[1]]
    bad = (edited_copy(folders["qwen2"], tmp_path / "bad", "config.json", **changes) if kind == "qwen2-window"
           else other_family(tmp_path / "bad", changes))
    with serving({"someone/unbuilt": bad}, monkeypatch, tmp_path) as hub:
        with pytest.raises(HFImportError, match=match):
            pretrained_checkpoint("someone/unbuilt")
        assert hub.fetched() == {"config.json"}


def test_a_tied_model_with_a_different_stored_head_is_refused(folders, tmp_path):
    from safetensors.torch import load_file, save_file
    bad = edited_copy(folders["llama3"], tmp_path / "bad", "config.json")
    state = load_file(bad / "model.safetensors")
    state["lm_head.weight"] = state["model.embed_tokens.weight"] + 1.0
    save_file(state, bad / "model.safetensors")
    with pytest.raises(HFImportError, match="should be one tied matrix"):
        convert_folder(bad, tmp_path / "out")


def test_queries_and_keys_after_the_rotation_give_the_maps(llama):
    _, _, _, lm = llama
    r = lm.attend(TEXTS[0], vectors=True)
    q, k = (torch.from_numpy(x) for x in r.vectors)
    N, h, T, d_k = q.shape
    assert (N, h, d_k) == (lm.cfg.N, lm.cfg.h, lm.cfg.d_k) and k.shape == q.shape
    for group in lm.kv_groups():                                     # heads of one group read the same keys
        assert all(torch.equal(k[:, group[0]], k[:, j]) for j in group)
    scores = q @ k.transpose(-2, -1) / d_k ** 0.5 + torch.full((T, T), float("-inf")).triu(1)
    torch.testing.assert_close(scores.softmax(-1), torch.from_numpy(r.self_attn), atol=1e-5, rtol=0)
