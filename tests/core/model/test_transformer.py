"""The label-smoothed loss and head ablation (the model against torch.nn.Transformer: test_reference.py)."""
import math

import pytest
import torch

import core
from tests.helpers import tiny_model


# --- label-smoothed cross entropy ------------------------------------------------------------

def test_label_smoothed_loss_by_hand():
    eps, V = 0.1, 4
    logits = torch.tensor([[[2.0, 0.5, -1.0, 0.0], [0.1, 0.2, 0.3, 3.0], [9.0, -9.0, 9.0, -9.0]]])
    target = torch.tensor([[0, 3, 1]])                     # last position is padding (pad_id = 1 here)
    loss, n = core.label_smoothed_loss(logits, target, eps, pad_id=1)
    total = 0.0
    for t in range(2):
        logp = [x - math.log(sum(math.exp(y) for y in logits[0, t].tolist())) for x in logits[0, t].tolist()]
        q = [eps / V + (1 - eps if c == target[0, t] else 0.0) for c in range(V)]   # smoothed target
        total += -sum(qc * lc for qc, lc in zip(q, logp))
    assert int(n) == 2
    assert loss.item() == pytest.approx(total / 2, rel=1e-6)
    plain, _ = core.label_smoothed_loss(logits, target, 0.0, pad_id=1)
    assert plain.item() != pytest.approx(loss.item(), rel=1e-3)


def test_label_smoothed_loss_ignores_padding():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 11)
    target = torch.randint(1, 11, (2, 5))
    target[0, 3:], target[1, 4:] = 0, 0
    loss, n = core.label_smoothed_loss(logits, target, 0.1, pad_id=0)
    changed = logits.clone()
    changed[0, 3:] = torch.randn(2, 11) * 10
    changed[1, 4:] = torch.randn(1, 11) * 10
    assert int(n) == 7
    assert core.label_smoothed_loss(changed, target, 0.1, pad_id=0)[0].item() == pytest.approx(loss.item(), rel=1e-6)
    changed[0, 0] += torch.randn(11)                      # a real position does count
    assert core.label_smoothed_loss(changed, target, 0.1, pad_id=0)[0].item() != pytest.approx(loss.item())


# --- head ablation ---------------------------------------------------------------------------

@pytest.fixture
def ablation_case():
    model = tiny_model(40)
    g = torch.Generator().manual_seed(5)
    src, tgt = torch.randint(4, 40, (2, 6), generator=g), torch.randint(4, 40, (2, 5), generator=g)
    with torch.no_grad():
        return model, src, tgt, model(src, tgt)


def _state(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_ablating_no_head_is_exact(ablation_case):
    model, src, tgt, base = ablation_case
    assert model.ablate_heads([]) == {}
    with torch.no_grad():
        assert torch.equal(model(src, tgt, head_mask=model.ablate_heads([])), base)
        assert torch.equal(model(src, tgt, head_mask=None), base)


def test_head_mask_has_a_zero_exactly_at_each_switched_off_head(ablation_case):
    model, *_ = ablation_case
    mask = model.ablate_heads([("cross", 1, 3), ("enc_self", 0, 2), ("cross", 0, 0)])
    assert set(mask) == {"cross", "enc_self"}
    expected_cross = torch.ones(model.cfg.N_dec, model.cfg.h)
    expected_cross[1, 3] = expected_cross[0, 0] = 0
    assert torch.equal(mask["cross"], expected_cross)
    assert mask["enc_self"].sum() == model.cfg.N * model.cfg.h - 1 and mask["enc_self"][0, 2] == 0


@pytest.mark.parametrize("kind", ["enc_self", "dec_self", "cross"])
def test_ablating_a_layer_changes_output_and_never_the_model(kind, ablation_case):
    model, src, tgt, base = ablation_case
    before = _state(model)
    with torch.no_grad():
        ablated = model(src, tgt, head_mask=model.ablate_heads([(kind, 1, h) for h in range(model.cfg.h)]))
        assert not torch.allclose(ablated, base, atol=1e-3)
        assert torch.equal(model(src, tgt), base)                       # the next call is unablated
    after = _state(model)
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)


def test_ablating_one_head_equals_zeroing_its_slice_of_w_o(ablation_case):
    model, src, tgt, base = ablation_case
    d_k = model.cfg.d_k
    with torch.no_grad():
        ablated = model(src, tgt, head_mask=model.ablate_heads([("cross", 0, 2)]))
        w_o = model.decoder[0].cross_attn.w_o.weight
        saved = w_o.clone()
        w_o[:, 2 * d_k: 3 * d_k] = 0
        zeroed = model(src, tgt)
        w_o.copy_(saved)
    assert torch.allclose(ablated, zeroed, atol=1e-6)
    assert not torch.allclose(ablated, base, atol=1e-4)


@pytest.mark.parametrize("heads", [[("enc_self", 0, 0), ("enc_self", 0, 99)], [("cross", 2, 0)],
                                   [("encoder", 0, 0)], [("dec_self", -1, 0)], [("dec_self", "1", 0)]])
def test_a_head_that_does_not_exist_is_named_in_the_error(heads, ablation_case):
    model, *_ = ablation_case
    with pytest.raises(ValueError, match="There is no head"):
        model.ablate_heads(heads)


def test_a_head_mask_of_the_wrong_shape_or_kind_is_refused(ablation_case):
    model, src, tgt, base = ablation_case
    with torch.no_grad():
        with pytest.raises(ValueError, match="shape"):
            model(src, tgt, head_mask={"cross": torch.ones(model.cfg.N_dec, model.cfg.h + 1)})
        with pytest.raises(ValueError, match="keys"):
            model(src, tgt, head_mask={"decoder": torch.ones(model.cfg.N_dec, model.cfg.h)})
        assert torch.equal(model(src, tgt), base)
