"""load_state: a resumed run keeps its hyperparameters but runs the optimiser the way today's code makes it."""
import torch

from core.model import Transformer, TransformerConfig
from core.training.schedule import make_optimizer
from core.training.state import load_state, save_state


def tiny():
    torch.manual_seed(0)
    return Transformer(TransformerConfig(vocab_size=32, N=1, N_dec=1, d_model=16, d_ff=32, h=2))


def one_step(model, opt, sched):
    src = torch.randint(4, 32, (2, 5))
    loss, _ = model(src, src, tgt_out=src)
    loss.backward()
    opt.step()
    sched.step()
    opt.zero_grad()


def test_a_state_saved_by_an_unfused_adam_resumes_fused_with_its_own_hyperparameters(tmp_path):
    old = tiny()
    opt, sched = make_optimizer(old, 16, warmup=10, fused=False)
    opt.param_groups[0]["eps"] = 1e-7                     # a saved hyperparameter that must survive
    one_step(old, opt, sched)
    save_state(tmp_path / "state.safetensors", old, opt, sched, {"step": 1})

    new = tiny()
    opt2, sched2 = make_optimizer(new, 16, warmup=10, fused=True)
    assert load_state(tmp_path / "state.safetensors", new, opt2, sched2) == {"step": 1}
    group = opt2.param_groups[0]
    assert group["fused"] is True and group["eps"] == 1e-7
    exp_avg = {k: v["exp_avg"].clone() for k, v in opt2.state.items()}
    one_step(new, opt2, sched2)                           # the fused kernel accepts the loaded moments
    assert any(not torch.equal(opt2.state[k]["exp_avg"], v) for k, v in exp_avg.items())


def test_an_unfused_optimiser_stays_unfused_on_resume(tmp_path):
    model = tiny()
    opt, sched = make_optimizer(model, 16, warmup=10, fused=True)
    one_step(model, opt, sched)
    save_state(tmp_path / "state.safetensors", model, opt, sched, {"step": 1})
    resumed = tiny()
    opt2, sched2 = make_optimizer(resumed, 16, warmup=10, fused=False)
    load_state(tmp_path / "state.safetensors", resumed, opt2, sched2)
    assert not opt2.param_groups[0]["fused"]
