"""Checkpoints and recorded results from before still load with today's code (issue 24), and a fine-tuning run's own
``config.yaml`` rebuilds the network it trained."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from aot_lib import train
from aot_lib.training import supervised
from aot_lib.training.builders import build_encoder
from aot_lib.training.probe import load_encoder
from aot_lib.training.runs import checkpoint_model
from helpers import make_imagefolder, tiny_config

RESULTS = Path(__file__).resolve().parent.parent / "results" / "cpu"


@pytest.mark.parametrize("record,trained_as,name,overrides", [
    ("cpu_aot_admm_cifar10", "pretrain", "aot_admm_tiny", {"img_size": 32, "embed_dim": 192, "depth": 6, "num_heads": 6}),
    # recorded before the fine-tuning's config stated its model (model.overrides: {} there): the model is the
    # pretraining's, read from its record beside this one (results/cpu/cpu_aot_admm_imagenette)
    ("cpu_aot_admm_imagenette_ft_cifar100", "finetune", "aot_admm_base",
     {"img_size": 128, "patch_size": 16, "embed_dim": 192, "depth": 6, "num_heads": 6}),
    ("cpu_vit_tiny_relu_kd", "distill", "vit_tiny_relu", {"img_size": 32, "embed_dim": 192, "depth": 6, "num_heads": 3}),
], ids=["pretraining", "fine-tuning", "distillation"])
def test_a_recorded_encoder_of_each_kind_loads(record, trained_as, name, overrides):
    path = RESULTS / record / "encoder.pt"
    encoder, ckpt = load_encoder(path)
    assert ckpt["trained_as"] == trained_as
    model = checkpoint_model(ckpt, path)
    assert model["name"] == name and model["overrides"] == overrides
    recorded = {k: v for k, v in ckpt["model"].items() if not k.startswith("head.")}
    loaded = encoder.state_dict()
    assert loaded.keys() == recorded.keys()
    assert all(torch.equal(loaded[k], recorded[k]) for k in recorded)  # every weight, bit for bit
    assert encoder.num_features == overrides["embed_dim"] and len(encoder.blocks) == overrides["depth"]


def test_finetune_records_and_validates_the_model_it_builds(tmp_path, monkeypatch):
    """The pretraining's model (width 24, its image size 16 not stated in its overrides) is fine-tuned by a config
    that names another model and another view size: what finetune validates is the checkpoint's model, and the
    run's config.yaml states it with its image size, so it rebuilds the network whose weights last.ckpt holds."""
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    data, out = make_imagefolder(tmp_path / "data"), tmp_path / "runs"
    pre_overrides = {"embed_dim": 24, "depth": 1, "num_heads": 2, "patch_size": 4}
    train.pretrain(tiny_config(data, out, "run.name=pre", "optim.max_steps=1", f"model.overrides={pre_overrides}"))
    validated = []
    check = supervised.validate_config
    monkeypatch.setattr(supervised, "validate_config", lambda cfg: validated.append(dict(cfg["model"])) or check(cfg))
    train.finetune(tiny_config(data, out, "run.name=ft", "views.global_size=8", "views.local_size=4",
                               f"finetune.checkpoint={out / 'pre' / 'last.ckpt'}"))
    stated = {"name": "aot_admm_tiny", "overrides": {"img_size": 16, **pre_overrides}, "compile": False}
    assert validated == [stated]
    recorded = yaml.safe_load((out / "ft" / "config.yaml").read_text())
    assert recorded["model"] == stated and recorded["views"]["global_size"] == 8
    state = torch.load(out / "ft" / "last.ckpt", weights_only=True)["model"]
    rebuilt = build_encoder(recorded, num_classes=2)
    rebuilt.load_state_dict(state, strict=True)  # every weight, the 4x4 position grid of 16 px included
    encoder, _ = load_encoder(out / "ft" / "last.ckpt")
    assert encoder.stem.pos_embed.shape == (1, 17, 24)
