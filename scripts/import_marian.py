#!/usr/bin/env python
"""Import an OPUS-MT (Marian) model in the Hugging Face format as an Attention Explorer checkpoint.

    hf download Helsinki-NLP/opus-mt-en-de config.json generation_config.json model.safetensors \
        source.spm target.spm vocab.json tokenizer_config.json --local-dir downloads/opus-mt-en-de
    python scripts/import_marian.py downloads/opus-mt-en-de checkpoints/opus-mt-en-de

Reads config.json, model.safetensors, source.spm, target.spm and vocab.json. Never a pickle
(pytorch_model.bin, *.pt, *.pkl, *.ckpt): loading one can run any code hidden inside it.
Marian is the paper's post-norm Transformer with a few differences, each a TransformerConfig option:
swish FFN, sines-then-cosines positions, a bias on the logits, <pad> as decoder start, </s> = id 0.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load as st_load

from core import (CheckpointError, Tokenizer, Transformer, TransformerConfig,
                  load_checkpoint, save_checkpoint)
from core.checkpoint import Card
from core.model.layers import sinusoidal_table
from core.paths import portable

PICKLES = ("pytorch_model*.bin", "*.pt", "*.pth", "*.pkl", "*.pickle", "*.ckpt")
NEEDED = ("config.json", "source.spm", "target.spm", "vocab.json")
SAFE_CONVERT = (
    "Get the safetensors version instead: hf download <model> model.safetensors --local-dir <folder> "
    "(most models on the Hub have one; otherwise look for a 'refs/pr/..' revision that adds it). "
    "Or convert it yourself, in Python, with the restricted loader of torch >= 2.6 that refuses code: "
    "sd = torch.load('pytorch_model.bin', weights_only=True); "
    "safetensors.torch.save_file({k: v.clone().contiguous() for k, v in sd.items()}, 'model.safetensors')")

# Our parameter name (per layer) <- Marian's. Marian's layers are post-norm, like the paper's.
ENC_LAYER = {"self_attn.w_q": "self_attn.q_proj", "self_attn.w_k": "self_attn.k_proj",
             "self_attn.w_v": "self_attn.v_proj", "self_attn.w_o": "self_attn.out_proj",
             "res_attn.norm": "self_attn_layer_norm", "ffn.w_1": "fc1", "ffn.w_2": "fc2",
             "res_ffn.norm": "final_layer_norm"}
DEC_LAYER = {"self_attn.w_q": "self_attn.q_proj", "self_attn.w_k": "self_attn.k_proj",
             "self_attn.w_v": "self_attn.v_proj", "self_attn.w_o": "self_attn.out_proj",
             "res_self.norm": "self_attn_layer_norm",
             "cross_attn.w_q": "encoder_attn.q_proj", "cross_attn.w_k": "encoder_attn.k_proj",
             "cross_attn.w_v": "encoder_attn.v_proj", "cross_attn.w_o": "encoder_attn.out_proj",
             "res_cross.norm": "encoder_attn_layer_norm", "ffn.w_1": "fc1", "ffn.w_2": "fc2",
             "res_ffn.norm": "final_layer_norm"}
# Flags of the BART-era Marian configs: the value OPUS-MT models have, and why another one is refused.
FLAGS = {
    "normalize_before": (False, "it asks for pre-norm layers, but Marian models in this format are post-norm "
                                "(transformers' MarianMTModel ignores the flag and Marian's converter only "
                                "accepts post-norm models), so the config and the weights disagree"),
    "add_final_layer_norm": (False, "a LayerNorm after each stack is not part of Marian models in this format"),
    "normalize_embedding": (False, "a LayerNorm on the embeddings is not supported"),
    "static_position_embeddings": (True, "learned position embeddings are not supported: Marian uses fixed sinusoids"),
}   # add_bias_logits is not here: either value means final_logits_bias, which every Marian model has


class MarianImportError(Exception):
    """The folder is not a Marian model this importer can convert; the message says why and what to do."""


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise MarianImportError(f"{path} is not valid JSON ({e}): the download may be damaged.") from None


def check_folder(hf_dir: Path) -> None:
    """Refuse a missing folder, pickled weights without safetensors, or missing files, with the fix."""
    if not hf_dir.is_dir():
        raise MarianImportError(f"There is no folder at '{hf_dir}'. Download the model first, e.g. "
                                f"hf download Helsinki-NLP/opus-mt-en-de --local-dir {hf_dir}")
    if not (hf_dir / "model.safetensors").exists():
        pickles = sorted({p.name for pat in PICKLES for p in hf_dir.glob(pat)})
        if pickles:
            raise MarianImportError(
                f"{hf_dir} has its weights only as {', '.join(pickles)}: a Python pickle, which can run any code "
                f"hidden inside it when loaded, so this importer does not open it. {SAFE_CONVERT}")
        if list(hf_dir.glob("model-*.safetensors")):
            raise MarianImportError(f"{hf_dir} has its weights split into several model-*.safetensors files; "
                                    "this importer reads one model.safetensors (Marian models are small enough).")
        raise MarianImportError(f"{hf_dir} has no model.safetensors (the weights).")
    missing = [n for n in NEEDED if not (hf_dir / n).exists()]
    if missing:
        raise MarianImportError(f"{hf_dir} lacks {', '.join(missing)}: a Marian model folder has config.json, "
                                "model.safetensors, source.spm, target.spm and vocab.json.")


REQUIRED = ("vocab_size", "d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
            "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "max_position_embeddings", "pad_token_id")


def marian_config(hf: dict, generation: dict, vocab: dict) -> TransformerConfig:
    """Hugging Face's MarianConfig (as a dict) -> our TransformerConfig, or MarianImportError if unsupported."""
    if hf.get("model_type") != "marian":
        raise MarianImportError(f"config.json describes a '{hf.get('model_type')}' model, not a Marian one "
                                "(model_type 'marian', e.g. Helsinki-NLP/opus-mt-*).")
    missing = [k for k in REQUIRED if hf.get(k) is None]
    if missing:
        raise MarianImportError(f"config.json lacks {', '.join(missing)}: it does not describe a whole model.")
    problems = [f"{k}={hf[k]}: {why}" for k, (ok, why) in FLAGS.items() if k in hf and hf[k] != ok]
    if (hf["encoder_attention_heads"], hf["encoder_ffn_dim"]) != (hf["decoder_attention_heads"], hf["decoder_ffn_dim"]):
        problems.append("the encoder and decoder differ in heads or FFN size; our model has one of each")
    V = hf["vocab_size"]
    if hf.get("decoder_vocab_size") not in (None, V):
        problems.append(f"separate source and target vocabularies ({V} and {hf['decoder_vocab_size']} pieces) "
                        "are not supported")
    activation = hf.get("activation_function", "gelu")          # MarianConfig's default; OPUS-MT uses swish
    if activation not in ("swish", "silu", "relu"):
        problems.append(f"activation_function={activation!r}: only swish and relu are supported")
    eos = hf.get("eos_token_id", 0)
    if isinstance(eos, list):
        if len(eos) != 1:
            problems.append(f"eos_token_id={eos}: several end-of-sentence tokens are not supported")
        eos = eos[0] if eos else 0
    if problems:
        raise MarianImportError("This Marian model uses options the explorer's Transformer does not have:\n  - "
                                + "\n  - ".join(problems))
    pad = hf["pad_token_id"]
    bad_words = generation.get("bad_words_ids", hf.get("bad_words_ids", [[pad]]))   # OPUS-MT: [[pad]]
    try:
        return TransformerConfig(
            vocab_size=V, N=hf["encoder_layers"], N_dec=hf["decoder_layers"], d_model=hf["d_model"],
            d_ff=hf["encoder_ffn_dim"], h=hf["encoder_attention_heads"], dropout=hf.get("dropout", 0.1),
            max_len=hf["max_position_embeddings"], positions="sinusoidal", pe_layout="concat", norm="post",
            activation="relu" if activation == "relu" else "swish",
            layer_norm_eps=1e-5,                                  # nn.LayerNorm's default, which Marian uses
            share_embeddings=bool(hf.get("share_encoder_decoder_embeddings", True)
                                  and hf.get("tie_word_embeddings", True)),
            scale_embeddings=bool(hf.get("scale_embedding", False)), final_logits_bias=True,
            forbid_pad_output=[pad] in (bad_words or []), pad_id=pad, unk_id=vocab.get("<unk>", 1),
            bos_id=hf.get("decoder_start_token_id", pad), eos_id=eos)
    except (TypeError, ValueError) as e:
        raise MarianImportError(f"config.json does not describe a model the explorer can build: {e}") from None


