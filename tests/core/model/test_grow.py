"""Growing a trained model (core/model/grow.py): wider FFNs or a deeper decoder compute what the trained model did."""
import pytest
import torch

from core.model.grow import describe_growth, load_grown
from tests.helpers import tiny_model

V = 40


def batch(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(4, V, (3, 7), generator=g), torch.randint(4, V, (3, 5), generator=g)


def trained_looking(model):
    with torch.no_grad():                                             # trained-looking weights, not init's
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


def widened(trained, d_ff):
    wide = tiny_model(V, seed=5, d_ff=d_ff)
    load_grown(wide, trained.state_dict())
    return wide


def test_the_wider_model_gives_the_same_logits_and_its_new_units_start_silent():
    trained = trained_looking(tiny_model(V, seed=0))                  # d_ff 64
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
        load_grown(tiny_model(V, **other), tiny_model(V).state_dict())


def test_another_architecture_is_named():
    with pytest.raises(ValueError, match="different parameters"):                # a deeper encoder cannot be grown
        load_grown(tiny_model(V, N=3, norm="pre"), tiny_model(V, norm="pre").state_dict())


def test_a_deeper_pre_norm_decoder_gives_the_same_logits():
    trained = trained_looking(tiny_model(V, seed=0, norm="pre"))      # N_dec 2
    deep = tiny_model(V, seed=5, norm="pre", N_dec=4, d_ff=96)
    load_grown(deep, trained.state_dict())
    src, tgt = batch()
    with torch.no_grad():
        torch.testing.assert_close(deep(src, tgt), trained(src, tgt), rtol=1e-5, atol=1e-5)
    new = deep.decoder[3]
    assert new.self_attn.w_o.weight.abs().sum() == 0 and new.ffn.w_2.bias.abs().sum() == 0
    assert new.cross_attn.w_q.weight.abs().sum() > 0                  # fresh, not zero: it has something to learn
    torch.testing.assert_close(deep.decoder[1].ffn.w_2.weight[:, :64], trained.decoder[1].ffn.w_2.weight)


def test_the_new_layers_get_gradients_at_once():
    deep = tiny_model(V, seed=5, norm="pre", N_dec=3).train()
    load_grown(deep, tiny_model(V, seed=0, norm="pre").state_dict())
    src, tgt = batch()
    loss, _ = deep(src, tgt[:, :-1], tgt_out=tgt[:, 1:])
    loss.backward()
    new = deep.decoder[2]
    assert new.cross_attn.w_o.weight.grad.abs().sum() > 0 and new.ffn.w_2.weight.grad.abs().sum() > 0


def test_a_deeper_post_norm_decoder_is_refused():
    with pytest.raises(ValueError, match="only with pre-norm"):
        load_grown(tiny_model(V, N_dec=3), tiny_model(V).state_dict())


def test_a_shallower_decoder_is_refused():
    with pytest.raises(ValueError, match="different parameters"):
        load_grown(tiny_model(V, norm="pre"), tiny_model(V, norm="pre", N_dec=3).state_dict())


def test_growth_in_words():
    assert describe_growth({"N_dec": [3, 6]}) == (
        "decoder deepened from 3 to 6 layers, the new parts starting silent (zero output weights)")
    assert describe_growth({"d_ff": [64, 128], "N_dec": [2, 3]}).startswith(
        "FFNs widened from 64 to 128 hidden units, decoder deepened from 2 to 3 layers")
    assert describe_growth({}) == ""
