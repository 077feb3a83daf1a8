"""core/training/fast.py: the GPU's step computes what the CPU's step computes, on fixed-shape batches."""
from __future__ import annotations

import random
from array import array
from contextlib import nullcontext

import pytest
import torch

from core import Transformer, make_optimizer, preset
from core.data import bucket_of, collate
from core.training.fast import DevicePairs, DeviceSums, FastStep, SummedLoss, compile_loss, use_fast_path

VOCAB = 40


def toy_pairs(n: int, longest: int, seed: int = 0):
    """n (source + </s>, target) pairs of random ids, and their lengths (as train.py has them)."""
    rng = random.Random(seed)
    pairs = [(array("H", [rng.randrange(4, VOCAB) for _ in range(rng.randint(1, longest - 2))] + [3]),
              array("H", [rng.randrange(4, VOCAB) for _ in range(rng.randint(1, longest - 2))]))
             for _ in range(n)]
    return pairs, [(len(s), len(t) + 1) for s, t in pairs]


def tiny(norm: str, **kw) -> Transformer:
    torch.manual_seed(0)
    return Transformer(preset("tiny", vocab_size=VOCAB, norm=norm, **kw))


def rows_of(pairs_on_device: DevicePairs, indices):
    return torch.tensor([pairs_on_device.row[i] if i >= 0 else 0 for i in indices])


def test_a_device_batch_is_collate_padded_to_its_bucket_with_blank_rows():
    pairs, lengths = toy_pairs(30, longest=14)
    cfg = preset("tiny", vocab_size=VOCAB)
    on_device = DevicePairs(pairs, lengths, cfg, "cpu", buckets=(16,))
    idx = [4, 0, 17, -1]
    src, tin, tout = on_device.batch((16, 16), rows_of(on_device, idx))
    want = collate(pairs, idx[:3], cfg.pad_id, cfg.bos_id, cfg.eos_id)
    for got, ref in zip((src, tin, tout), want):
        assert got.shape == (4, 16) and got.dtype == torch.int64
        torch.testing.assert_close(got[:3, : ref.size(1)], ref)
        assert (got[:3, ref.size(1):] == cfg.pad_id).all()
    assert src[3].tolist() == [cfg.eos_id] + [cfg.pad_id] * 15         # the blank row: </s> alone, no targets
    assert tin[3, 0] == cfg.bos_id and (tout[3] == cfg.pad_id).all()


def test_an_epoch_takes_every_pair_once_with_its_target_tokens():
    pairs, lengths = toy_pairs(200, longest=40, seed=1)
    on_device = DevicePairs(pairs, lengths, preset("tiny", vocab_size=VOCAB), "cpu")
    batches = on_device.epoch(max_tokens=256, seed=3)
    targets = [t for shape, rows, _ in batches for t in on_device.batch(shape, rows)[2] if t.any()]   # not blank
    assert sum(n for _, _, n in batches) == sum(t for _, t in lengths)
    assert len(targets) == len(pairs)
    assert {rows.numel() * max(shape) <= 256 for shape, rows, _ in batches} == {True}


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_the_fast_loss_is_the_models_loss_times_its_tokens(norm):
    """SummedLoss (torch's fused cross entropy) against Transformer(..., tgt_out=...) (the CPU's row chunks)."""
    model = tiny(norm)
    pairs, lengths = toy_pairs(12, longest=16, seed=2)
    src, tin, tout = collate(pairs, range(12), 0, 2, 3)
    loss, n = model(src, tin, tgt_out=tout)
    summed, n_fast = SummedLoss(model)(src, tin, tout)
    assert int(n_fast) == int(n) == sum(t for _, t in lengths)
    assert float(summed.detach()) == pytest.approx(float(loss.detach() * n), rel=1e-6)


def cpu_update(model, opt, pairs, idx, clip: float):
    """One update as scripts/train.py's CPU loop makes it (core/model/loss.py's chunks, fused Adam)."""
    src, tin, tout = collate(pairs, idx, 0, 2, 3)
    loss, n = model(src, tin, tgt_out=tout)
    (loss * n / int(n)).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    opt.zero_grad(set_to_none=True)


