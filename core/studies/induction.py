"""Induction heads and attention sinks, measured on repeated random tokens (TransformerLens' definitions).

Olsson et al. 2022 ("In-context Learning and Induction Heads") and TransformerLens measure a decoder-only model's
heads on sequences [bos] + r + r: r is L random tokens (special ids left out), so the first copy cannot be
predicted and the second can, by copying. With positions counted from 0 (0 is bos, the first copy 1..L, the second
L+1..2L), a query at position i = L + k of the second copy holds r_k, whose previous occurrence is at k:

  induction   mean over the second copy (i = L+1..2L) of A[i, i - (L - 1)]: the token right AFTER the previous
              occurrence (an induction head attends there, and copies it as its guess of what comes next)
  duplicate   mean over the second copy of A[i, i - L]: the previous occurrence itself (a duplicate-token head)
  previous    mean over i = 1..2L of A[i, i - 1]: the token before (a previous-token head)
  sink        mean over i = SINK_FROM..2L of A[i, 0]: the share of attention on the first token (an attention sink,
              Xiao et al. 2023's StreamingLLM), here on the same random sequences, past the first few positions
              where attending to position 0 is little else than attending to one of few keys
  loss gap    mean next-token loss on the second copy minus on the first, each over L - 1 predictions: targets
              L+2..2L (predicted from L+1..2L-1, where the first copy shows what follows) against targets 2..L
              (r_1, after bos, and the second copy's first token, after r_L, are guessable from nothing and left
              out); negative when the model learns in context, about 0 when it does not

A is one head's map (rows: queries, columns: keys; rows sum to 1). Every score is an (N, h) array over layers and
heads, each the mean over sequences and the positions listed (`positions` says how many). `scores_from_maps` takes
the maps; `induction_scores` makes the sequences, runs a model and scores it. No Streamlit here.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

SINK_FROM = 4          # sink share: queries from this position on
SCORES = {             # name -> what a student reads
    "induction": "attention to the token after the previous occurrence of the current token",
    "previous": "attention to the previous token",
    "duplicate": "attention to the previous occurrence of the current token",
    "sink": "share of attention on the first token (an attention sink)",
}


@dataclass
class InductionScores:
    """Each head's scores (N, h), the in-context loss gap, and what they were measured on."""
    induction: np.ndarray
    previous: np.ndarray
    duplicate: np.ndarray
    sink: np.ndarray
    L: int                                   # random tokens per copy
    sequences: int                           # how many [bos] + r + r sequences
    positions: dict = field(default_factory=dict)   # score -> query positions averaged per sequence
    loss_first: float | None = None          # mean next-token loss (nats) on the first copy
    loss_second: float | None = None         # ... on the second copy
    seed: int | None = None

    @property
    def loss_gap(self) -> float | None:
        """Second copy minus first: negative when the model copies from context."""
        if self.loss_first is None or self.loss_second is None:
            return None
        return self.loss_second - self.loss_first

    def best(self, score: str = "induction") -> tuple[int, int, float]:
        """(layer, head, value) of the head with the largest `score`, counted from 0."""
        grid = getattr(self, score)
        layer, head = np.unravel_index(int(np.nanargmax(grid)), grid.shape)
        return int(layer), int(head), float(grid[layer, head])

    def to_json(self) -> dict:
        """Plain numbers for a JSON file: layers and heads from 1, as the app and the atlas show them."""
        N, h = self.induction.shape
        heads = [{"layer": layer + 1, "head": head + 1,
                  **{s: round(float(getattr(self, s)[layer, head]), 6) for s in SCORES}}
                 for layer in range(N) for head in range(h)]
        gap = self.loss_gap
        return {"L": self.L, "sequences": self.sequences, "seed": self.seed, "positions": dict(self.positions),
                "sink_from": SINK_FROM, "loss_first": self.loss_first, "loss_second": self.loss_second,
                "loss_gap": None if gap is None else round(gap, 6),
                "best": {s: dict(zip(("layer", "head", "score"), self._best_from_1(s))) for s in SCORES},
                "heads": heads}

    def _best_from_1(self, score: str) -> tuple[int, int, float]:
        layer, head, value = self.best(score)
        return layer + 1, head + 1, round(value, 6)


