"""The linear-probe protocols: hyper-parameters chosen on a validation split of the training set only,
and the standard (augmented, SGD) protocol."""
import pytest
import torch

from aot_lib import train
from aot_lib.training.probe import select_linear_probe, standard_linear_probe, stratified_split
from helpers import make_imagefolder, tiny_config, top1_from_run


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


def test_validation_only_probe_reads_no_test_image_and_scores_the_probes_split(tmp_path, monkeypatch):
    import shutil

    from aot_lib.training.probe import knn_probe

    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    data = make_imagefolder(tmp_path / "data")
    cfg = tiny_config(data, tmp_path / "runs", "optim.max_steps=1", "probe.test=false", "probe.val_fraction=0.25")
    train.pretrain(cfg)
    shutil.rmtree(data / "test")  # a sweep's probe must not need the test split at all
    r = train.probe(cfg)
    assert "linear_top1" not in r and "knn_top1" not in r and r["test_images"] == 0 and r["data"]["test"] is None
    feats = torch.load(tmp_path / "runs" / "tiny" / r["feature_cache"], weights_only=True)
    assert set(feats) == {"train"}
    trf, y = feats["train"]
    pc = cfg["probe"]
    want = select_linear_probe(trf, y, None, None, pc["lr"], 0.0, 0.25, epochs=pc["epochs"], batch_size=pc["batch_size"])
    assert {k: r[k] for k in want} == want and set(want) == {"linear_lr", "linear_weight_decay", "linear_val_top1",
                                                            "linear_val_best", "linear_val_fraction", "linear_lr_grid"}
    assert r["linear_val_best"] == max(r["linear_val_top1"].values()) and len(r["linear_val_top1"]) == 3
    tr, va = stratified_split(y, 0.25, seed=0)
    assert r["knn_val_top1"] == knn_probe(trf[tr], y[tr], trf[va], y[va], k=3, temperature=pc["knn_t"])["knn_top1"]


def test_quick_and_standard_protocols_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    data = make_imagefolder(tmp_path / "data")
    cfg = tiny_config(data, tmp_path / "runs", "optim.max_steps=1")
    train.pretrain(cfg)
    quick = train.probe(cfg)
    assert quick["protocol"].startswith("quick") and quick["linear_lr"] in (1e-3, 3e-3, 1e-2)
    assert quick["data"]["test"]["n_images"] == 16
    std = train.probe(tiny_config(data, tmp_path / "runs", "optim.max_steps=1", "probe.protocol=standard",
                                  "probe.epochs=4", "probe.standard_batch_size=8"))
    # the colour classes are separable (as below): four epochs of the standard protocol classify every test image
    assert std["protocol"].startswith("standard") and std["linear_top1"] == 100.0


def test_standard_probe_learns_separable_colours(tmp_path, monkeypatch):
    """Class k is noise around a pure colour: even a random encoder's features separate them, so the
    standard protocol must reach far above chance (50 %) on the held-out images."""
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    from aot_lib.data.datasets import load_pair, normalization_stats
    from aot_lib.models.registry import create_model

    root = make_imagefolder(tmp_path / "data", n_train=32, n_test=16)
    tr, te = load_pair("imagefolder", root, image_size=16)
    torch.manual_seed(0)
    enc = create_model("aot_tiny", num_classes=0, img_size=16, patch_size=4, embed_dim=32, depth=1, num_heads=2)
    r = standard_linear_probe(enc, tr, te, 16, *normalization_stats("imagefolder"), epochs=10, lr=0.1, batch_size=16)
    assert r["linear_top1"] >= 90.0


def test_probe_grid_is_validated():
    from aot_lib.training.config import ConfigError, load_config

    assert load_config(None, ["probe.lr=[1e-3, 1e-2]"])["probe"]["lr"] == [1e-3, 1e-2]
    with pytest.raises(ConfigError, match="probe.lr must be a number > 0"):
        load_config(None, ["probe.lr=[1e-3, -1]"])
    with pytest.raises(ConfigError, match="probe.lr must be a number or a list"):
        load_config(None, ["probe.lr=[]"])


