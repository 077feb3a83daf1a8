"""core/checkpoint/pretrained/hub.py against a local imitation of the Hugging Face Hub (fake_hub.py, HF_ENDPOINT
pointed at it) serving tiny random models built here: what is refused before any weight is downloaded, offline use,
and damaged downloads. Nothing reaches the internet."""
import json
from collections import namedtuple

import pytest

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")

from core.checkpoint.pretrained import (HFImportError, Limits, converted_models, open_pretrained,  # noqa: E402
                                        pretrained_checkpoint)
from core.checkpoint.pretrained.opener import converted_dir  # noqa: E402
from tests.core.checkpoint.pretrained.conftest import REPO  # noqa: E402
from tests.core.checkpoint.pretrained.hf_models import SENTENCES  # noqa: E402

shutil_usage = namedtuple("usage", "total used free")    # what shutil.disk_usage returns


def nothing_half_made() -> bool:
    """No converted model and no conversion left behind in the explorer's cache."""
    return not converted_models() and not (converted_dir().exists() and any(converted_dir().iterdir()))


def test_offline_the_hugging_face_cache_is_enough(hub, tmp_path, monkeypatch):
    pretrained_checkpoint(REPO)
    hub.stop()
    monkeypatch.setenv("ATTN_EXPLORER_CACHE", str(tmp_path / "another-explorer-cache"))   # converted afresh
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert open_pretrained(REPO).translate(SENTENCES[0])
    with pytest.raises(HFImportError, match="cannot be downloaded now .HF_HUB_OFFLINE is set.* no copy"):
        pretrained_checkpoint("Helsinki-NLP/opus-mt-en-fr")


def test_no_network_and_no_copy_is_a_clear_message(hub):
    hub.stop()
    with pytest.raises(HFImportError, match="could not be reached.* no copy of it"):
        pretrained_checkpoint(REPO)
    assert nothing_half_made()


@pytest.mark.parametrize("damage, match", [("short", "Downloading 'facebook/wmt19-tiny' failed.*Consistency check"),
                                           ("corrupt", "truncated or damaged.* open it again")])
def test_a_damaged_download_is_a_clear_error_and_nothing_is_converted(hub, damage, match):
    getattr(hub, damage).add("model.safetensors")
    with pytest.raises(HFImportError, match=match):
        pretrained_checkpoint(REPO)
    assert nothing_half_made()


def test_unknown_repo(hub):
    with pytest.raises(HFImportError, match="There is no model 'facebook/nothing-here' on the Hugging Face Hub"):
        pretrained_checkpoint("facebook/nothing-here")
    with pytest.raises(HFImportError, match="neither a folder on this machine nor a Hugging Face model id"):
        pretrained_checkpoint("not an id")


def test_an_unsupported_architecture_is_refused_before_its_weights_come(hub, tmp_path):
    repo = tmp_path / "pegasus"
    repo.mkdir()
    (repo / "config.json").write_text(json.dumps({"model_type": "pegasus"}))
    (repo / "model.safetensors").write_bytes(b"never fetched")
    hub.repos["google/pegasus-tiny"] = repo
    with pytest.raises(HFImportError, match="'pegasus' model; the explorer reads Marian, M2M100 / NLLB, mBART-50, "
                                            "FSMT, T5"):
        pretrained_checkpoint("google/pegasus-tiny")
    assert hub.fetched() == {"config.json"} and nothing_half_made()


def test_a_pickle_only_repo_is_refused_and_nothing_is_downloaded(hub, fsmt_repo, tmp_path):
    repo = tmp_path / "pickles"
    repo.mkdir()
    for name in ("config.json", "vocab-src.json", "vocab-tgt.json", "merges.txt", "pytorch_model.bin"):
        (repo / name).write_bytes((fsmt_repo / name).read_bytes())
    hub.repos["someone/pickled"] = repo
    with pytest.raises(HFImportError, match="only as pytorch_model.bin: a Python pickle.*never downloads"):
        pretrained_checkpoint("someone/pickled")
    assert hub.fetched() == set() and not (fsmt_repo.parent / "code-ran").exists()


def test_a_model_over_the_limit_is_refused_before_it_downloads(hub):
    with pytest.raises(HFImportError, match="GB to download; this server allows at most 0.00 GB"):
        pretrained_checkpoint(REPO, limits=Limits(max_bytes=1000))
    assert "model.safetensors" not in hub.fetched() and nothing_half_made()


def test_a_model_bigger_than_the_free_disk_is_refused_before_it_downloads(hub, monkeypatch):
    monkeypatch.setattr("shutil.disk_usage", lambda folder: shutil_usage(total=10**9, used=10**9 - 1000, free=1000))
    with pytest.raises(HFImportError, match="GB of disk at .* is free. Free some space"):
        pretrained_checkpoint(REPO)
    assert "model.safetensors" not in hub.fetched() and nothing_half_made()


def test_an_id_from_before_owners_is_read_as_the_hubs_redirect_reads_it(tmp_path, monkeypatch):
    from core.checkpoint.pretrained.hub import hub_id
    assert hub_id(" t5-small ") == "google-t5/t5-small" and hub_id("google/mt5-small") == "google/mt5-small"
    assert hub_id("opus-mt-en-de") == "opus-mt-en-de"                     # no owner, and not one of those: as it is
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t5-small").mkdir()
    assert hub_id("t5-small") == "t5-small"                                # a folder here is that folder