def _pick(state: dict, names, what: str):
    """The first of `names` present in the weights (tied tensors are stored under one of several names)."""
    for n in names:
        if n in state:
            return n
    raise MarianImportError(f"model.safetensors has no {what} (looked for {', '.join(names)}).")


def convert_weights(state: dict, cfg: TransformerConfig) -> dict:
    """Marian's state dict -> ours. Every Marian tensor must be used, so nothing is silently dropped."""
    used, out = set(), {}

    def take(ours, theirs):
        out[ours] = state[theirs]
        used.add(theirs)

    src = _pick(state, ["model.shared.weight", "model.encoder.embed_tokens.weight"], "source embedding")
    take("src_embed.weight", src)
    tgt = _pick(state, ["model.decoder.embed_tokens.weight", "model.shared.weight"], "target embedding")
    lm = _pick(state, ["lm_head.weight", tgt], "output projection")
    ties = [("model.encoder.embed_tokens.weight", src), ("model.decoder.embed_tokens.weight", tgt)]
    if cfg.share_embeddings:
        ties += [(tgt, src), (lm, src)]
    for alias, key in ties:    # tied copies, where stored, must really be the same matrix
        if alias in state and alias != key:
            if not torch.equal(state[alias], state[key]):
                raise MarianImportError(f"{alias} and {key} should be one tied matrix (config.json), but they differ.")
            used.add(alias)
    if not cfg.share_embeddings:
        take("tgt_embed.weight", tgt)
        take("generator.weight", lm)
    logits_bias = state.get("final_logits_bias", torch.zeros(1, cfg.vocab_size))
    out["logits_bias"] = logits_bias.reshape(-1)
    used.add("final_logits_bias")
    for stack, n, table in [("encoder", cfg.N, ENC_LAYER), ("decoder", cfg.N_dec, DEC_LAYER)]:
        for i in range(n):
            for ours, theirs in table.items():
                for p in ("weight", "bias"):
                    key = f"model.{stack}.layers.{i}.{theirs}.{p}"
                    if key not in state:
                        raise MarianImportError(f"model.safetensors lacks {key}: it does not match config.json.")
                    take(f"{stack}.{i}.{ours}.{p}", key)
        pos = f"model.{stack}.embed_positions.weight"    # older exports store the fixed table: check it is ours
        if pos in state:
            ours = sinusoidal_table(cfg.max_len, cfg.d_model, "concat")
            if state[pos].shape != ours.shape or not torch.allclose(state[pos].float(), ours, atol=2e-3):
                raise MarianImportError(f"{pos} is not Marian's fixed sinusoid table (learned positions?): "
                                        "not supported.")
            used.add(pos)
    unused = sorted(set(state) - used)
    if unused:
        raise MarianImportError(f"model.safetensors has weights this importer does not understand: {unused[:5]}"
                                f"{' …' if len(unused) > 5 else ''}. This Marian variant is not supported.")
    return out


