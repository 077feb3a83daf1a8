"""Widening a trained model's FFNs (core/model/grow.py): the wider model computes what the trained one did."""
import pytest
import torch

from core.model.grow import load_widened
from tests.helpers import tiny_model

V = 40


def batch(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, V, (3, 7), generator=g), torch.randint(4, V, (3, 5), generator=g)


def widened(trained, d_ff):
    wide = tiny_model(V, seed=5, d_ff=d_ff)
    load_widened(wide, trained.state_dict())
    return wide


def test_the_wider_model_gives_the_same_logits_and_its_new_units_start_silent():
    trained = tiny_model(V, seed=0)                                   # d_ff 64
    with torch.no_grad():                                             # trained-looking biases, not init's
        for p in trained.parameters():
            p.add_(0.05 * torch.randn_like(p))
    wide = widened(trained, 160)
    src, tgt = batch()
    with torch.no_grad():
        torch.testing.assert_close(wide(src, tgt), trained(src, tgt), rtol=1e-5, atol=1e-5)
    ffn = wide.encoder[0].ffn
    torch.testing.assert_close(ffn.w_1.weight[:64], trained.encoder[0].ffn.w_1.weight)
    assert ffn.w_1.weight[64:].abs().sum() > 0                        # fresh rows: the units have a ReLU of their own
    assert ffn.w_2.weight[:, 64:].abs().sum() == 0                    # and add nothing yet
    assert ffn.w_2.weight.shape == (32, 160)


def test_the_new_units_get_gradients_at_once():
    wide = widened(tiny_model(V, seed=0), 128).train()
    src, tgt = batch()
    loss, _ = wide(src, tgt[:, :-1], tgt_out=tgt[:, 1:])
    loss.backward()
    ffn = wide.decoder[-1].ffn
    assert ffn.w_2.weight.grad[:, 64:].abs().sum() > 0               # W2's new columns learn first
    assert ffn.w_1.weight.grad[64:].abs().sum() == 0                  # W1's new rows follow once W2's are non-zero


@pytest.mark.parametrize("other", [dict(d_model=64), dict(d_ff=32)])
def test_only_a_larger_d_ff_is_accepted(other):
    with pytest.raises(ValueError, match="only the FFN's hidden size"):
        load_widened(tiny_model(V, **other), tiny_model(V).state_dict())


def test_another_architecture_is_named():
    with pytest.raises(ValueError, match="different parameters"):
        load_widened(tiny_model(V, N=3), tiny_model(V).state_dict())
