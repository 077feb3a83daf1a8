"""What the decoder-only importer tests share: tiny random transformers language models built here (never
downloaded), with a tiny byte-level BPE tokenizer.json, and the comparison of our imported model with theirs: logits
and every attention map on the same ids."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer as HFTokenizer, decoders, models, pre_tokenizers, processors, trainers

from core.checkpoint import load_checkpoint
from core.checkpoint.pretrained import HFImportError, convert_folder
from tests.core.checkpoint.pretrained.hf_models import LOGITS_ATOL, MAPS_ATOL, edited_copy
from tests.helpers import CORPUS

TEXTS = ["the quick brown fox jumps over the lazy dog",
         "a man in a blue shirt is standing on a ladder and the weather is nice. " * 3,   # repeated: induction-like
         "Zebras jump: 42!"]
TINY_LM = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
               max_position_embeddings=128)


def byte_bpe(folder, vocab_size: int = 320, bos: str | None = None) -> int:
    """A tiny byte-level BPE tokenizer (GPT-2's kind) trained on the test corpus, saved as folder/tokenizer.json;
    with bos, a post-processor that puts that token before every text (as Llama 3's does). Returns its size."""
    specials = ["<|endoftext|>"] + ([bos] if bos else [])
    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(CORPUS * 10, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    if bos:
        tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A $B",
                                                           special_tokens=[(bos, tok.token_to_id(bos))])
    tok.save(str(folder / "tokenizer.json"))
    return tok.get_vocab_size(with_added_tokens=True)


@torch.no_grad()
def randomize_lm(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Large random weights, norm gains around 1 (GPT-2's ln_*, Llama's *layernorm, NeoX's *_layernorm): peaked
    attention, so that a wrong mapping shows; learned positions random too, so that a wrong offset shows."""
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        noise = torch.randn(p.shape, generator=g) * (0.3 if p.dim() > 1 else 0.2)
        gain = p.dim() == 1 and name.endswith("weight") and ("ln" in name or "norm" in name)
        p.copy_(noise + (1.0 if gain else 0.0))
    return model.eval()


def save(model, folder, config_changes: dict | None = None) -> None:
    """save_pretrained in safetensors, then config.json's keys changed as the Hub's files spell them."""
    model.save_pretrained(folder, safe_serialization=True)
    if config_changes:
        path = folder / "config.json"
        hf = {**json.loads(path.read_text()), **config_changes}
        path.write_text(json.dumps({k: v for k, v in hf.items() if v is not None}))


def build_gpt2(folder, seed: int = 0, hub_layout: bool = True):
    """A tiny random GPT2LMHeadModel; hub_layout: its weights named as openai-community/gpt2's file names them (no
    "transformer." prefix, the causal-mask buffers attn.bias and attn.masked_bias stored too)."""
    from transformers import GPT2Config, GPT2LMHeadModel
    folder.mkdir(parents=True)
    n = byte_bpe(folder)
    config = GPT2Config(vocab_size=n, n_embd=32, n_layer=2, n_head=4, n_positions=64, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(seed)
    save(randomize_lm(GPT2LMHeadModel(config), seed), folder)
    if hub_layout:
        state = {k.removeprefix("transformer."): v for k, v in load_file(folder / "model.safetensors").items()
                 if k != "lm_head.weight"}
        for i in range(config.n_layer):
            state[f"h.{i}.attn.bias"] = torch.ones(64, 64, dtype=torch.uint8).tril()[None, None]
            state[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
        save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


# Llama with grouped-query attention (4 query heads over 2 key/value heads), a Llama 3.2-like one (tied, its
# <|begin_of_text|> first, the "llama3" rescaling of the rotary frequencies), and Qwen2 (q/k/v biases, 1 key/value
# head, its vocabulary padded beyond the tokenizer's as Qwen2.5's is)
LLAMA_VARIANTS = {
    "llama-gqa": dict(model_type="llama", num_key_value_heads=2, tie_word_embeddings=False, rope_theta=10000.0),
    "llama3": dict(model_type="llama", num_key_value_heads=2, tie_word_embeddings=True, rope_theta=500000.0,
                   bos="<|begin_of_text|>", rope_scaling={"rope_type": "llama3", "factor": 32.0,
                                                      "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                      "original_max_position_embeddings": 16}),
    "qwen2": dict(model_type="qwen2", num_key_value_heads=1, tie_word_embeddings=True, rope_theta=1000000.0,
                  extra_ids=16),
}


def build_llama(folder, variant: str = "llama-gqa", seed: int = 0):
    """A tiny random LlamaForCausalLM or Qwen2ForCausalLM, its config.json in the Hub's spelling (rope_theta and
    rope_scaling at the top, as the Hub's files have them, not transformers 5's rope_parameters)."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
    opts = dict(LLAMA_VARIANTS[variant])
    folder.mkdir(parents=True)
    n = byte_bpe(folder, bos=opts.pop("bos", None)) + opts.pop("extra_ids", 0)
    qwen = opts.pop("model_type") == "qwen2"
    rope = {"rope_theta": opts.pop("rope_theta"), "rope_scaling": opts.pop("rope_scaling", None)}
    params = {"rope_type": "default", **(rope["rope_scaling"] or {}), "rope_theta": rope["rope_theta"]}
    config_class, model_class = (Qwen2Config, Qwen2ForCausalLM) if qwen else (LlamaConfig, LlamaForCausalLM)
    config = config_class(vocab_size=n, rope_parameters=params, rms_norm_eps=1e-6, bos_token_id=None,
                          eos_token_id=0, **TINY_LM, **opts)
    torch.manual_seed(seed)
    save(randomize_lm(model_class(config), seed), folder, {"rope_parameters": None, **rope})
    return folder


def build_neox(folder, seed: int = 0, parallel: bool = True):
    """A tiny random GPTNeoXForCausalLM, Pythia's shape: rotary on a quarter of each head's 16 dimensions, the
    parallel residual (or not), an untied embed_out, a vocabulary padded beyond the tokenizer's; config.json as
    Pythia's (rotary_pct, rotary_emb_base)."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    folder.mkdir(parents=True)
    n = byte_bpe(folder) + 8
    config = GPTNeoXConfig(vocab_size=n, **{**TINY_LM, "hidden_size": 64}, use_parallel_residual=parallel,
                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                            "partial_rotary_factor": 0.25},
                           hidden_dropout=0.0, attention_dropout=0.0, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(seed)
    save(randomize_lm(GPTNeoXForCausalLM(config), seed), folder,
         {"rope_parameters": None, "rotary_pct": 0.25, "rotary_emb_base": 10000})
    return folder


def load_hf(folder):
    """transformers' own model of the folder, with eager attention (the one that returns its maps)."""
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()


def imported(hf_dir, out_dir) -> tuple:
    """(transformers' model of hf_dir with eager attention, our LanguageModel converted into out_dir in float32)."""
    return load_hf(hf_dir), load_checkpoint(convert_folder(hf_dir, out_dir, dtype=torch.float32))


def assert_config_refused(hf_dir, tmp_path, match: str, **changes) -> None:
    """hf_dir with these config.json changes is refused by an HFImportError matching `match`; nothing is written."""
    bad = edited_copy(hf_dir, tmp_path / "bad", "config.json", **changes)
    with pytest.raises(HFImportError, match=match):
        convert_folder(bad, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def hf_tokenizer(folder):
    """transformers' tokenizer of the folder's tokenizer.json."""
    from transformers import PreTrainedTokenizerFast
    return PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))


@torch.no_grad()
def lm_differences(lm, hf, text: str) -> dict:
    """Max |ours - theirs| of the logits and of every attention map, on our ids of the text."""
    r = lm.attend(text)
    ids = torch.tensor([r.ids])
    out = hf(input_ids=ids, output_attentions=True, use_cache=False)
    theirs = torch.cat(out.attentions, 0).numpy()                   # (layers, h, T, T)
    assert r.self_attn.shape == theirs.shape
    return {"logits": (lm.logits(r.ids) - out.logits[0]).abs().max().item(),
            "maps": float(np.abs(r.self_attn - theirs).max())}


def assert_lm_matches_transformers(lm, hf, texts=TEXTS) -> None:
    """Our logits and every attention map equal transformers' within LOGITS_ATOL and MAPS_ATOL, on every text."""
    for text in texts:
        diff = lm_differences(lm, hf, text)
        assert diff["logits"] <= LOGITS_ATOL and diff["maps"] <= MAPS_ATOL, (text, diff)
