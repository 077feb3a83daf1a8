"""The SentencePiece wrapper: round trips, special ids, saving and loading, and text cleaning (pieces read as
words: test_pieces.py)."""
import pytest

import core
from core.tokenizer import WORD_START

TEXTS = [
    "the quick brown fox",
    "Grüße aus München, schöne Straße! Äpfel, Öl und Übermut.",
    "Привет, как дела?",
    "مرحبا بالعالم",
    "שלום עולם",
    "你好世界 天气很好",                  # CJK (no full-width punctuation: NFKC would change it)
    "日本語のテキスト",
    "emoji 😀 👍🏽 👩‍👩‍👧 ok",
    "mixed: Hello Привет مرحبا 你好 ok",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_round_trip(tokenizer, text):
    ids = tokenizer.encode(text)
    assert all(isinstance(i, int) and 0 <= i < len(tokenizer) for i in ids)
    assert 1 not in ids                                   # byte fallback: nothing becomes <unk>
    assert tokenizer.decode(ids) == text
    assert tokenizer.decode(tokenizer.encode(text, "src"), "src") == text


def test_empty_string(tokenizer):
    assert tokenizer.encode("") == []
    assert tokenizer.decode([]) == ""


def test_special_ids_and_pieces(tokenizer):
    assert tokenizer.pieces([0, 1, 2, 3]) == ["<pad>", "<unk>", "<s>", "</s>"]
    pieces = tokenizer.pieces(tokenizer.encode("the quick fox"))
    assert pieces[0].startswith(WORD_START)
    assert "".join(pieces).replace(WORD_START, " ").strip() == "the quick fox"


def test_save_and_load_folder(tokenizer, tmp_path):
    tokenizer.save(tmp_path)
    again = core.Tokenizer.from_folder(tmp_path)
    assert len(again) == len(tokenizer)
    assert again.encode(TEXTS[1]) == tokenizer.encode(TEXTS[1])
    with pytest.raises(FileNotFoundError, match=r"no SentencePiece model .*, no tokenizer.json, no merges.txt"):
        core.Tokenizer.from_folder(tmp_path / "nowhere")


def test_clean_text():
    assert core.clean_text("  a\tb\x00c\u2028d\n\n e  ") == "a b c d e"
    assert core.clean_text("ﬁne") == "fine"                  # NFKC
    assert core.clean_text("👩\u200d👩\u200d👧") == "👩\u200d👩\u200d👧"    # the zero-width joiner stays
    with pytest.raises(ValueError):
        core.clean_text(None)


# --- words -----------------------------------------------------------------------------------
