"""Greedy and beam search with incremental decoding (paper, section 6.1: beam 4, alpha 0.6, max length input + 50)."""
from __future__ import annotations

import torch


def _length_limits(model, src, max_extra):
    """Per sentence: at most source length + max_extra output tokens, within the position table."""
    src_len = (src != model.cfg.pad_id).sum(1)
    return (src_len + max_extra).clamp(max=model.cfg.max_len - 1)          # (B,)


def _step_logprobs(model, tokens, memory, src_mask, cache, t, head_mask=None):
    """Log-probabilities of the next token after tokens[:, :t+1]: (B, vocab).

    With a cache only the newest token is fed (keys and values of earlier positions are
    kept); without one the whole prefix goes through the decoder again.
    """
    if cache is None:
        hidden = model.decode(tokens, memory, src_mask, head_mask=head_mask)[0]
    else:
        hidden = model.decode(tokens[:, -1:], memory, src_mask, cache=cache, start=t, head_mask=head_mask)[0]
    logp = model.project(hidden[:, -1]).float().log_softmax(-1)
    if model.cfg.forbid_pad_output:      # as Marian's generate (bad_words_ids=[[pad]]): <pad> is never output
        logp[:, model.cfg.pad_id] = float("-inf")
    if t == 0 and model.cfg.tgt_prefix_id is not None:   # NLLB/M2M100: the target language comes first, always
        forced = torch.full_like(logp, float("-inf"))
        forced[:, model.cfg.tgt_prefix_id] = 0.0         # as transformers' forced_bos_token_id: log P = 0
        logp = forced
    return logp


