"""The checkpoints the app can show: their folder and names (checkpoints/, then the models converted from Hugging
Face into the explorer's cache), the key of one version of one (CheckpointKey, the first argument of every cache in
app/cache.py), the domain of their training data, the untrained model the app falls back to when there is none,
and what the server lets visitors download from the Hub. No Streamlit here.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import langcodes
import torch

from app.demo import domain
from core import CheckpointError, Transformer, TranslationModel, load_checkpoint, preset
from core.checkpoint import read_card
from core.checkpoint.pretrained import Limits, converted_models
from core.model.families import DEFAULT, family_of
from core.paths import REPO

CHECKPOINTS = REPO / "checkpoints"      # default; the env var ATTN_EXPLORER_CHECKPOINTS overrides it (tests)
UNTRAINED = "(untrained model)"


class CheckpointKey(NamedTuple):
    """Which checkpoint, which version: a folder name of checkpoints/ (or UNTRAINED) and its weights' file and
    modification time, so that a checkpoint rewritten by training is loaded and scored afresh. Never id(model):
    Python gives a new model the id of one evicted from the model cache."""
    name: str
    version: str


def checkpoints_dir() -> Path:
    """The folder of checkpoints, read at every call so that tests can point it at a temporary folder."""
    return Path(os.environ.get("ATTN_EXPLORER_CHECKPOINTS") or CHECKPOINTS)


def checkpoint_names() -> list[str]:
    """Folders of checkpoints/ that look like checkpoints, then the models converted into the explorer's cache
    (core.checkpoint.pretrained; a name already in checkpoints/ is that one), then the untrained fallback."""
    names = sorted(p.name for p in checkpoints_dir().glob("*")        # dot-folders are half-written imports
                   if not p.name.startswith(".") and (p / "config.json").exists())
    return names + [p.name for p in converted_models() if p.name not in names] + [UNTRAINED]


def checkpoint_folder(name: str) -> Path:
    """The folder of the checkpoint `name`: in checkpoints/, else in the explorer's cache of converted models."""
    shipped = checkpoints_dir() / name
    if shipped.is_dir():
        return shipped
    return next((p for p in converted_models() if p.name == name), shipped)


def checkpoint_label(name: str) -> str:
    """How the picker shows a checkpoint: its name; a model converted from Hugging Face by its Hub id and its
    revision or direction ('Helsinki-NLP/opus-mt-en-de', 'facebook/m2m100_418M.en-de': the sidebar is narrow)."""
    if name == UNTRAINED or (checkpoints_dir() / name).is_dir() or "--" not in name:
        return name
    return name.replace("--", "/", 1)


def checkpoint_key(name: str) -> CheckpointKey:
    """The key of the checkpoint `name` as its files are now (one look at its weights' file)."""
    if name == UNTRAINED:
        return CheckpointKey(name, UNTRAINED)
    weights = checkpoint_folder(name) / "model.safetensors"
    try:
        return CheckpointKey(name, f"{weights}@{weights.stat().st_mtime_ns}")
    except OSError:
        return CheckpointKey(name, str(weights))


def untrained_model() -> TranslationModel:
    """A freshly initialised small model with a byte-level tokenizer, for when no checkpoint exists."""
    from app.fallback_tokenizer import fallback_tokenizer
    tok = fallback_tokenizer()
    cfg = preset("small", vocab_size=len(tok), dropout=0.0)
    # the same "untrained model" in every process, without touching the global RNG
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = Transformer(cfg)
    return TranslationModel(model, tok, {"name": UNTRAINED, "trained_here": False,
                                         "note": "freshly initialised: its attention is noise"})


def card_domain(name: str) -> str | None:
    """The domain ('captions', 'news') of a checkpoint's training data, read from its card.json alone."""
    if name == UNTRAINED:
        return None
    try:
        return domain(read_card(checkpoint_folder(name)))
    except (OSError, ValueError):
        return None


def preferred_checkpoint(names: list[str], prefer_domain: str | None) -> str:
    """The first checkpoint trained on `prefer_domain`, else the first one."""
    return next((n for n in names if prefer_domain and card_domain(n) == prefer_domain), names[0])


# ---- imported models: which pages apply, and whether a big one fits in memory ----

# page -> (the source language it needs, the target language it needs or None, why)
NEEDS = {
    "paper_figures": ("en", None, "the paper's Figures 3-5 are English sentences, read by the encoder"),
    "syntax": ("en", None, "the gold parses are of English sentences (Universal Dependencies)"),
    "pronouns": ("en", "de", "the pronoun test asks which German pronoun an English 'its' becomes"),
    "alignment": ("en", "de", "the human word alignments are of English-German sentence pairs"),
    "ablation_bleu": ("en", "de", "BLEU is measured against German translations of English sentences"),
}