@pytest.mark.slow
@pytest.mark.parametrize("norm", ["pre", "post"])
def test_one_update_on_each_path_from_the_same_state_gives_the_same_weights(norm):
    pairs, lengths = toy_pairs(10, longest=16, seed=4)
    weights = {}
    for path in ("cpu", "fast"):
        model = tiny(norm)
        opt, sched = make_optimizer(model, model.cfg.d_model, warmup=10, fused=True)
        for group in opt.param_groups:                            # a learning rate that moves the weights
            group["lr"] = 1e-3
        if path == "cpu":
            cpu_update(model, opt, pairs, range(10), clip=1.0)
        else:
            on_device = DevicePairs(pairs, lengths, model.cfg, "cpu", buckets=(16,))
            step = FastStep(model, opt, nullcontext(), clip=1.0, compile=False)
            step([on_device.batch((16, 16), rows_of(on_device, [*range(10), -1, -1]))], sum(t for _, t in lengths))
            read = step.sums.read()
            assert read["tokens"] == sum(t for _, t in lengths) and read["steps"] == 1
        weights[path] = {k: v.clone() for k, v in model.state_dict().items()}
    moved = 0
    for k, v in weights["cpu"].items():
        if k.endswith("w_k.bias"):
            # its gradient is 0 but for rounding (a bias on every key shifts a query's scores alike, and softmax
            # ignores that): Adam's first step moves it by lr times the sign of that rounding, on either path
            continue
        # Adam's first step is lr * g / (|g| + eps): a weight whose gradient is small (a sum that nearly cancels)
        # moves by lr less a share that the two paths' rounding sets differently (2e-6 of lr 1e-3 seen on one CPU);
        # a wrong gradient moves a weight by up to lr, 200 times the tolerance
        torch.testing.assert_close(weights["fast"][k], v, rtol=1e-5, atol=5e-3 * 1e-3, msg=k)
        moved += int((v != tiny(norm).state_dict()[k]).any())
    assert moved > 10                                             # the update did change the weights


def test_device_sums_are_read_once_a_window():
    sums = DeviceSums("cpu")
    for loss, n in ((6.0, 3), (2.0, 1)):
        sums.add(torch.tensor(loss), torch.tensor(n))
        sums.grad_norm, sums.steps = torch.tensor(0.5), sums.steps + 1
    got = sums.read()
    assert got["loss"] == 2.0 and got["tokens"] == 4 and got["steps"] == 2 and got["grad_norm"] == 0.5
    assert sums.steps == 0 and float(sums.loss) == 0.0


def test_the_fast_path_is_chosen_by_device():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert not use_fast_path("auto", cpu, 1) and use_fast_path("auto", cuda, 1)
    assert not use_fast_path("auto", cuda, 2) and use_fast_path("on", cpu, 1) and not use_fast_path("off", cuda, 1)
    with pytest.raises(ValueError, match="one process"):
        use_fast_path("on", cuda, 2)


def relative_error(got, want) -> float:
    return float((got - want).abs().max() / want.abs().max().clamp(min=1e-30))


@pytest.mark.slow      # inductor compiles a C++ forward and backward for each layout: ~1 minute each on 2 cores
@pytest.mark.parametrize("norm", ["pre", "post"])
def test_the_compiled_step_gives_the_eager_steps_loss_and_gradients(norm):
    """fp32, padding in both sides and the causal mask; two batch shapes through one compilation (no recompile)."""
    torch._dynamo.reset()                      # the other layout's compilation is not a recompilation of this one
    model = tiny(norm, N=1, N_dec=1)
    names, params = zip(*model.named_parameters())
    eager, compiled = SummedLoss(model), compile_loss(model)
    pairs, lengths = toy_pairs(24, longest=16, seed=5)
    on_device = DevicePairs(pairs, lengths, model.cfg, "cpu")
    worst = 0.0
    with torch._dynamo.config.patch(error_on_recompile=True):
        for shape in ((16, 8), (8, 16)):                # the source longer, then the target
            idx = [i for i, (s, t) in enumerate(lengths) if (bucket_of(s), bucket_of(t)) == shape][:6] + [-1]
            batch = on_device.batch(shape, rows_of(on_device, idx))
            (loss_e, n_e), (loss_c, n_c) = eager(*batch), compiled(*batch)
            grads_e = torch.autograd.grad(loss_e, params)
            grads_c = torch.autograd.grad(loss_c, params)
            assert int(n_c) == int(n_e) > 0
            largest = max(float(g.abs().max()) for g in grads_e)
            worst = max(worst, relative_error(loss_c, loss_e))
            for name, got, want in zip(names, grads_c, grads_e):
                if name.endswith("w_k.bias"):      # 0 but for rounding (see the test of one update): both ~0
                    assert float(got.abs().max()) <= 1e-6 * largest, name
                else:
                    worst = max(worst, relative_error(got, want))
    assert worst <= 1e-5, worst
