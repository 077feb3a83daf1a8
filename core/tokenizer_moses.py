"""FSMT's tokenizer (fairseq's WMT19 models): Moses normalisation and tokenization, then BPE, two vocabularies.

Text -> sacremoses (punctuation normalised, tokens split off, & " ' < > escaped as XML entities) -> BPE with the
merges of merges.txt (the `tokenizers` library; a word's last piece ends in "</w>") -> ids of vocab-src.json or
vocab-tgt.json. Decoding joins the pieces and hands the tokens to sacremoses' detokenizer.

Pieces are shown as the other tokenizers show theirs: "▁" on the first piece of each word, where a word is what
the detokenized text has between spaces ("dog." is one word of two Moses tokens), without "</w>", entities as
the characters they stand for and "@-@" as "-". So word merging (core.tokenizer.word_ids) and the studies'
matching of pieces to gold words (by the characters they spell) work on FSMT models too.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from sacremoses import MosesDetokenizer, MosesPunctNormalizer, MosesTokenizer
from tokenizers import Tokenizer as HFTokenizer
from tokenizers.models import BPE

from core.pieces import WORD_START

SETUP = "tokenizer_setup.json"
FILES = {"src": "vocab-src.json", "tgt": "vocab-tgt.json"}
END = "</w>"
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
JOINER = re.compile(r"^@(\S+?)@$")           # "@-@": Moses' aggressive hyphen split, "-" in text
_UNESCAPE = MosesDetokenizer()                # its unescape_xml: whole entities only ("&am" stays "&am")


def read_merges(text: str) -> list[tuple[str, str]]:
    """merges.txt ("a b" or "a b count" a line) -> the merges in rank order."""
    return [tuple(line.split()[:2]) for line in text.split("\n") if len(line.split()) >= 2]


class MosesBPETokenizer:
    """Moses + BPE with a source and a target vocabulary; len() is the target's (the ids the model writes)."""

    kind = "moses-bpe"

    def __init__(self, merges: list[tuple[str, str]], vocabs: dict, langs: dict):
        """merges: BPE merges in rank order; vocabs: {"src": piece -> id, "tgt": ...}; langs: {"src": "en", ...}."""
        self.merges, self.vocabs, self.langs = merges, vocabs, langs
        self.id_to_piece = {side: {i: p for p, i in v.items()} for side, v in vocabs.items()}
        # BPE needs every piece it can make in its own table; the ids come from each side's vocabulary after
        pieces = dict.fromkeys([*SPECIALS, *vocabs["src"], *vocabs["tgt"], *(p for m in merges for p in m),
                                *("".join(m) for m in merges)])
        bpe = BPE(vocab={p: i for i, p in enumerate(pieces)}, merges=merges, unk_token="<unk>", end_of_word_suffix=END)
        self.bpe = HFTokenizer(bpe)
        self.normalizer = {s: MosesPunctNormalizer(lang, pre_replace_unicode_punct=True,
                                                   post_remove_control_chars=True) for s, lang in langs.items()}
        self.moses = {s: MosesTokenizer(lang) for s, lang in langs.items()}
        self.detok = {s: MosesDetokenizer(lang) for s, lang in langs.items()}

    @classmethod
    def from_folder(cls, folder) -> MosesBPETokenizer:
        """merges.txt, vocab-src.json, vocab-tgt.json and tokenizer_setup.json (the languages) of a folder."""
        folder = Path(folder)
        setup = json.loads((folder / SETUP).read_text(encoding="utf-8"))
        vocabs = {side: json.loads((folder / name).read_text(encoding="utf-8")) for side, name in FILES.items()}
        return cls(read_merges((folder / "merges.txt").read_text(encoding="utf-8")), vocabs, setup["langs"])

    def save(self, folder) -> None:
        """Write the merges, both vocabularies and the languages into a checkpoint folder, each atomically."""
        from core.checkpoint.atomic import atomic_write, write_json   # here: core.checkpoint imports core.tokenizer
        folder = Path(folder)
        atomic_write(folder / "merges.txt", "".join(f"{a} {b}\n" for a, b in self.merges))
        for side, name in FILES.items():
            atomic_write(folder / name, json.dumps(self.vocabs[side], ensure_ascii=False))
        write_json(folder / SETUP, {"kind": self.kind, "langs": self.langs})

    def __len__(self) -> int:
        return len(self.vocabs["tgt"])

    def size(self, side: str) -> int:
        """The number of ids of one side's vocabulary."""
        return len(self.vocabs[side])

    def moses_tokens(self, text: str, side: str = "src") -> list[str]:
        """Text -> Moses tokens, as fairseq's WMT19 models were trained on (normalised, split, XML-escaped)."""
        text = self.normalizer[side].normalize(text)
        return self.moses[side].tokenize(text, aggressive_dash_splits=True, return_str=False, escape=True)

    def encode(self, text: str, side: str = "src") -> list[int]:
        """Text -> ids (no </s>)."""
        return self.encode_many([text], side)[0]

    def encode_many(self, lines: list[str], side: str = "src", dropout: float = 0.0) -> list[list[int]]:
        """Many lines -> ids. Subword dropout belongs to training, which imported models do not do here."""
        if dropout > 0:
            raise ValueError("subword dropout is only for SentencePiece models trained here")
        vocab, unk = self.vocabs[side], self.vocabs[side]["<unk>"]
        out = []
        for line in lines:
            tokens = [t for t in self.moses_tokens(line, side) if t]
            pieces = self.bpe.encode(tokens, is_pretokenized=True, add_special_tokens=False).tokens if tokens else []
            out.append([vocab.get(p, unk) for p in pieces])
        return out

    def raw_pieces(self, ids, side: str = "src") -> list[str]:
        """Ids -> the vocabulary's own pieces ("hel", "lo</w>")."""
        return [self.id_to_piece[side].get(int(i), "<unk>") for i in ids]

    def decode(self, ids, side: str = "tgt") -> str:
        """Ids -> detokenized text; </s>, <pad>, <s> and <unk> are left out (as transformers' FSMT does)."""
        pieces = [p for p in self.raw_pieces(ids, side) if p not in SPECIALS]
        return self.detok[side].detokenize("".join(pieces).replace(END, " ").split())

    def pieces(self, ids, side: str = "src") -> list[str]:
        """Ids -> pieces as shown: ▁ on each word's first piece, no </w>, entities as characters (module doc)."""
        raw, out, run = self.raw_pieces(ids, side), [], []
        for p in raw + [None]:      # runs of text pieces between <s>, </s>, <pad> (an <unk> is inside a word)
            if p is None or (p in SPECIALS and p != "<unk>"):
                out += self._shown(run, side)
                run = []
                if p is not None:
                    out.append(p)
            else:
                run.append(p)
        return out

    def _shown(self, run: list[str], side: str) -> list[str]:
        """One run of text pieces -> their display forms."""
        tokens, starts = [], []                      # Moses tokens, and the index of each one's first piece
        for i, p in enumerate(run):
            if i == 0 or run[i - 1].endswith(END):
                tokens.append("")
                starts.append(i)
            tokens[-1] += p.removesuffix(END)
        word_start = self._word_starts(tokens, side)
        shown = [_unescape(p.removesuffix(END)) for p in run]
        for k, i in enumerate(starts):
            if word_start[k]:
                shown[i] = WORD_START + shown[i]
        return shown

    def _word_starts(self, tokens: list[str], side: str) -> list[bool]:
        """For each Moses token, whether the detokenized text has a space before it (the first: always)."""
        text, pos, starts = self.detok[side].detokenize(tokens), 0, []
        for t in tokens:
            spaced = pos == 0 or text[pos: pos + 1] == " "
            pos += len(text[pos:]) - len(text[pos:].lstrip(" "))
            t = _unescape(t)
            if not text.startswith(t, pos):          # the detokenizer changed more than spacing: a word a token
                return [True] * len(tokens)
            starts.append(spaced)
            pos += len(t)
        return starts


def _unescape(piece: str) -> str:
    """A piece as text: Moses' XML entities as their characters, "@-@" as "-"."""
    joiner = JOINER.match(piece)
    return joiner.group(1) if joiner else _UNESCAPE.unescape_xml(piece) if "&" in piece else piece
