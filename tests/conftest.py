"""Shared fixtures: a tiny SentencePiece tokenizer, a tiny random TranslationModel, and a toy model
trained once per session to reverse short random sequences."""
from __future__ import annotations

import io

import pytest
import torch


import core
from tests.helpers import CORPUS, tiny_model, toy_batch, toy_transformer, train_toy_model

# Tiny models run far faster on one thread, and the machine's cores are shared with training runs.
torch.set_num_threads(1)


@pytest.fixture(scope="session", autouse=True)
def no_hub_and_own_caches(tmp_path_factory):
    """Tests never reach the Hugging Face Hub (HF_HUB_OFFLINE; the tests of the download code point HF_ENDPOINT at a
    local imitation instead) nor see this machine's caches of downloaded and converted models."""
    with pytest.MonkeyPatch.context() as mp:
        root = tmp_path_factory.mktemp("caches")
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("HF_HUB_CACHE", str(root / "huggingface"))
        mp.setenv("ATTN_EXPLORER_CACHE", str(root / "attention-explorer"))
        yield

@pytest.fixture(scope="session")
def toy_model(tmp_path_factory):
    """The toy model, trained once per test run: the first pytest-xdist worker to need it trains it and saves its
    weights beside every worker's temporary folder; the others wait on the lock and load them (the same weights)."""
    import os
    from filelock import FileLock
    from safetensors.torch import load_model, save_model
    base = tmp_path_factory.getbasetemp()
    weights = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "toy_model.safetensors"
    with FileLock(str(weights) + ".lock"):
        if not weights.exists():
            save_model(train_toy_model(), str(weights))
    model = toy_transformer()
    load_model(model, str(weights))
    return model.eval()


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


@pytest.fixture(scope="session")
def translation_model(tokenizer) -> core.TranslationModel:
    """A tiny random-weight model with the tiny tokenizer (translations are gibberish, shapes are real)."""
    return core.TranslationModel(tiny_model(len(tokenizer)), tokenizer)


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server (tests/postgres.py), started once for the session: .url, .stop(), .start()."""
    from tests.postgres import PostgresServer, why_not
    reason = why_not()
    if reason:
        pytest.skip(f"no PostgreSQL server for this test: {reason}")
    server = PostgresServer()
    server.start()
    yield server
    server.close()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """A SQLAlchemy URL of a running PostgreSQL (psycopg driver); the server is started again if a test stopped it."""
    if not postgres_server.running():
        postgres_server.start()
    return postgres_server.url


@pytest.fixture
def postgres_database(postgres_url, postgres_server) -> str:
    """A URL of a new, empty database on the running PostgreSQL, for a test that must not see other tests' rows."""
    return postgres_server.new_database()


# Under pytest-xdist (pytest.ini's -n) the browser tests run in two lines, each file's tests one after another on one
# worker, while the other workers take the rest: a browser test mostly waits on a page, which a CPU-bound test beside
# it fills. Two lines of about equal length (their seconds on the idle 2-core machine, 2026-12-07); the class tests,
# which kill servers and time students, are apart from the long screenshot walk.
BROWSER_LINES = {"test_screenshots.py": 1, "test_browser.py": 1, "test_why_browser.py": 1,
                 "test_how_it_writes_browser.py": 1, "test_contributions_browser.py": 1,
                 "test_lesson_browser.py": 2, "test_share_browser.py": 2, "test_class_browser.py": 2,
                 "test_watch_it_learn.py": 2, "test_class_replicas_browser.py": 2}


def pytest_collection_modifyitems(items):
    """Puts each browser test in its line's xdist_group (a new browser test file joins the first line)."""
    for item in items:
        path = item.nodeid.replace("\\", "/").split("::")[0]
        if path.startswith("tests/browser/"):
            line = BROWSER_LINES.get(path.rsplit("/", 1)[-1], 1)
            item.add_marker(pytest.mark.xdist_group(f"browser-{line}"))
