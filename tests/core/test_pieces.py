"""core/pieces.py: pieces read as words, byte-fallback pieces as characters, punctuation, and attention merged
from pieces into words."""
import numpy as np

import core


def test_word_ids_and_merge_words():
    pieces = ["<s>", "▁Gr", "üße", "▁aus", "▁M", "ün", "chen", "</s>"]
    ids = core.word_ids(pieces)
    assert ids == [0, 1, 1, 2, 3, 3, 3, 4]
    assert core.merge_words(pieces, ids) == ["<s>", "Grüße", "aus", "München", "</s>"]
    assert core.word_ids(["ab", "▁c", "</s>"]) == [0, 1, 2]
    assert core.word_ids(["<s>", "ab", "c"]) == [0, 1, 1]       # a piece after a special starts a word


def test_word_ids_on_real_pieces(tokenizer):
    pieces = tokenizer.pieces(tokenizer.encode("Grüße aus München")) + ["</s>"]
    words = core.merge_words(pieces)
    assert words == ["Grüße", "aus", "München", "</s>"]


def _random_attention(rng, *shape):
    x = np.exp(rng.normal(size=shape)).astype(np.float32)
    return x / x.sum(-1, keepdims=True)


def test_merge_attention_rows_and_columns():
    rng = np.random.default_rng(0)
    attn = _random_attention(rng, 2, 3, 5, 6)             # (N, h, Tq, Tk)
    rows, cols = [0, 0, 1, 2, 2], [0, 1, 1, 1, 2, 3]
    merged = core.merge_attention(attn, rows, cols)
    assert merged.shape == (2, 3, 3, 4)
    np.testing.assert_allclose(merged.sum(-1), 1.0, atol=1e-6)
    # a word's column is the sum over its pieces; a word's row is the mean over its pieces
    cols_only = core.merge_attention(attn, list(range(5)), cols)
    np.testing.assert_allclose(cols_only[..., 1], attn[..., 1:4].sum(-1), atol=1e-6)
    np.testing.assert_allclose(cols_only.sum(-2), np.stack(
        [attn.sum(-2)[..., [j for j, w in enumerate(cols) if w == k]].sum(-1) for k in range(4)], -1), atol=1e-5)
    np.testing.assert_allclose(merged[..., 0, :], cols_only[..., :2, :].mean(-2), atol=1e-6)
    np.testing.assert_allclose(merged[..., 1, :], cols_only[..., 2, :], atol=1e-6)


def test_merge_attention_identity():
    rng = np.random.default_rng(1)
    attn = _random_attention(rng, 4, 4)
    np.testing.assert_allclose(core.merge_attention(attn, [0, 1, 2, 3], [0, 1, 2, 3]), attn, atol=1e-7)


def test_merge_words_decodes_byte_fallback_pieces(tokenizer):
    text = "ok 😀 Привет 你好"
    pieces = tokenizer.pieces(tokenizer.encode(text))
    assert "<0xF0>" in pieces                              # the tiny vocabulary spells these as bytes
    assert core.merge_words(pieces) == ["ok", "😀", "Привет", "你好"]
    assert core.merge_words(["▁a", "<", "0x", "41", ">"]) == ["a<0x41>"]   # typed text stays text
    assert core.merge_words(["▁x", "<0xE4>"]) == ["x\ufffd"]             # a cut character
    assert core.merge_words(["▁", "<0xC3>", "<0xA4>", "b", "▁c"]) == ["äb", "c"]


def test_piece_byte_reads_both_cases_of_hex_and_nothing_else():
    from core.tokenizer import piece_byte
    assert piece_byte("<0x39>") == 0x39 and piece_byte("<0xc3>") == piece_byte("<0xC3>") == 0xC3
    assert [piece_byte(p) for p in ("<0xZZ>", "<0x9>", "▁<0x39>", "<s>", "9", "<0x39")] == [None] * 6


def test_display_pieces_shows_the_characters_byte_pieces_stand_for(tokenizer):
    from core.tokenizer import display_pieces
    assert display_pieces(["▁Jahr", "▁20", "<0x39>", "</s>"]) == ["▁Jahr", "▁20", "9", "</s>"]
    # a character of several bytes: each piece says which byte of it it is, so rows stay one per piece
    assert display_pieces(["▁", "<0xc3>", "<0xA4>", "b"]) == ["▁", "ä 1/2", "ä 2/2", "b"]
    # no whole printable character: the raw names stay (a cut character, a control byte)
    assert display_pieces(["<0xE4>", "x", "<0x0A>"]) == ["<0xE4>", "x", "<0x0A>"]
    pieces = tokenizer.pieces(tokenizer.encode("ok 😀"))
    shown = display_pieces(pieces)
    assert len(shown) == len(pieces) and not any(s.startswith("<0x") for s in shown)
    assert [s for s in shown if s.startswith("😀")] == [f"😀 {k}/4" for k in (1, 2, 3, 4)]


def test_punctuation_byte_pieces_count_in_either_case():
    from core.tokenizer import is_punctuation
    assert is_punctuation("<0x2E>") and is_punctuation("<0x2e>") and not is_punctuation("<0x41>")


def test_one_test_of_punctuation_strips_words_and_bares_them():
    from core.tokenizer import bare_word, is_punctuation, strip_punctuation
    assert all(is_punctuation(c) for c in ".,;:!?\"'()»«„“”‘’-–…")
    assert is_punctuation("▁„") and is_punctuation("..") and not is_punctuation("▁") and not is_punctuation("</s>")
    assert not is_punctuation("$") and not is_punctuation("a.") and not is_punctuation("")        # symbols are not
    assert strip_punctuation("„Its,") == "Its" and strip_punctuation("U.S.") == "U.S" and strip_punctuation("...") == ""
    assert strip_punctuation("▁word") == "▁word"                                   # the word marker is no punctuation
    assert bare_word("Its,") == "its" and bare_word("(difficult.)") == "difficult"
    assert bare_word("$5") == "5" and bare_word("+x") == "x"          # word matching strips symbols too, as before
