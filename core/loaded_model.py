"""What the language-model wrappers share (language_model.py, masked_language_model.py): a model and its files."""
from __future__ import annotations

from .checkpoint.card import Card, as_card

MAX_INPUT_CHARS = 20000   # longer text is cut before tokenising (it would be cut in tokens anyway)


class LoadedModel:
    """A model in eval mode, its tokenizer (tokenizer.json), its card and its folder, as load_checkpoint hands them."""

    def __init__(self, model, tokenizer, card: Card | dict | None = None, folder=None):
        self.model, self.tokenizer, self.folder = model.eval(), tokenizer, folder
        self.card = as_card(card) if card is not None else None
        self.cfg = model.cfg

    @property
    def device(self):
        return next(self.model.parameters()).device
