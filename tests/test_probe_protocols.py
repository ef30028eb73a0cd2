"""The linear-probe protocols: hyper-parameters chosen on a validation split of the training set only,
and the standard (augmented, SGD) protocol."""
import pytest
import torch

from aot_lib import train
from aot_lib.probe import select_linear_probe, standard_linear_probe, stratified_split
from helpers import make_imagefolder, tiny_config


def _blobs(n_per, classes=3, dim=8, seed=0, spread=1.0):
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(classes, dim, generator=g) * 3
    y = torch.arange(classes).repeat_interleave(n_per)
    return means[y] + spread * torch.randn(len(y), dim, generator=g), y


def test_stratified_split_is_disjoint_and_per_class():
    y = torch.tensor([0] * 10 + [1] * 20 + [2] * 5)
    tr, va = stratified_split(y, 0.2, seed=1)
    assert set(tr.tolist()).isdisjoint(va.tolist()) and len(tr) + len(va) == len(y)
    assert torch.bincount(y[va]).tolist() == [2, 4, 1]


def test_selection_never_looks_at_the_test_set():
    xtr, ytr = _blobs(40, spread=2.0)
    xte, yte = _blobs(20, seed=1, spread=2.0)
    grid = dict(lrs=[1e-4, 1e-2], weight_decays=[0.0, 1e-1], epochs=3, batch_size=32)
    a = select_linear_probe(xtr, ytr, xte, yte, **grid)
    b = select_linear_probe(xtr, ytr, xte, yte[torch.randperm(len(yte))], **grid)  # scrambled test labels
    assert (a["linear_lr"], a["linear_weight_decay"]) == (b["linear_lr"], b["linear_weight_decay"])
    assert a["linear_val_top1"] == b["linear_val_top1"] and len(a["linear_val_top1"]) == 4
    assert a["linear_top1"] > b["linear_top1"]  # the test score itself does see the labels


def test_single_setting_skips_the_validation_split():
    xtr, ytr = _blobs(20)
    r = select_linear_probe(xtr, ytr, xtr, ytr, 1e-2, 0.0, epochs=2)
    assert r["linear_val_top1"] is None and r["linear_lr"] == 1e-2


def test_quick_and_standard_protocols_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    data = make_imagefolder(tmp_path / "data")
    cfg = tiny_config(data, tmp_path / "runs", "optim.max_steps=1")
    train.pretrain(cfg)
    quick = train.probe(cfg)
    assert quick["protocol"].startswith("quick") and quick["linear_lr"] in (3e-4, 1e-3, 3e-3)
    assert quick["data"]["test"]["n_images"] == 16
    std = train.probe(tiny_config(data, tmp_path / "runs", "optim.max_steps=1", "probe.protocol=standard",
                                  "probe.epochs=2", "probe.standard_batch_size=8"))
    assert std["protocol"].startswith("standard") and 0 <= std["linear_top1"] <= 100


def test_standard_probe_learns_separable_colours(tmp_path, monkeypatch):
    """Class k is noise around a pure colour: even a random encoder's features separate them, so the
    standard protocol must reach far above chance (50 %) on the held-out images."""
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    from aot_lib.data import load_pair, normalization_stats
    from aot_lib.registry import create_model

    root = make_imagefolder(tmp_path / "data", n_train=32, n_test=16)
    tr, te = load_pair("imagefolder", root, image_size=16)
    torch.manual_seed(0)
    enc = create_model("aot_tiny", num_classes=0, img_size=16, patch_size=4, embed_dim=32, depth=1, num_heads=2)
    r = standard_linear_probe(enc, tr, te, 16, *normalization_stats("imagefolder"), epochs=10, lr=0.1, batch_size=16)
    assert r["linear_top1"] >= 90.0


def test_probe_grid_is_validated():
    from aot_lib.config import ConfigError, load_config

    assert load_config(None, ["probe.lr=[1e-3, 1e-2]"])["probe"]["lr"] == [1e-3, 1e-2]
    with pytest.raises(ConfigError, match="probe.lr must be a number > 0"):
        load_config(None, ["probe.lr=[1e-3, -1]"])
    with pytest.raises(ConfigError, match="probe.lr must be a number or a list"):
        load_config(None, ["probe.lr=[]"])
