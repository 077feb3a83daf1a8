"""Attention Explorer's core: the paper's Transformer, its training pieces, decoding and checkpoints."""
from .attention import MultiHeadAttention, scaled_dot_product_attention
from .checkpoint import CheckpointError, load_checkpoint, load_model, save_checkpoint
from .config import PRESETS, TransformerConfig, preset
from .decoding import beam_search, greedy_search
from .layers import sinusoidal_table
from .model import Transformer, label_smoothed_loss
from .schedule import cooldown_factor, describe_cooldown, make_optimizer, noam_lr
from .tokenizer import Tokenizer, clean_text, merge_attention, merge_words, word_ids
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
