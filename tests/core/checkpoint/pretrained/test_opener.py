"""core/checkpoint/pretrained/opener.py: a model opened by its Hub id is downloaded and converted once, then found in
the explorer's cache with no network; a revision and a local folder are conversions of their own; processes
sharing the cache convert a model once and never see it half-written."""
import json
import subprocess
import sys
import threading
import time

import pytest
import torch
from filelock import FileLock

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-dev.txt)")

from core.checkpoint import read_card  # noqa: E402
from core.checkpoint.pretrained import (HFImportError, converted_models, is_pretrained_source,  # noqa: E402
                                        open_pretrained, pretrained_checkpoint)
from core.checkpoint.pretrained.opener import converted_dir, lock_file  # noqa: E402
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


# Two replicas of one server (two processes sharing the explorer's cache) open one model at the same moment.
OPEN_IN_A_PROCESS = """
import json, sys
from core.checkpoint.pretrained import pretrained_checkpoint
told = []
folder = pretrained_checkpoint(sys.argv[1], progress=lambda fraction, text: told.append(text))
print(json.dumps({"folder": str(folder), "told": told}))
"""


@pytest.mark.slow
def test_two_processes_opening_one_model_at_once_convert_it_once(hub):
    hub.slow["model.safetensors"] = 3.0            # the first download lasts long enough for the second to arrive
    procs = [subprocess.Popen([sys.executable, "-c", OPEN_IN_A_PROCESS, REPO], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    target = converted_dir() / "facebook--wmt19-tiny"
    while any(p.poll() is None for p in procs):    # meanwhile the folder is never there half-written
        if target.exists():
            assert {"config.json", "model.safetensors", "card.json"} <= {p.name for p in target.iterdir()}
        time.sleep(0.02)
    results = [json.loads(p.stdout.read().strip().splitlines()[-1]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert {r["folder"] for r in results} == {str(target)}
    converted = [r for r in results if any(t.startswith("Converting") for t in r["told"])]
    waited = [r for r in results if any(t.startswith("Another visitor or server") for t in r["told"])]
    assert len(converted) == 1 and len(waited) == 1 and converted != waited
    assert [path for method, path in hub.requests if method == "GET" and path.endswith("/model.safetensors")] \
        == [f"/{REPO}/resolve/{hub.commit(REPO)}/model.safetensors"]          # downloaded once
    assert converted_models() == [target] and not list(converted_dir().glob(".*"))
    assert open_pretrained(REPO).translate(SENTENCES[0])


@pytest.mark.slow
def test_a_conversion_waits_for_the_lock_and_clears_a_killed_ones_leftovers(hub):
    target = converted_dir() / "facebook--wmt19-tiny"
    killed = converted_dir() / ".facebook--wmt19-tiny.k1ll_ed0.tmp"      # as write_checkpoint names its temp folder
    other = converted_dir() / ".facebook--wmt19-tiny.en-de.a1b2c3d4.tmp"  # another direction's, still being written
    for folder in (killed, other):
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(b"half")
    told, done = [], []
    with FileLock(lock_file(target)):                # another process is converting it
        opener = threading.Thread(target=lambda: done.append(pretrained_checkpoint(
            REPO, progress=lambda fraction, text: told.append(text))))
        opener.start()
        time.sleep(1.0)
        assert not done and told == ["Another visitor or server is converting this model; waiting for it…"]
        assert killed.exists()
    opener.join(60)
    assert done == [target] and (target / "config.json").exists()
    assert not killed.exists() and other.exists()
