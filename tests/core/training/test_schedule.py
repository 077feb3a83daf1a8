"""The warm-up learning-rate schedule and Adam settings of section 5.3."""
import pytest
import torch

import core


@pytest.mark.parametrize("step, lr", [(1000, 1.747e-4), (4000, 6.988e-4), (5000, 6.250e-4)])
def test_noam_lr_values(step, lr):
    assert core.noam_lr(step, 512, 4000) == pytest.approx(lr, rel=2e-3)


def test_noam_lr_peaks_at_warmup():
    lrs = [core.noam_lr(s, 512, 4000) for s in range(1, 20001)]
    assert max(range(len(lrs)), key=lrs.__getitem__) + 1 == 4000
    assert all(a < b for a, b in zip(lrs[:3999], lrs[1:4000]))      # rises linearly during warm-up
    assert all(a > b for a, b in zip(lrs[3999:], lrs[4000:]))       # then decays as step^-0.5
    assert core.noam_lr(16000, 512, 4000) == pytest.approx(core.noam_lr(4000, 512, 4000) / 2, rel=1e-9)


def test_make_optimizer_first_update_uses_step_one():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    opt, sched = core.make_optimizer(model, d_model=512, warmup=4000)
    group = opt.param_groups[0]
    assert group["betas"] == (0.9, 0.98) and group["eps"] == 1e-9
    assert group["lr"] == pytest.approx(core.noam_lr(1, 512, 4000), rel=1e-12)
    before = model.weight.detach().clone()
    model(torch.randn(8, 4)).pow(2).sum().backward()
    opt.step()
    sched.step()
    # Adam's first step moves every weight by lr * m_hat / sqrt(v_hat) = lr * sign(grad)
    step_size = (model.weight.detach() - before).abs()
    assert torch.allclose(step_size, torch.full_like(step_size, core.noam_lr(1, 512, 4000)), rtol=1e-4)
    assert group["lr"] == pytest.approx(core.noam_lr(2, 512, 4000), rel=1e-12)


def test_cooldown_factor_is_one_then_falls_as_one_minus_sqrt_to_zero():
    assert core.cooldown_factor(500) == 1.0                                  # no cool-down asked for
    assert [core.cooldown_factor(s, 1000, 400) for s in (1, 600)] == [1.0, 1.0]
    assert core.cooldown_factor(700, 1000, 400) == pytest.approx(0.5)         # a quarter of the way: 1 - sqrt(1/4)
    assert core.cooldown_factor(1000, 1000, 400) == 0.0
    assert core.cooldown_factor(1200, 1000, 400) == 0.0                      # past the end: stays at 0
    falls = [core.cooldown_factor(s, 1000, 400) for s in range(600, 1001)]
    assert all(a > b for a, b in zip(falls, falls[1:]))


def test_warm_start_schedule_continues_the_old_one_after_a_linear_ramp():
    model = torch.nn.Linear(2, 2)
    opt, sched = core.make_optimizer(model, d_model=256, warmup=600, scale=0.4, start_step=7856, rewarm=200)
    lrs = []
    for _ in range(400):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    target = [core.noam_lr(7856 + i + 1, 256, 600, 0.4) for i in range(400)]
    assert lrs[0] == pytest.approx(target[0] / 200, rel=1e-9)               # step 1 of 200 of the ramp
    assert lrs[99] == pytest.approx(target[99] / 2, rel=1e-9)
    assert lrs[199:] == pytest.approx(target[199:], rel=1e-9)               # then exactly the old schedule
    assert target[0] == pytest.approx(2.82e-4, rel=5e-3)                    # where news-small's run had got to
