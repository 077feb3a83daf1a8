"""What the tests of the download code share: a tiny FSMT model's repo, served by a local imitation of the Hub."""
import pytest
import torch

from tests.core.checkpoint.pretrained.fake_hub import serving
from tests.core.checkpoint.pretrained.hf_models import Evil, build_fsmt

REPO = "facebook/wmt19-tiny"


@pytest.fixture(scope="module")
def fsmt_repo(tmp_path_factory):
    """A tiny FSMT model's folder as its Hub repo has it, with a pickled and a TensorFlow copy of its weights too."""
    folder = build_fsmt(tmp_path_factory.mktemp("repos") / "wmt19-tiny")
    torch.save({"payload": Evil(folder.parent / "code-ran")}, folder / "pytorch_model.bin")
    (folder / "tf_model.h5").write_bytes(b"not for us")
    return folder


@pytest.fixture
def hub(fsmt_repo, tmp_path, monkeypatch):
    """A running FakeHub with REPO, and this test's own Hugging Face cache and explorer cache."""
    with serving({REPO: fsmt_repo}, monkeypatch, tmp_path) as fake:
        yield fake
