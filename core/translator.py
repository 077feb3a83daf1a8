"""A trained model with its tokenizer: translate text and hand back every attention map."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .decoding import beam_search, greedy_search
from .data import pad_batch
from .tokenizer import Tokenizer, clean_text

MAX_INPUT_CHARS = 2000   # longer text is cut before tokenising (it would be cut in tokens anyway)


@dataclass
class AttendResult:
    """Everything a view needs for one sentence pair.

    src_tokens: source pieces + "</s>" (S). tgt_tokens: decoder inputs, the start token + target pieces (T)
    (the start token is "<s>" in our models, "<pad>" in imported Marian ones).
    out_tokens: what each decoder position predicts, target pieces + "</s>" (T).
    enc_self [N, h, S, S], dec_self [N_dec, h, T, T], cross [N_dec, h, T, S]: float32 numpy arrays,
    rows attend (queries), columns are attended (keys); every row sums to 1.
    """
    src: str
    tgt: str
    src_tokens: list
    tgt_tokens: list
    out_tokens: list
    enc_self: np.ndarray
    dec_self: np.ndarray
    cross: np.ndarray
    teacher_forced: bool
    truncated: bool = False
    notices: list = field(default_factory=list)


@dataclass
class ScoreResult:
    """Teacher-forced log-probabilities of one target sentence given its source (natural log).

    pieces: what each decoder position writes, target pieces + "</s>" (T); logprobs (T,): log P of
    each piece given the source and the pieces before it; total: their sum, log P(target | source).
    """
    src: str
    tgt: str
    pieces: list
    logprobs: np.ndarray
    total: float
    notices: list = field(default_factory=list)


class TranslationModel:
    """The public face of a checkpoint: load_checkpoint(folder) returns one of these."""

    def __init__(self, model, tokenizer: Tokenizer, card: dict | None = None, folder=None):
        self.model, self.tokenizer = model.eval(), tokenizer
        self.cfg = model.cfg
        self.card, self.folder = card or {}, folder
        # source + </s>, leaving room for an output of source length + 50 in the position table
        self.max_source_tokens = max(8, min(256, self.cfg.max_len - 51))

    @property
    def device(self):
        return self.model.generator.weight.device

    def _source_ids(self, text: str):
        """Validated text -> (ids + </s>, cleaned text, notices, truncated). Raises ValueError if empty."""
        if not isinstance(text, str):
            raise ValueError(f"Please give the sentence as text, not {type(text).__name__}.")
        notices, truncated = [], False
        if len(text) > MAX_INPUT_CHARS:
            text, truncated = text[:MAX_INPUT_CHARS], True
        text = clean_text(text)
        if not text:
            raise ValueError("The sentence is empty: please type some words to translate.")
        ids = self.tokenizer.encode(text, "src")
        if len(ids) + 1 > self.max_source_tokens:
            ids, truncated = ids[: self.max_source_tokens - 1], True
        if truncated:
            kept = self.tokenizer.decode(ids, "src")
            notices.append(f"The input was too long and was cut to its first {len(ids)} pieces "
                           f"({len(kept)} characters), ending '…{kept[-30:]}'.")
            text = kept
        return ids + [self.cfg.eos_id], text, notices, truncated

    def _target_ids(self, tgt, notices: list):
        """Validated target text -> (cleaned text, ids without <s> and </s>); a cut is added to notices."""
        if not isinstance(tgt, str):
            raise ValueError(f"Please give the target translation as text, not {type(tgt).__name__}.")
        tgt = clean_text(tgt)
        if not tgt:
            raise ValueError("The target translation is empty: type one, or leave it out to let the model translate.")
        ids = self.tokenizer.encode(tgt, "tgt")
        limit = self.cfg.max_len - 1            # room for the start token in the position table
        if len(ids) > limit:
            ids = ids[:limit]
            notices.append(f"The target translation was cut to its first {limit} pieces.")
        return tgt, ids

    def _batch(self, seqs):
        return pad_batch(seqs, self.cfg.pad_id, self.device)

    def _search(self, src, beam, alpha, head_mask=None):
        if beam <= 1:
            return greedy_search(self.model, src, head_mask=head_mask)
        return beam_search(self.model, src, beam, alpha, head_mask=head_mask)

    @torch.no_grad()
    def translate(self, texts, beam: int = 4, alpha: float = 0.6, batch_size: int = 64,
                  head_mask=None) -> list[str]:
        """Translate a list of sentences (or one string); batches are sorted by length for speed.

        head_mask: None, or self.model.ablate_heads([...]) to translate with those heads switched off.
        """
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        srcs = [self._source_ids(t)[0] for t in texts]
        order = sorted(range(len(srcs)), key=lambda i: len(srcs[i]))
        out = [""] * len(srcs)
        for start in range(0, len(order), batch_size):
            idx = order[start: start + batch_size]
            hyps = self._search(self._batch([srcs[i] for i in idx]), beam, alpha, head_mask)
            for i, h in zip(idx, hyps):
                out[i] = self.tokenizer.decode(h, "tgt")
        return out[0] if single else out

    @torch.no_grad()
    def attend(self, src: str, tgt: str | None = None, beam: int = 1, alpha: float = 0.6,
               head_mask=None) -> AttendResult:
        """All attention maps for one sentence: teacher-forced on `tgt`, or on the model's own translation.

        head_mask: None, or self.model.ablate_heads([...]): translate and attend with those heads off.
        """
        src_ids, src_text, notices, truncated = self._source_ids(src)
        src_t = self._batch([src_ids])
        if tgt is None:
            tgt_ids = self._search(src_t, beam, alpha, head_mask)[0]
        else:
            tgt, tgt_ids = self._target_ids(tgt, notices)
        dec_in = self._batch([[self.cfg.bos_id] + tgt_ids])
        # encoder and decoder only: the maps do not need the (costly) projection onto the vocabulary
        memory, src_mask, enc_self = self.model.encode(src_t, need_weights=True, head_mask=head_mask)
        _, dec_self, cross = self.model.decode(dec_in, memory, src_mask, need_weights=True, head_mask=head_mask)
        to_np = lambda maps: torch.cat(maps, 0).float().cpu().numpy()     # list of (1, h, ., .) -> (N, h, ., .)
        return AttendResult(
            src=src_text, tgt=self.tokenizer.decode(tgt_ids, "tgt"),
            src_tokens=self.tokenizer.pieces(src_ids, "src"),
            tgt_tokens=self.tokenizer.pieces([self.cfg.bos_id] + tgt_ids, "tgt"),
            out_tokens=self.tokenizer.pieces(tgt_ids + [self.cfg.eos_id], "tgt"),
            enc_self=to_np(enc_self), dec_self=to_np(dec_self), cross=to_np(cross),
            teacher_forced=tgt is not None, truncated=truncated, notices=notices)

    @torch.no_grad()
    def score(self, src, candidates, batch_size: int = 128):
        """log P(candidate | src) of each candidate, teacher-forced, in batches: the API of contrastive tests.

        src: one sentence shared by every candidate, or a list with one source per candidate.
        candidates: a target sentence or a list of them. Returns a ScoreResult (a list for a list).
        """
        single = isinstance(candidates, str)
        cands = [candidates] if single else list(candidates)
        srcs = [src] * len(cands) if isinstance(src, str) else list(src)
        if len(srcs) != len(cands):
            raise ValueError(f"Give one source for all candidates or one per candidate "
                             f"({len(srcs)} sources for {len(cands)} candidates).")
        items = []
        for s, c in zip(srcs, cands):
            src_ids, s_text, notices, _ = self._source_ids(s)
            c_text, tgt_ids = self._target_ids(c, notices)
            items.append((src_ids, tgt_ids, s_text, c_text, notices))
        order = sorted(range(len(items)), key=lambda i: (len(items[i][0]), len(items[i][1])))
        out = [None] * len(items)
        bos, eos = self.cfg.bos_id, self.cfg.eos_id
        for start in range(0, len(order), batch_size):
            idx = order[start: start + batch_size]
            src_t = self._batch([items[i][0] for i in idx])                    # (B, S)
            dec_in = self._batch([[bos] + items[i][1] for i in idx])          # (B, T)
            gold = self._batch([items[i][1] + [eos] for i in idx])            # (B, T)
            logits = self.model(src_t, dec_in).float()                          # (B, T, V)
            # log-softmax of the gold piece only: no second (B, T, V) tensor
            picked = logits.gather(-1, gold[..., None]).squeeze(-1) - logits.logsumexp(-1)   # (B, T)
            picked = picked.cpu().numpy()
            for row, i in enumerate(idx):
                src_ids, tgt_ids, s_text, c_text, notices = items[i]
                lp = picked[row, : len(tgt_ids) + 1]                           # padding positions dropped
                out[i] = ScoreResult(s_text, c_text, self.tokenizer.pieces(tgt_ids + [eos], "tgt"), lp,
                                     float(lp.sum(dtype=np.float64)), notices)
        return out[0] if single else out
