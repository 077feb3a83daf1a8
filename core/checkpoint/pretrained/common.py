"""What the converters of Hugging Face translation models share (marian.py, m2m100.py, mbart.py, fsmt.py): the folder
checks that refuse pickles, reading the weights, mapping their tensors onto ours so that none is silently dropped,
and writing the checkpoint so that the app never sees half of it.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file
from tqdm import tqdm

from core.checkpoint.card import Card
from core.checkpoint.folder import CheckpointError, load_checkpoint, save_checkpoint, unique_state_dict
from core.model.config import TransformerConfig
from core.model.families import build_model
from core.model.layers import sinusoidal_table
from core.paths import portable

PICKLES = ("pytorch_model*.bin", "*.pt", "*.pth", "*.pkl", "*.pickle", "*.ckpt")
SAFE_CONVERT = (
    "Get the safetensors version instead: hf download <model> model.safetensors --local-dir <folder> "
    "(most models on the Hub have one; otherwise look for a 'refs/pr/..' revision that adds it). "
    "Or convert it yourself, in Python, with the restricted loader of torch >= 2.6 that refuses code: "
    "sd = torch.load('pytorch_model.bin', weights_only=True); "
    "safetensors.torch.save_file({k: v.clone().contiguous() for k, v in sd.items()}, 'model.safetensors')")
IMPORTED = "converted from the Hugging Face format"      # the end of an imported model's card.source
# Per layer: our parameter -> theirs. Marian, M2M100/NLLB and FSMT all name a layer's tensors as BART does.
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


class HFImportError(Exception):
    """The model is not one the converters can read (or could not be fetched); the message says why and what to
    do."""


@dataclass
class Converted:
    """What an architecture module makes of a download: our config (of any family: core/model/families.py), our
    state dict, the tokenizer, a description of the source for the card ("facebook/wmt19-en-de (FSMT)"), the
    languages and whom to credit."""
    cfg: object
    state: dict
    tokenizer: object
    source: str
    languages: dict | None = None
    credit: str | None = None


@dataclass
class Architecture:
    """One kind of Hugging Face model: its name, the files it needs, an example to download, its converter
    convert(hf_dir, config, generation_config, source=, src_lang=, tgt_lang=) -> Converted, and optionally
    refuse(config): HFImportError for what config.json asks that is not built, checked before any weight is
    downloaded (hub.py) and before a folder is converted."""
    name: str
    needed: tuple
    example: str
    convert: Callable
    refuse: Callable | None = None


SIZES = ("d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads", "decoder_attention_heads",
         "encoder_ffn_dim", "decoder_ffn_dim", "max_position_embeddings", "pad_token_id")


def check_sizes(hf: dict, *vocab_keys: str) -> list[str]:
    """config.json's sizes: HFImportError when one is missing; the problems of sizes our model cannot have."""
    missing = [k for k in (*vocab_keys, *SIZES) if hf.get(k) is None]
    if missing:
        raise HFImportError(f"config.json lacks {', '.join(missing)}: it does not describe a whole model.")
    if (hf["encoder_attention_heads"], hf["encoder_ffn_dim"]) != (hf["decoder_attention_heads"], hf["decoder_ffn_dim"]):
        return ["the encoder and decoder differ in heads or FFN size; our model has one of each"]
    return []


def read_json(path: Path) -> dict:
    """A JSON file of the download, or HFImportError naming it."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise HFImportError(f"{path} is not valid JSON ({e}): the download may be damaged.") from None


def optional_json(path: Path) -> dict:
    """read_json of a file the download may lack ({} then)."""
    return read_json(path) if Path(path).exists() else {}


def check_folder(hf_dir: Path, needed=("config.json",), example: str = "Helsinki-NLP/opus-mt-en-de") -> None:
    """Refuse a missing folder, pickled weights without safetensors, or missing files, with the fix."""
    if not hf_dir.is_dir():
        raise HFImportError(f"There is no folder at '{hf_dir}'. Download the model first, e.g. "
                            f"hf download {example} --local-dir {hf_dir} (docs/importing.md lists the files)")
    if not (hf_dir / "model.safetensors").exists():
        pickles = sorted({p.name for pat in PICKLES for p in hf_dir.glob(pat)})
        if pickles:
            raise HFImportError(
                f"{hf_dir} has its weights only as {', '.join(pickles)}: a Python pickle, which can run any code "
                f"hidden inside it when loaded, so this importer does not open it. {SAFE_CONVERT}")
        if list(hf_dir.glob("model-*.safetensors")):
            raise HFImportError(f"{hf_dir} has its weights split into several model-*.safetensors files; "
                                "this importer reads one model.safetensors.")
        raise HFImportError(f"{hf_dir} has no model.safetensors (the weights).")
    missing = [n for n in needed if not (hf_dir / n).exists()]
    if missing:
        raise HFImportError(f"{hf_dir} lacks {', '.join(missing)}: this model's folder needs "
                            f"model.safetensors, {', '.join(needed)}.")


def check_out_dir(out_dir: Path) -> None:
    """Refuse to write over an existing checkpoint."""
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise HFImportError(f"'{out_dir}' already exists: choose a new folder or delete it first.")


def sha256(path: Path) -> str:
    """The file's SHA-256, read in chunks with a progress bar (a big model's weights are gigabytes)."""
    h, size = hashlib.sha256(), path.stat().st_size
    with open(path, "rb") as f, tqdm(total=size, unit="B", unit_scale=True, desc="checksum",
                                     disable=size < 200e6) as bar:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
            bar.update(len(chunk))
    return h.hexdigest()


def read_weights(hf_dir: Path) -> dict:
    """model.safetensors as a dict of tensors, or HFImportError for a damaged file."""
    try:
        return load_file(str(hf_dir / "model.safetensors"))
    except Exception as e:   # safetensors raises its own error type for truncated files
        raise HFImportError(f"{hf_dir}/model.safetensors could not be read: truncated or damaged ({e}).") from None


def read_sentencepiece(path: Path):
    """(the bytes, a SentencePieceProcessor) of a download's SentencePiece model, or HFImportError naming the file."""
    import sentencepiece as spm
    proto = Path(path).read_bytes()
    try:
        return proto, spm.SentencePieceProcessor(model_proto=proto)
    except (RuntimeError, OSError) as e:
        raise HFImportError(f"{Path(path).name} is not a SentencePiece model ({e}).") from None


