"""Imported GPT-NeoX / Pythia models (the fused query_key_value by head, rotary on a quarter of each head, the
parallel residual or not, an untied embed_out) give transformers' logits and attention maps.

Everything is built here, offline: a tiny byte-level BPE tokenizer and tiny random GPTNeoXForCausalLM models.
"""
import pytest
import torch

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")

from safetensors.torch import load_file, save_file  # noqa: E402

from core.checkpoint.pretrained import HFImportError, convert_folder  # noqa: E402
from core.model.rotary import inverse_frequencies  # noqa: E402
from tests.core.checkpoint.pretrained.hf_lm_models import (assert_config_refused,  # noqa: E402
                                                           assert_lm_matches_transformers, build_neox, hf_tokenizer,
                                                           imported)
from tests.core.checkpoint.pretrained.hf_models import edited_copy  # noqa: E402


def with_old_buffers(folder):
    """The weights as older exports of Pythia store them: each layer's causal mask, its fill value and the rotary
    frequencies kept among the tensors."""
    state = load_file(folder / "model.safetensors")
    for i in range(2):
        prefix = f"gpt_neox.layers.{i}.attention."
        state[prefix + "bias"] = torch.ones(128, 128, dtype=torch.bool).tril()[None, None]
        state[prefix + "masked_bias"] = torch.tensor(-1e9)
        state[prefix + "rotary_emb.inv_freq"] = inverse_frequencies(4, 10000.0)
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


@pytest.fixture(scope="module", params=["parallel", "sequential", "old-buffers"])
def neox(request, tmp_path_factory):
    """(hf_dir, transformers' model with eager attention, our imported LanguageModel)."""
    root = tmp_path_factory.mktemp(f"neox-{request.param}")
    hf_dir = build_neox(root / "pythia-tiny", parallel=request.param != "sequential")
    if request.param == "old-buffers":
        with_old_buffers(hf_dir)
    return hf_dir, *imported(hf_dir, root / "ckpt")


def test_logits_and_every_map_match_transformers(neox):
    _, hf, lm = neox
    assert_lm_matches_transformers(lm, hf)


def test_config_and_tokens(neox):
    hf_dir, hf, lm = neox
    cfg = lm.cfg
    assert (cfg.d_k, cfg.rotary_dim, cfg.activation, cfg.tie_output) == (16, 4, "gelu", False)
    assert cfg.parallel_residual == hf.config.use_parallel_residual
    assert lm.model.generator.weight is not lm.model.tok_embed.weight
    assert cfg.vocab_size == len(lm.tokenizer) == hf_tokenizer(hf_dir).vocab_size + 8
    assert lm.ids("the lazy dog")[0] == hf_tokenizer(hf_dir)("the lazy dog")["input_ids"]
    assert lm.card.source == "pythia-tiny (GPT-NeoX), converted from the Hugging Face format"
    assert lm.card.credit.startswith("Pythia by EleutherAI")


@pytest.mark.parametrize("changes, match", [
    (dict(rotary_pct=0.05), "rotary_pct=0.05: fewer than 2"),
    (dict(hidden_act="gelu_fast"), "hidden_act='gelu_fast'"),
    (dict(rope_scaling={"type": "dynamic", "factor": 2.0}), "rope_scaling type 'dynamic'"),
])
def test_what_is_not_built_is_refused_by_name(tmp_path, changes, match):
    assert_config_refused(build_neox(tmp_path / "pythia-tiny"), tmp_path, match, **changes)


def test_other_rotary_frequencies_stored_are_refused(tmp_path):
    folder = with_old_buffers(build_neox(tmp_path / "pythia-tiny"))
    bad = edited_copy(folder, tmp_path / "bad", "config.json", rotary_emb_base=500)
    with pytest.raises(HFImportError, match="rotary_emb.inv_freq are not the rotary frequencies"):
        convert_folder(bad, tmp_path / "out")
