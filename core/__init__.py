"""Attention Explorer's core: the paper's Transformer and its input/output.

    model/       the network (config, attention, layers, Transformer, decoding)
    tokenizer.py, data.py, translator.py, views.py   text in, attention maps and translations out
    checkpoint/  reading and writing checkpoint folders (weights, config, card, snapshots; atomic writes)
    training/    the training loop's pieces (schedule, precision, validation, saving), used by scripts/train.py
    studies/     what is learned about a model (heads, ablation, alignment, the paper's figures, pronouns, ...)
"""
from .checkpoint import CheckpointError, load_checkpoint, load_model, save_checkpoint
from .model import (PRESETS, MultiHeadAttention, Transformer, TransformerConfig, beam_search, greedy_search,
                    label_smoothed_loss, preset, scaled_dot_product_attention, sinusoidal_table)
from .tokenizer import Tokenizer, clean_text, merge_attention, merge_words, word_ids
from .training.schedule import cooldown_factor, describe_cooldown, make_optimizer, noam_lr
from .translator import AttendResult, ScoreResult, TranslationModel
from .views import KINDS, AttentionView, attention_view

__all__ = [
    "MultiHeadAttention", "scaled_dot_product_attention",
    "CheckpointError", "load_checkpoint", "load_model", "save_checkpoint",
    "PRESETS", "TransformerConfig", "preset",
    "beam_search", "greedy_search", "sinusoidal_table",
    "Transformer", "label_smoothed_loss", "make_optimizer", "noam_lr", "cooldown_factor", "describe_cooldown",
    "Tokenizer", "clean_text", "merge_attention", "merge_words", "word_ids",
    "AttendResult", "ScoreResult", "TranslationModel",
    "KINDS", "AttentionView", "attention_view",
]