# ---- the sequences ----

def repeated_tokens(vocab_size: int, L: int, batch: int, seed: int = 0, bos: int | None = None,
                    exclude=()) -> torch.Tensor:
    """(batch, 2L + 1) LongTensor [bos] + r + r, r of L ids drawn uniformly from range(vocab_size) less `exclude`
    (the special ids) and less bos, from a generator seeded by `seed` (torch's global RNG is left alone).

    bos None: the first position holds one more random token (a model without a start token), and the layout is
    the same: position 0, then the copies at 1..L and L+1..2L.
    """
    if L < 2:
        raise ValueError(f"The repeated sequence needs at least 2 tokens per copy (L >= 2); got L={L}.")
    banned = set(int(i) for i in exclude) | ({int(bos)} if bos is not None else set())
    allowed = torch.tensor([i for i in range(vocab_size) if i not in banned], dtype=torch.long)
    if len(allowed) < 2:
        raise ValueError(f"A vocabulary of {vocab_size} ids with {len(banned)} special ones leaves too few "
                         f"ordinary tokens to draw random sequences from.")
    g = torch.Generator().manual_seed(int(seed))
    r = allowed[torch.randint(len(allowed), (batch, L), generator=g)]                     # (batch, L)
    first = (torch.full((batch, 1), int(bos), dtype=torch.long) if bos is not None
             else allowed[torch.randint(len(allowed), (batch, 1), generator=g)])
    return torch.cat([first, r, r], dim=1)                                                 # (batch, 2L + 1)


# ---- scores from the maps ----

def stack_maps(maps) -> np.ndarray:
    """maps as a model returns them (a list over layers of (B, h, T, T) tensors or arrays), or already one
    (B, N, h, T, T) array -> (B, N, h, T, T) float64 array."""
    if isinstance(maps, np.ndarray):
        if maps.ndim != 5:
            raise ValueError(f"maps must be (B, N, h, T, T); got shape {maps.shape}")
        return maps.astype(np.float64)
    layers = [m.detach().float().cpu().numpy() if torch.is_tensor(m) else np.asarray(m) for m in maps]
    return np.stack(layers, axis=1).astype(np.float64)                                     # (B, N, h, T, T)


def diagonal_mass(maps: np.ndarray, queries: np.ndarray, offset: int) -> np.ndarray:
    """(B, N, h, T, T) -> (N, h): mean over sequences and the query positions of A[i, i + offset]."""
    return maps[..., queries, queries + offset].mean(axis=(0, -1))


def first_token_share(attn: np.ndarray, first_query: int = SINK_FROM) -> np.ndarray:
    """(..., T, T) maps of any text -> (...): the mean over queries i >= first_query of A[i, 0], the share of
    attention on the first token (a sink scores near 1). Fewer than first_query + 1 positions: the last query only."""
    T = attn.shape[-1]
    return attn[..., min(first_query, T - 1):, 0].mean(-1)


def scores_from_maps(maps, L: int, sink_from: int = SINK_FROM) -> InductionScores:
    """Every head's induction, previous-token, duplicate-token and sink scores from its maps on [bos] + r + r.

    maps: a list over layers of (B, h, T, T), or a (B, N, h, T, T) array, with T = 2L + 1 (module docstring).
    """
    a = stack_maps(maps)
    B, T = a.shape[0], a.shape[-1]
    if T != 2 * L + 1:
        raise ValueError(f"Maps of {T} positions do not fit [bos] + r + r with L={L} (that is {2 * L + 1}).")
    second = np.arange(L + 1, 2 * L + 1)                  # the second copy's queries
    after_first = np.arange(1, 2 * L + 1)                 # every query with a token before it
    sinkers = np.arange(min(sink_from, T - 1), T)
    return InductionScores(
        induction=diagonal_mass(a, second, -(L - 1)),
        duplicate=diagonal_mass(a, second, -L),
        previous=diagonal_mass(a, after_first, -1),
        sink=first_token_share(a, sink_from).mean(0),
        L=L, sequences=B,
        positions={"induction": len(second), "duplicate": len(second), "previous": len(after_first),
                   "sink": len(sinkers), "loss": L - 1})


