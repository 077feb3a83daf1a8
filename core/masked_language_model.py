"""An encoder-only model (BERT, RoBERTa, DistilBERT) with its tokenizer: a text's tokens, [CLS] and [SEP] among
them, every attention map of one pass, and which words fill its [MASK]s."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .loaded_model import MAX_INPUT_CHARS, LoadedModel
from .model.encoder_only import special_sequence
from .tokenizer import clean_text

MASK_WORD = "[MASK]"      # what a user writes for the blank, whatever the family calls it (RoBERTa: <mask>)


@dataclass
class MLMAttendResult:
    """One input's pass. tokens: its pieces (T), the family's [CLS] first and [SEP] after each sentence; ids and
    types (sentence A 0, B 1) of them; roles: "cls", "sep", "mask", or None for a piece of the text, per token.
    self_attn [N, h, T, T]: float32, rows attend (queries), columns are attended (keys), each row sums to 1.
    fills: {position of a [MASK]: [(piece, probability), ...] the 5 likeliest}, empty without a masked-LM head.
    vectors (attend(..., vectors=True)): (q, k), each (N, h, T, d_k), before the 1/sqrt(d_k)."""
    text: str
    pair: str | None
    tokens: list
    ids: list
    types: list
    roles: list
    self_attn: np.ndarray
    fills: dict
    truncated: bool = False
    notices: list = field(default_factory=list)
    vectors: tuple | None = None


class MaskedLanguageModel(LoadedModel):
    """An EncoderOnly model, its tokenizer (tokenizer.json) and its card, as load_checkpoint hands them out."""

    @property
    def has_head(self) -> bool:
        """Whether it can say which word fills a [MASK] (a checkpoint saved as BertModel cannot)."""
        return self.model.head is not None

    def _pieces(self, text: str) -> list[int]:
        mask = self.tokenizer.pieces([self.cfg.mask_id])[0]
        return self.tokenizer.encode(clean_text(text[:MAX_INPUT_CHARS]).replace(MASK_WORD, mask))

    def ids(self, text: str, pair: str | None = None) -> tuple[list[int], list[int], bool]:
        """(ids, token types, whether the text was cut): [CLS] text [SEP] (pair [SEP]), within max_len tokens."""
        first, second = self._pieces(text), None if pair is None else self._pieces(pair)
        budget = self.cfg.max_len - 2 - (0 if second is None else self.cfg.pair_seps)
        cut = len(first) + len(second or []) > budget
        while len(first) + len(second or []) > budget:          # the longer sentence loses its last piece
            if second and len(second) > len(first):
                second = second[:-1]
            else:
                first = first[:-1]
        ids, types = special_sequence(self.cfg, first, second)
        return ids, types, cut

    def roles(self, ids) -> list:
        """"cls", "sep", "mask" or None (a piece of the text) for each id: what a view shows them as."""
        named = {self.cfg.cls_id: "cls", self.cfg.sep_id: "sep", self.cfg.mask_id: "mask"}
        return [named.get(int(i)) for i in ids]

    @torch.no_grad()
    def attend(self, text: str, pair: str | None = None, vectors: bool = False, head_mask=None,
               k: int = 5) -> MLMAttendResult:
        """The input's tokens, every layer's attention maps (with vectors, each head's queries and keys) and the k
        likeliest fillers of each [MASK]. pair: a second sentence (BERT's sentence B)."""
        ids, types, truncated = self.ids(text, pair)
        x = torch.tensor([ids], device=self.device)
        t = torch.tensor([types], device=self.device) if self.cfg.type_vocab_size else None
        if self.has_head:
            logits, attns = self.model(x, need_weights=True, head_mask=head_mask, token_types=t, need_vectors=vectors)
        else:
            logits, (_, attns) = None, self.model.hidden(x, True, head_mask, t, vectors)
        maps = [a[0] if vectors else a for a in attns]
        vecs = (tuple(torch.cat([a[i] for a in attns]).float().cpu().numpy() for i in (1, 2)) if vectors else None)
        fills = {}
        if logits is not None:
            probs = logits[0].float().softmax(-1)                               # (T, vocab)
            for pos in (x[0] == self.cfg.mask_id).nonzero().flatten().tolist():
                p, i = probs[pos].topk(min(k, self.cfg.vocab_size))
                fills[pos] = list(zip(self.tokenizer.pieces(i.tolist()), p.tolist()))
        notices = [f"The text was cut to the model's {self.cfg.max_len} tokens."] if truncated else []
        return MLMAttendResult(text, pair, self.tokenizer.pieces(ids), ids, types, self.roles(ids),
                               torch.cat(maps).float().cpu().numpy(), fills, truncated, notices, vecs)

    def fill_mask(self, text: str, k: int = 5) -> list[list[tuple[str, float]]]:
        """For each [MASK] of the text, in order, the k likeliest pieces and their probabilities."""
        if not self.has_head:
            raise ValueError("This model has no masked-LM head (its checkpoint was saved without one): it cannot "
                             "say which word fills [MASK]; its attention maps can still be shown.")
        fills = self.attend(text, k=k).fills
        if not fills:
            raise ValueError(f"The text has no {MASK_WORD}: write one where a word should be guessed.")
        return [fills[pos] for pos in sorted(fills)]
