"""core/data.py: the fixed-shape length buckets of the fast path hold the same pairs as the token batches."""
from __future__ import annotations

import random

from core.data import LENGTH_BUCKETS, bucket_batches, bucket_of, bucket_rows, token_batches


def lengths_of(n: int, seed: int = 0):
    rng = random.Random(seed)
    return [(rng.randint(1, 120), rng.randint(2, 128)) for _ in range(n)]


def test_bucketed_batches_hold_the_same_pairs_as_token_batches():
    lengths = lengths_of(3000)
    buckets = bucket_batches(lengths, 2048, seed=5)
    real = [i for _, idx in buckets for i in idx if i >= 0]
    assert sorted(real) == sorted(i for b in token_batches(lengths, 2048, seed=5) for i in b)
    assert sorted(real) == list(range(len(lengths)))                       # each pair exactly once


def test_each_cell_has_at_most_two_batch_shapes_within_the_token_budget():
    lengths = lengths_of(3000, seed=1)
    batches = bucket_batches(lengths, 2048, seed=2)
    rows = {}
    for (S, T), idx in batches:
        rows.setdefault((S, T), []).append(len(idx))
        assert all(lengths[i][0] <= S and lengths[i][1] <= T for i in idx if i >= 0)   # each side fits its bucket
        assert max(S, T) * len(idx) <= 2048 and len(idx) % 8 == 0
        assert bucket_of(max(lengths[i][0] for i in idx if i >= 0)) == S              # no side padded further
    assert all(len(set(n)) <= 2 and n.count(min(n)) == 1 or len(set(n)) == 1 for n in rows.values())
    assert {S for S, _ in rows} | {T for _, T in rows} <= set(LENGTH_BUCKETS)
    blanks = sum(i < 0 for _, idx in batches for i in idx)
    assert blanks < 8 * len(rows)                  # only each cell's last batch is filled, to a multiple of 8


def test_epochs_shuffle_differently_and_repeat_with_their_seed():
    lengths = lengths_of(500, seed=3)
    assert bucket_batches(lengths, 1024, seed=7) == bucket_batches(lengths, 1024, seed=7)
    assert bucket_batches(lengths, 1024, seed=7) != bucket_batches(lengths, 1024, seed=8)


def test_buckets_and_rows():
    assert [bucket_of(n) for n in (1, 8, 9, 128)] == [8, 8, 16, 128]
    assert bucket_of(130) == 136                                           # past the last: a multiple of 8
    assert bucket_rows(64, 60_000) == 936 and bucket_rows(128, 500) == 3   # multiples of 8 once there are 8


def test_a_long_source_does_not_pad_a_short_target():
    (shape, idx), = bucket_batches([(100, 10), (97, 12)], 4096)
    assert shape == (112, 16) and idx == [0, 1, -1, -1, -1, -1, -1, -1]
