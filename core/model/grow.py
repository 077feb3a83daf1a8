"""Growing a trained model wider without changing what it computes (Net2Net, Chen et al. 2016).

A model whose position-wise FFNs (section 3.3) have more hidden units than a trained one takes the trained
weights for its first d_ff units. Each new unit keeps its fresh W1 row and b1 entry, so it computes a ReLU of its
own, and gets a zero column in W2, so it adds nothing to the output: the wider model translates exactly as the
trained one did, and training then gives the new units their part (W2's new columns receive gradients at once,
and W1's new rows as soon as those columns are non-zero).
"""
from __future__ import annotations

import torch
from torch import nn

FFN_IN = ("ffn.w_1.weight", "ffn.w_1.bias")   # (d_ff, d_model), (d_ff,): one row per hidden unit
FFN_OUT = "ffn.w_2.weight"                     # (d_model, d_ff): one column per hidden unit


def load_widened(model: nn.Module, trained: dict[str, torch.Tensor]) -> None:
    """Copy `trained` weights into `model`, whose FFNs may be wider; every other shape must match."""
    state = model.state_dict()
    unknown = sorted(set(trained) - set(state))
    missing = sorted(set(state) - set(trained))
    if unknown or missing:
        raise ValueError(f"the two models have different parameters: only in the trained one {unknown[:3]}, "
                         f"only in the wider one {missing[:3]}")
    with torch.no_grad():
        for name, old in trained.items():
            new = state[name]
            if new.shape == old.shape:
                new.copy_(old)
            elif name.endswith(FFN_IN) and new.shape[1:] == old.shape[1:] and new.shape[0] > old.shape[0]:
                new[: old.shape[0]] = old                       # new units keep their fresh rows
            elif name.endswith(FFN_OUT) and new.shape[0] == old.shape[0] and new.shape[1] > old.shape[1]:
                new[:, : old.shape[1]] = old
                new[:, old.shape[1]:] = 0                       # new units add nothing yet
            else:
                raise ValueError(f"{name}: cannot grow {tuple(old.shape)} into {tuple(new.shape)}; "
                                 "only the FFN's hidden size (d_ff) may be larger")
