"""How the model writes, as text: a sentence's decoding step by step (core.model.trace), with its pieces and words.

TranslationModel.trace(text, ...) returns a TracedTranslation: .translation is exactly what translate([text], beam)
gives, .steps one entry per decoding step (every live hypothesis, its top-k next pieces and their fates, the
attention it chose with). A forced prefix (words or piece ids) is teacher-forced first, then the model continues.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .model.trace import SearchTrace, Sampling, traced_search
from .tokenizer import merge_words, word_ids


@dataclass
class TracedTranslation:
    """One sentence decoded step by step. src_tokens: the source pieces + "</s>" (S), the cross-attention's
    columns; search: the ids-level record (steps, finished hypotheses, the winner); forced: how many pieces were
    teacher-forced (the language token of NLLB / M2M100 models included)."""
    src: str
    src_tokens: list
    translation: str
    tokens: list                 # the winner's ids: what translate() decodes into .translation
    search: SearchTrace
    forced: int
    notices: list = field(default_factory=list)
    tokenizer: object = field(default=None, repr=False, compare=False)
    hidden: frozenset = frozenset()       # ids left out of text: start, end, padding and the language token
    src_prompt: int = 0                   # the first source pieces that are a task prompt (T5), as AttendResult's

    @property
    def steps(self) -> list:
        return self.search.steps

    @property
    def score(self) -> float:
        """The winner's length-penalised score, log P / lp(length), that beam search ranks by."""
        return self.search.best_score

    @property
    def logprob(self) -> float:
        """log P(translation | source) of the winner (natural log), </s> included."""
        return self.search.best_logprob

    def pieces(self, ids) -> list[str]:
        """Target ids -> their pieces, as the maps label them."""
        return self.tokenizer.pieces(list(ids), "tgt")

    def text(self, ids) -> str:
        """Target ids -> text (language token and specials left out)."""
        return self.tokenizer.decode([i for i in ids if i not in self.hidden], "tgt")

    def source_words(self) -> tuple[list[str], list[int]]:
        """(the source's words, which word each source piece belongs to), as the explorer merges them."""
        ids = word_ids(self.src_tokens)
        return merge_words(self.src_tokens, ids), ids

    def cross_over_words(self, cross: np.ndarray) -> np.ndarray:
        """(..., S) attention over source pieces -> (..., W) over source words: a word gets the sum of its pieces."""
        ids = word_ids(self.src_tokens)
        onehot = np.zeros((len(ids), max(ids) + 1), dtype=cross.dtype)
        onehot[np.arange(len(ids)), ids] = 1.0
        return cross @ onehot


def spell(tm, words: str) -> list[int]:
    """Target words -> their pieces' ids; ValueError naming what the vocabulary has no piece for."""
    ids = tm.tokenizer.encode(words.strip(), "tgt")
    if tm.cfg.unk_id in ids:
        unknown = [p for p, i in zip(tm.tokenizer.pieces(ids, "tgt"), ids) if i == tm.cfg.unk_id]
        raise ValueError(f"The model's vocabulary cannot spell '{words.strip()}' (it has no piece for "
                         f"{', '.join(repr(p) for p in unknown) or 'some of its letters'}): try another word.")
    if not ids:
        raise ValueError("Type a word to force: this one has no letters the model writes.")
    return ids


def forced_ids(tm, prefix) -> list[int]:
    """A prefix to force: None, text (encoded as target pieces) or a list of target ids -> its ids, the language
    token first where the model has one. ValueError, worded for a student, when it cannot be forced."""
    if prefix is None or (isinstance(prefix, str) and not prefix.strip()):
        return list(tm.tgt_prefix)
    ids = spell(tm, prefix) if isinstance(prefix, str) else [int(i) for i in prefix]
    if tm.tgt_prefix and ids[:1] != tm.tgt_prefix:
        ids = tm.tgt_prefix + ids
    specials = {tm.cfg.bos_id, tm.cfg.eos_id, tm.cfg.pad_id}
    if any(i in specials or not 0 <= i < tm.cfg.vocab_size for i in ids):
        raise ValueError("The words to force must be pieces of the model's vocabulary, not start, end or padding "
                         "tokens.")
    return ids


def trace_translation(tm, text: str, beam: int = 4, alpha: float = 0.6, prefix=None, top_k: int = 10,
                      sampling: Sampling | None = None, head_mask=None) -> TracedTranslation:
    """TranslationModel.trace: see there."""
    if not isinstance(beam, int) or beam < 1:
        raise ValueError(f"The beam must be a whole number of 1 or more, not {beam!r}.")
    if not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be a whole number of 1 or more, not {top_k!r}.")
    src_ids, src_text, notices, _ = tm._source_ids(text)
    forced = forced_ids(tm, prefix)
    room = min(len(src_ids) + 50, tm.cfg.max_len - 1) - 1       # the search's length limit, less a step to end
    if len(forced) > room:
        forced = forced[:room]
        notices.append(f"The words you chose were cut to their first {room} pieces: a translation of this sentence "
                       f"may be at most {room + 1} pieces long.")
    search = traced_search(tm.model, tm._batch([src_ids]), beam, alpha, forced, top_k, sampling,
                           head_mask=head_mask)
    hidden = frozenset({tm.cfg.bos_id, tm.cfg.eos_id, tm.cfg.pad_id, *tm.tgt_prefix})
    return TracedTranslation(src_text, tm.tokenizer.pieces(src_ids, "src"), tm.text(search.best), search.best,
                             search, len(forced), notices, tm.tokenizer, hidden, len(tm.src_prompt))
