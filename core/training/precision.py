"""Mixed precision for training: bf16 autocast where the hardware does bf16 natively, fp32 master weights,
optimiser and loss (--precision auto|fp32|bf16)."""
from __future__ import annotations

import contextlib
from pathlib import Path

import torch


def cpu_has_bf16() -> bool:
    """True when this CPU does bf16 matrix work natively (x86 AVX512_BF16 or AMX; read from /proc/cpuinfo)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:          # not Linux: stay with fp32
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def pick_precision(choice: str, device) -> tuple[str, str]:
    """(precision, why) for --precision auto|fp32|bf16 on this device."""
    if choice != "auto":
        return choice, "asked for"
    if device.type == "cuda":
        return "bf16", "auto: a CUDA GPU"
    if cpu_has_bf16():
        return "bf16", "auto: this CPU has AVX512_BF16/AMX"
    return "fp32", "auto: this CPU has no native bf16"


def autocast(precision: str, device):
    """Mixed precision for the forward pass: bf16 matmuls, fp32 master weights, optimiser and loss."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()