def test_mix_batch_targets_match_the_pixels():
    """Mixup: pixels and targets mixed with the same weight; CutMix: the target weight is the kept area."""
    from aot_lib.training.supervised import mix_batch

    g = torch.Generator().manual_seed(0)
    x = torch.stack([torch.full((3, 8, 8), float(k)) for k in range(4)])
    y = torch.tensor([0, 1, 2, 3])
    mx, t = mix_batch(x, y, 4, mixup=1.0, cutmix=0.0, g=g)
    lam = t[0, 0].item()  # image 0 mixed with image 3 (the batch reversed)
    torch.testing.assert_close(mx[0], torch.full((3, 8, 8), lam * 0 + (1 - lam) * 3))
    assert t[0, 3].item() == pytest.approx(1 - lam) and torch.allclose(t.sum(1), torch.ones(4))
    cx, t = mix_batch(x, y, 4, mixup=0.0, cutmix=1.0, g=g)
    kept = (cx[0] == 0).float().mean().item()
    assert t[0, 0].item() == pytest.approx(kept) and t[0, 3].item() == pytest.approx(1 - kept)


def test_layer_decay_groups():
    from aot_lib.training.optim import param_groups
    from aot_lib.models.registry import create_model

    m = create_model("aot_tiny", embed_dim=16, depth=2, num_heads=2, patch_size=4, img_size=8, num_classes=3)
    groups = param_groups(m, 0.05, layer_decay=0.5, lr=1.0)
    lr_of = {id(p): g["lr"] for g in groups for p in g["params"]}
    named = dict(m.named_parameters())
    assert lr_of[id(named["head.fc.weight"])] == 1.0  # depth + 1: full rate
    assert lr_of[id(named["blocks.1.mssa.qkv.weight"])] == 0.5
    assert lr_of[id(named["blocks.0.mssa.qkv.weight"])] == 0.25
    assert lr_of[id(named["stem.pos_embed"])] == 0.125
    assert sum(len(g["params"]) for g in groups) == len(named)


def test_finetune_with_every_regulariser(tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    data = make_imagefolder(tmp_path / "data")
    vit = "model.overrides={depth: 1, embed_dim: 24, num_heads: 2, patch_size: 4}"
    r = train.finetune(tiny_config(data, tmp_path / "runs", "model.name=vit_tiny", vit, "finetune.mixup=0.8",
                                   "finetune.cutmix=1.0", "finetune.layer_decay=0.75", "finetune.randaugment=true"))
    # the reported accuracy is the saved weights' on the test images, recomputed here from the files
    assert r["top1"] == top1_from_run(tmp_path / "runs" / "tiny", data) and r["steps"] == 4


def test_randaugment_is_torchvisions_per_image_before_the_crop(tmp_path, monkeypatch):
    """finetune.randaugment=true: the uint8 batch the crop receives at step s is the plain run's batch with
    torchvision's RandAugment (its defaults: 2 ops, magnitude 9) applied image by image, drawn from the
    global RNG seeded with run.seed * 1_000_003 + s (so a resumed run augments the same way); off, the crop
    receives the training images unchanged."""
    from torchvision.transforms import v2

    import aot_lib.training.supervised as S

    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    data = make_imagefolder(tmp_path / "data")
    seen = {"plain": [], "ra": []}
    batches = []  # the batches of the run in progress (rebound per run below)
    real = S.BatchedMultiCrop.forward

    def record(self, images, *a, **k):
        batches.append(images.clone())
        return real(self, images, *a, **k)

    monkeypatch.setattr(S.BatchedMultiCrop, "forward", record)
    vit = "model.overrides={depth: 1, embed_dim: 24, num_heads: 2, patch_size: 4}"
    for run in ("plain", "ra"):
        batches = seen[run]
        train.finetune(tiny_config(data, tmp_path / "runs", f"run.name={run}", "model.name=vit_tiny", vit, "run.seed=3",
                                   f"finetune.randaugment={str(run == 'ra').lower()}"))
    assert len(seen["plain"]) == len(seen["ra"]) == 4  # 32 images, batch 8, one epoch
    train_images = S.load_train_test(tiny_config(data, tmp_path / "runs"))[0].images
    ra = v2.RandAugment(num_ops=2, magnitude=9)
    for step, (plain, augmented) in enumerate(zip(seen["plain"], seen["ra"])):
        assert all(any(torch.equal(img, t) for t in train_images) for img in plain)  # the plain run: training images
        torch.manual_seed(3 * 1_000_003 + step)
        want = torch.stack([ra(img) for img in plain])
        assert augmented.dtype == torch.uint8 and torch.equal(augmented, want), step
        assert not torch.equal(augmented, plain)  # the batch really changed
