"""A decoder-only language model with its tokenizer: a text's tokens and every attention map of one forward pass."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .loaded_model import MAX_INPUT_CHARS, LoadedModel


@dataclass
class LMAttendResult:
    """One text's pass. tokens: its pieces (T), the family's first token (Llama's <|begin_of_text|>) included where
    its tokenizer puts one; ids: their ids. self_attn [N, h, T, T]: float32, rows attend (queries), columns are
    attended (keys), each row sums to 1 and is 0 right of the diagonal; one map per query head (grouped-query
    models: kv_groups says which share keys and values). next_ids: the most likely next token after each position.
    vectors (attend(..., vectors=True)): (q, k), each (N, h, T, d_k), after the rotation, before the 1/sqrt(d_k)."""
    text: str
    tokens: list
    ids: list
    self_attn: np.ndarray
    next_ids: list
    truncated: bool = False
    notices: list = field(default_factory=list)
    vectors: tuple | None = None


class LanguageModel(LoadedModel):
    """A DecoderOnly model, its tokenizer (tokenizer.json) and its card, as load_checkpoint hands them out."""

    def kv_groups(self) -> list[list[int]]:
        """The query heads sharing each key/value head (DecoderOnly.kv_groups)."""
        return self.model.kv_groups()

    def ids(self, text: str) -> tuple[list[int], bool]:
        """(the text's ids, the family's first token before them where it has one; whether they were cut to the
        model's max_len). The text is tokenised as it is (spaces and line breaks are tokens to a language model)."""
        if not isinstance(text, str):
            raise ValueError(f"expected text, got {type(text).__name__}")
        ids = ([] if self.cfg.bos_id is None else [self.cfg.bos_id]) + self.tokenizer.encode(text[:MAX_INPUT_CHARS])
        return ids[: self.cfg.max_len], len(ids) > self.cfg.max_len

    @torch.no_grad()
    def logits(self, ids, head_mask=None) -> torch.Tensor:
        """(T,) ids -> (T, vocab) float32 logits: position t scores the token after t."""
        return self.model(torch.tensor([list(ids)], device=self.device), head_mask=head_mask)[0].float()

    @torch.no_grad()
    def next_candidates(self, ids, k: int = 10, head_mask=None) -> list[tuple[int, str, float]]:
        """The k likeliest tokens after `ids`: (id, piece, probability), likeliest first."""
        probs = self.logits(ids, head_mask)[-1].softmax(-1)
        p, i = probs.topk(min(k, probs.numel()))
        return [(int(j), piece, float(q)) for j, piece, q in zip(i, self.tokenizer.pieces(i.tolist()), p)]

    @torch.no_grad()
    def generate(self, ids, max_new: int = 20, temperature: float = 0.0, seed: int | None = None,
                 head_mask=None) -> list[int]:
        """The ids written after `ids`, one at a time with the cache: the likeliest each time (temperature 0), or
        drawn from softmax(logits / temperature) with torch's generator seeded by `seed`; stops at the end-of-text
        id or at the model's max_len."""
        ids = list(ids)
        g = None if seed is None else torch.Generator().manual_seed(seed)
        cache = [{} for _ in range(self.cfg.N)]
        step, out = torch.tensor([ids], device=self.device), []
        for _ in range(max(0, min(max_new, self.cfg.max_len - len(ids)))):
            logits = self.model(step, head_mask=head_mask, cache=cache)[0, -1].float().cpu()
            if temperature > 0:
                nxt = int(torch.multinomial((logits / temperature).softmax(-1), 1, generator=g))
            else:
                nxt = int(logits.argmax())
            out.append(nxt)
            if nxt == self.cfg.eos_id:
                break
            step = torch.tensor([[nxt]], device=self.device)
        return out

    @torch.no_grad()
    def attend(self, text: str, vectors: bool = False, head_mask=None) -> LMAttendResult:
        """The text's tokens and every layer's attention maps (and, with vectors, each head's queries and keys)."""
        ids, truncated = self.ids(text)
        if not ids:
            raise ValueError("The text has no tokens: write a few words.")
        logits, attns = self.model(torch.tensor([ids], device=self.device), need_weights=True, head_mask=head_mask,
                                   need_vectors=vectors)
        maps = [a[0] if vectors else a for a in attns]
        notices = [f"The text was cut to the model's {self.cfg.max_len} tokens."] if truncated else []
        vecs = None
        if vectors:
            vecs = tuple(torch.cat([a[i] for a in attns]).float().cpu().numpy() for i in (1, 2))
        return LMAttendResult(text, self.tokenizer.pieces(ids), ids, torch.cat(maps).float().cpu().numpy(),
                              logits[0].argmax(-1).tolist(), truncated, notices, vecs)
