"""BPE-dropout in training (--subword-dropout): seeded, lossless, new pieces each epoch, and a resumed run repeats
the pieces of the uninterrupted one; a warm start may change the training-only options (dropout) and nothing else."""
from __future__ import annotations

import json

import pytest

from core import Tokenizer, load_model, preset
from core.data import encode_pairs, read_parallel
from core.training.run import EpochPairs
from scripts import train
from tests.helpers import assert_same_run, run_args, train_log

SUBWORD = ["--max-tokens", 256, "--seed", 3, "--save-every-steps", 5, "--subword-dropout", 0.3]


@pytest.fixture(scope="module")
def lines(corpus):
    tok = Tokenizer.from_folder(corpus[1])
    src, tgt = read_parallel(corpus[1], "train")
    return tok, src[:200], tgt[:200]


def test_encode_many_without_dropout_is_encode(lines):
    tok, src, _ = lines
    assert tok.encode_many(src, "src") == [tok.encode(s, "src") for s in src]


def test_bpe_dropout_is_seeded_lossless_and_cuts_finer(lines):
    tok, src, tgt = lines
    plain, _ = encode_pairs(tok, src, tgt, eos_id=3)
    a, _ = encode_pairs(tok, src, tgt, eos_id=3, subword_dropout=0.3, seed=7)
    again, _ = encode_pairs(tok, src, tgt, eos_id=3, subword_dropout=0.3, seed=7)
    other, _ = encode_pairs(tok, src, tgt, eos_id=3, subword_dropout=0.3, seed=8)
    assert a == again                                       # the same seed gives the same pieces
    assert a != other and a != plain
    for (s_ids, t_ids), s, t in zip(a, src, tgt):
        assert tok.decode(s_ids[:-1], "src") == s and tok.decode(t_ids, "tgt") == t   # other cuts, same text
    tokens = lambda pairs: sum(len(s) + len(t) for s, t in pairs)             # noqa: E731
    assert tokens(a) > tokens(plain) * 1.05                   # skipped merges leave smaller pieces


def test_epoch_pairs_change_each_epoch_only_with_dropout(corpus):
    tok = Tokenizer.from_folder(corpus[1])
    cfg = preset("tiny", vocab_size=len(tok))
    cut = EpochPairs(corpus[1], tok, cfg, 128, subword_dropout=0.3, seed=3)
    first = cut(0)[0]
    assert cut(1)[0] != first and cut(0)[0] == first
    once = EpochPairs(corpus[1], tok, cfg, 128)
    assert once(0) is once(5)                                 # cut once, kept


@pytest.mark.slow
def test_resume_with_bpe_dropout_gives_the_uninterrupted_run(corpus, tmp_path):
    ref, run = tmp_path / "ref", tmp_path / "run"
    train.main(run_args(corpus[1], ref, *SUBWORD, "--max-steps", 30))
    assert train_log(ref)[30]["epoch"] >= 1, "the run should cross an epoch boundary (a new cut)"
    train.main(run_args(corpus[1], run, *SUBWORD, "--max-steps", 12))
    train.main(run_args(corpus[1], run, *SUBWORD, "--max-steps", 30, "--resume"))
    assert_same_run(ref, run, 13, 30)
    plain = tmp_path / "plain"
    train.main(run_args(corpus[1], plain, *SUBWORD[:-2], "--max-steps", 5))
    assert train_log(plain)[3]["loss"] != train_log(ref)[3]["loss"]            # the option does act


def test_warm_start_may_change_dropout_but_not_the_model(corpus, tmp_path):
    parent, out = tmp_path / "parent", tmp_path / "ckpt"
    train.main(run_args(corpus[1], parent, "--out", out, "--max-steps", 5, "--max-tokens", 128))
    child, child_out = tmp_path / "child", tmp_path / "child-ckpt"
    train.main(run_args(corpus[1], child, "--out", child_out, "--max-steps", 8, "--max-tokens", 128,
                        "--init-from", out, "--set", "dropout=0.3", "--subword-dropout", 0.1))
    assert load_model(child_out).cfg.dropout == 0.3
    training = json.loads((child_out / "card.json").read_text())["training"]
    assert training["subword_dropout"] == 0.1 and training["warm_start"]["step"] == 5
    with pytest.raises(SystemExit, match="d_ff"):
        train.main(run_args(corpus[1], tmp_path / "wider", "--max-steps", 8, "--max-tokens", 128,
                            "--init-from", out, "--set", "d_ff=128"))
