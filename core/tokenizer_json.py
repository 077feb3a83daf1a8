"""A tokenizer that comes as a Hugging Face tokenizer.json (NLLB-200's), read with the `tokenizers` library.

One vocabulary for source and target. Its pieces are SentencePiece's, "▁" marking a word's first piece, so word
merging (core.tokenizer.word_ids) works on them as on ours. The language tokens are added by TranslationModel
(cfg.src_prefix_id, cfg.tgt_prefix_id), never by the tokenizer: encode gives the text's pieces only.
"""
from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer

SETUP = "tokenizer_setup.json"     # {"kind": ..., "vocab_size": ...}: what tokenizer.json does not say


class JsonTokenizer:
    """tokenizer.json for both sides; ids the model has beyond it (padding of its vocabulary) read as <unk>."""

    kind = "tokenizers"

    def __init__(self, tokenizer_json: str, vocab_size: int | None = None):
        try:
            self.tok = HFTokenizer.from_str(tokenizer_json)
        except Exception as e:       # the library raises a bare Exception for a file it cannot parse
            raise ValueError(f"tokenizer.json could not be read by the tokenizers library ({e})") from None
        self.tok.no_truncation()    # the file may ask to cut or pad; TranslationModel decides lengths
        self.tok.no_padding()
        known = self.tok.get_vocab_size(with_added_tokens=True)
        self.size = known if vocab_size is None else int(vocab_size)
        if self.size < known:
            raise ValueError(f"tokenizer.json has {known} tokens, more than the model's {self.size} ids")

    @classmethod
    def from_folder(cls, folder) -> JsonTokenizer:
        """tokenizer.json and tokenizer_setup.json of a checkpoint folder."""
        folder = Path(folder)
        setup = json.loads((folder / SETUP).read_text(encoding="utf-8")) if (folder / SETUP).exists() else {}
        return cls((folder / "tokenizer.json").read_text(encoding="utf-8"), setup.get("vocab_size"))

    def save(self, folder) -> None:
        """Write tokenizer.json and tokenizer_setup.json into a checkpoint folder, each atomically."""
        from core.checkpoint.atomic import atomic_write, write_json   # here: core.checkpoint imports core.tokenizer
        atomic_write(Path(folder) / "tokenizer.json", self.tok.to_str())
        write_json(Path(folder) / SETUP, {"kind": self.kind, "vocab_size": self.size})

    def __len__(self) -> int:
        return self.size

    def token_id(self, token: str) -> int | None:
        """The id of a token (e.g. a language token such as 'deu_Latn'), or None if there is none."""
        return self.tok.token_to_id(token)

    def encode(self, text: str, side: str = "src") -> list[int]:
        """Text -> ids (no language token, no </s>)."""
        return self.encode_many([text], side)[0]

    def encode_many(self, lines: list[str], side: str = "src", dropout: float = 0.0) -> list[list[int]]:
        """Many lines -> ids. Subword dropout belongs to training, which imported models do not do here."""
        if dropout > 0:
            raise ValueError("subword dropout is only for SentencePiece models trained here")
        return [e.ids for e in self.tok.encode_batch(list(lines), add_special_tokens=False)]

    def pieces(self, ids, side: str = "src") -> list[str]:
        """Ids -> the pieces as shown to users."""
        return [self.tok.id_to_token(int(i)) or "<unk>" for i in ids]

    def decode(self, ids, side: str = "tgt") -> str:
        """Ids -> text, special tokens (</s>, language tokens) left out."""
        return self.tok.decode([int(i) for i in ids if int(i) < self.tok.get_vocab_size(with_added_tokens=True)],
                               skip_special_tokens=True)
