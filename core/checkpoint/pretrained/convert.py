"""A downloaded Hugging Face model's folder -> our checkpoint folder: the architecture read from config.json's
model_type, then its converter (marian.py, m2m100.py, mbart.py, fsmt.py, t5.py; decoder-only: gpt2.py, llama.py,
neox.py)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from . import bert, fsmt, gpt2, llama, m2m100, marian, mbart, neox, t5
from .common import HFImportError, convert_with, read_json
from .lm_common import unbuilt

ARCHITECTURES = {"marian": marian.ARCH, "m2m_100": m2m100.ARCH, "mbart": mbart.ARCH, "fsmt": fsmt.ARCH,
                 "t5": t5.ARCH, "mt5": t5.ARCH}
ARCHITECTURES["bert"] = bert.ARCH                # encoder-only: core/model/encoder_only.py
ARCHITECTURES["roberta"] = bert.ARCH
ARCHITECTURES["distilbert"] = bert.ARCH
ARCHITECTURES.update({"gpt2": gpt2.ARCH, "llama": llama.ARCH, "qwen2": llama.ARCH,   # decoder-only:
                      "gpt_neox": neox.ARCH})                                         # core/model/decoder_only.py


def supported() -> str:
    """'Marian, M2M100 / NLLB, mBART-50, FSMT, T5 / mT5 / Flan-T5': the architectures, for messages."""
    return ", ".join(dict.fromkeys(a.name for a in ARCHITECTURES.values()))


def architecture_of(hf: dict):
    """The Architecture of a config.json (as a dict), or HFImportError naming the ones supported, or what the
    config asks that is not built (mixture of experts, sliding windows, soft caps: named, whatever the model_type)."""
    model_type = hf.get("model_type")
    if model_type not in ARCHITECTURES:
        problems = unbuilt(hf)
        if problems:
            raise HFImportError(f"config.json describes a '{model_type}' model, with what the explorer does not "
                                "build:\n  - " + "\n  - ".join(problems))
        raise HFImportError(f"config.json describes a '{model_type}' model; the explorer reads {supported()} "
                            f"models (model_type {', '.join(repr(k) for k in ARCHITECTURES)}).")
    arch = ARCHITECTURES[model_type]
    if arch.refuse is not None:
        arch.refuse(hf)
    return arch


def architecture(hf_dir: Path):
    """The Architecture of the download in hf_dir, from its config.json's model_type."""
    if not (hf_dir / "config.json").exists():
        if not hf_dir.is_dir():
            raise HFImportError(f"There is no folder at '{hf_dir}'. Give a Hugging Face model id instead (e.g. "
                                "Helsinki-NLP/opus-mt-en-de), or download the model first, e.g. hf download "
                                f"Helsinki-NLP/opus-mt-en-de --local-dir {hf_dir} (docs/importing.md)")
        raise HFImportError(f"{hf_dir} has no config.json: it says which architecture the model has.")
    return architecture_of(read_json(hf_dir / "config.json"))


def convert_folder(hf_dir, out_dir, dtype: torch.dtype = torch.float16, source: str | None = None,
                   src_lang: str | None = None, tgt_lang: str | None = None, progress: Callable | None = None,
                   extra: dict | None = None) -> Path:
    """Convert the model in `hf_dir` (any architecture of ARCHITECTURES) into our checkpoint `out_dir`."""
    hf_dir = Path(hf_dir)
    return convert_with(architecture(hf_dir), hf_dir, Path(out_dir), dtype, source, src_lang, tgt_lang, progress,
                        extra)