def languages(card) -> tuple[str, str]:
    """(source, target) language of a checkpoint, as two-letter codes where known ('en', 'de'): an imported model's
    card records them; a model trained here translates English to German, as every one of this project does."""
    langs = card.extra.get("languages") if isinstance(card.extra.get("languages"), dict) else {}
    return tuple(language_code(langs.get(side) or default) for side, default in (("source", "en"), ("target", "de")))


def language_code(tag) -> str:
    """The shortest code of a language tag: NLLB's 'eng_Latn' and 'fra_Latn' -> 'en', 'fr' (langcodes knows ISO
    639-1, -2 and -3); a tag it cannot read is kept as written, lower-case."""
    code = str(tag).split("_")[0].lower()
    try:
        return langcodes.Language.get(code).language or code
    except (ValueError, LookupError):
        return code


def language_name(code: str) -> str:
    """'de' -> 'German' (langcodes' English name); the code itself for a language without one ('xx')."""
    try:
        language = langcodes.Language.get(code)
    except (ValueError, LookupError):
        return code
    return language.display_name() if language.is_valid() else code


def describe_languages(card) -> str:
    """'English → German' (codes for languages without a name: 'xx → en')."""
    return " → ".join(language_name(c) for c in languages(card))


# ---- language models: the paper's decoder alone (GPT-2, Llama) or its encoder alone (BERT) ----

DECODER_ONLY, ENCODER_ONLY = "decoder-only", "encoder-only"
FAMILY_WORDS = {DECODER_ONLY: "a language model (the paper's decoder alone)",
                ENCODER_ONLY: "a masked language model (the paper's encoder alone)"}
# page -> what a student reads it as, for the pages (and parts of pages) that need a translation model (a source
# and a target): "Alignment needs a translation model: ..."
TRANSLATION_ONLY = {
    "alignment": "Alignment needs", "pronouns": "Which pronoun? needs", "how_it_writes": "How it writes needs",
    "paper_figures": "The paper's figures need", "lesson": "The lesson needs",
    "syntax": "The syntax scores need",
    "ablation_bleu": "The BLEU change needs", "compare": "Comparing checkpoints needs",
    "contributions": "Beyond attention needs", "ablation": "Switching heads off needs",
    "snapshots": "Scoring the attention snapshots needs",
}
# pages of TRANSLATION_ONLY that a decoder-only model works on too (it writes): an encoder-only one is told so
WRITERS = {"how_it_writes"}
WRITER_WORDS = "a model that writes (a translation model or a decoder-only language model like GPT-2)"


def model_family(model) -> str:
    """"encoder-decoder" (the paper's translation models), "decoder-only" or "encoder-only" (core/model/families.py)."""
    return family_of(model.cfg)


def is_language_model(model) -> bool:
    """Whether a loaded model is a decoder-only or encoder-only one (no translation: one text, self-attention)."""
    return model_family(model) != DEFAULT


def family_problem(page: str, name: str, family: str) -> str | None:
    """One line on why a page needs a translation model when `family` is not one, or None."""
    if family == DEFAULT or page not in TRANSLATION_ONLY or (page in WRITERS and family == DECODER_ONLY):
        return None
    if page in WRITERS:
        return (f"{TRANSLATION_ONLY[page]} {WRITER_WORDS}: {checkpoint_label(name)} is "
                f"{FAMILY_WORDS.get(family, family)}, which fills blanks but does not write. Pick such a checkpoint "
                "in the sidebar.")
    return (f"{TRANSLATION_ONLY[page]} a translation model: {checkpoint_label(name)} is "
            f"{FAMILY_WORDS.get(family, family)}. Pick a translation checkpoint in the sidebar.")


