"""core.studies.induction against scores computed independently: planted maps whose heads attend by construction at
one offset each (a wrong offset by one scores clearly otherwise), the reference found by searching the tokens for
each query's previous occurrence rather than by offsets; the repeated sequences; the loss gap."""
import numpy as np
import pytest
import torch

from core.studies import induction as ind
from core.studies.planted_induction import HEADS, planted_induction_model

L = 6


def distinct_sequences(batch: int, L: int, vocab: int = 40, seed: int = 0) -> torch.Tensor:
    """[bos=0] + r + r with r's tokens all different, so that "the previous occurrence" is one position."""
    g = torch.Generator().manual_seed(seed)
    r = torch.stack([torch.randperm(vocab - 1, generator=g)[:L] + 1 for _ in range(batch)])
    return torch.cat([torch.zeros(batch, 1, dtype=torch.long), r, r], 1)


def planted(T: int, target, weight: float = 0.9) -> np.ndarray:
    """(T, T) causal map: row i puts `weight` on key target(i) (when 0 <= it <= i) and the rest evenly on the
    other visible keys."""
    a = np.zeros((T, T))
    for i in range(T):
        j = target(i)
        if 0 <= j <= i and i > 0:
            a[i, : i + 1] = (1 - weight) / i
            a[i, j] = weight
        else:
            a[i, : i + 1] = 1.0 / (i + 1)
    return a


def reference(maps: np.ndarray, tokens: torch.Tensor) -> dict:
    """The scores by their definitions, found in the tokens: for each query of the second copy, its token's
    previous occurrence j (searched backwards) and the token after it, j + 1."""
    B, N, h, T, _ = maps.shape
    Lr = (T - 1) // 2
    out = {k: np.zeros((N, h)) for k in ("induction", "duplicate", "previous", "sink")}
    for b in range(B):
        toks = tokens[b].tolist()
        for layer in range(N):
            for head in range(h):
                a = maps[b, layer, head]
                ind_, dup = [], []
                for i in range(Lr + 1, T):
                    j = max(k for k in range(i) if toks[k] == toks[i])
                    dup.append(a[i, j])
                    ind_.append(a[i, j + 1])
                out["induction"][layer, head] += np.mean(ind_) / B
                out["duplicate"][layer, head] += np.mean(dup) / B
                out["previous"][layer, head] += np.mean([a[i, i - 1] for i in range(1, T)]) / B
                out["sink"][layer, head] += np.mean([a[i, 0] for i in range(ind.SINK_FROM, T)]) / B
    return out


@pytest.fixture
def planted_maps():
    """2 sequences; layer 0: heads at offsets -(L-1) (induction), -L (duplicate), -(L-2) (induction one off),
    -1 (previous); layer 1: a sink on position 0, uniform (no key -1), two off (-(L+1)) and one off (-(L-2))."""
    T = 2 * L + 1
    heads = [[lambda i: i - (L - 1), lambda i: i - L, lambda i: i - (L - 2), lambda i: i - 1],
             [lambda i: 0, lambda i: -1, lambda i: i - (L + 1), lambda i: i - (L - 1) + 1]]
    one = np.stack([np.stack([planted(T, f) for f in layer]) for layer in heads])      # (N, h, T, T)
    return np.stack([one, one]), distinct_sequences(2, L)                              # (B, N, h, T, T)


def test_scores_equal_the_token_search_and_name_the_planted_heads(planted_maps):
    maps, tokens = planted_maps
    s = ind.scores_from_maps(maps, L)
    ref = reference(maps, tokens)
    for name in ind.SCORES:
        np.testing.assert_allclose(getattr(s, name), ref[name], atol=1e-12, err_msg=name)
    assert s.best("induction")[:2] == (0, 0) and s.induction[0, 0] == pytest.approx(0.9)
    assert s.best("duplicate")[:2] == (0, 1) and s.best("previous")[:2] == (0, 3)
    assert s.best("sink")[:2] == (1, 0) and s.sink[1, 0] == pytest.approx(0.9)
    # heads one position off the induction stripe score like noise, not like an induction head
    for layer, head in ((0, 1), (0, 2), (1, 2), (1, 3)):
        assert s.induction[layer, head] < 0.15, (layer, head)
    assert (s.sequences, s.positions["induction"], s.positions["previous"]) == (2, L, 2 * L)


def test_a_list_of_layer_tensors_is_the_same_as_the_array(planted_maps):
    maps, _ = planted_maps
    layers = [torch.tensor(maps[:, layer], dtype=torch.float32) for layer in range(maps.shape[1])]
    a, b = ind.scores_from_maps(maps, L), ind.scores_from_maps(layers, L)
    for name in ind.SCORES:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), atol=1e-6)


def test_maps_of_the_wrong_length_are_refused(planted_maps):
    maps, _ = planted_maps
    with pytest.raises(ValueError, match="do not fit"):
        ind.scores_from_maps(maps, L + 1)


