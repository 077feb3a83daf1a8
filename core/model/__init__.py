"""The paper's network (Sections 3.1-3.5): config, attention, layers, the encoder-decoder and its decoding."""
from .attention import MultiHeadAttention, scaled_dot_product_attention
from .config import PRESETS, TransformerConfig, preset
from .decoding import beam_search, greedy_search
from .layers import sinusoidal_table
from .loss import label_smoothed_loss
from .transformer import Transformer

__all__ = ["MultiHeadAttention", "scaled_dot_product_attention", "PRESETS", "TransformerConfig", "preset",
           "beam_search", "greedy_search", "sinusoidal_table", "Transformer", "label_smoothed_loss"]
