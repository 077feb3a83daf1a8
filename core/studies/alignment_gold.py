"""Human gold alignments (Och & Ney 2003's sure and possible links) and the words they are given in: reading the
RWTH files' TALP links, the text to feed the model, and which of the model's pieces spell which gold word.

A link is (t, s), 0-based: t a target (German) word, s a source (English) word. Our models translate English ->
German, so the English side is the source and the German side the target, whatever a gold file calls them.
The maps and their scores are in core.studies.alignment.
"""
from __future__ import annotations

import bisect
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.datasets import how_to_get
from core.paths import shared_eval
from core.tokenizer import piece_byte
from core.views import SPECIALS

def default_gold() -> Path:
    """The RWTH gold folder, read in place outside the project (core/paths.py; resolved per call, so
    ATTN_EXPLORER_SHARED moves it); evaluation data only, never copied in."""
    return shared_eval("rwth-deen-alignment")


class AlignmentError(ValueError):
    """A gold file or a sentence pair that cannot be used, worded for the person who gave it."""


# --------------------------------------------------------------------------- gold links

@dataclass
class GoldPair:
    """One human-aligned sentence pair: tokenised words and links (t, s) into them, 0-based."""
    line: int                      # 1-based line in the gold files
    src_words: list                # English (our source)
    tgt_words: list                # German (our target)
    sure: set
    possible: set                  # P ⊇ S: every sure link is also possible


def parse_talp(line: str, n_src: int, n_tgt: int, where: str = "") -> tuple[set, set]:
    """TALP links with the SOURCE (English) index first, 1-based: "i-j" sure, "ipj" possible.

    Returns (sure, possible) as sets of (target, source) links, 0-based, with possible ⊇ sure.
    """
    sure, possible = set(), set()
    for item in line.split():
        sep = "-" if "-" in item else "p" if "p" in item else None
        i, _, j = item.partition(sep) if sep else ("", "", "")
        if not (i.isdigit() and j.isdigit()):
            raise AlignmentError(f"{where}cannot read the link '{item}': expected 'i-j' (sure) or 'ipj' (possible).")
        s, t = int(i) - 1, int(j) - 1
        if not (0 <= s < n_src and 0 <= t < n_tgt):
            raise AlignmentError(f"{where}the link '{item}' points outside the sentences "
                                 f"({n_src} source and {n_tgt} target words, counted from 1).")
        (sure if sep == "-" else possible).add((t, s))
    return sure, possible | sure


def read_gold(folder=None, src_file: str = "src.en", tgt_file: str = "tgt.de",
              links_file: str = "gold.talp") -> list[GoldPair]:
    """The gold pairs of a folder in the RWTH layout (None: default_gold(); line k of each file is pair k)."""
    folder = Path(folder) if folder is not None else default_gold()
    paths = [folder / f for f in (src_file, tgt_file, links_file)]
    missing = [p.name for p in paths if not p.is_file()]
    if missing and folder == default_gold():
        raise AlignmentError(f"The RWTH gold alignments are not on this machine yet: {how_to_get('eval')} fetches "
                             "them (for research use only: the command shows their licence first).")
    if missing:
        raise AlignmentError(f"The gold folder {folder} lacks {', '.join(missing)} "
                             f"(it needs {src_file}, {tgt_file} and {links_file}, one sentence pair a line).")
    src, tgt, links = (p.read_text(encoding="utf-8").splitlines() for p in paths)
    if not len(src) == len(tgt) == len(links):
        raise AlignmentError(f"The gold files of {folder} have different numbers of lines "
                             f"({len(src)}, {len(tgt)}, {len(links)}): they must match line by line.")
    pairs = []
    for k, (s, t, a) in enumerate(zip(src, tgt, links), 1):
        sw, tw = s.split(), t.split()
        if not sw or not tw:
            raise AlignmentError(f"{links_file} line {k}: a sentence is empty.")
        pairs.append(GoldPair(k, sw, tw, *parse_talp(a, len(sw), len(tw), f"{links_file} line {k}: ")))
    if not pairs:
        raise AlignmentError(f"The gold files of {folder} are empty.")
    return pairs


