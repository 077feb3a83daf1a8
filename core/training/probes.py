"""Attention snapshots during training: the maps of fixed dev sentences every few steps, to watch heads form."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from core import TranslationModel
from core.checkpoint import write_json
from core.data import read_parallel
from core.studies import emergence


PROBE_LINES = [8, 1053, 1]   # newstest2013 lines (1-based): the paper's Figure 3 and Figures 4-5 sentences, a short one

class Probes:
    """Attention maps of fixed dev sentences, saved as fp16 .npz every few steps (to watch heads form)."""

    def __init__(self, args, tokenizer, model):
        src, tgt = read_parallel(args.data, "valid")
        lines = [n for n in PROBE_LINES if n <= len(src)] or [1]
        self.sentences = [(n, src[n - 1], tgt[n - 1]) for n in lines]
        # the paper's Figure 3-5 sentences when the dev lines lack them (translated greedily: no reference)
        self.sentences += emergence.paper_probes(s for _, s, _ in self.sentences)
        self.folder = Path(args.out) / "snapshots"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.tokenizer, self.model = tokenizer, model

    def snapshot(self, step: int) -> None:
        tm = TranslationModel(self.model, self.tokenizer)     # puts the model in eval mode
        arrays, meta = {}, []
        for i, (line, src, tgt) in enumerate(self.sentences):
            r = tm.attend(src, tgt=tgt)
            for kind in ("enc_self", "dec_self", "cross"):
                arrays[f"{i}_{kind}"] = getattr(r, kind).astype(np.float16)
            meta.append({"line": line, "src": r.src, "tgt": r.tgt, "src_tokens": r.src_tokens,
                         "tgt_tokens": r.tgt_tokens, "out_tokens": r.out_tokens})
        pronoun_arrays, pronouns = emergence.record_pronouns(tm)   # the pronoun rows of core/probes/anaphora_en
        arrays.update(pronoun_arrays)
        tmp = self.folder / f".step_{step:07d}.npz.tmp"
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)
        tmp.replace(self.folder / f"step_{step:07d}.npz")
        write_json(self.folder / "probes.json", {"split": "valid", "sentences": meta, "pronouns": pronouns})
        self.model.train()
