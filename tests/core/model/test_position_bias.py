"""T5's relative position bias (core/model/position_bias.py) as an option of the paper's model: buckets, the bias of
each query and key, the decoder's incremental steps, and what the page draws. (Equality with transformers' T5:
tests/core/checkpoint/pretrained/test_t5.py.)"""
import numpy as np
import torch

import core
from app.figures.positional import bias_figure
from core.model.position_bias import RelativePositionBias, learned_bias, relative_bucket


def t5_like(**overrides) -> core.Transformer:
    cfg = core.preset("tiny", vocab_size=50, positions="relative", rel_buckets=8, rel_max_distance=16,
                      scale_scores=False, rms_norm=True, bias=False, norm="pre", gated_ffn=True,
                      activation="gelu_tanh", tie_output=False, scale_embeddings=False, **overrides)
    torch.manual_seed(0)
    return core.Transformer(cfg).eval()


def test_near_distances_have_a_bucket_each_and_far_ones_share():
    d = torch.arange(-40, 41)
    both = relative_bucket(d, True, 8, 16)
    assert both[40].item() == 0 and len(set(both[40:42].tolist())) == 2          # 0 and 1: their own buckets
    assert both[:10].unique().numel() == 1 and both[-10:].unique().numel() == 1   # beyond 16: the last one
    assert set(both[:40].tolist()).isdisjoint(both[41:].tolist())                # left and right apart
    back = relative_bucket(d, False, 8, 16)
    assert (back[40:] == 0).all()                                                # the decoder never looks ahead


def test_the_bias_of_a_step_is_the_last_row_of_the_whole():
    pos = RelativePositionBias(h=4, num_buckets=8, max_distance=16, bidirectional=False)
    whole = pos(6, 6)                                                            # (1, h, 6, 6)
    assert whole.shape == (1, 4, 6, 6)
    assert torch.equal(pos(1, 6, start=5), whole[:, :, 5:])


def test_a_t5_like_model_decodes_the_same_with_and_without_the_cache():
    model = t5_like()
    src = torch.randint(4, 50, (2, 7))
    cached = core.greedy_search(model, src, max_extra=6)
    assert cached == core.greedy_search(model, src, max_extra=6, use_cache=False)
    _, attns = model(src, torch.randint(4, 50, (2, 5)), need_weights=True)
    assert torch.allclose(attns.enc_self[0].sum(-1), torch.ones(2, 4, 7))        # the maps are the softmax


def test_learned_bias_is_the_table_at_each_distance_and_the_page_draws_it():
    model = t5_like()
    drawn = learned_bias(model, span=20)
    distances, bias = drawn["encoder"]
    table = model.enc_pos_bias.table.weight.detach().numpy()                    # (buckets, h)
    buckets = relative_bucket(torch.tensor(distances), True, 8, 16).numpy()
    assert np.array_equal(bias, table[buckets].T) and bias.shape == (4, 41)
    assert drawn["decoder"][0] == list(range(-20, 1))
    fig = bias_figure(distances, bias, "encoder")
    assert len(fig.data) == 4 and np.array_equal(fig.data[2].y, bias[2])
    assert learned_bias(core.Transformer(core.preset("tiny")), 20) is None        # the paper's model has none
