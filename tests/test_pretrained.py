"""Encoders kept as model.safetensors + config.json (aot_lib.models.pretrained): a round trip that is bitwise, a hash that
is checked before loading, and files that are refused with one line instead of being read."""
import hashlib
import json

import pytest
import torch

import aot_lib
from aot_lib import train
from aot_lib.models.pretrained import CONFIG_NAME, WEIGHTS_NAME, PretrainedError, save_pretrained
from aot_lib.models.registry import from_pretrained
from aot_lib.training.recording import export_checkpoint
from helpers import CodeOnUnpickle, make_imagefolder, raises_exactly, tiny_config

ARGS = {"img_size": 16, "patch_size": 4, "embed_dim": 16, "depth": 2, "num_heads": 2, "num_classes": 3}


@pytest.fixture
def saved(tmp_path):
    torch.manual_seed(0)
    model = aot_lib.create_model("aot_admm_tiny", **ARGS)
    return model, save_pretrained(model, tmp_path / "enc", "aot_admm_tiny", ARGS, run="r", seed=4)


def test_round_trip_is_bitwise_and_the_config_says_what_was_saved(saved):
    model, folder = saved
    config = json.loads((folder / CONFIG_NAME).read_text())
    assert config == {"format": 1, "architecture": "aot_admm_tiny", "model_args": ARGS,
                      "sha256": hashlib.sha256((folder / WEIGHTS_NAME).read_bytes()).hexdigest(), "run": "r", "seed": 4}
    for loaded in (from_pretrained(folder), aot_lib.create_model("aot_admm_tiny", pretrained=folder)):
        assert loaded.state_dict().keys() == model.state_dict().keys()
        assert all(torch.equal(loaded.state_dict()[k], v) for k, v in model.state_dict().items())
        x = torch.randn(2, 3, 16, 16)
        assert torch.equal(loaded(x), model.eval()(x))
        assert not loaded.training


def test_a_new_head_keeps_every_other_weight(saved):
    model, folder = saved
    five = from_pretrained(folder, num_classes=5)
    assert five.head.fc.weight.shape == (5, 16)
    body = {k: v for k, v in model.state_dict().items() if not k.startswith("head.")}
    assert all(torch.equal(five.state_dict()[k], v) for k, v in body.items())


def test_a_changed_byte_is_refused_before_loading(saved):
    _, folder = saved
    weights = folder / WEIGHTS_NAME
    recorded = json.loads((folder / CONFIG_NAME).read_text())["sha256"]
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of the last tensor
    weights.write_bytes(bytes(data))
    now = hashlib.sha256(bytes(data)).hexdigest()
    with raises_exactly(PretrainedError, f"{weights} does not match the sha256 in config.json ({now[:12]}... vs "
                                         f"{recorded[:12]}...): the file was changed or damaged; copy or export it again"):
        from_pretrained(folder)


def test_a_pickle_in_place_of_safetensors_is_refused_and_never_run(saved, tmp_path):
    _, folder = saved
    weights, marker = folder / WEIGHTS_NAME, tmp_path / "ran"
    torch.save({"x": CodeOnUnpickle(marker)}, weights)
    config = json.loads((folder / CONFIG_NAME).read_text())
    config["sha256"] = hashlib.sha256(weights.read_bytes()).hexdigest()  # the hash agrees: only the format is wrong
    (folder / CONFIG_NAME).write_text(json.dumps(config))
    with pytest.raises(PretrainedError) as e:
        from_pretrained(folder)
    assert str(e.value).startswith(f"{weights} is not a safetensors file (")
    assert str(e.value).endswith("); export it with aot_lib.models.pretrained.save_pretrained") and "\n" not in str(e.value)
    assert not marker.exists()


def test_refusals_name_the_folder_and_the_fix(saved, tmp_path):
    _, folder = saved
    with raises_exactly(ValueError, f"{folder} holds a aot_admm_tiny, not a crate_tiny; call "
                                    "create_model('aot_admm_tiny', pretrained=...) or aot_lib.from_pretrained"):
        aot_lib.create_model("crate_tiny", pretrained=folder)
    with raises_exactly(PretrainedError, f"{tmp_path} is not a pretrained folder (no config.json); give the folder "
                                         "aot_lib.models.pretrained.save_pretrained or `aot record` wrote"):
        from_pretrained(tmp_path)
    (folder / WEIGHTS_NAME).unlink()
    with raises_exactly(PretrainedError, f"{folder} has config.json but no model.safetensors; copy the weights beside it"):
        from_pretrained(folder)


def test_export_of_a_training_checkpoint_loads_back_the_trained_encoder(tmp_path, monkeypatch):
    from aot_lib.training.runs import encoder_state_dict, load_checkpoint

    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    cfg = tiny_config(make_imagefolder(tmp_path / "data"), tmp_path / "runs", "optim.max_steps=2")
    train.pretrain(cfg)
    ckpt = tmp_path / "runs" / "tiny" / "last.ckpt"
    folder = export_checkpoint(ckpt, tmp_path / "encoder", commit="abc")
    config = json.loads((folder / CONFIG_NAME).read_text())
    assert config["architecture"] == "aot_admm_tiny" and config["commit"] == "abc" and config["step"] == 2
    assert config["model_args"] == {"embed_dim": 32, "depth": 1, "num_heads": 2, "patch_size": 4, "img_size": 16,
                                    "num_classes": 0}
    want = encoder_state_dict(load_checkpoint(ckpt))
    got = from_pretrained(folder).state_dict()
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)
