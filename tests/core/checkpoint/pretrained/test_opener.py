"""core/checkpoint/pretrained/opener.py: a model opened by its Hub id is downloaded and converted once, then found in
the explorer's cache with no network; a revision and a local folder are conversions of their own."""
import pytest
import torch

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")

from core.checkpoint import read_card  # noqa: E402
from core.checkpoint.pretrained import (HFImportError, converted_models, is_pretrained_source,  # noqa: E402
                                        open_pretrained, pretrained_checkpoint)
from tests.core.checkpoint.pretrained.conftest import REPO  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import SENTENCES  # noqa: E402


def test_the_first_open_downloads_and_converts_the_second_needs_no_network(hub, fsmt_repo):
    told = []
    tm = open_pretrained(REPO, progress=lambda fraction, text: told.append((fraction, text)))
    assert hub.fetched() == {"config.json", "generation_config.json", "model.safetensors", "merges.txt",
                             "tokenizer_config.json", "vocab-src.json", "vocab-tgt.json"}
    assert not (fsmt_repo.parent / "code-ran").exists()
    assert tm.translate(SENTENCES[0]) and tm.card.extra["imported_from"]["hub"] == REPO
    assert tm.card.extra["imported_from"]["commit"] == hub.commit(REPO)
    assert [p.name for p in converted_models()] == ["facebook--wmt19-tiny"]
    fractions = [f for f, _ in told]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(text.startswith("Downloading") for _, text in told) and told[-1][1] == "Converted."
    hub.stop()
    again = open_pretrained(REPO)                     # the server is gone: from the explorer's cache
    assert again.translate(SENTENCES[0]) == tm.translate(SENTENCES[0])


def test_a_revision_is_its_own_conversion(hub):
    commit = hub.commit(REPO)
    folder = pretrained_checkpoint(REPO, revision=commit, dtype=torch.float32)
    assert folder.name == f"facebook--wmt19-tiny@{commit}"
    assert read_card(folder).extra["imported_from"]["revision"] == commit
    with pytest.raises(HFImportError, match="has no revision 'v9'"):
        pretrained_checkpoint(REPO, revision="v9")


def test_a_local_folder_is_converted_once_into_the_cache(hub, fsmt_repo):
    folder = pretrained_checkpoint(fsmt_repo)
    assert folder.name.startswith("wmt19-tiny--") and converted_models() == [folder]
    assert pretrained_checkpoint(fsmt_repo) == folder and not hub.requests         # the cache, and no network
    assert is_pretrained_source(fsmt_repo) and is_pretrained_source(REPO) and not is_pretrained_source(folder)
