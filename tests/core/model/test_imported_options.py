"""The TransformerConfig options that imported models need (fairseq's positions and their offset, a source
vocabulary of its own, language tokens), each off by default: the paper's model is what it was."""
import math

import numpy as np
import pytest
import torch

import core
from core.model.layers import sinusoidal_table


def fairseq_formula(n: int, d: int) -> np.ndarray:
    """fairseq's table written out: sin(pos * 10000^(-i/(d/2 - 1))) for i < d/2, then the cosines."""
    half = d // 2
    angles = np.arange(n)[:, None] * np.exp(-math.log(10000) * np.arange(half) / (half - 1))[None, :]
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def test_the_paper_defaults_are_unchanged():
    cfg = core.TransformerConfig()
    assert (cfg.pe_layout, cfg.pos_offset, cfg.src_vocab_size, cfg.src_prefix_id, cfg.tgt_prefix_id) == (
        "interleaved", 0, None, None, None)
    assert cfg.source_vocab_size == cfg.vocab_size


def test_fairseq_table_is_fairseqs_formula():
    np.testing.assert_allclose(sinusoidal_table(300, 16, "fairseq").numpy(), fairseq_formula(300, 16), atol=1e-4)
    assert not np.allclose(sinusoidal_table(300, 16, "concat").numpy(), fairseq_formula(300, 16), atol=1e-2)


def test_the_position_offset_shifts_the_table():
    torch.manual_seed(0)
    plain = core.Transformer(core.preset("tiny", vocab_size=30, pe_layout="fairseq"))
    shifted = core.Transformer(core.preset("tiny", vocab_size=30, pe_layout="fairseq", pos_offset=2))
    assert torch.equal(shifted.src_pos.table[:128], plain.src_pos.table) and len(shifted.src_pos.table) == 130
    x = torch.zeros(1, 5, 32)
    assert torch.equal(shifted.src_pos(x, start=3), x + plain.src_pos.table[5:10])
    with pytest.raises(ValueError, match="longer than the model's max_len .128."):
        shifted.src_pos(torch.zeros(1, 129, 32))


def test_a_source_vocabulary_of_its_own():
    model = core.Transformer(core.preset("tiny", vocab_size=30, src_vocab_size=50, share_embeddings=False))
    assert model.src_embed.weight.shape == (50, 32) and model.generator.weight.shape == (30, 32)
    logits = model(torch.tensor([[45, 3]]), torch.tensor([[2, 7]]))
    assert logits.shape == (1, 2, 30)
    with pytest.raises(ValueError, match="cannot share one embedding"):
        core.preset("tiny", vocab_size=30, src_vocab_size=50)


@pytest.mark.parametrize("beam", [1, 3])
def test_the_target_language_token_is_forced_first(beam):
    torch.manual_seed(0)
    model = core.Transformer(core.preset("tiny", vocab_size=30, tgt_prefix_id=17)).eval()
    src = torch.tensor([[5, 6, 7, 3], [8, 9, 3, 0]])
    free = core.greedy_search(core.Transformer(core.preset("tiny", vocab_size=30)).eval(), src)
    out = core.greedy_search(model, src) if beam == 1 else core.beam_search(model, src, beam=beam)
    assert all(seq[0] == 17 for seq in out) and any(seq[0] != 17 for seq in free)
