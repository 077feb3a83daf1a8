"""A trained model with its tokenizer: translate text and hand back every attention map."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .checkpoint.card import Card, as_card
from .data import pad_batch
from .decoding_trace import TracedTranslation, trace_translation
from .model.decoding import beam_search, greedy_search
from .tokenizer import Tokenizer, clean_text
from .views import AttentionView, attention_view, sentence_only

MAX_INPUT_CHARS = 2000   # longer text is cut before tokenising (it would be cut in tokens anyway)


@dataclass
class AttendResult:
    """Everything a view needs for one sentence pair.

    src_tokens: source pieces + "</s>" (S). tgt_tokens: decoder inputs, the start token + target pieces (T)
    (the start token is "<s>" in our models, "<pad>" in imported Marian ones, "</s>" in NLLB, M2M100, FSMT).
    out_tokens: what each decoder position predicts, target pieces + "</s>" (T). NLLB and M2M100 models put
    their language token first on both sides (cfg.src_prefix_id, cfg.tgt_prefix_id): it is a piece like any other.
    src_prompt: how many source pieces, first, are a task prompt added for the user (T5's "translate English to
    German: ", cfg.src_prompt_ids), not the sentence: views label them as the prompt, and studies skip them.
    enc_self [N, h, S, S], dec_self [N_dec, h, T, T], cross [N_dec, h, T, S]: float32 numpy arrays,
    rows attend (queries), columns are attended (keys); every row sums to 1. An encoder-only result
    (attend_batch(..., encoder_only=True)) has dec_self = cross = None, tgt "" and no target tokens.
    vectors (attend_batch(..., vectors=True)): {kind: (q, k)}, float32, q (N_kind, h, rows, d_k) and
    k (N_kind, h, cols, d_k): each head's queries and keys after W^Q, W^K and the split into heads, before
    the 1/sqrt(d_k) scaling, so that softmax(q k^T / sqrt(d_k) + mask) is that kind's map (a T5 model's:
    softmax(q k^T + its position bias + mask), core.model.position_bias); rows and cols
    as core.views labels them (decoder q rows: decoder positions; cross k: source positions).
    """
    src: str
    tgt: str
    src_tokens: list
    tgt_tokens: list
    out_tokens: list
    enc_self: np.ndarray
    dec_self: np.ndarray | None
    cross: np.ndarray | None
    teacher_forced: bool
    truncated: bool = False
    notices: list = field(default_factory=list)
    vectors: dict | None = None
    src_prompt: int = 0

    def view(self, kind: str, words: bool = False, specials: bool = True) -> AttentionView:
        """One kind of map with its row and column labels, by the project's one convention (core.views)."""
        return attention_view(self, kind, words=words, specials=specials)

    def sentence_only(self) -> AttendResult:
        """This result without its task prompt (T5), for matching pieces to the sentence's words (core.views)."""
        return sentence_only(self)


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


def _sorted_batches(keys: list, batch_size: int) -> list[list[int]]:
    """Indices of items in batches of at most batch_size, sorted by key (a length), so that batches pad little."""
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return [order[start: start + batch_size] for start in range(0, len(order), batch_size)]


def _to_numpy(attns: list, need_vectors: bool) -> list:
    """One forward pass's attentions of one kind, a list over layers of (B, h, Tq, Tk) maps (or of (maps, q, k))
    -> [maps (B, L, h, Tq, Tk)] (or [maps, q (B, L, h, Tq, d_k), k (B, L, h, Tk, d_k)]), float32 numpy."""
    parts = zip(*attns) if need_vectors else [attns]
    return [torch.stack(list(p), 1).float().cpu().numpy() for p in parts]


def _unpad(arrays: list, b: int, rows: int, cols: int) -> list:
    """Sentence b of a batch's [maps, q, k] without its padding: maps (L, h, rows, cols), q (L, h, rows, d_k),
    k (L, h, cols, d_k); copies, so that a kept result does not hold on to its whole batch."""
    maps, *qk = arrays
    cut = [maps[b, :, :, :rows, :cols]]
    if qk:
        cut += [qk[0][b, :, :, :rows], qk[1][b, :, :, :cols]]
    return [np.ascontiguousarray(x) for x in cut]


