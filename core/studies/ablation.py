"""Head ablation: translate with attention heads switched off and measure what it costs in BLEU.

A head is switched off by zeroing its output before W^O, as Michel et al. (2019, "Are Sixteen Heads
Really Better than One?") do: Transformer.ablate_heads builds a head mask that travels with each call,
so a model shared between threads (the app's sessions) is never changed by an ablation. BLEU is
sacrebleu's corpus BLEU on a small dev slice, so differences of a point or two are noise: read the
sweep as "which heads matter a lot", not as a precise ranking.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import sacrebleu

from .analysis import load_neutral
from core.paths import REPO
from core.data import read_parallel



def bleu(hypotheses: list[str], references: list[str]) -> float:
    """Corpus BLEU with sacrebleu's defaults (13a tokenisation), 0..100."""
    return sacrebleu.corpus_bleu(hypotheses, [references]).score


def translate_without(tm, texts, heads=(), beam: int = 1) -> list[str]:
    """Translations with the heads (kind, layer, head) switched off; no heads gives the normal output."""
    heads = list(heads)
    return tm.translate(list(texts), beam=beam, head_mask=tm.model.ablate_heads(heads) if heads else None)


@dataclass
class Ablation:
    """BLEU with and without some heads on one set of sentences; delta < 0 means the heads helped."""
    heads: list
    bleu: float
    base_bleu: float
    hypotheses: list
    base_hypotheses: list

    @property
    def delta(self) -> float:
        return self.bleu - self.base_bleu


def ablation_bleu(tm, sources, references, heads, beam: int = 1, base_hypotheses=None) -> Ablation:
    """Translate `sources` normally (unless base_hypotheses are given) and without `heads`; score both."""
    base = list(base_hypotheses) if base_hypotheses is not None else translate_without(tm, sources, (), beam)
    hyps = translate_without(tm, sources, heads, beam)
    return Ablation(list(heads), bleu(hyps, references), bleu(base, references), hyps, base)


def sweep_layer(tm, sources, references, kind: str, layer: int, beam: int = 1, progress=None) -> pd.DataFrame:
    """Switch off each head of one layer in turn: one row per head with bleu, base_bleu and delta.

    progress(done, total, message), if given, is called before each translation pass (h + 1 passes),
    and once more at the end with done == total.
    """
    h = tm.cfg.h
    report = progress or (lambda done, total, message: None)
    report(0, h + 1, "translating with every head on")
    base = translate_without(tm, sources, (), beam)
    base_bleu, rows = bleu(base, references), []
    for head in range(h):
        report(head + 1, h + 1, f"translating without head {head + 1} of {h}")
        score = bleu(translate_without(tm, sources, [(kind, layer, head)], beam), references)
        rows.append({"attention": kind, "layer": layer, "head": head, "bleu": score,
                     "base_bleu": base_bleu, "delta": score - base_bleu})
    report(h + 1, h + 1, "done")
    return pd.DataFrame(rows)


def dev_slice(tm, n: int = 40, name: str | None = None, root=None):
    """Up to n (source, reference) pairs for measuring BLEU, and a sentence saying where they come from.

    The checkpoint's data folder (card["data"]["folder"], else data/<name>) valid split when present;
    otherwise the built-in probe sentences with our own German translations.
    """
    root = Path(root) if root else REPO
    folders = [tm.card.data_folder(root)] + ([root / "data" / name] if name else [])
    for folder in filter(None, folders):
        try:
            src, tgt = read_parallel(folder, "valid")
        except (FileNotFoundError, ValueError, OSError):
            continue
        pairs = [(s, t) for s, t in zip(src, tgt) if s.strip() and t.strip()][:n]
        if pairs:
            return [s for s, _ in pairs], [t for _, t in pairs], \
                f"the first {len(pairs)} sentences of the validation split in {folder}"
    probes = load_neutral()[:n]
    return [p["en"] for p in probes], [p["de"] for p in probes], \
        (f"{len(probes)} built-in news and parliament sentences with our own German translations "
         "(no validation data was found for this checkpoint)")
