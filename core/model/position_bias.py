"""T5's relative positions (Raffel et al. 2020, 2.1): a learned bias per head and distance bucket on the scores.

Not the paper's model, an option of it (cfg.positions = "relative"): nothing is added to the embeddings; each head
adds b_h(bucket(j - i)) to the score of query i and key j before the softmax. Distances below half the buckets get a
bucket each; longer ones share logarithmically wider buckets up to max_distance, beyond which all share the last one.
The encoder tells left from right (half the buckets each); the decoder only looks back. As in T5, the bias is made
once, by the first layer's table, and added in every layer of its stack; encoder-decoder attention has none.
"""
from __future__ import annotations

import math

import torch
from torch import nn


def relative_bucket(distance: torch.Tensor, bidirectional: bool, num_buckets: int = 32,
                    max_distance: int = 128) -> torch.Tensor:
    """Key - query distances (any shape, long) -> their buckets in [0, num_buckets), as T5 (Mesh TensorFlow) has
    them: bidirectional, positive distances take the upper half; otherwise distances after the query count as 0."""
    bucket = torch.zeros_like(distance)
    if bidirectional:
        num_buckets //= 2
        bucket += (distance > 0).long() * num_buckets
        distance = distance.abs()
    else:
        distance = -torch.clamp(distance, max=0)
    exact = num_buckets // 2                                   # distances 0 .. exact - 1: one bucket each
    far = exact + (torch.log(distance.float() / exact) / math.log(max_distance / exact)
                   * (num_buckets - exact)).long()
    far = torch.clamp(far, max=num_buckets - 1)
    return bucket + torch.where(distance < exact, distance, far)


class RelativePositionBias(nn.Module):
    """b_h(bucket(j - i)) for every head h, query i and key j of one stack: a table of (buckets, h) learned numbers."""

    def __init__(self, h: int, num_buckets: int = 32, max_distance: int = 128, bidirectional: bool = True):
        super().__init__()
        self.table = nn.Embedding(num_buckets, h)
        self.num_buckets, self.max_distance, self.bidirectional = num_buckets, max_distance, bidirectional

    def forward(self, n_queries: int, n_keys: int, start: int = 0) -> torch.Tensor:
        """The bias of queries at positions start .. start + n_queries - 1 over keys 0 .. n_keys - 1:
        (1, h, n_queries, n_keys), added to the scores of every layer."""
        device = self.table.weight.device
        query = torch.arange(start, start + n_queries, device=device)[:, None]
        key = torch.arange(n_keys, device=device)[None, :]
        buckets = relative_bucket(key - query, self.bidirectional, self.num_buckets, self.max_distance)
        return self.table(buckets).permute(2, 0, 1).unsqueeze(0)               # (1, h, Tq, Tk)

    @torch.no_grad()
    def by_distance(self, distances) -> torch.Tensor:
        """Each head's bias at each key - query distance: (h, len(distances)), for drawing what the table learned."""
        d = torch.as_tensor(list(distances), dtype=torch.long, device=self.table.weight.device)
        return self.table(relative_bucket(d, self.bidirectional, self.num_buckets, self.max_distance)).T.float()


def learned_bias(model, span: int = 40) -> dict | None:
    """What a model's position bias tables learned: {"encoder": (distances -span..span, bias (h, 2 span + 1)),
    "decoder": (distances -span..0, bias (h, span + 1))}, numpy; None for a model without them (the paper's)."""
    if model.enc_pos_bias is None:
        return None
    out = {}
    for stack, table, distances in [("encoder", model.enc_pos_bias, range(-span, span + 1)),
                                    ("decoder", model.dec_pos_bias, range(-span, 1))]:
        out[stack] = (list(distances), table.by_distance(distances).cpu().numpy())
    return out
