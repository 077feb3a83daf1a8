"""scripts/cli.py: the commands' shared arguments and their device and thread set-up."""
import pytest
import torch

from scripts import cli, evaluate, evaluate_alignment, evaluate_pronouns, train

NO_GPU = "--device cuda was asked for, but this PyTorch sees no GPU: use --device cpu."


def test_shared_arguments_keep_their_names_and_defaults():
    p = cli.parser("Do a thing.\n\n    python scripts/x.py CHECKPOINT")
    cli.add_checkpoint(p)
    cli.add_device(p)
    cli.add_threads(p)
    cli.add_progress(p)
    args = p.parse_args(["ckpt"])
    assert (args.checkpoint, args.device, args.threads, args.no_progress) == ("ckpt", "auto", 0, False)
    assert "python scripts/x.py CHECKPOINT" in p.format_help()                  # the docstring as written
    assert cli.parser("First line.\nMore.", summary=True).description == "First line."


def test_the_commands_parse_as_before():
    a = evaluate.parse_args(["c", "--device", "cpu", "--threads", "2", "--no-progress"])
    assert (a.checkpoint, a.device, a.threads, a.no_progress, a.beam) == ("c", "cpu", 2, True, 4)
    assert evaluate_pronouns.parse_args(["c"]).device == "auto"
    b = evaluate_alignment.parse_args(["c"])
    assert (b.threads, b.no_progress) == (1, False)
    t = train.parse_args(["--data", "d", "--run", "r"])
    assert (t.device, t.threads, t.no_progress) == ("auto", 0, False)


def test_pick_device(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.pick_device("auto") == "cpu" and cli.pick_device("cpu") == "cpu"
    with pytest.raises(cli.UsageError) as e:
        cli.pick_device("cuda")
    assert str(e.value) == NO_GPU
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert cli.pick_device("auto") == "cuda" and cli.pick_device("cuda:1") == "cuda:1"


def test_evaluate_says_when_cuda_is_missing(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert evaluate.main([str(tmp_path), "--device", "cuda"]) == 1
    assert capsys.readouterr().err == f"error: {NO_GPU}\n"


def test_set_threads_leaves_the_default_for_zero():
    before = torch.get_num_threads()
    try:
        cli.set_threads(0)
        cli.set_threads(None)
        assert torch.get_num_threads() == before
        cli.set_threads(1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
