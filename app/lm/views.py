"""A language model's maps as a person sees them: its one kind of map (self-attention), its tokens as labels, its
special tokens named, its next-token guess or its [MASK] fillers, and which query heads share keys and values.
Labels only: the maps are core's (core.language_model, core.masked_language_model). No Streamlit here."""
from __future__ import annotations

import numpy as np

from app.checkpoints import DECODER_ONLY, ENCODER_ONLY, model_family
from core.pieces import WORD_START
from core.views import AttentionView

KIND = "self"          # the one kind of map of a language model
TITLES = {DECODER_ONLY: "Masked self-attention", ENCODER_ONLY: "Self-attention"}
ROW_TITLE, COL_TITLE = "attending token (query)", "attended token (key)"
ROLE_NAMES = {"cls": "starts every input", "sep": "ends each sentence", "mask": "is the blank the model fills"}
SHOWN = {"\n": "↵", "\t": "⇥", "\r": "↵"}


def token_label(tokenizer, token_id: int, piece: str) -> str:
    """How a token is shown: its text ("▁" for the space a byte-level piece such as GPT-2's "Ġthe" starts with, ↵ for
    a line break), or its piece where it has no text of its own (a special token, a byte of a longer character)."""
    text = tokenizer.decode([int(token_id)])
    if not text or "\ufffd" in text:
        return piece
    if text.startswith(" ") and len(text) > 1:
        text = WORD_START + text[1:]
    for raw, shown in SHOWN.items():
        text = text.replace(raw, shown)
    return text if text.strip() else WORD_START * len(text)


def labels(model, res) -> list[str]:
    """One label per token of an attend result."""
    return [token_label(model.tokenizer, i, p) for i, p in zip(res.ids, res.tokens)]


def lm_view(model, res) -> AttentionView:
    """The result's self-attention maps (N, h, T, T) with its tokens on both sides."""
    rows = labels(model, res)
    return AttentionView(KIND, np.asarray(res.self_attn, dtype=np.float32), rows, list(rows))


def title(model) -> str:
    return TITLES[model_family(model)]


def what_it_sees(model) -> str:
    """One line on which tokens a row may attend to."""
    if model_family(model) == DECODER_ONLY:
        return ("Each token sees only itself and the tokens before it (masked, as in the paper's decoder): the map is "
                "empty right of the diagonal. Rows attend, columns are attended; each row adds up to 1.")
    return ("Each token sees every token of the input, before and after it (as in the paper's encoder). Rows attend, "
            "columns are attended; each row adds up to 1.")


def specials_line(res) -> str | None:
    """Which tokens are special ([CLS], [SEP], [MASK] or RoBERTa's <s>, </s>, <mask>), with their positions from 1."""
    roles = getattr(res, "roles", None)
    if not roles:
        return None
    named = {}
    for i, role in enumerate(roles):
        if role:
            named.setdefault((role, res.tokens[i]), []).append(str(i + 1))
    if not named:
        return None
    parts = [f"{token} ({'positions' if len(at) > 1 else 'position'} {', '.join(at)}) {ROLE_NAMES[role]}"
             for (role, token), at in named.items()]
    return "Special tokens: " + "; ".join(parts) + "."


def kv_line(model) -> str | None:
    """Which query heads share keys and values (grouped-query attention), heads counted from 1; None without."""
    groups = model.kv_groups() if hasattr(model, "kv_groups") else None
    if not groups or all(len(g) == 1 for g in groups):
        return None
    shared = "; ".join(f"heads {', '.join(str(h + 1) for h in g)} share K/V {k + 1}" for k, g in enumerate(groups))
    return (f"Grouped-query attention: {model.cfg.h} query heads share {len(groups)} key/value heads ({shared}). "
            "Each query head still has its own map.")


def next_token(model, res) -> str:
    """The model's most likely next token after the whole text, as shown in the maps."""
    last = res.next_ids[-1]
    return token_label(model.tokenizer, last, model.tokenizer.pieces([last])[0])


def guesses(model, res) -> list[dict]:
    """After each token: the token the model thought would come next, and the one that did (None after the last)."""
    shown = labels(model, res)
    guessed = [token_label(model.tokenizer, i, p) for i, p in zip(res.next_ids, model.tokenizer.pieces(res.next_ids))]
    return [{"position": t + 1, "after": shown[t], "its guess": guessed[t],
             "what came": shown[t + 1] if t + 1 < len(shown) else None} for t in range(len(shown))]


def fillers(model, res) -> list[tuple[int, list[tuple[str, float]]]]:
    """[(position from 1, [(filler as shown, probability), ...])] for each [MASK] of an encoder-only result."""
    out = []
    for pos in sorted(res.fills):
        pieces = [p for p, _ in res.fills[pos]]
        ids = [model.tokenizer.token_id(p) for p in pieces]
        shown = [token_label(model.tokenizer, i, p) if i is not None else p for i, p in zip(ids, pieces)]
        out.append((pos + 1, [(s, prob) for s, (_, prob) in zip(shown, res.fills[pos])]))
    return out
