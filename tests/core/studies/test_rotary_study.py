"""core.studies.rotary: the angles are position x theta mod 2 pi, the turned vectors are the model's own, and a
query-key score depends on the positions only through m - n (RoPE's property), equal to its closed form."""
import math

import numpy as np
import pytest
import torch

from core.model.rotary import RotaryEmbedding
from core.studies.rotary import (RopeSettings, example_vectors, pair_angles, position_scores, rotated,
                                 score_at_distance, settings_of)

SETTINGS = [RopeSettings(10000.0, 64), RopeSettings(1e6, 8), RopeSettings(10000.0, 16, rotary_dim=4),
            RopeSettings(500000.0, 16, scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                                "high_freq_factor": 4.0, "original_max_position_embeddings": 16})]


def test_the_angles_are_position_times_the_frequency_mod_two_pi():
    a = pair_angles(50, RopeSettings(10000.0, 8))
    assert a.shape == (50, 4)
    theta = 10000.0 ** (-np.arange(0, 8, 2) / 8)
    assert np.allclose(a, np.mod(np.arange(50)[:, None] * theta, 2 * math.pi), atol=1e-6)
    assert a.min() >= 0 and a.max() < 2 * math.pi
    assert np.allclose(a[:, 0], np.mod(np.arange(50), 2 * math.pi))       # pair 0 turns one radian a position


def test_the_turned_vector_is_what_the_model_computes():
    rope = RopeSettings(10000.0, 16, rotary_dim=8)
    x = np.arange(16, dtype=np.float32) / 10
    emb = RotaryEmbedding(8, 10000.0)
    cos, sin = emb.angles(12)
    want = RotaryEmbedding.rotate(torch.tensor(x).view(1, 1, 1, 16).expand(1, 1, 12, 16), cos, sin)[0, 0].numpy()
    got = rotated(x, 12, rope)
    assert np.allclose(got, want) and np.allclose(got[:, 8:], x[8:])       # the last 8 pass unturned
    assert np.allclose(np.linalg.norm(got, axis=1), np.linalg.norm(x), atol=1e-5)   # a rotation keeps lengths


@pytest.mark.parametrize("rope", SETTINGS)
@pytest.mark.parametrize("kind", ["ones", "random"])
def test_a_score_depends_only_on_the_distance(rope, kind):
    q, k = example_vectors(rope.d_k, kind, seed=3)
    P = 40
    s = position_scores(q, k, P, rope)
    m, n = np.meshgrid(np.arange(P), np.arange(P), indexing="ij")
    closed = score_at_distance(q, k, (m - n).ravel(), rope).reshape(P, P)
    scale = np.abs(s).max()
    assert np.allclose(s, closed, atol=1e-4 * scale)                        # the closed form in m - n alone
    for d in (-7, 0, 5):                                                    # constant along every diagonal
        diag = np.diagonal(s, offset=-d)
        assert np.ptp(diag) < 1e-4 * scale
    if kind == "random":
        assert np.ptp(s) > 1e-2 * scale                                     # yet it does change with m - n


def test_the_score_without_any_rotation_is_the_plain_dot_product():
    q, k = example_vectors(8, "random", seed=1)
    assert np.isclose(score_at_distance(q, k, np.array([0]), RopeSettings(10000.0, 8))[0], q @ k)


def test_settings_come_from_a_rotary_config_only():
    class Cfg:
        positions, rope_base, d_k, rotary_dim, rope_scaling = "rotary", 1e6, 8, None, None
    assert settings_of(Cfg()) == RopeSettings(1e6, 8, None, None)
    Cfg.positions = "learned"
    assert settings_of(Cfg()) is None