def translation_checkpoints(names: list[str]) -> list[str]:
    """The checkpoints among `names` that are translation models, by their config.json alone (no model loaded)."""
    import json
    out = []
    for name in names:
        if name == UNTRAINED:
            out.append(name)
            continue
        try:
            config = json.loads((checkpoint_folder(name) / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(config, dict) and config.get("family", DEFAULT) == DEFAULT:
            out.append(name)
    return out


def page_problem(page: str, card, family: str = DEFAULT) -> str | None:
    """Why a page does not apply to a checkpoint (a language model where it needs a translation model, or its
    languages), or None when it does. The one place that decides: pages call it with their name (a key of NEEDS or
    TRANSLATION_ONLY; any other page applies to every model) and, for a model that may be a language model, its
    family (model_family)."""
    if family != DEFAULT:
        return family_problem(page, card.name if card is not None else "This model", family)
    if page not in NEEDS:
        return None
    src, tgt, why = NEEDS[page]
    have = languages(card)
    if have[0] == src and tgt in (None, have[1]):
        return None
    need = language_name(src) + (f" → {language_name(tgt)}" if tgt else " on the source side")
    return (f"This page needs a model that translates {need}: {why}. This one translates "
            f"{describe_languages(card)}; pick another checkpoint in the sidebar.")


def memory_needed(folder) -> int:
    """Bytes a checkpoint takes once loaded: its parameters in float32 (as core loads them), from the safetensors
    header alone, plus a quarter for what loading holds at the same time."""
    from safetensors import safe_open
    with safe_open(str(Path(folder) / "model.safetensors"), "pt") as f:
        n = sum(_numel(f.get_slice(k).get_shape()) for k in f.keys())
    return int(n * 4 * 1.25)


def _numel(shape) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out


def memory_available() -> int | None:
    """Bytes of memory this machine can still give (Linux' MemAvailable), or None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def memory_problem(folder) -> str | None:
    """A student's explanation when a checkpoint would not fit in the memory left, or None when it fits (or when
    that cannot be told). Checked before loading, so that a big model gets this message instead of a crash."""
    try:
        need = memory_needed(folder)
    except Exception:            # no or damaged weights: the loader says what is wrong with them
        return None
    have = memory_available()
    if have is None or need <= have:
        return None
    return (f"This model needs about {need / 2**30:.1f} GB of memory once loaded, and this machine has "
            f"{have / 2**30:.1f} GB free: it does not fit. Close other programs or pick a smaller model "
            "(docs/importing.md lists the sizes).")


def _megabytes(n: int) -> str:
    """A byte count in MB for a progress text, to two digits at least (a tiny model is not "0 of 0 MB")."""
    mb = n / 2**20
    return f"{mb:,.{2 if mb < 1 else 1 if mb < 10 else 0}f}"


def load_with_progress(folder, progress=None) -> TranslationModel:
    """load_checkpoint(folder), refused first with memory_problem's message (a CheckpointError) when it would not
    fit. progress: None, or a function of (fraction done, text), told while the weights are read from disk (the long
    part of a big model's loading: the loader then finds them in the system's file cache) and while it is built."""
    problem = memory_problem(folder)
    if problem:
        raise CheckpointError(problem)
    weights = Path(folder) / "model.safetensors"
    if progress is not None and weights.exists():
        size, done = weights.stat().st_size, 0
        with open(weights, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 24), b""):
                done += len(chunk)
                text = f"Reading the weights: {_megabytes(done)} of {_megabytes(size)} MB…"
                progress(0.8 * (done / max(size, 1)), text)
        progress(0.8, "Building the model…")
    model = load_checkpoint(folder)
    if progress is not None:
        progress(1.0, "Loaded.")
    return model


# ---- what visitors may download from the Hugging Face Hub (the person who starts the server decides) ----

HUB_SETTING = "ATTN_EXPLORER_HUB"            # "on" (default), "off", or a comma-separated list of model ids
HUB_MAX_GB_SETTING = "ATTN_EXPLORER_HUB_MAX_GB"
HUB_MAX_GB = 4.0                             # default cap on one download: NLLB-200 600M (2.5 GB) fits


def hub_allowed() -> set[str] | bool:
    """What ATTN_EXPLORER_HUB lets the app download: True (any model), False (none) or a set of model ids."""
    value = os.environ.get(HUB_SETTING, "on").strip()
    if value.lower() in ("", "on", "1", "yes", "true"):
        return True
    if value.lower() in ("off", "0", "no", "false"):
        return False
    return {v.strip() for v in value.split(",") if v.strip()}


def hub_limits() -> Limits:
    """The cap on one download from the app: ATTN_EXPLORER_HUB_MAX_GB gigabytes (default HUB_MAX_GB)."""
    try:
        gb = float(os.environ.get(HUB_MAX_GB_SETTING) or HUB_MAX_GB)
    except ValueError:
        gb = HUB_MAX_GB
    return Limits(max_bytes=int(gb * 1e9))


def hub_refusal(model_id: str) -> str | None:
    """Why this server does not let the app open `model_id` from the Hub, or None when it does."""
    allowed = hub_allowed()
    if allowed is False:
        return ("Opening models from Hugging Face is turned off on this server (ATTN_EXPLORER_HUB=off). "
                "Pick one of the checkpoints above.")
    if allowed is not True and model_id not in allowed:
        return (f"This server opens only these Hugging Face models: {', '.join(sorted(allowed))} "
                "(ATTN_EXPLORER_HUB).")
    return None
