#!/usr/bin/env python
r"""Import a Hugging Face translation model as an Attention Explorer checkpoint: Marian (OPUS-MT), NLLB-200,
M2M100 or FSMT (fairseq's WMT19 models). The architecture is read from config.json.

    python scripts/import_hf.py downloads/opus-mt-en-de checkpoints/opus-mt-en-de
    python scripts/import_hf.py downloads/nllb-200-distilled-600M checkpoints/nllb-600m-en-de \
        --src-lang eng_Latn --tgt-lang deu_Latn
    python scripts/import_hf.py downloads/m2m100_418M checkpoints/m2m100-en-de --src-lang en --tgt-lang de
    python scripts/import_hf.py downloads/wmt19-en-de checkpoints/wmt19-en-de

docs/importing.md lists the files to download for each. Weights are read from model.safetensors only, never
from a pickle (pytorch_model.bin, *.pt, *.pkl, *.ckpt): loading one can run any code hidden inside it.
NLLB and M2M100 translate between many languages: the checkpoint is made for one direction (--src-lang,
--tgt-lang), which its card records. The checkpoint is written beside OUT and renamed into place at the end.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

from scripts import cli, import_fsmt, import_m2m100, import_marian
from scripts.import_common import HFImportError, import_with, read_json

ARCHITECTURES = {"marian": import_marian.ARCH, "m2m_100": import_m2m100.ARCH, "fsmt": import_fsmt.ARCH}


def architecture(hf_dir: Path):
    """The Architecture of the download in hf_dir, from its config.json's model_type."""
    if not (hf_dir / "config.json").exists():
        if not hf_dir.is_dir():
            raise HFImportError(f"There is no folder at '{hf_dir}'. Download the model first, e.g. "
                                f"hf download Helsinki-NLP/opus-mt-en-de --local-dir {hf_dir} "
                                "(docs/importing.md lists the files)")
        raise HFImportError(f"{hf_dir} has no config.json: it says which architecture the model has.")
    model_type = read_json(hf_dir / "config.json").get("model_type")
    if model_type not in ARCHITECTURES:
        raise HFImportError(f"config.json describes a '{model_type}' model; this importer reads "
                            f"{', '.join(a.name for a in ARCHITECTURES.values())} models "
                            f"(model_type {', '.join(repr(k) for k in ARCHITECTURES)}).")
    return ARCHITECTURES[model_type]


def import_model(hf_dir, out_dir, dtype: torch.dtype = torch.float16, source: str | None = None,
                 src_lang: str | None = None, tgt_lang: str | None = None) -> Path:
    """Convert the model in `hf_dir` (any architecture of ARCHITECTURES) into our checkpoint `out_dir`."""
    hf_dir = Path(hf_dir)
    return import_with(architecture(hf_dir), hf_dir, Path(out_dir), dtype, source, src_lang, tgt_lang)


def main(argv=None):
    p = cli.parser(__doc__)
    p.add_argument("hf_dir", help="folder of a Hugging Face model (config.json, model.safetensors, tokenizer files)")
    p.add_argument("out_dir", help="new checkpoint folder, e.g. checkpoints/nllb-600m-en-de")
    p.add_argument("--src-lang", help="NLLB / M2M100: the source language, e.g. eng_Latn (NLLB) or en (M2M100)")
    p.add_argument("--tgt-lang", help="NLLB / M2M100: the target language, e.g. deu_Latn (NLLB) or de (M2M100)")
    p.add_argument("--fp32", action="store_true", help="keep float32 weights (default: float16, half the size)")
    p.add_argument("--source", help="where the model came from, for the card (default: guessed, "
                                    "e.g. facebook/nllb-200-distilled-600M)")
    args = p.parse_args(argv)
    try:
        out = import_model(args.hf_dir, args.out_dir, torch.float32 if args.fp32 else torch.float16, args.source,
                           args.src_lang, args.tgt_lang)
    except HFImportError as e:
        sys.exit(f"error: {e}")
    print(f"imported {args.hf_dir} -> {out}")


if __name__ == "__main__":
    main()