class TranslationModel:
    """The public face of a checkpoint: load_checkpoint(folder) returns one of these."""

    def __init__(self, model, tokenizer: Tokenizer, card: Card | dict | None = None, folder=None):
        self.model, self.tokenizer = model.eval(), tokenizer
        self.cfg = model.cfg
        self.card, self.folder = as_card(card), folder     # card: core.checkpoint.card.Card
        # source + </s>, leaving room for an output of source length + 50 in the position table
        self.max_source_tokens = max(8, min(256, self.cfg.max_len - 51))
        # the language tokens of NLLB and M2M100 models: before every source, and first in every target
        # T5's task prompt: first in every source, before any language token
        self.src_prompt = list(self.cfg.src_prompt_ids or [])
        self.src_prefix = self.src_prompt + ([] if self.cfg.src_prefix_id is None else [self.cfg.src_prefix_id])
        self.tgt_prefix = [] if self.cfg.tgt_prefix_id is None else [self.cfg.tgt_prefix_id]

    @property
    def device(self):
        return self.model.generator.weight.device

    def source_ids(self, text: str) -> list[int]:
        """The ids the encoder reads for this text: [language token] + pieces + </s> (ValueError if empty)."""
        return self._source_ids(text)[0]

    def target_ids(self, text: str) -> list[int]:
        """The ids a target text is teacher-forced with: [language token] + pieces, without the start token and
        </s> (ValueError if empty)."""
        return self._target_ids(text, [])[1]

    def _source_ids(self, text: str):
        """Validated text -> (prefix + ids + </s>, cleaned text, notices, truncated). Raises ValueError if empty."""
        if not isinstance(text, str):
            raise ValueError(f"Please give the sentence as text, not {type(text).__name__}.")
        notices, truncated = [], False
        if len(text) > MAX_INPUT_CHARS:
            text, truncated = text[:MAX_INPUT_CHARS], True
        text = clean_text(text)
        if not text:
            raise ValueError("The sentence is empty: please type some words to translate.")
        ids = self.tokenizer.encode(text, "src")
        room = self.max_source_tokens - 1 - len(self.src_prefix)
        if len(ids) > room:
            ids, truncated = ids[:room], True
        if truncated:
            kept = self.tokenizer.decode(ids, "src")
            notices.append(f"The input was too long and was cut to its first {len(ids)} pieces "
                           f"({len(kept)} characters), ending '…{kept[-30:]}'.")
            text = kept
        return self.src_prefix + ids + [self.cfg.eos_id], text, notices, truncated

    def _target_ids(self, tgt, notices: list):
        """Validated target text -> (cleaned text, [language token] + ids, no start token, no </s>); a cut is
        added to notices."""
        if not isinstance(tgt, str):
            raise ValueError(f"Please give the target translation as text, not {type(tgt).__name__}.")
        tgt = clean_text(tgt)
        if not tgt:
            raise ValueError("The target translation is empty: type one, or leave it out to let the model translate.")
        ids = self.tokenizer.encode(tgt, "tgt")
        limit = self.cfg.max_len - 1 - len(self.tgt_prefix)   # room for the start token in the position table
        if len(ids) > limit:
            ids = ids[:limit]
            notices.append(f"The target translation was cut to its first {limit} pieces.")
        return tgt, self.tgt_prefix + ids

    def text(self, tgt_ids) -> str:
        """Target ids (as translate, attend and target_ids give them) -> text, the language token left out."""
        n = len(self.tgt_prefix)
        return self.tokenizer.decode(tgt_ids[n:] if list(tgt_ids[:n]) == self.tgt_prefix else tgt_ids, "tgt")

    def _batch(self, seqs):
        return pad_batch(seqs, self.cfg.pad_id, self.device)

    def _search(self, src, beam, alpha, head_mask=None):
        if beam <= 1:
            return greedy_search(self.model, src, head_mask=head_mask)
        return beam_search(self.model, src, beam, alpha, head_mask=head_mask)

    def _search_ids(self, srcs: list, beam, alpha, batch_size, head_mask=None) -> list:
        """The model's own translations of source id lists, as target ids (no <s>, </s>), in length-sorted batches."""
        out = [None] * len(srcs)
        for idx in _sorted_batches([len(ids) for ids in srcs], batch_size):
            for i, hyp in zip(idx, self._search(self._batch([srcs[i] for i in idx]), beam, alpha, head_mask)):
                out[i] = hyp
        return out

    @torch.no_grad()
    def translate(self, texts, beam: int = 4, alpha: float = 0.6, batch_size: int = 64,
                  head_mask=None) -> list[str]:
        """Translate a list of sentences (or one string); batches are sorted by length for speed.

        head_mask: None, or self.model.ablate_heads([...]) to translate with those heads switched off.
        """
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        srcs = [self._source_ids(t)[0] for t in texts]
        out = [self.text(ids) for ids in self._search_ids(srcs, beam, alpha, batch_size, head_mask)]
        return out[0] if single else out

    def trace(self, text: str, beam: int = 4, alpha: float = 0.6, prefix=None, top_k: int = 10, sampling=None,
              head_mask=None) -> TracedTranslation:
        """One sentence decoded step by step (core.decoding_trace): .translation is translate([text], beam)[0]
        exactly; .steps holds each step's hypotheses, their top_k next pieces (kept, pruned, finished) and the
        attention each chose with. beam 1 is greedy. prefix: words (text) or target ids teacher-forced first, then
        the model continues. sampling: a core.model.trace.Sampling (temperature, top-k, top-p, seed) in place of
        the search."""
        return trace_translation(self, text, beam, alpha, prefix, top_k, sampling, head_mask)

    def contrast(self, text: str, prefix, chosen: str, other: str, method: str = "erasure", steps: int = 64):
        """Why `chosen` and not `other` after `prefix` (the target words already written, "" for the first word;
        text, or target ids as trace gives them; chosen and other: words as text, or target ids)?
        A core.attribution.Contrast: how much each source word and each word already written pushes log P(chosen)
        - log P(other). method: "erasure" (words left out, the reference), "gradient" (gradient x input),
        "integrated" (integrated gradients, `steps` points) or "alti_logit" (ALTI-Logit)."""
        from .attribution import contrast          # here: core.attribution imports the studies that import core
        return contrast(self, text, prefix, chosen, other, method, steps)

    @torch.no_grad()
    def attend(self, src: str, tgt: str | None = None, beam: int = 1, alpha: float = 0.6,
               head_mask=None) -> AttendResult:
        """All attention maps for one sentence: teacher-forced on `tgt`, or on the model's own translation.

        head_mask: None, or self.model.ablate_heads([...]): translate and attend with those heads off.
        """
        return self.attend_batch([src], [tgt], batch_size=1, head_mask=head_mask, beam=beam, alpha=alpha)[0]

    @torch.no_grad()
    def attend_batch(self, sources, targets=None, batch_size: int = 48, vectors: bool = False, head_mask=None,
                     encoder_only: bool = False, beam: int = 1, alpha: float = 0.6,
                     progress=None) -> list[AttendResult]:
        """All attention maps of many sentences, one AttendResult each, from padded batches sorted by length.

        targets: None, or one entry per source: a target text to teacher-force, or None for the model's own
        translation (greedy, or beam search with beam > 1), exactly as attend(src, tgt) does.
        encoder_only: skip the search and the decoder (half the work when only encoder maps are wanted):
        results with dec_self = cross = None, tgt "" and no target tokens; targets must then be None.
        vectors: each result also carries its per-head queries and keys (AttendResult.vectors), from the
        same forward pass as its maps. head_mask: None, or self.model.ablate_heads([...]).
        progress: None, or a function called with (sentences done, sentences) after each batch.
        Padding is cut off: a sentence's maps in a batch are its maps alone, up to float rounding.
        """
        if not hasattr(sources, "__iter__"):                    # None, a number: what attend(None) says too
            raise ValueError(f"Please give a sentence or a list of sentences, not {type(sources).__name__}.")
        sources = [sources] if isinstance(sources, str) else list(sources)
        targets = [None] * len(sources) if targets is None else [targets] if isinstance(targets, str) else list(targets)
        if len(targets) != len(sources):
            raise ValueError(f"Give one target (or None) per source: {len(targets)} targets for "
                             f"{len(sources)} sources.")
        if encoder_only and any(t is not None for t in targets):
            raise ValueError("encoder_only=True computes no decoder maps: leave the targets out.")
        items = [self._attend_item(i, s, t, len(sources)) for i, (s, t) in enumerate(zip(sources, targets))]
        if not encoder_only:       # the model's own translations, where no target was given
            free = [it for it in items if it["tgt_ids"] is None]
            for it, ids in zip(free, self._search_ids([it["src_ids"] for it in free], beam, alpha, batch_size,
                                                      head_mask)):
                it["tgt_ids"] = ids
        out, done = [None] * len(items), 0
        for idx in _sorted_batches([(len(it["src_ids"]), len(it["tgt_ids"] or ())) for it in items], batch_size):
            for i, result in zip(idx, self._attend_maps([items[i] for i in idx], vectors, head_mask, encoder_only)):
                out[i] = result
            done += len(idx)
            if progress is not None:
                progress(done, len(items))
        return out

    def _attend_item(self, i: int, src, tgt, n: int) -> dict:
        """One sentence of attend_batch, validated: src_ids, src_text, tgt_ids (None: still to translate), ..."""
        try:
            src_ids, src_text, notices, truncated = self._source_ids(src)
            tgt_ids = None if tgt is None else self._target_ids(tgt, notices)[1]
        except ValueError as e:
            if n == 1:
                raise
            raise ValueError(f"Sentence {i + 1} of {n}: {e}") from None
        return dict(src_ids=src_ids, src_text=src_text, tgt_ids=tgt_ids, teacher_forced=tgt is not None,
                    notices=notices, truncated=truncated)

    def _attend_maps(self, items: list, need_vectors: bool, head_mask, encoder_only: bool) -> list[AttendResult]:
        """One padded forward pass (encoder and decoder, no output projection) -> one AttendResult per item."""
        bos, eos, tok = self.cfg.bos_id, self.cfg.eos_id, self.tokenizer
        memory, src_mask, enc = self.model.encode(self._batch([it["src_ids"] for it in items]), need_weights=True,
                                                  head_mask=head_mask, need_vectors=need_vectors)
        kinds = {"enc_self": _to_numpy(enc, need_vectors)}                  # (B, N, h, S, S) [, q, k]
        if not encoder_only:
            dec_in = self._batch([[bos] + it["tgt_ids"] for it in items])    # (B, T)
            _, dec, cross = self.model.decode(dec_in, memory, src_mask, need_weights=True, head_mask=head_mask,
                                              need_vectors=need_vectors)
            kinds["dec_self"], kinds["cross"] = _to_numpy(dec, need_vectors), _to_numpy(cross, need_vectors)
        results = []
        for b, it in enumerate(items):
            S, tgt_ids = len(it["src_ids"]), it["tgt_ids"] or []
            T = len(tgt_ids) + 1
            sizes = {"enc_self": (S, S), "dec_self": (T, T), "cross": (T, S)}      # (rows, cols) of each kind
            cut = {kind: _unpad(arrays, b, *sizes[kind]) for kind, arrays in kinds.items()}
            maps = {kind: cut[kind][0] if kind in cut else None for kind in sizes}
            results.append(AttendResult(
                src=it["src_text"], tgt=self.text(tgt_ids),
                src_tokens=tok.pieces(it["src_ids"], "src"),
                tgt_tokens=[] if encoder_only else tok.pieces([bos] + tgt_ids, "tgt"),
                out_tokens=[] if encoder_only else tok.pieces(tgt_ids + [eos], "tgt"),
                **maps, teacher_forced=it["teacher_forced"],
                truncated=it["truncated"], notices=it["notices"],
                vectors={kind: tuple(arrays[1:]) for kind, arrays in cut.items()} if need_vectors else None,
                src_prompt=len(self.src_prompt)))
        return results

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
        out = [None] * len(items)
        bos, eos = self.cfg.bos_id, self.cfg.eos_id
        for idx in _sorted_batches([(len(it[0]), len(it[1])) for it in items], batch_size):
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