def copy_losses(logits: torch.Tensor, tokens: torch.Tensor, L: int) -> tuple[float, float]:
    """(mean loss on the first copy, on the second): logits (B, 2L + 1, V) of tokens (B, 2L + 1); targets 2..L
    and L+2..2L, each predicted from the position before (module docstring)."""
    logp = F.log_softmax(logits.detach().float(), dim=-1)[:, :-1]                                   # (B, 2L, V)
    nll = -logp.gather(-1, tokens[:, 1:, None])[..., 0]                                    # (B, 2L): target t+1
    first = nll[:, 1:L]                                   # targets 2..L
    second = nll[:, L + 1: 2 * L]                         # targets L+2..2L
    return float(first.mean()), float(second.mean())


# ---- running a model ----

def special_ids(cfg) -> list[int]:
    """The ids a config names as special (pad, unk, bos, eos, ...), those it has."""
    names = ("pad_id", "unk_id", "bos_id", "eos_id", "sep_id", "cls_id", "mask_id")
    return [int(v) for n in names if (v := getattr(cfg, n, None)) is not None and v >= 0]


def longest_copy(cfg, default: int = 50) -> int:
    """The L to use: `default` (TransformerLens' 50), or less when 2L + 1 positions exceed the model's table."""
    limit = getattr(cfg, "max_len", None)
    return default if not limit else max(2, min(default, (int(limit) - 1) // 2))


@torch.no_grad()
def induction_scores(model, L: int | None = None, batch: int = 32, seed: int = 0, chunk: int = 8,
                     bos: int | None = -1, exclude=None) -> InductionScores:
    """Run `model` (called as model(tokens, need_weights=True) -> (logits, maps)) on `batch` repeated random
    sequences and score every head; the loss gap comes from the same logits.

    L None: longest_copy(model.cfg). bos -1: the config's bos_id (None where it has none: a random first token).
    exclude None: the config's special ids. The sequences go through `chunk` at a time (memory: one chunk's maps).
    """
    cfg = model.cfg
    L = longest_copy(cfg) if L is None else int(L)
    limit = getattr(cfg, "max_len", None)
    if limit and 2 * L + 1 > limit:
        raise ValueError(f"[bos] + r + r with L={L} is {2 * L + 1} tokens, more than this model's {limit} positions: "
                         f"use L <= {(limit - 1) // 2}.")
    if bos == -1:
        bos = getattr(cfg, "bos_id", None)
    tokens = repeated_tokens(cfg.vocab_size, L, batch, seed, bos, special_ids(cfg) if exclude is None else exclude)
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    parts, first, second = [], [], []
    try:
        for start in range(0, batch, chunk):
            part = tokens[start: start + chunk].to(device)
            logits, maps = model(part, need_weights=True)
            s = scores_from_maps(maps, L)
            parts.append((s, len(part)))
            f, sec = copy_losses(logits, part, L)
            first.append(f * len(part))
            second.append(sec * len(part))
    finally:
        model.train(was_training)
    out = parts[0][0]
    for name in SCORES:                                   # chunks weighted by their sequences
        setattr(out, name, sum(getattr(s, name) * n for s, n in parts) / batch)
    out.sequences, out.seed = batch, seed
    out.loss_first, out.loss_second = sum(first) / batch, sum(second) / batch
    return out
