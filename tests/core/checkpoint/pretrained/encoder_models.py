"""Tiny random BERT, RoBERTa and DistilBERT masked-LM models in the Hub's format, built here (never downloaded), with
a tiny tokenizer.json of each kind: WordPiece with [CLS] [SEP] [MASK] [PAD] (BERT, DistilBERT), byte-level BPE with
<s> </s> <mask> <pad> (RoBERTa)."""
from __future__ import annotations

import json

import torch
from tokenizers import Tokenizer as HFTokenizer, models, pre_tokenizers, trainers

from tests.core.checkpoint.pretrained.hf_models import randomize
from tests.helpers import CORPUS

TEXTS = ["the quick brown fox jumps over the lazy dog", "two young girls are playing",
         "a man in a blue shirt is standing on a ladder and the weather is nice"]
KINDS = ("bert", "roberta", "distilbert")
SIZES = {"bert": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                      max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
         "distilbert": dict(dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64, dropout=0.0,
                            attention_dropout=0.0)}
SIZES["roberta"] = {**SIZES["bert"], "max_position_embeddings": 66, "type_vocab_size": 1}


def wordpiece_tokenizer(folder, kind: str = "bert") -> int:
    """A tiny WordPiece vocabulary of the test corpus, saved by transformers' BertTokenizer (or DistilBertTokenizer)
    as tokenizer.json + tokenizer_config.json, as the Hub has them; returns its size."""
    from transformers import BertTokenizer, DistilBertTokenizer
    wp = HFTokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    wp.train_from_iterator([s.lower() for s in CORPUS] * 10, trainers.WordPieceTrainer(
        vocab_size=150, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    vocab = dict(sorted(wp.get_vocab().items(), key=lambda item: item[1]))
    tok = (DistilBertTokenizer if kind == "distilbert" else BertTokenizer)(vocab=vocab, do_lower_case=True)
    tok.save_pretrained(folder)
    return len(tok)


def roberta_tokenizer(folder) -> int:
    """A tiny byte-level BPE vocabulary with RoBERTa's specials first (<s> 0, <pad> 1, </s> 2, <unk> 3) and <mask>
    last, saved by transformers' RobertaTokenizer; returns its size."""
    from transformers import RobertaTokenizer
    bpe = HFTokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.train_from_iterator(CORPUS * 10, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    model = json.loads(bpe.to_str())["model"]
    vocab = dict(model["vocab"])
    vocab["<mask>"] = len(vocab)
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split()) for m in model["merges"]]
    tok = RobertaTokenizer(vocab=vocab, merges=merges)
    tok.save_pretrained(folder)
    return len(tok)


def build_encoder(folder, kind: str, seed: int = 0, head: bool = True):
    """A tiny random BertForMaskedLM, RobertaForMaskedLM or DistilBertForMaskedLM (BertModel etc. without head) with
    its tokenizer, saved with safetensors as the Hub has it."""
    import transformers as tf
    folder.mkdir(parents=True)
    n = roberta_tokenizer(folder) if kind == "roberta" else wordpiece_tokenizer(folder, kind)
    prefix = {"bert": "Bert", "roberta": "Roberta", "distilbert": "DistilBert"}[kind]
    config = getattr(tf, f"{prefix}Config")(vocab_size=n + 3, pad_token_id=1 if kind == "roberta" else 0,
                                            **SIZES[kind])   # + 3: ids the tokenizer never makes, as real models
    torch.manual_seed(seed)
    model = getattr(tf, f"{prefix}ForMaskedLM" if head else f"{prefix}Model")(config)
    randomize(model, seed)
    with torch.no_grad():        # learned positions, random too, so that a wrong offset shows
        for name, p in model.named_parameters():
            if "position_embeddings" in name:
                p.normal_(0, 0.5)
    model.save_pretrained(folder)
    return folder


def hf_model(folder, kind: str, head: bool = True):
    """The saved model, loaded by transformers with eager attention (its maps are returned)."""
    import transformers as tf
    prefix = {"bert": "Bert", "roberta": "Roberta", "distilbert": "DistilBert"}[kind]
    cls = getattr(tf, f"{prefix}ForMaskedLM" if head else f"{prefix}Model")
    return cls.from_pretrained(folder, attn_implementation="eager").eval()