def guess_source(hf_dir: Path, hf: dict) -> str:
    """'facebook/wmt19-en-de' from a Hub cache path or config.json's _name_or_path, else the folder's name."""
    for part in hf_dir.resolve().parts:
        if part.startswith("models--"):
            return part[len("models--"):].replace("--", "/")
    name_or_path = str(hf.get("_name_or_path", ""))
    if name_or_path.count("/") == 1 and not Path(name_or_path).exists():
        return name_or_path
    return hf_dir.resolve().name


def checked_eos(hf: dict, what: str, problems: list, activations=("relu",), default_activation: str = "relu",
                default_eos: int = 2) -> int:
    """config.json's activation and end-of-sentence id checked with the other `problems` found: HFImportError
    listing them all, else the eos id (config.json may give it as a list of one)."""
    activation = hf.get("activation_function", default_activation)
    if activation not in activations:
        names = " and ".join(a for a in activations if a != "silu")
        problems.append(f"activation_function={activation!r}: only {names} {'are' if ' ' in names else 'is'} "
                        "supported")
    eos = hf.get("eos_token_id", default_eos)
    if isinstance(eos, list):
        if len(eos) != 1:
            problems.append(f"eos_token_id={eos}: several end-of-sentence tokens are not supported")
        eos = eos[0] if eos else default_eos
    if problems:
        raise HFImportError(f"This {what} model uses options the explorer's Transformer does not have:\n  - "
                            + "\n  - ".join(problems))
    return eos


class Converter:
    """Their state dict -> ours, tensor by tensor. Every tensor of theirs must be used: nothing is silently dropped."""

    def __init__(self, state: dict):
        self.state, self.used, self.out = state, set(), {}

    def pick(self, names, what: str) -> str:
        """The first of `names` present (tied tensors are stored under one of several names)."""
        for n in names:
            if n in self.state:
                return n
        raise HFImportError(f"model.safetensors has no {what} (looked for {', '.join(names)}).")

    def take(self, ours: str, theirs: str) -> None:
        if theirs not in self.state:
            raise HFImportError(f"model.safetensors lacks {theirs}: it does not match config.json.")
        self.out[ours] = self.state[theirs]
        self.used.add(theirs)

    def tied(self, alias: str, key: str) -> None:
        """A tied copy stored under another name must really be the same matrix; it is then used."""
        if alias in self.state and alias != key:
            if not torch.equal(self.state[alias], self.state[key]):
                raise HFImportError(f"{alias} and {key} should be one tied matrix (config.json), but they differ.")
            self.used.add(alias)

    def layers(self, cfg: TransformerConfig, prefix: str = "model.") -> None:
        """Every encoder and decoder layer's tensors (ENC_LAYER, DEC_LAYER)."""
        for stack, n, table in [("encoder", cfg.N, ENC_LAYER), ("decoder", cfg.N_dec, DEC_LAYER)]:
            for i in range(n):
                for ours, theirs in table.items():
                    for p in ("weight", "bias"):
                        self.take(f"{stack}.{i}.{ours}.{p}", f"{prefix}{stack}.layers.{i}.{theirs}.{p}")

    def fixed_table(self, key: str, cfg: TransformerConfig, pad_row: int | None = None) -> None:
        """A stored sinusoid table, if there is one, must be the one our config computes (else: learned)."""
        if key not in self.state:
            return
        ours = sinusoidal_table(cfg.max_len + cfg.pos_offset, cfg.d_model, cfg.pe_layout)
        theirs = self.state[key].float()
        if pad_row is not None:                               # fairseq zeroes the padding row, never used
            ours[pad_row] = 0.0
        rows = min(len(ours), len(theirs))
        if theirs.shape[1] != ours.shape[1] or rows < cfg.max_len or not torch.allclose(theirs[:rows], ours[:rows],
                                                                                       atol=2e-3):
            raise HFImportError(f"{key} is not the fixed sinusoid table (learned positions?): not supported.")
        self.used.add(key)

    def done(self, what: str) -> dict:
        """Our state dict, or HFImportError naming the tensors nobody used."""
        unused = sorted(set(self.state) - self.used)
        if unused:
            raise HFImportError(f"model.safetensors has weights this importer does not understand: {unused[:5]}"
                                f"{' …' if len(unused) > 5 else ''}. This {what} variant is not supported.")
        return self.out