def guess_source(hf_dir: Path, hf: dict) -> str:
    """'Helsinki-NLP/opus-mt-en-de' from a Hub cache path, config.json or the folder name."""
    for part in hf_dir.resolve().parts:
        if part.startswith("models--"):
            return part[len("models--"):].replace("--", "/")
    name_or_path = str(hf.get("_name_or_path", ""))
    if "Helsinki-NLP/" in name_or_path:
        return "Helsinki-NLP/" + name_or_path.split("Helsinki-NLP/")[-1].strip("/")
    name = hf_dir.resolve().name
    return f"Helsinki-NLP/{name}" if name.startswith("opus-mt-") else name


def load_tokenizer(hf_dir: Path, cfg: TransformerConfig, vocab: dict) -> Tokenizer:
    """source.spm + target.spm + vocab.json -> our Tokenizer, checked against the config's ids."""
    tok_cfg = _read_json(hf_dir / "tokenizer_config.json") if (hf_dir / "tokenizer_config.json").exists() else {}
    if tok_cfg.get("separate_vocabs") or (hf_dir / "target_vocab.json").exists():
        raise MarianImportError("This model has separate source and target vocabularies: not supported.")
    ids = sorted(vocab.values()) if all(isinstance(i, int) for i in vocab.values()) else None
    if ids != list(range(cfg.vocab_size)):
        raise MarianImportError(f"vocab.json should number its {cfg.vocab_size} pieces 0..{cfg.vocab_size - 1} "
                                f"(config.json's vocab_size), but it has {len(vocab)} entries with other ids.")
    for piece, want in [("<pad>", cfg.pad_id), ("</s>", cfg.eos_id)]:
        if vocab.get(piece) != want:
            raise MarianImportError(f"vocab.json gives {piece} the id {vocab.get(piece)}, config.json {want}.")
    try:
        return Tokenizer((hf_dir / "source.spm").read_bytes(), (hf_dir / "target.spm").read_bytes(), vocab)
    except (RuntimeError, OSError) as e:
        raise MarianImportError(f"source.spm or target.spm is not a SentencePiece model ({e}).") from None


