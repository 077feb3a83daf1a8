"""Head ablation on a model shared between threads, as the app's sessions share one cached model:
an ablation in one thread must never change what another thread gets (a class shares one server)."""
import threading

import numpy as np
import pytest
import torch

import core
from core.studies import ablation

SENTENCES = ["a man in a blue shirt is standing on a ladder", "two young girls are playing in the park"]
ATTEND = "the weather is nice today and the children are happy"


def whole_layer(model, kind, layer):
    return tuple((kind, layer, h) for h in range(model.cfg.h))


def ablations(model):
    """Head sets in layer 0, so that each one changes what the later layers see (and their maps)."""
    return [whole_layer(model, "enc_self", 0), whole_layer(model, "dec_self", 0), whole_layer(model, "cross", 0),
            (("enc_self", 0, 1),), (("cross", 0, 0), ("dec_self", 0, 2))]


def run(tm, heads=()):
    """Everything one call returns with `heads` switched off: the translations and all maps of ATTEND."""
    mask = tm.model.ablate_heads(heads) if heads else None
    res = tm.attend(ATTEND, head_mask=mask)
    return (tuple(ablation.translate_without(tm, SENTENCES, heads)), res.tgt,
            res.enc_self.copy(), res.dec_self.copy(), res.cross.copy())


def same(a, b) -> bool:
    return a[:2] == b[:2] and all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a[2:], b[2:]))


@pytest.fixture(scope="module")
def served(tmp_path_factory, translation_model):
    """The tiny model saved and loaded as the app loads a checkpoint."""
    folder = tmp_path_factory.mktemp("tiny-checkpoint")
    core.save_checkpoint(folder, translation_model.model, translation_model.tokenizer)
    return core.load_checkpoint(folder)


@pytest.fixture(scope="module")
def alone(served):
    """The reference (no head off) and each ablation's result, each computed with no other thread running."""
    return {(): run(served), **{heads: run(served, heads) for heads in ablations(served.model)}}


def test_each_ablation_changes_the_result(served, alone):
    for heads in ablations(served.model):
        assert not same(alone[heads], alone[()]), heads
    assert same(run(served), alone[()])                     # and a plain call after them is the reference


def in_threads(*loops):
    """Start one thread per function, wait for all; re-raise the first exception any of them hit."""
    errors = []

    def guarded(fn):
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 handed to the test below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(fn,)) for fn in loops]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    if errors:
        raise errors[0]


@pytest.mark.slow
def test_an_ablation_sweep_never_leaks_into_another_thread(served, alone):
    sets, reader_done = ablations(served.model), threading.Event()
    wrong_reads, sweeps, wrong_sweeps = [], [], []

    def sweeper():                 # switch heads off, set after set, until the reader has finished
        while not reader_done.is_set():
            heads = sets[len(sweeps) % len(sets)]
            result = run(served, heads)
            sweeps.append(heads)
            if not same(result, alone[heads]):
                wrong_sweeps.append(heads)

    def reader():                  # a student looking at the normal model at the same time
        try:
            for _ in range(25):
                if not same(run(served), alone[()]):
                    wrong_reads.append(1)
        finally:
            reader_done.set()

    in_threads(sweeper, reader)
    assert len(sweeps) >= len(sets), "the sweep hardly overlapped the reader: the test proved nothing"
    assert wrong_reads == [], f"{len(wrong_reads)} of 25 unablated results were changed by the other thread"
    assert wrong_sweeps == []


@pytest.mark.slow
def test_two_concurrent_ablations_each_get_their_own_result(served, alone):
    enc, cross = whole_layer(served.model, "enc_self", 0), whole_layer(served.model, "cross", 0)
    assert not same(alone[enc], alone[cross])
    outcomes = {enc: [], cross: []}

    def ablate(heads):
        def loop():
            for _ in range(15):
                outcomes[heads].append(same(run(served, heads), alone[heads]))
        return loop

    in_threads(ablate(enc), ablate(cross))
    assert outcomes == {enc: [True] * 15, cross: [True] * 15}
    assert same(run(served), alone[()])


@pytest.mark.slow
def test_ablation_leaves_the_served_weights_untouched(served):
    before = {k: v.clone() for k, v in served.model.state_dict().items()}
    for heads in ablations(served.model):
        run(served, heads)
    assert all(torch.equal(v, before[k]) for k, v in served.model.state_dict().items())
