"""Growing a trained model wider or deeper without changing what it computes (Net2Net, Chen et al. 2016).

Wider: a model whose position-wise FFNs (section 3.3) have more hidden units than a trained one takes the trained
weights for its first d_ff units. Each new unit keeps its fresh W1 row and b1 entry, so it computes a ReLU of its
own, and gets a zero column in W2, so it adds nothing to the output.

Deeper: a model with more decoder layers takes the trained ones as its first layers; each new layer on top keeps
its fresh weights but gets zero output projections (attention's W^O and the FFN's W2, with their biases). With
pre-norm residuals, x + Sublayer(LayerNorm(x)), such a layer passes x through unchanged. (With the paper's post-norm,
LayerNorm(x + 0) is not x, so a deeper post-norm model would not start as the trained one did; it is refused.)

Either way the grown model translates exactly as the trained one did, and training then gives the new parts their
share: the zeroed output weights receive gradients at once, the weights before them as soon as those are non-zero.
"""
from __future__ import annotations

import re

import torch
from torch import nn

FFN_IN = ("ffn.w_1.weight", "ffn.w_1.bias")   # (d_ff, d_model), (d_ff,): one row per hidden unit
FFN_OUT = "ffn.w_2.weight"                     # (d_model, d_ff): one column per hidden unit
# A decoder layer's sublayer outputs: zero, and the layer adds nothing to its residual stream.
SUBLAYER_OUT = ("self_attn.w_o.weight", "self_attn.w_o.bias", "cross_attn.w_o.weight", "cross_attn.w_o.bias",
                "ffn.w_2.weight", "ffn.w_2.bias")
DECODER_LAYER = re.compile(r"decoder\.(\d+)\.")


def load_grown(model: nn.Module, trained: dict[str, torch.Tensor]) -> None:
    """Copy `trained` weights into `model`, whose FFNs may be wider and whose (pre-norm) decoder may be deeper."""
    state = model.state_dict()
    n_dec = 1 + max((int(m.group(1)) for k in trained if (m := DECODER_LAYER.match(k))), default=-1)
    unknown = sorted(set(trained) - set(state))
    missing = sorted(set(state) - set(trained))
    added = [k for k in missing if (m := DECODER_LAYER.match(k)) and int(m.group(1)) >= n_dec]   # new layers' weights
    if unknown or len(added) < len(missing):
        raise ValueError(f"the two models have different parameters: only in the trained one {unknown[:3]}, "
                         f"only in the grown one {sorted(set(missing) - set(added))[:3]}")
    if added and model.cfg.norm != "pre":
        raise ValueError("decoder layers can be added without changing the model only with pre-norm residuals "
                         "(norm=pre); this model uses post-norm")
    with torch.no_grad():
        for name, old in trained.items():
            _copy_widening(name, old, state[name])
        for name in added:
            if name.split(".", 2)[2] in SUBLAYER_OUT:
                state[name].zero_()                             # the new layer passes its input through


def _copy_widening(name: str, old: torch.Tensor, new: torch.Tensor) -> None:
    """Copy one trained tensor into its place; an FFN's tensors may have more hidden units there."""
    if new.shape == old.shape:
        new.copy_(old)
    elif name.endswith(FFN_IN) and new.shape[1:] == old.shape[1:] and new.shape[0] > old.shape[0]:
        new[: old.shape[0]] = old                               # new units keep their fresh rows
    elif name.endswith(FFN_OUT) and new.shape[0] == old.shape[0] and new.shape[1] > old.shape[1]:
        new[:, : old.shape[1]] = old
        new[:, old.shape[1]:] = 0                               # new units add nothing yet
    else:
        raise ValueError(f"{name}: cannot grow {tuple(old.shape)} into {tuple(new.shape)}; "
                         "only the FFN's hidden size (d_ff) may be larger")


def describe_growth(grown: dict) -> str:
    """A card's record of a grown warm start ({"d_ff": [1024, 2048], "N_dec": [3, 6]}) in words."""
    parts = []
    if "d_ff" in grown:
        parts.append("FFNs widened from {} to {} hidden units".format(*grown["d_ff"]))
    if "N_dec" in grown:
        parts.append("decoder deepened from {} to {} layers".format(*grown["N_dec"]))
    return ", ".join(parts) + ", the new parts starting silent (zero output weights)" if parts else ""
