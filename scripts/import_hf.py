#!/usr/bin/env python
r"""Open a Hugging Face translation model as an Attention Explorer checkpoint, by its Hub id or a downloaded folder:
Marian (OPUS-MT), NLLB-200, M2M100, mBART-50, FSMT (fairseq's WMT19 models) or T5, mT5, Flan-T5. The architecture
is read from config.json.

    python scripts/import_hf.py Helsinki-NLP/opus-mt-en-de
    python scripts/import_hf.py facebook/nllb-200-distilled-600M --src-lang eng_Latn --tgt-lang deu_Latn
    python scripts/import_hf.py facebook/mbart-large-50-many-to-many-mmt --src-lang en_XX --tgt-lang de_DE
    python scripts/import_hf.py facebook/wmt19-en-de --revision main
    python scripts/import_hf.py google-t5/t5-small --tgt-lang fr          # its prompt: translate English to French
    python scripts/import_hf.py downloads/opus-mt-en-de checkpoints/opus-mt-en-de     # a folder, into a folder

A Hub id downloads only config, safetensors weights and tokenizer files (never a pickle: pytorch_model.bin, *.pt),
or, offline (HF_HUB_OFFLINE=1), takes them from the Hugging Face cache. Without OUT the checkpoint goes into the
explorer's cache ($ATTN_EXPLORER_CACHE, else the user cache folder), converted once; the app lists it. Many-to-many
models are converted for one direction (--src-lang, --tgt-lang), which the card records; so are T5 models, whose
task prompt ("translate English to German: ") names it. docs/importing.md.
"""
from __future__ import annotations

import sys

import torch

from core.checkpoint.pretrained import HFImportError, pretrained_checkpoint
from scripts import cli


def main(argv=None):
    p = cli.parser(__doc__)
    p.add_argument("source", help="a Hugging Face model id (owner/name) or a folder of its files")
    p.add_argument("out_dir", nargs="?", help="a new checkpoint folder, e.g. checkpoints/opus-mt-en-de "
                                              "(default: the explorer's cache)")
    p.add_argument("--revision", help="a branch, tag or commit of the Hub repo (default: main)")
    p.add_argument("--src-lang", help="NLLB / M2M100 / mBART-50 / T5: the source language, e.g. eng_Latn, en or "
                                      "en_XX (T5: en or English)")
    p.add_argument("--tgt-lang", help="NLLB / M2M100 / mBART-50 / T5: the target language, e.g. deu_Latn, de or "
                                      "de_DE (T5: de or German)")
    p.add_argument("--fp32", action="store_true", help="keep float32 weights (default: float16, half the size)")
    args = p.parse_args(argv)
    try:
        out = pretrained_checkpoint(args.source, args.revision, args.src_lang, args.tgt_lang, args.out_dir,
                                    torch.float32 if args.fp32 else torch.float16)
    except HFImportError as e:
        sys.exit(f"error: {e}")
    print(f"imported {args.source} -> {out}")


if __name__ == "__main__":
    main()
