"""What the converters of decoder-only language models share (gpt2.py, llama.py, neox.py): what config.json may ask
that is not built (refused by name, before any weight is downloaded), the rotary settings in both of config.json's
spellings, the tokenizer.json, the special ids, the embeddings and stored buffers, and the Converted they make."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from core.model.decoder_only_config import DecoderOnlyConfig, ROPE_SCALINGS
from core.tokenizer_json import JsonTokenizer

from .common import Converted, Converter, HFImportError, guess_source, read_weights

NEEDED = ("config.json", "tokenizer.json")


def unbuilt(hf: dict) -> list[str]:
    """What any config.json asks for that no model here has: mixture of experts, sliding-window attention,
    attention logit soft caps. Their names, with the values that ask for them."""
    problems = []
    for key in ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"):
        if hf.get(key):
            problems.append(f"{key}={hf[key]}: a mixture of experts (several FFNs, a router choosing among them) is "
                            "not built")
    window = hf.get("sliding_window")
    uses_window = hf.get("use_sliding_window")
    if uses_window is None:                                          # Mistral says only sliding_window
        uses_window = window is not None
    if (window is not None and uses_window) or "sliding_attention" in (hf.get("layer_types") or []):
        problems.append(f"sliding_window={window}: sliding-window attention (each token sees only the last "
                        "tokens) is not built; the explorer's maps are over the whole text")
    for key in ("attn_logit_softcapping", "final_logit_softcapping"):
        if hf.get(key) is not None:
            problems.append(f"{key}={hf[key]}: soft caps on the logits (Gemma 2) are not built")
    return problems


def require_sizes(hf: dict, sizes: tuple, what: str) -> None:
    """HFImportError naming the sizes config.json lacks, if any: it then does not describe a whole `what`."""
    missing = [k for k in sizes if hf.get(k) is None]
    if missing:
        raise HFImportError(f"config.json lacks {', '.join(missing)}: it does not describe a whole {what}.")


def check_activation(hf: dict, key: str, default: str, activations: dict, problems: list) -> None:
    """config.json's activation (under `key`) goes into `problems` when it is not one of `activations`."""
    activation = hf.get(key, default)
    if activation not in activations:
        problems.append(f"{key}={activation!r}: only {', '.join(activations)} are built")


def refuse(hf: dict, name: str, problems: list[str]) -> None:
    """HFImportError listing every problem found, or nothing."""
    if problems:
        raise HFImportError(f"This {name} model uses what the explorer's decoder-only model does not have:\n  - "
                            + "\n  - ".join(problems))


def rope_settings(hf: dict, problems: list, default_theta: float = 10000.0) -> tuple[float, dict | None, float]:
    """(theta, scaling or None, the share of each head that rotates) from config.json: transformers 5 writes
    rope_parameters {rope_type, rope_theta, partial_rotary_factor, ...}; the Hub's files say rope_theta (Llama,
    Qwen2) or rotary_emb_base (GPT-NeoX), rope_scaling and rotary_pct. Scalings not built go into `problems`."""
    params = dict(hf.get("rope_parameters") or {})
    legacy = hf.get("rope_scaling") or {}
    theta = params.get("rope_theta", hf.get("rope_theta", hf.get("rotary_emb_base", default_theta)))
    partial = params.get("partial_rotary_factor", hf.get("partial_rotary_factor", hf.get("rotary_pct", 1.0)))
    scaling = {**legacy, **params}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "default":
        return float(theta), None, float(partial)
    if kind not in ROPE_SCALINGS:
        problems.append(f"rope_scaling type {kind!r}: only {', '.join(ROPE_SCALINGS)} (Llama 3.1 / 3.2) is built")
        return float(theta), None, float(partial)
    keys = ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")
    missing = [k for k in keys if k not in scaling]
    if missing:
        problems.append(f"rope_scaling {kind!r} lacks {', '.join(missing)}")
        return float(theta), None, float(partial)
    return float(theta), {"rope_type": kind, **{k: scaling[k] for k in keys}}, float(partial)


def special_id(hf: dict, key: str) -> int | None:
    """config.json's bos/eos/pad id: an int, the first of a list (Llama 3's several end tokens), or None."""
    value = hf.get(key)
    if isinstance(value, list):
        value = value[0] if value else None
    return int(value) if isinstance(value, int) else None


def load_tokenizer(hf_dir: Path, vocab_size: int) -> tuple[JsonTokenizer, int | None]:
    """(tokenizer.json as our tokenizer, the id its post-processor puts before every text or None): Llama 3's
    <|begin_of_text|>; GPT-2, SmolLM2, Qwen2 and Pythia put none. Its ids beyond the file's (a vocabulary padded
    to a round number, as Pythia's and Qwen2's) read as <unk>."""
    try:
        tok = JsonTokenizer((hf_dir / "tokenizer.json").read_text(encoding="utf-8"), vocab_size)
    except (OSError, UnicodeDecodeError) as e:
        raise HFImportError(f"{hf_dir}/tokenizer.json could not be read ({e}).") from None
    except ValueError as e:
        raise HFImportError(f"{hf_dir}/tokenizer.json does not fit the model: {e}.") from None
    bare = tok.tok.encode("Hello world", add_special_tokens=False).ids
    full = tok.tok.encode("Hello world", add_special_tokens=True).ids
    first = full[0] if len(full) == len(bare) + 1 and full[1:] == bare else None
    return tok, first


def take_embeddings(c: Converter, cfg: DecoderOnlyConfig, embed: str, output: str) -> None:
    """The token embedding, and the output projection: a stored tied copy checked (tie_output), or its own matrix."""
    c.take("tok_embed.weight", embed)
    if cfg.tie_output:
        c.tied(output, embed)
    else:
        c.take("generator.weight", output)


def causal_buffer(t: torch.Tensor) -> bool:
    """Whether a stored attention bias is the causal mask (older exports keep it in the weights): nothing to learn."""
    return t.dim() == 4 and t.shape[-1] == t.shape[-2] and torch.equal(
        t[0, 0].bool(), torch.ones(t.shape[-2:], dtype=torch.bool).tril())


def use_causal_buffers(c: Converter, bias: str, masked_bias: str) -> None:
    """Older exports' attention buffers, not weights, are used: the causal mask (when it is one) and its fill value."""
    if bias in c.state and causal_buffer(c.state[bias]):
        c.used.add(bias)
    if masked_bias in c.state:
        c.used.add(masked_bias)


def use_rotary_frequencies(c: Converter, key: str, ours: torch.Tensor) -> None:
    """Stored rotary frequencies (older exports) must be ours from config.json's settings; they are then used."""
    if key in c.state:
        if not torch.allclose(c.state[key].float(), ours, rtol=1e-4):
            raise HFImportError(f"{key} are not the rotary frequencies of config.json's rotary settings.")
        c.used.add(key)


def converted(hf_dir: Path, hf: dict, cfg: DecoderOnlyConfig, convert_weights: Callable[..., dict], what: str,
              source: str | None, credit: tuple[str, str] | None = None) -> Converted:
    """The download as Converted: its tokenizer (and first token), weights, source "name (what)", credit if named."""
    tokenizer, cfg.bos_id = load_tokenizer(hf_dir, cfg.vocab_size)
    state = convert_weights(read_weights(hf_dir), cfg)
    source = source or guess_source(hf_dir, hf)
    named = credit is not None and credit[0] in source.lower()      # (a word of the source's name, whom to credit)
    return Converted(cfg, state, tokenizer, f"{source} ({what})", None, credit[1] if named else None)
