"""core.studies.lm_steps: a language model's head recomputed from its weights (rotary angles and shared key heads
included) gives the very map the model reports, row by row, and walk() follows one query of it."""
import numpy as np
import pytest

from core import load_checkpoint
from core.studies.lm_steps import capture_lm
from core.studies.step_by_step import walk

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from core.checkpoint.pretrained import convert_folder
    from tests.core.checkpoint.pretrained.encoder_models import build_encoder
    from tests.core.checkpoint.pretrained.hf_lm_models import build_gpt2, build_llama, build_neox
    root = tmp_path_factory.mktemp("lm_steps")
    convert_folder(build_gpt2(root / "hf-gpt2"), root / "gpt2")
    convert_folder(build_llama(root / "hf-llama", "llama-gqa"), root / "llama")
    convert_folder(build_neox(root / "hf-neox"), root / "neox")                   # a quarter of d_k turns
    convert_folder(build_encoder(root / "hf-bert", "bert"), root / "bert")
    return root


@pytest.mark.parametrize("name", ["gpt2", "llama", "neox", "bert"])
def test_the_recomputed_head_is_the_models_map(folder, name):
    model = load_checkpoint(folder / name)
    steps = capture_lm(model, "the cat sat on the mat", layer=1)
    assert steps.q.shape[0] == model.cfg.h and steps.k.shape == steps.v.shape
    for head in range(steps.h):
        assert np.allclose(steps.weights(head), steps.reported[head], atol=1e-5)
    w = walk(steps, 2, 3)
    assert np.allclose(w.weights, model.attend("the cat sat on the mat").self_attn[1, 2, 3], atol=1e-5)
    assert (w.weights[4:] == 0).all() == (name != "bert")                     # causal: nothing after the query


def test_a_layer_it_lacks_is_a_message(folder):
    with pytest.raises(ValueError, match="no layer 3"):
        capture_lm(load_checkpoint(folder / "gpt2"), "hello", layer=2)
