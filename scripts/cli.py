"""What the commands in scripts/ share on their command lines: the checkpoint folder, --device, --threads,
--no-progress, and setting up the device and the CPU threads they ask for.

    p = cli.parser(__doc__)
    cli.add_checkpoint(p); cli.add_device(p); cli.add_threads(p); cli.add_progress(p)
    args = p.parse_args(argv)
    device = cli.pick_device(args.device)       # cli.UsageError: --device cuda without a GPU
    cli.set_threads(args.threads)
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import torch

CHECKPOINT_HELP = "checkpoint folder (model.safetensors, config.json, spm.model, card.json)"
DEVICES = "auto, cpu or cuda"


class UsageError(ValueError):
    """A problem with the command line, worded for the person who ran it."""


def parser(doc: str | None, summary: bool = False) -> argparse.ArgumentParser:
    """A command's ArgumentParser, its docstring as the help: the whole of it (examples kept as written) or,
    with summary, its first line."""
    if summary:
        return argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def add_checkpoint(p: argparse.ArgumentParser, help: str = CHECKPOINT_HELP) -> None:
    """The positional checkpoint folder."""
    p.add_argument("checkpoint", help=help)


def add_device(p: argparse.ArgumentParser, default: str = "auto") -> None:
    """--device auto|cpu|cuda (auto: a GPU when PyTorch sees one); pick_device turns it into a device name."""
    p.add_argument("--device", default=default, help=DEVICES)


def add_threads(p: argparse.ArgumentParser, default: int = 0, help: str = "CPU threads (0: torch's default)") -> None:
    """--threads N; set_threads applies it."""
    p.add_argument("--threads", type=int, default=default, help=help)


def add_progress(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """--no-progress: no progress bars (logs, CI)."""
    p.add_argument("--no-progress", action="store_true", help=help)


def pick_device(name: str) -> str:
    """"auto" -> "cuda" when PyTorch sees a GPU, else "cpu"; other names as they are.

    Raises UsageError for a CUDA device on a machine where PyTorch sees no GPU.
    """
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {name} was asked for, but this PyTorch sees no GPU: use --device cpu.")
    return name


def set_threads(threads: int | None) -> None:
    """torch's CPU threads (0 or None: leave torch's default)."""
    if threads:
        torch.set_num_threads(threads)


def cell(value, width: int, fmt: str = ".3f") -> str:
    """A number right-aligned in a text table's column, 'n/a' where there is none."""
    return f"{'n/a':>{width}}" if value is None else f"{value:>{width}{fmt}}"


def command(parse_args, run, describe, errors: tuple) -> Callable:
    """The main() of an evaluation command: parse, run, print describe(result); one of `errors` becomes
    "error: ..." on stderr and exit status 1 (they are worded for the user), not a traceback."""
    def main(argv=None) -> int:
        args = parse_args(argv)
        try:
            result = run(args)
        except errors as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(describe(result))
        return 0
    return main
