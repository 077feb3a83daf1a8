"""--precision auto|fp32|bf16: which precision a device gets, and why."""
import torch

from core.training.precision import cpu_has_bf16, pick_precision


def test_pick_precision():
    cpu = torch.device("cpu")
    assert pick_precision("fp32", cpu) == ("fp32", "asked for")
    assert pick_precision("bf16", cpu)[0] == "bf16"
    assert pick_precision("auto", cpu)[0] == ("bf16" if cpu_has_bf16() else "fp32")
    assert pick_precision("auto", torch.device("cuda"))[0] == "bf16"
