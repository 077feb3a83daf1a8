"""What several test files share: tiny models, tiny corpora and toy tasks, and the helpers of training-run tests.

Fixtures built from these live in tests/conftest.py (and tests/scripts/conftest.py for the training corpus)."""
from __future__ import annotations

import json
import math
import random
import unicodedata
from pathlib import Path

import pytest
import sentencepiece as spm
import torch
from safetensors.torch import load_file

import core
from core.paths import REPO

FIXTURES = REPO / "tests" / "fixtures"       # small hand-written files (e.g. a gold alignment), never real data

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

def toy_transformer(seed: int = 0) -> core.Transformer:
    """The toy task's untrained model: preset("tiny") for the toy vocabulary."""
    torch.manual_seed(seed)
    return core.Transformer(core.preset("tiny", vocab_size=TOY_VOCAB, max_len=32))


def train_toy_model(steps: int = 400, seed: int = 0) -> core.Transformer:
    """preset("tiny") trained to reverse sequences: Adam, warm-up + cosine decay, ~7 s on one core."""
    model = toy_transformer(seed)
    cfg = model.cfg
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

EN = "zero one two three four five six seven eight nine".split()
DE = "null eins zwei drei vier fu\u0308nf sechs sieben acht neun".split()   # "fünf" decomposed (NFD), as in raw text

# Tiny model, ~9-18 batches an epoch; one thread so that in-process and subprocess runs compute alike.
FAST = ["--preset", "tiny", "--warmup", "50", "--lr-scale", "0.3", "--threads", "1", "--no-progress",
        "--valid-every", "0"]

def number_pairs(n: int, rng: random.Random):
    """Counting up or down from a random number, 1-9 words: 'seven eight nine' -> 'sieben acht neun'."""
    out = []
    for _ in range(n):
        k, length, d = rng.randrange(10), rng.randint(1, 9), rng.choice((1, -1))
        idx = [(k + d * j) % 10 for j in range(length)]
        out.append((" ".join(EN[i] for i in idx), " ".join(DE[i] for i in idx)))
    return out

def make_corpus(root: Path) -> tuple[Path, Path]:
    """A raw corpus and its prepared copy (NFKC text, spm.model of ~100 pieces, prep_report.json naming the raw one)."""
    raw, data = root / "raw", root / "data"
    raw.mkdir(parents=True)
    data.mkdir()
    rng = random.Random(0)
    for split, n in [("train", 300), ("valid", 30), ("test", 30)]:
        pairs = number_pairs(n, rng)
        if split == "valid":
            pairs[2] = ("", pairs[2][1])      # prepared valid/test keep empty lines, to stay aligned
        for j, lang in enumerate(("en", "de")):
            lines = [p[j] for p in pairs]
            (raw / f"{split}.{lang}").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
            (data / f"{split}.{lang}").write_text(
                "".join(unicodedata.normalize("NFKC", line) + "\n" for line in lines), encoding="utf-8")
    train_text = (data / "train.en").read_text().splitlines() + (data / "train.de").read_text().splitlines()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(train_text), model_prefix=str(data / "spm"), vocab_size=100, model_type="bpe",
        pad_id=0, unk_id=1, bos_id=2, eos_id=3, character_coverage=1.0, hard_vocab_limit=False, minloglevel=2)
    (data / "prep_report.json").write_text(json.dumps({"corpus": str(raw)}))
    return raw, data

def run_args(data, run, *extra) -> list[str]:
    return ["--data", str(data), "--run", str(run), *FAST, *map(str, extra)]

def train_log(run: Path) -> dict:
    """step -> training record of RUN/train_log.jsonl (validation records left out); fails on duplicate steps."""
    records = [json.loads(line) for line in (run / "train_log.jsonl").read_text().splitlines()]
    steps = [r["step"] for r in records if "kind" not in r]
    assert len(steps) == len(set(steps)), f"steps logged twice: {steps}"
    return {r["step"]: r for r in records if "kind" not in r}

def final_weights(run: Path) -> dict:
    return load_file(str(sorted((run / "saves").glob("step_*.safetensors"))[-1]))

def assert_same_run(ref: Path, other: Path, from_step: int, last_step: int):
    """The other run logs every step once, with the reference's losses from from_step on, and ends with its weights."""
    a, b = train_log(ref), train_log(other)
    assert sorted(b) == list(range(1, last_step + 1))
    for s in range(from_step, last_step + 1):
        assert b[s]["loss"] == pytest.approx(a[s]["loss"], abs=1.1e-5), f"step {s}"
        assert b[s]["grad_norm"] == pytest.approx(a[s]["grad_norm"], abs=1.1e-4), f"step {s}"
    wa, wb = final_weights(ref), final_weights(other)
    assert wa.keys() == wb.keys()
    for k in wa:
        torch.testing.assert_close(wb[k], wa[k], atol=1e-6, rtol=0, msg=k)


def stopping_checkpoint_root(tmp_path_factory, tokenizer, name: str, eos_bias: float):
    """A checkpoints folder holding one stopping_model, <root>/<name>, as a page test's ATTN_EXPLORER_CHECKPOINTS."""
    root = tmp_path_factory.mktemp("checkpoints")
    core.save_checkpoint(root / name, stopping_model(len(tokenizer), eos_bias=eos_bias), tokenizer,
                         {"name": name, "trained_here": True})
    return root


def run_page(page: str, checkpoint: str, folder, monkeypatch, **state):
    """app/screens/<page>.py run once by AppTest on `checkpoint` of the checkpoints folder `folder`, with these
    session-state values; fails on any exception the page shows."""
    from streamlit.testing.v1 import AppTest
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(folder))
    at = AppTest.from_file(str(REPO / "app" / "screens" / f"{page}.py"), default_timeout=120)
    for key, value in {"checkpoint": checkpoint, **state}.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