@torch.no_grad()
def greedy_search(model, src, max_extra: int = 50, use_cache: bool = True, head_mask=None):
    """src: (B, S) ids -> list of B token-id lists (without <s> and </s>).

    head_mask: None, or Transformer.ablate_heads(...) to decode with those heads switched off.
    """
    cfg = model.cfg
    memory, src_mask, _ = model.encode(src, head_mask=head_mask)
    limits = _length_limits(model, src, max_extra)
    cache = [{} for _ in model.decoder] if use_cache else None
    tokens = torch.full((src.size(0), 1), cfg.bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for t in range(int(limits.max())):
        logp = _step_logprobs(model, tokens, memory, src_mask, cache, t, head_mask)
        nxt = logp.argmax(-1)
        nxt = torch.where(t + 1 >= limits, torch.full_like(nxt, cfg.eos_id), nxt)   # length limit
        nxt = torch.where(finished, torch.full_like(nxt, cfg.pad_id), nxt)
        tokens = torch.cat([tokens, nxt[:, None]], dim=1)
        finished |= nxt == cfg.eos_id
        if finished.all():
            break
    return [_strip(seq, cfg) for seq in tokens[:, 1:].tolist()]


def _strip(seq, cfg):
    """Cut a sequence at its first </s> and drop padding."""
    if cfg.eos_id in seq:
        seq = seq[: seq.index(cfg.eos_id)]
    return [t for t in seq if t != cfg.pad_id]


def only_eos_at_limit(logp, at_limit, eos_id: int) -> None:
    """In place: rows at their length limit (at_limit, bool (rows,)) may only end, with </s>'s own log P."""
    if at_limit.any():
        eos_col = logp[at_limit, eos_id].clone()
        logp[at_limit] = float("-inf")
        logp[at_limit, eos_id] = eos_col


def select_candidates(top_scores: list, top_idx: list, V: int, K: int, eos_id: int, n_finished: int):
    """One sentence's step of beam search: its best candidates (scores and flat indices beam * V + token, best
    first) -> (kept: up to K (score, beam, token) that live on, ended: (score, beam) that wrote </s>).

    Stops at the first impossible candidate, when K are kept, or when K hypotheses have ended in all (as fairseq).
    """
    kept, ended = [], []
    for s, idx in zip(top_scores, top_idx):
        k, w = divmod(idx, V)
        if s == float("-inf"):
            break
        if w == eos_id:
            ended.append((s, k))
        else:
            kept.append((s, k, w))
        if len(kept) == K or n_finished + len(ended) >= K:
            break
    return kept, ended


def reorder_cache(cache: list, reorder) -> None:
    """Keep each live hypothesis' own self-attention keys and values (the cross-attention ones are all alike)."""
    for layer_cache in cache:
        layer_cache["self"]["k"] = layer_cache["self"]["k"][reorder]
        layer_cache["self"]["v"] = layer_cache["self"]["v"][reorder]


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's lp(Y) = ((5 + |Y|) / 6)^alpha (Wu et al. 2016), which the paper uses with alpha 0.6."""
    return ((5 + length) / 6) ** alpha


@torch.no_grad()
def beam_search(model, src, beam: int = 4, alpha: float = 0.6, max_extra: int = 50, head_mask=None):
    """Batched beam search: src (B, S) -> list of B best token-id lists.

    Each sentence keeps `beam` live hypotheses; one that emits </s> is set aside with score
    log P / lp(length). A sentence is done when `beam` hypotheses are set aside (as fairseq does)
    or at its length limit; the best set-aside hypothesis wins. head_mask: as in greedy_search.
    """
    cfg, K = model.cfg, beam
    B, dev = src.size(0), src.device
    memory, src_mask, _ = model.encode(src, head_mask=head_mask)
    memory, src_mask = memory.repeat_interleave(K, 0), src_mask.repeat_interleave(K, 0)
    limits = _length_limits(model, src, max_extra)
    cache = [{} for _ in model.decoder]
    tokens = torch.full((B * K, 1), cfg.bos_id, dtype=torch.long, device=dev)
    scores = torch.full((B, K), float("-inf"), device=dev)
    scores[:, 0] = 0.0                                     # all beams start as one hypothesis
    finished = [[] for _ in range(B)]
    done = [False] * B
    for t in range(int(limits.max())):
        logp = _step_logprobs(model, tokens, memory, src_mask, cache, t, head_mask)   # (B*K, V)
        V = logp.size(-1)
        only_eos_at_limit(logp, (t + 1 >= limits).repeat_interleave(K), cfg.eos_id)
        cand = (scores.view(B * K, 1) + logp).view(B, K * V)
        top_scores, top_idx = cand.topk(2 * K, dim=1)
        new_scores = torch.full((B, K), float("-inf"), device=dev)
        new_beam = torch.zeros((B, K), dtype=torch.long, device=dev)
        new_tok = torch.full((B, K), cfg.pad_id, dtype=torch.long, device=dev)
        top_scores_l, top_idx_l = top_scores.tolist(), top_idx.tolist()
        for b in range(B):
            if done[b]:
                continue
            kept, ended = select_candidates(top_scores_l[b], top_idx_l[b], V, K, cfg.eos_id, len(finished[b]))
            for s, k in ended:
                seq = tokens[b * K + k, 1:].tolist()
                finished[b].append((s / length_penalty(len(seq) + 1, alpha), seq))
            for n, (s, k, w) in enumerate(kept):
                new_scores[b, n], new_beam[b, n], new_tok[b, n] = s, k, w
            done[b] = len(finished[b]) >= K or not kept
        if all(done):
            break
        reorder = (torch.arange(B, device=dev)[:, None] * K + new_beam).view(-1)
        tokens = torch.cat([tokens[reorder], new_tok.view(-1, 1)], dim=1)
        scores = new_scores
        reorder_cache(cache, reorder)
    results = []
    for b in range(B):
        if not finished[b]:   # no hypothesis ended: take the best live one
            seq = tokens[b * K, 1:].tolist()
            finished[b].append((0.0, seq))
        results.append(_strip(max(finished[b], key=lambda x: x[0])[1], cfg))
    return results