# --------------------------------------------------------------------------- gold words <-> the model's pieces

ATTACH_LEFT = {",", ".", ";", ":", "!", "?", ")", "]", "%"}     # no space before these
ATTACH_RIGHT = {"(", "["}                                          # no space after these
QUOTES = {'"', "'"}                                                # opening and closing in turn
SPECIAL_PIECES = ("<unk>",) + SPECIALS                            # core.views' specials, and <unk>


def detokenize(words: list[str]) -> str:
    """Gold tokens ("do n't", "end .") -> text as the model saw in training ("end."); words keep their order."""
    out, glue, open_quote = "", True, {q: False for q in QUOTES}
    for w in words:
        left = w in ATTACH_LEFT or (w[0] == "'" and w[1:].isalpha()) or (w in QUOTES and open_quote[w])
        out += w if (glue or left) else " " + w
        glue = w in ATTACH_RIGHT or (w in QUOTES and not open_quote[w])
        if w in QUOTES:
            open_quote[w] = not open_quote[w]
    return out


def piece_bytes(piece: str) -> bytes | None:
    """The text a piece stands for, as UTF-8 without spaces; None for <unk> and other specials."""
    byte = piece_byte(piece)                                       # a byte-fallback piece such as "<0xC3>"
    if byte is not None:
        return bytes([byte])
    if piece in SPECIAL_PIECES:
        return None
    return "".join(piece.split()).replace("\u2581", "").encode("utf-8")


def piece_slots(pieces: list[str], words: list[str]) -> list[tuple[int, int]]:
    """(piece, gold word) pairs: each piece (specials excluded) with every gold word it spells part of.

    Matched by the bytes they spell, spaces ignored, so it works whatever the spacing of the text fed to
    the model. Usually each piece belongs to one word; a piece such as '",' that spells two gold words
    belongs to both, so that each word has a row and a column. Raises AlignmentError when the pieces
    spell another text (cut, <unk>, changed by normalisation).
    """
    spans = [piece_bytes(p) for p in pieces]
    if any(b is None for b in spans):
        raise AlignmentError("the model's tokenizer turned part of it into an unknown piece (<unk>)")
    word_bytes = ["".join(unicodedata.normalize("NFKC", w).split()).encode("utf-8") for w in words]
    if b"".join(spans) != b"".join(word_bytes):
        raise AlignmentError("the model's pieces spell a different text (cut, or changed by normalisation)")
    ends = np.cumsum([len(b) for b in word_bytes]).tolist()       # word k covers bytes [ends[k-1], ends[k])
    slots, pos, lone = [], 0, []
    for i, b in enumerate(spans):
        if not b:                                                 # a lone "▁": it belongs to the next word
            lone.append(i)
            continue
        first, last = bisect.bisect_right(ends, pos), bisect.bisect_right(ends, pos + len(b) - 1)
        slots += [(j, first) for j in lone] + [(i, w) for w in range(first, last + 1)]
        lone, pos = [], pos + len(b)
    slots += [(j, len(words) - 1) for j in lone]
    return sorted(slots, key=lambda pw: (pw[1], pw[0]))


def model_text(pair: GoldPair, as_tokenized: bool = False) -> tuple[str, str]:
    """(English, German) to feed the model: detokenised by default, or the gold tokens joined by spaces."""
    join = " ".join if as_tokenized else detokenize
    return join(pair.src_words), join(pair.tgt_words)


def gold_masks(pair: GoldPair) -> tuple[np.ndarray, np.ndarray]:
    """Sure and possible links as boolean (W_tgt, W_src) matrices."""
    S = np.zeros((len(pair.tgt_words), len(pair.src_words)), dtype=bool)
    P = S.copy()
    for t, s in pair.sure:
        S[t, s] = True
    for t, s in pair.possible:
        P[t, s] = True
    return S, P
