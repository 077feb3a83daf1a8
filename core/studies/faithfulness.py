"""Which view of a model is faithful? Remove the source word a method ranks highest, see how much the prediction
suffers (an erasure test in the spirit of Jain & Wallace 2019 and Ferrando et al. 2022b, section 5).

For each sentence the model translates (greedy), and for each word it generates, every method names the source
word that mattered most for that word; that word is removed from attention (its pieces become padding, so no
encoder or decoder-encoder attention can read them) and the drop in the log-probability of the generated word,
teacher-forced on the same translation, is measured. A random source word is the baseline. A method whose top word
costs more when removed is the more faithful one. Words are the model's own (pieces merged, core.views).
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from core.tokenizer import clean_text, merge_attention, word_ids
from core.views import SPECIALS

from .contributions import Contributions, contributions, row_shares

METHODS = {"attention": "cross-attention, all layers and heads averaged",
           "norm": "norm-based (Kobayashi), each layer's heads summed as vectors, layers averaged",
           "alti": "ALTI+ source contributions rolled through every layer",
           "random": "a source word drawn at random (the baseline)"}


def piece_maps(c: Contributions) -> dict:
    """Each method's (T, S) piece-level map over the source, rows the decoder steps (random: none)."""
    return {"attention": c.result.cross.mean((0, 1)),
            "norm": row_shares(c.norm_layer["cross"]).mean(0),
            "alti": c.rolled["cross"][-1]}


def source_words(pieces: list) -> tuple[list, list]:
    """(word id of each piece, the source word ids that can be removed: all but </s>)."""
    ids = word_ids(pieces)
    return ids, sorted({w for w, p in zip(ids, pieces) if p not in SPECIALS})


def top_words(c: Contributions, rng: random.Random) -> tuple[list, dict]:
    """(generated words as lists of decoder steps, {method: the source word it ranks highest for each})."""
    src_ids, removable = source_words(c.result.src_tokens)
    out = c.result.out_tokens
    tid = word_ids(out)
    targets = [[t for t, w in enumerate(tid) if w == k] for k in sorted(set(tid))]
    targets = [steps for steps in targets if out[steps[0]] not in SPECIALS]
    tops = {}
    for method, m in piece_maps(c).items():
        words = merge_attention(m, tid, src_ids)                      # (W_tgt, W_src): rows averaged, cols summed
        cand = words[:, removable]
        tops[method] = [removable[int(cand[tid[steps[0]]].argmax())] for steps in targets]
    tops["random"] = [rng.choice(removable) for _ in targets]
    return targets, tops


@torch.no_grad()
def masked_logprobs(tm, src_ids: list, tgt_ids: list, removed: list) -> np.ndarray:
    """log P of every target piece (and </s>), with the source pieces of each entry of `removed` (sets of piece
    positions; an empty set keeps the sentence whole) turned into padding: (len(removed), T)."""
    cfg = tm.cfg
    src = torch.tensor([src_ids] * len(removed), device=tm.device)                # (B, S)
    for b, positions in enumerate(removed):
        src[b, sorted(positions)] = cfg.pad_id
    dec_in = torch.tensor([[cfg.bos_id] + tgt_ids] * len(removed), device=tm.device)      # (B, T)
    gold = torch.tensor(tgt_ids + [cfg.eos_id], device=tm.device)
    logits = tm.model(src, dec_in).float()                                             # (B, T, V)
    logp = logits.log_softmax(-1)
    return logp[:, torch.arange(len(gold)), gold].cpu().numpy()


@dataclass
class Faithfulness:
    """Per method, the drop in log-probability of each generated word when its top source word is removed."""
    drops: dict = field(default_factory=lambda: {m: [] for m in METHODS})
    flips: dict = field(default_factory=lambda: {m: [] for m in METHODS})   # the word is no longer the likeliest
    sentences: int = 0
    skipped: list = field(default_factory=list)
    seconds: float = 0.0


def sentence_ids(tm, c: Contributions, translation: str) -> tuple[list, list]:
    """The source and target ids of a teacher-forced result (an NLLB or M2M100 model's language tokens included, as
    the translator feeds them), checked against its pieces."""
    tok, cfg = tm.tokenizer, tm.cfg
    src_ids, tgt_ids = tm.source_ids(c.result.src), tm.target_ids(translation)
    if tok.pieces(src_ids, "src") != c.result.src_tokens or tok.pieces(tgt_ids + [cfg.eos_id], "tgt") != \
            c.result.out_tokens:
        raise ValueError("its pieces cannot be matched to ids again")
    return src_ids, tgt_ids


