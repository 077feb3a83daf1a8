"""Checkpoint round trips, and a readable CheckpointError for every kind of broken folder."""
import json

import pytest
import torch

import core
from tests.helpers import tiny_model


def _inputs():
    g = torch.Generator().manual_seed(4)
    src = torch.randint(4, 200, (2, 7), generator=g)
    src[1, 4:] = 0
    return src, torch.randint(4, 200, (2, 5), generator=g)


@pytest.fixture
def saved(tmp_path, translation_model):
    folder = tmp_path / "ckpt"
    core.save_checkpoint(folder, translation_model.model, translation_model.tokenizer,
                         card={"name": "tiny", "note": "Grüße"}, dtype=torch.float32)
    return folder


def test_fp32_round_trip_is_exact(saved, translation_model):
    loaded = core.load_checkpoint(saved)
    assert isinstance(loaded, core.TranslationModel)
    assert loaded.cfg == translation_model.cfg
    assert loaded.card.to_dict() == {"name": "tiny", "note": "Grüße"}
    assert loaded.model.generator.weight is loaded.model.src_embed.weight      # still tied
    src, tgt = _inputs()
    with torch.no_grad():
        assert torch.equal(loaded.model(src, tgt), translation_model.model(src, tgt))
    assert loaded.translate("Grüße aus München", beam=1) == translation_model.translate("Grüße aus München", beam=1)


def test_fp16_round_trip_is_close(tmp_path, translation_model):
    core.save_checkpoint(tmp_path, translation_model.model, translation_model.tokenizer)   # fp16 by default
    loaded = core.load_checkpoint(tmp_path)
    assert next(loaded.model.parameters()).dtype == torch.float32
    src, tgt = _inputs()
    with torch.no_grad():
        a, b = loaded.model(src, tgt), translation_model.model(src, tgt)
    assert not torch.equal(a, b)                                # fp16 did round the weights
    assert torch.allclose(a, b, atol=2e-2 * b.abs().max().item())
    assert (tmp_path / "model.safetensors").stat().st_size < 0.6 * sum(
        p.numel() * 4 for p in core.checkpoint.unique_state_dict(translation_model.model).values())


def _truncate(folder):
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])


def _garbage(folder):
    (folder / "model.safetensors").write_bytes(b"\x00\xffnot a tensor file" * 50)


def _other_d_model(folder):
    cfg = json.loads((folder / "config.json").read_text())
    cfg["d_model"] = 64
    (folder / "config.json").write_text(json.dumps(cfg))


def _fewer_layers(folder):
    cfg = json.loads((folder / "config.json").read_text())
    cfg["N"] = 1
    (folder / "config.json").write_text(json.dumps(cfg))


def _bad_json(folder):
    (folder / "config.json").write_text('{"d_model": 32,')


def _unknown_key(folder):
    cfg = json.loads((folder / "config.json").read_text())
    cfg["n_heads"] = 4
    (folder / "config.json").write_text(json.dumps(cfg))


def _no_config(folder):
    (folder / "config.json").unlink()


def _no_weights(folder):
    (folder / "model.safetensors").unlink()


def _no_tokenizer(folder):
    (folder / "spm.model").unlink()


def _garbage_tokenizer(folder):
    (folder / "spm.model").write_bytes(b"garbage" * 20)


def _bad_card(folder):
    (folder / "card.json").write_text("not json at all")


@pytest.mark.parametrize("break_it, phrase", [
    (_truncate, "truncated or not a safetensors file"),
    (_garbage, "truncated or not a safetensors file"),
    (_other_d_model, "does not match"),
    (_fewer_layers, "unexpected"),
    (_bad_json, "not valid JSON"),
    (_unknown_key, "unknown config keys"),
    (_no_config, "has no config.json"),
    (_no_weights, "has no model.safetensors"),
    (_no_tokenizer, "no tokenizer"),
    (_garbage_tokenizer, "SentencePiece model could not be read"),
    (_bad_card, "not valid JSON"),
])
def test_broken_checkpoint_raises_readable_error(saved, break_it, phrase):
    core.load_checkpoint(saved)                                # fine before it is broken
    break_it(saved)
    with pytest.raises(core.CheckpointError, match=phrase):
        core.load_checkpoint(saved)


def test_missing_folder(tmp_path):
    with pytest.raises(core.CheckpointError, match="no checkpoint folder"):
        core.load_checkpoint(tmp_path / "does-not-exist")


def test_tokenizer_of_the_wrong_size(tmp_path, tokenizer):
    model = tiny_model(len(tokenizer) + 8)
    core.save_checkpoint(tmp_path, model, tokenizer)
    core.load_model(tmp_path)                                  # the weights alone are fine
    with pytest.raises(core.CheckpointError, match="do not belong together"):
        core.load_checkpoint(tmp_path)


def test_decoder_depth_has_one_name_and_old_configs_still_load(tmp_path, translation_model):
    """N_dec is an int after construction; a config.json saved with "N_dec": null (before) loads with N_dec = N
    and round-trips; one saved with 3 (the shipped checkpoints) keeps 3."""
    assert core.preset("tiny").N_dec == core.preset("tiny").N == 2 and core.preset("small").N_dec == 3
    assert not hasattr(core.preset("tiny"), "n_dec")
    core.save_checkpoint(tmp_path, translation_model.model, translation_model.tokenizer, dtype=torch.float32)
    config = json.loads((tmp_path / "config.json").read_text(encoding="utf-8"))
    assert config["N_dec"] == config["N"] == 2
    (tmp_path / "config.json").write_text(json.dumps({**config, "N_dec": None}), encoding="utf-8")   # as saved before
    old = core.load_checkpoint(tmp_path)
    assert old.cfg.N_dec == 2 and len(old.model.decoder) == 2 and old.cfg == translation_model.cfg
    assert core.TransformerConfig.from_dict(json.loads(old.cfg.to_json())) == old.cfg
    three = core.TransformerConfig.from_dict({**config, "N": 6, "N_dec": 3})
    assert (three.N, three.N_dec) == (6, 3) and json.loads(three.to_json())["N_dec"] == 3
