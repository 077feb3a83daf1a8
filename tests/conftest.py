"""Shared fixtures: a tiny SentencePiece tokenizer, a tiny random TranslationModel, and a toy model
trained once per session to reverse short random sequences."""
from __future__ import annotations

import io
import math

import pytest
import torch


import core

# Tiny models run far faster on one thread, and the machine's cores are shared with training runs.
torch.set_num_threads(1)

CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "a man in a blue shirt is standing on a ladder",
    "two young girls are playing in the park",
    "der schnelle braune Fuchs springt über den faulen Hund",
    "ein Mann in einem blauen Hemd steht auf einer Leiter",
    "Grüße aus München: schöne Straße, große Bäume und weiße Häuser",
    "zwei junge Mädchen spielen im Park",
    "the weather is nice today and the children are happy",
    "das Wetter ist heute schön und die Kinder sind fröhlich",
]

# Toy task: reverse a sequence of 3..8 symbols drawn from ids 4..19 (0..3 are <pad> <unk> <s> </s>).
TOY_VOCAB, TOY_MIN, TOY_MAX = 20, 3, 8


def toy_batch(n: int, generator: torch.Generator):
    """(src, tgt, expected): src = symbols + </s>, padded; tgt = <s> reversed </s>, padded."""
    lengths = torch.randint(TOY_MIN, TOY_MAX + 1, (n,), generator=generator)
    src = torch.zeros(n, TOY_MAX + 1, dtype=torch.long)
    tgt = torch.zeros(n, TOY_MAX + 2, dtype=torch.long)
    expected = []
    for i, L in enumerate(lengths.tolist()):
        s = torch.randint(4, TOY_VOCAB, (L,), generator=generator)
        src[i, :L], src[i, L] = s, 3
        tgt[i, 0], tgt[i, 1:L + 1], tgt[i, L + 1] = 2, s.flip(0), 3
        expected.append(s.flip(0).tolist())
    return src, tgt, expected


def train_toy_model(steps: int = 400, seed: int = 0) -> core.Transformer:
    """preset("tiny") trained to reverse sequences: Adam, warm-up + cosine decay, ~7 s on one core."""
    torch.manual_seed(seed)
    cfg = core.preset("tiny", vocab_size=TOY_VOCAB, max_len=32)
    model = core.Transformer(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda i: min(1.0, (i + 1) / 50) * 0.5 * (1 + math.cos(math.pi * min(i, steps) / steps)))
    g = torch.Generator().manual_seed(1)
    model.train()
    for _ in range(steps):
        src, tgt, _ = toy_batch(64, g)
        loss, _ = core.label_smoothed_loss(model(src, tgt[:, :-1]), tgt[:, 1:], 0.0, cfg.pad_id)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return model.eval()


@pytest.fixture(scope="session")
def toy_model():
    return train_toy_model()


@pytest.fixture(scope="session")
def toy_eval():
    """200 held-out toy examples (src, tgt, expected outputs)."""
    return toy_batch(200, torch.Generator().manual_seed(99))


@pytest.fixture(scope="session")
def spm_proto() -> bytes:
    """A small BPE SentencePiece model (serialized), ids 0..3 = <pad> <unk> <s> </s>.

    byte_fallback adds 256 byte pieces, so the vocabulary cannot be smaller than ~300.
    """
    import sentencepiece as spm
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS * 20), model_writer=buf, vocab_size=320, model_type="bpe",
        pad_id=0, unk_id=1, bos_id=2, eos_id=3, byte_fallback=True, character_coverage=1.0,
        hard_vocab_limit=False, minloglevel=2)
    return buf.getvalue()


@pytest.fixture(scope="session")
def tokenizer(spm_proto) -> core.Tokenizer:
    return core.Tokenizer(spm_proto)


def pe_formula(n: int, d: int, layout: str = "interleaved") -> torch.Tensor:
    """The paper's positional encoding (3.5) written out term by term, independently of core: (n, d) float64.

    sin(pos / 10000^(2i/d)) and cos(...) side by side ("interleaved"),
    or all sines, then all cosines ("concat").
    """
    pe = torch.zeros(n, d, dtype=torch.float64)
    for pos in range(n):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            if layout == "interleaved":
                pe[pos, 2 * i], pe[pos, 2 * i + 1] = math.sin(angle), math.cos(angle)
            else:
                pe[pos, i], pe[pos, d // 2 + i] = math.sin(angle), math.cos(angle)
    return pe


def tiny_model(vocab_size: int, seed: int = 0, **overrides) -> core.Transformer:
    torch.manual_seed(seed)
    return core.Transformer(core.preset("tiny", vocab_size=vocab_size, **overrides)).eval()


def stopping_model(vocab_size: int, eos_bias: float = 100.0, **overrides) -> core.Transformer:
    """A tiny random model for app and export tests: max_len 256, so that the paper's sentences fit in the tiny
    tokenizer's many pieces, and an output bias on </s> that ends its translations at once (100) or after a
    few pieces (3), so that translating costs next to nothing."""
    model = tiny_model(vocab_size, max_len=256, final_logits_bias=True, **overrides)
    with torch.no_grad():
        model.logits_bias[model.cfg.eos_id] = eos_bias
    return model


@pytest.fixture(scope="session")
def translation_model(tokenizer) -> core.TranslationModel:
    """A tiny random-weight model with the tiny tokenizer (translations are gibberish, shapes are real)."""
    return core.TranslationModel(tiny_model(len(tokenizer)), tokenizer)