def measure(tm, sources: list, seed: int = 0, progress=None, translations: list | None = None) -> Faithfulness:
    """The erasure test on `sources`, teacher-forced on `translations` (None: the model's own, greedy)."""
    t0, rng, out = time.time(), random.Random(seed), Faithfulness()
    translations = tm.translate(sources, beam=1) if translations is None else translations
    for k, (src, tgt) in enumerate(zip(sources, translations)):
        try:
            if not clean_text(tgt):
                raise ValueError("the translation is empty")
            c = contributions(tm, src, tgt)
            src_ids, tgt_ids = sentence_ids(tm, c, tgt)
            if not _score(tm, c, src_ids, tgt_ids, rng, out):
                raise ValueError("the translation has no words to test")
        except ValueError as e:
            out.skipped.append((k, str(e)))
        else:
            out.sentences += 1
        if progress:
            progress(k + 1, len(sources))
    out.seconds = time.time() - t0
    return out


def _score(tm, c, src_ids, tgt_ids, rng, out: Faithfulness) -> int:
    """One sentence: one batched pass with each needed source word removed, the drops of every method; returns
    the number of generated words tested (0: none, nothing recorded)."""
    targets, tops = top_words(c, rng)
    if not targets:
        return 0
    pid = word_ids(c.result.src_tokens)
    needed = sorted({w for ws in tops.values() for w in ws})
    removed = [set()] + [{p for p, w in enumerate(pid) if w == word} for word in needed]
    logp = masked_logprobs(tm, src_ids, tgt_ids, removed)                 # (1 + words, T)
    for method, words in tops.items():
        for steps, word in zip(targets, words):
            row = 1 + needed.index(word)
            out.drops[method].append(float(logp[0, steps].sum() - logp[row, steps].sum()))
            out.flips[method].append(bool(logp[row, steps[0]] < np.log(0.5) <= logp[0, steps[0]]))
    return len(targets)


def table(f: Faithfulness) -> list[dict]:
    """One row per method: mean drop (nats) with its standard error, median, and how often the word's
    probability falls from above 1/2 to below it."""
    rows = []
    for method in METHODS:
        d = np.asarray(f.drops[method], dtype=np.float64)
        n = len(d)
        rows.append({"method": method, "what": METHODS[method], "words": n,
                     "mean_drop": round(float(d.mean()), 4) if n else None,
                     "stderr": round(float(d.std(ddof=1) / np.sqrt(n)), 4) if n > 1 else None,
                     "median_drop": round(float(np.median(d)), 4) if n else None,
                     "flipped": round(float(np.mean(f.flips[method])), 4) if n else None})
    return rows


def report(f: Faithfulness) -> dict:
    """The table and what it was measured on, as JSON."""
    rows = table(f)
    best = max((r for r in rows if r["method"] != "random" and r["mean_drop"] is not None),
               key=lambda r: r["mean_drop"], default=None)
    return {"sentences": f.sentences, "skipped": len(f.skipped), "skipped_reasons": sorted({w for _, w in f.skipped}),
            "rule": "for each generated word, the source word a method ranks highest is removed from attention "
                    "(its pieces made padding); drop = log P(word) before minus after, in nats, teacher-forced on "
                    "the model's own greedy translation",
            "table": rows, "most_faithful": best["method"] if best else None, "seconds": round(f.seconds, 1)}


RESULT_FILE = "faithfulness.json"        # written into a checkpoint folder by scripts/evaluate_faithfulness.py


def read_result(folder) -> dict | None:
    """A checkpoint folder's saved faithfulness result, or None when it has none; ValueError when it is garbled."""
    return read_saved(folder, RESULT_FILE, "scripts/evaluate_faithfulness.py")


def read_saved(folder, name: str, script: str) -> dict | None:
    """A JSON result with a "table" saved in a checkpoint folder as `name` by `script`, or None when there is none;
    ValueError, naming the script to run again, when it is garbled."""
    if folder is None or not (Path(folder) / name).is_file():
        return None
    try:
        result = json.loads((Path(folder) / name).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{name} in {folder} cannot be read ({e}): run {script} again") from None
    if not isinstance(result, dict) or not isinstance(result.get("table"), list):
        raise ValueError(f"{name} in {folder} has no table: run {script} again")
    return result
