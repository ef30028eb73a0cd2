"""Mixed precision: one pretraining step of every family under ``bf16-mixed`` (CPU autocast) against ``32-true``."""
import csv

import pytest
import torch

from aot_lib import train
from helpers import make_imagefolder, tiny_config

FAMILIES = {
    "aot_admm_tiny": "{embed_dim: 32, depth: 2, num_heads: 2, patch_size: 4}",
    "crate_tiny": "{embed_dim: 32, depth: 2, num_heads: 2, patch_size: 4}",
    "aot_tiny": "{embed_dim: 32, depth: 2, num_heads: 2, patch_size: 4}",
    "vit_tiny": "{embed_dim: 32, depth: 2, num_heads: 2, patch_size: 4}",
    "vit_tiny_relu": "{embed_dim: 32, depth: 2, num_heads: 2, patch_size: 4}",
}


def _first_row(run):
    with open(run / "metrics.csv") as f:
        return {k: float(v) for k, v in next(csv.DictReader(f)).items() if v != ""}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_bf16_mixed_step_matches_float32(name, tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    data = make_imagefolder(tmp_path / "data")
    rows = {}
    for precision in ("32-true", "bf16-mixed"):
        cfg = tiny_config(data, tmp_path / "runs", f"run.name={precision}", "optim.max_steps=1", f"model.name={name}",
                          f"model.overrides={FAMILIES[name]}", f"fabric.precision={precision}", "fabric.accelerator=cpu")
        train.pretrain(cfg)
        rows[precision] = _first_row(tmp_path / "runs" / precision)
    full, half = rows["32-true"], rows["bf16-mixed"]
    # The first step's loss is computed at the same initial weights and views. bf16 keeps 8 significant
    # bits (spacing 2^-8 = 3.9e-3 relative); the encoder's and projector's matrix products compound that
    # to about 1e-2 in the embeddings, so the loss agrees to a few 1e-2, not to float32 rounding.
    assert half["loss"] == pytest.approx(full["loss"], rel=5e-2)
    assert half["sigreg_loss"] == pytest.approx(full["sigreg_loss"], rel=5e-2)
    # SIGReg itself runs in float32 under autocast: its logged value is not on bf16's grid (multiples of
    # 2^-4 between 8 and 16, 2^-3 between 16 and 32 ...), which a bf16 statistic would be.
    v = torch.tensor(half["sigreg_loss"], dtype=torch.float32)
    assert v.to(torch.bfloat16).float() != v