def test_repeated_tokens_repeat_leave_out_special_ids_and_follow_the_seed():
    t = ind.repeated_tokens(12, 5, 64, seed=3, bos=2, exclude=[0, 1, 3])
    assert t.shape == (64, 11) and (t[:, 0] == 2).all()
    assert torch.equal(t[:, 1:6], t[:, 6:])
    assert not torch.isin(t[:, 1:], torch.tensor([0, 1, 2, 3])).any()
    assert set(t[:, 1:].unique().tolist()) == set(range(4, 12))
    assert torch.equal(t, ind.repeated_tokens(12, 5, 64, seed=3, bos=2, exclude=[0, 1, 3]))
    assert not torch.equal(t, ind.repeated_tokens(12, 5, 64, seed=4, bos=2, exclude=[0, 1, 3]))
    no_bos = ind.repeated_tokens(12, 5, 8, seed=0, bos=None, exclude=[0])
    assert (no_bos[:, 0] != 0).all() and torch.equal(no_bos[:, 1:6], no_bos[:, 6:])
    with pytest.raises(ValueError, match="too few"):
        ind.repeated_tokens(3, 5, 2, bos=0, exclude=[1, 2])


def test_copy_losses_score_the_right_targets():
    """A model that knows the second copy (all its mass on the right token from L+1 on) and guesses uniformly
    before: first-copy loss ln V, second-copy loss 0, gap -ln V. Any target off by one breaks it."""
    V = 10
    tokens = distinct_sequences(3, L, vocab=V, seed=1)
    T = 2 * L + 1
    logits = torch.zeros(3, T, V)
    for b in range(3):
        for t in range(L + 1, T - 1):                     # positions that see the first copy's continuation
            logits[b, t, tokens[b, t + 1]] = 100.0
    first, second = ind.copy_losses(logits, tokens, L)
    assert first == pytest.approx(np.log(V), abs=1e-5) and second == pytest.approx(0.0, abs=1e-5)


# ---- a model whose heads are what they are by construction (core.studies.planted_induction) ----

@pytest.fixture(scope="module")
def planted_model():
    return planted_induction_model(vocab_size=16, L=8)


def test_the_hand_built_induction_head_scores_top_and_the_off_by_one_heads_do_not(planted_model):
    s = ind.induction_scores(planted_model, L=8, batch=64, seed=0)
    layer, head, value = s.best("induction")
    assert (layer, head) == HEADS["induction"] and value > 0.6           # random r repeat tokens: split attention
    others = np.delete(s.induction.reshape(-1), 1 * 3 + 0)
    assert others.max() < 0.2
    assert s.induction[HEADS["duplicate"]] < 0.1 and s.induction[HEADS["offset"]] < 0.05
    assert s.best("previous")[:2] == HEADS["previous"] and s.previous[HEADS["previous"]] > 0.99
    assert s.best("duplicate")[:2] == HEADS["duplicate"] and s.duplicate[HEADS["duplicate"]] > 0.6
    assert s.loss_gap < -2.0                                              # it copies the second copy
    assert (s.sequences, s.L, s.positions["induction"]) == (64, 8, 8)


def test_the_model_scores_equal_the_token_search_on_distinct_tokens(planted_model):
    tokens = distinct_sequences(6, 8, vocab=16, seed=2)          # bos 0, r from 1..15, no repeats within r
    _, maps = planted_model(tokens, need_weights=True)
    maps = ind.stack_maps(maps)
    s, ref = ind.scores_from_maps(maps, 8), reference(maps, tokens)
    for name in ind.SCORES:
        np.testing.assert_allclose(getattr(s, name), ref[name], atol=1e-6, err_msg=name)
    assert s.induction[HEADS["induction"]] > 0.99 and s.duplicate[HEADS["duplicate"]] > 0.99


def test_induction_scores_in_chunks_equal_one_pass(planted_model):
    tokens = ind.repeated_tokens(16, 8, 11, seed=5, bos=0, exclude=[0])
    logits, maps = planted_model(tokens, need_weights=True)
    whole = ind.scores_from_maps(maps, 8)
    chunked = ind.induction_scores(planted_model, L=8, batch=11, seed=5, chunk=4)
    for name in ind.SCORES:
        np.testing.assert_allclose(getattr(chunked, name), getattr(whole, name), atol=1e-6, err_msg=name)
    first, second = ind.copy_losses(logits, tokens, 8)
    assert (chunked.loss_first, chunked.loss_second) == pytest.approx((first, second), abs=1e-5)


def test_a_sequence_longer_than_the_model_is_refused_in_words(planted_model):
    with pytest.raises(ValueError, match="use L <= 8"):
        ind.induction_scores(planted_model, L=9)
    assert ind.longest_copy(planted_model.cfg) == 8


def test_first_token_share_on_any_text_counts_queries_from_the_fourth_on():
    T = 9
    sink = planted(T, lambda i: 0, weight=0.8)               # rows from 1 on: 0.8 on position 0
    uniform = planted(T, lambda i: -1)                        # no key -1: rows uniform, 1 / (i + 1) on position 0
    maps = np.stack([sink, uniform])                          # (2, T, T): two heads of one text
    got = ind.first_token_share(maps)
    assert got[0] == pytest.approx(0.8)
    assert got[1] == pytest.approx(np.mean([1 / (i + 1) for i in range(ind.SINK_FROM, T)]))
    assert ind.first_token_share(maps[:, :3, :3])[0] == pytest.approx(0.8)   # short text: its last query