def build_config(config_class=TransformerConfig, /, **fields):
    """config_class(**fields) (the paper's TransformerConfig unless another family's is given), or HFImportError
    when config.json's values make no model."""
    try:
        return config_class(**fields)
    except (TypeError, ValueError) as e:
        raise HFImportError(f"config.json does not describe a model the explorer can build: {e}") from None


def make_card(out_dir: Path, hf_dir: Path, source: str, hf: dict, generation: dict, dtype: torch.dtype,
              languages: dict | None = None, credit: str | None = None) -> Card:
    """The card of an imported model: where it came from (and the checksum of its weights), its original configs,
    its languages ({"source": ..., "target": ...}: which pages apply, app.checkpoints.page_problem)."""
    extra = {"imported_from": {"folder": portable(hf_dir), "model.safetensors sha256": sha256(hf_dir /
                                                                                           "model.safetensors")},
             "weights_dtype": str(dtype).replace("torch.", ""),
             "original_config": hf, "original_generation_config": generation or None}
    if languages:
        extra["languages"] = languages
    return Card(name=out_dir.name, trained_here=False, source=f"{source}, {IMPORTED}",
                credit=credit, extra=extra)


def write_checkpoint(out_dir: Path, cfg, state: dict, tokenizer, card: Card,
                     dtype: torch.dtype, progress: Callable | None = None) -> Path:
    """Build our model of cfg's family from `state`, save it with its tokenizer and card in a temporary folder next
    to out_dir, check that the one loader accepts it, and rename it into place; returns out_dir. progress: None, or
    a function of (fraction done, text) told at each of the three steps."""
    tell = progress or (lambda fraction, text: None)
    with tqdm(total=3, desc="writing the checkpoint", disable=cfg.d_model * cfg.N < 4096) as bar:
        bar.set_postfix_str("building the model")
        tell(0.0, "Converting: building the model…")
        model = build_model(cfg, empty=True)         # every parameter is filled from `state` below
        expected = set(unique_state_dict(model))
        if set(state) != expected:          # a converter bug, never the user's: say exactly what differs
            raise HFImportError(f"converted weights do not fit the model: missing {sorted(expected - set(state))[:5]}"
                                f", unexpected {sorted(set(state) - expected)[:5]}")
        model.load_state_dict(state, strict=False)   # each copied into its float32 parameter: no 2nd whole copy
        bar.update()
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.", suffix=".tmp"))
        try:
            bar.set_postfix_str("saving")
            tell(1 / 3, "Converting: saving the checkpoint…")
            save_checkpoint(tmp, model, tokenizer, card, dtype=dtype)
            del model
            bar.update()
            bar.set_postfix_str("checking that it loads")
            tell(2 / 3, "Converting: checking that it loads…")
            load_checkpoint(tmp)          # the one loader must accept what we wrote
            bar.update()
            if out_dir.exists():
                out_dir.rmdir()           # empty (check_out_dir)
            os.replace(tmp, out_dir)
            tell(1.0, "Converted.")
        except CheckpointError as e:
            raise HFImportError(f"the converted checkpoint does not load: {e}") from None
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)
    return out_dir


def convert_with(arch: Architecture, hf_dir: Path, out_dir: Path, dtype: torch.dtype = torch.float16,
                 source: str | None = None, src_lang: str | None = None, tgt_lang: str | None = None,
                 progress: Callable | None = None, extra: dict | None = None) -> Path:
    """Convert the `arch` model in `hf_dir` into our checkpoint folder `out_dir` (written whole or not at all).
    extra: more for the card's imported_from (the Hub's repo, revision and commit)."""
    check_folder(hf_dir, arch.needed, arch.example)
    check_out_dir(out_dir)
    hf = read_json(hf_dir / "config.json")
    generation = optional_json(hf_dir / "generation_config.json")
    done = arch.convert(hf_dir, hf, generation, source=source, src_lang=src_lang, tgt_lang=tgt_lang)
    card = make_card(out_dir, hf_dir, done.source, hf, generation, dtype, done.languages, done.credit)
    card.extra["imported_from"].update(extra or {})
    return write_checkpoint(out_dir, done.cfg, done.state, done.tokenizer, card, dtype, progress)
