"""core/checkpoint/pretrained/convert.py: the architecture read from config.json, readable errors before anything is
opened, and pickles refused unopened for every architecture. (Each architecture's agreement with transformers is
tested in test_marian.py, test_m2m100.py, test_mbart.py and test_fsmt.py.)"""
import json

import pytest
import torch

from core.checkpoint.pretrained import ARCHITECTURES, HFImportError
from core.checkpoint.pretrained import convert_folder as import_model
from core.checkpoint.pretrained.convert import architecture
from scripts.import_hf import main
from tests.core.checkpoint.pretrained.hf_models import Evil


def folder_with(tmp_path, config: dict, name: str = "download"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("model_type, name", [("marian", "Marian"), ("m2m_100", "M2M100 / NLLB"), ("mbart", "mBART-50"),
                                              ("fsmt", "FSMT")])
def test_the_architecture_comes_from_config_json(tmp_path, model_type, name):
    assert architecture(folder_with(tmp_path, {"model_type": model_type})).name == name


def test_other_architectures_are_named_in_the_error(tmp_path):
    with pytest.raises(HFImportError, match="'pegasus' model; the explorer reads Marian, M2M100 / NLLB, mBART-50, "
                                            "FSMT, T5 / mT5 / Flan-T5"):
        import_model(folder_with(tmp_path, {"model_type": "pegasus"}), tmp_path / "out")
    with pytest.raises(HFImportError, match="There is no folder .* hf download"):
        import_model(tmp_path / "nowhere", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(HFImportError, match="has no config.json"):
        import_model(tmp_path / "empty", tmp_path / "out")


@pytest.mark.parametrize("model_type", sorted(ARCHITECTURES))
def test_a_pickle_is_refused_unopened_with_the_way_to_safetensors(tmp_path, model_type):
    folder = folder_with(tmp_path, {"model_type": model_type})
    marker = tmp_path / "code-ran"
    torch.save({"payload": Evil(marker)}, folder / "pytorch_model.bin")
    with pytest.raises(HFImportError, match="pickle, which can run any code") as e:
        import_model(folder, tmp_path / "out")
    assert "weights_only=True" in str(e.value) and "hf download" in str(e.value)
    assert not marker.exists() and not (tmp_path / "out").exists()
    with pytest.raises(SystemExit, match="error: .*pytorch_model.bin"):
        main([str(folder), str(tmp_path / "out")])


def test_sharded_weights_and_missing_weights(tmp_path):
    folder = folder_with(tmp_path, {"model_type": "fsmt"})
    with pytest.raises(HFImportError, match="has no model.safetensors"):
        import_model(folder, tmp_path / "out")
    (folder / "model-00001-of-00002.safetensors").write_bytes(b"")
    with pytest.raises(HFImportError, match="split into several"):
        import_model(folder, tmp_path / "out")


def test_an_existing_output_folder_is_never_written_over(tmp_path):
    folder = folder_with(tmp_path, {"model_type": "fsmt"})
    (folder / "model.safetensors").write_bytes(b"not really")
    for name in ("vocab-src.json", "vocab-tgt.json", "merges.txt"):
        (folder / name).write_text("{}")
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(HFImportError, match="already exists"):
        import_model(folder, out)
    assert (out / "keep.txt").read_text() == "mine"