def import_marian(hf_dir, out_dir, dtype: torch.dtype = torch.float16, source: str | None = None) -> Path:
    """Convert the Marian model in `hf_dir` into our checkpoint folder `out_dir`; returns out_dir.

    The checkpoint is written to a temporary folder next to out_dir and renamed into place, so the
    app never sees half an import.
    """
    hf_dir, out_dir = Path(hf_dir), Path(out_dir)
    check_folder(hf_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise MarianImportError(f"'{out_dir}' already exists: choose a new folder or delete it first.")
    hf = _read_json(hf_dir / "config.json")
    generation = _read_json(hf_dir / "generation_config.json") if (hf_dir / "generation_config.json").exists() else {}
    vocab = _read_json(hf_dir / "vocab.json")
    cfg = marian_config(hf, generation, vocab)
    tokenizer = load_tokenizer(hf_dir, cfg, vocab)
    raw = (hf_dir / "model.safetensors").read_bytes()
    try:
        state = st_load(raw)
    except Exception as e:   # safetensors raises its own error type for truncated files
        raise MarianImportError(f"{hf_dir}/model.safetensors could not be read: truncated or damaged ({e}).") from None
    model = Transformer(cfg)
    model.load_state_dict({k: v.float() for k, v in convert_weights(state, cfg).items()}, strict=False)
    source = source or guess_source(hf_dir, hf)
    card = Card(name=out_dir.name, trained_here=False,
                source=f"{source} (Marian), imported by scripts/import_marian.py",
                extra={"imported_from": {"folder": portable(hf_dir),
                                         "model.safetensors sha256": hashlib.sha256(raw).hexdigest()},
                       "weights_dtype": str(dtype).replace("torch.", ""),
                       "original_config": hf, "original_generation_config": generation or None})
    if source.startswith("Helsinki-NLP/"):
        card.credit = ("OPUS-MT by the Language Technology Research Group at the University of Helsinki "
                       "(Tiedemann & Thottingal 2020), CC-BY 4.0")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".tmp"))
    try:
        save_checkpoint(tmp, model, tokenizer, card, dtype=dtype)
        load_checkpoint(tmp)          # the one loader must accept what we wrote
        if out_dir.exists():
            out_dir.rmdir()           # empty (checked above)
        os.replace(tmp, out_dir)
    except CheckpointError as e:
        raise MarianImportError(f"the converted checkpoint does not load: {e}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return out_dir


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("hf_dir", help="folder with a Hugging Face Marian model (config.json, model.safetensors, ...)")
    p.add_argument("out_dir", help="new checkpoint folder, e.g. checkpoints/opus-mt-en-de")
    p.add_argument("--fp32", action="store_true", help="keep float32 weights (default: float16, half the size)")
    p.add_argument("--source", help="where the model came from, for the card (default: guessed, "
                                    "e.g. Helsinki-NLP/opus-mt-en-de)")
    args = p.parse_args(argv)
    try:
        out = import_marian(args.hf_dir, args.out_dir, torch.float32 if args.fp32 else torch.float16, args.source)
    except MarianImportError as e:
        sys.exit(f"error: {e}")
    print(f"imported {args.hf_dir} -> {out}")


if __name__ == "__main__":
    main()
