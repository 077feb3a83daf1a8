"""Language-model checkpoints for the app's tests, built here (never downloaded): tiny random GPT-2, Llama (grouped-
query attention), BERT and RoBERTa models converted from transformers as the sidebar's "Open a Hugging Face model"
converts them, and core's planted induction model (core.studies.planted_induction) saved with a word-level
tokenizer, so that the head finder has a head that is an induction head by construction."""
from __future__ import annotations

import json

import torch
from tokenizers import Tokenizer as HFTokenizer, models, pre_tokenizers

from core.checkpoint import save_checkpoint
from core.checkpoint.pretrained import convert_folder
from core.studies.planted_induction import planted_induction_model
from core.tokenizer_json import JsonTokenizer

PLANTED_WORDS = ["<bos>", "<unk>"] + [f"w{i}" for i in range(14)]     # the planted model's 16 ids


def planted_checkpoint(folder):
    """The planted induction model (layer 2, head 1 an induction head, layer 1, head 1 a previous-token head) as a
    checkpoint folder, with a word-level tokenizer of its 16 ids."""
    tok = HFTokenizer(models.WordLevel({w: i for i, w in enumerate(PLANTED_WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = JsonTokenizer(tok.to_str(), len(PLANTED_WORDS))
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = planted_induction_model(vocab_size=len(PLANTED_WORDS))
    save_checkpoint(folder, model, tokenizer, {"name": folder.name, "trained_here": False,
                                               "source": "core.studies.planted_induction (weights set by hand)"},
                    dtype=torch.float32)
    return folder


def lm_checkpoints(root):
    """root/checkpoints with gpt2-tiny, llama-gqa (4 query heads over 2 key/value heads), bert-tiny, roberta-tiny
    and planted-induction; returns that folder."""
    from tests.core.checkpoint.pretrained.encoder_models import build_encoder
    from tests.core.checkpoint.pretrained.hf_lm_models import build_gpt2, build_llama
    out = root / "checkpoints"
    convert_folder(build_gpt2(root / "hf-gpt2"), out / "gpt2-tiny")
    convert_folder(build_llama(root / "hf-llama", "llama-gqa"), out / "llama-gqa")
    convert_folder(build_encoder(root / "hf-bert", "bert"), out / "bert-tiny")
    convert_folder(build_encoder(root / "hf-roberta", "roberta"), out / "roberta-tiny")
    planted_checkpoint(out / "planted-induction")
    assert json.loads((out / "gpt2-tiny" / "config.json").read_text())["family"] == "decoder-only"
    return out
