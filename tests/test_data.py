"""Data loading (ImageFolder trees and zips, CIFAR from the offline copies) and batched multi-crop."""
import os
from pathlib import Path

import pytest
import torch

from aot_lib.augment import BatchedMultiCrop, MultiCropConfig, per_image_multicrop
from aot_lib.data import DataError, load_split
from helpers import make_imagefolder, zip_tree


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))


def test_imagefolder_folder_and_zip_agree(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=4, n_test=2)
    z = zip_tree(tree, tmp_path / "tiny.zip")
    a = load_split("imagefolder", "train", root=tree)
    b = load_split("imagefolder", "train", root=z)
    assert a.images.shape == (8, 3, 160, 160) and a.images.dtype == torch.uint8  # default 160 px
    assert a.classes == b.classes == ["cat", "dog"]
    assert torch.equal(a.labels, torch.tensor([0] * 4 + [1] * 4))
    assert torch.equal(a.images, b.images)
    native = load_split("imagefolder", "test", root=z, image_size=16)
    assert native.images.shape == (4, 3, 16, 16)
    cached = list((tmp_path / "cache" / "tensors").glob("tiny-test-16-*.pt"))
    assert len(cached) == 1  # decoded once, then read from the cache
    assert torch.equal(load_split("imagefolder", "test", root=z, image_size=16).images, native.images)


def test_relative_root_is_found_under_aot_data(tmp_path, monkeypatch):
    zip_tree(make_imagefolder(tmp_path / "tree", n_train=2, n_test=1), tmp_path / "sub.zip")
    monkeypatch.setenv("AOT_DATA", str(tmp_path))
    monkeypatch.chdir(tmp_path / "tree")
    assert len(load_split("imagefolder", "train", root="sub.zip", image_size=16)) == 4


def test_balanced_subset(tmp_path):
    data = load_split("imagefolder", "train", root=make_imagefolder(tmp_path / "t", n_train=5, n_test=1), image_size=16)
    sub = data.subset(4)
    assert len(sub) == 4 and sub.labels.tolist() == [0, 0, 1, 1]


def test_missing_data_says_how_to_get_it(tmp_path):
    with pytest.raises(DataError, match=r"cifar10 not found under .*AOT_DATA.*data\.download=true"):
        load_split("cifar10", "train", root=tmp_path)
    with pytest.raises(DataError, match="imagefolder root .* does not exist"):
        load_split("imagefolder", "train", root=tmp_path / "nope")
    with pytest.raises(DataError, match="unknown dataset 'svhn'"):
        load_split("svhn", "train", root=tmp_path)


def test_corrupt_zip_and_checksum(tmp_path):
    bad = tmp_path / "cifar10-broken.zip"
    bad.write_bytes(b"this is not a zip")
    with pytest.raises(DataError, match="not a readable zip"):
        load_split("cifar10", "train", root=tmp_path)
    good = zip_tree(make_imagefolder(tmp_path / "tree", n_train=2, n_test=1), tmp_path / "ok.zip")
    (tmp_path / "SHA256SUMS").write_text("0" * 64 + "  ok.zip\n")
    with pytest.raises(DataError, match="does not match its checksum"):
        load_split("imagefolder", "train", root=good)


def test_corrupt_image(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1)
    (tree / "train" / "cat" / "0000.png").write_bytes(b"garbage")
    with pytest.raises(DataError, match="cannot decode image .*0000.png"):
        load_split("imagefolder", "train", root=tree, image_size=16)


@pytest.mark.skipif(not (Path(os.environ.get("AOT_DATA", "")) / "cifar10-jpeg.zip").exists(),
                    reason="the offline CIFAR-10 copy ($AOT_DATA/cifar10-jpeg.zip) is not here")
def test_offline_cifar10_copy():
    test = load_split("cifar10", "test")
    assert test.images.shape == (10_000, 3, 32, 32)
    assert test.classes[:3] == ["airplane", "automobile", "bird"]
    assert torch.bincount(test.labels).tolist() == [1000] * 10


# ---------------------------------------------------------------------------- multi-crop

def _batch(b=6, size=32):
    return torch.randint(0, 256, (b, 3, size, size), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))


def test_multicrop_shapes_and_ranges():
    cfg = MultiCropConfig()
    views = BatchedMultiCrop(cfg)(_batch(), torch.Generator().manual_seed(0))
    assert [tuple(v.shape) for v in views] == [(6, 3, 32, 32)] * 2 + [(6, 3, 16, 16)] * 6
    mean, std = torch.tensor(cfg.mean).view(1, 3, 1, 1), torch.tensor(cfg.std).view(1, 3, 1, 1)
    for v in views:
        raw = v * std + mean
        assert raw.min() >= -1e-5 and raw.max() <= 1 + 1e-5
        assert torch.isfinite(v).all()


def test_multicrop_imagenet_recipe_with_blur():
    cfg = MultiCropConfig(n_global=2, n_local=2, global_size=128, local_size=64, blur_p=[1.0, 0.1, 0.5],
                          solarize_p=[0.0, 0.2, 0.0])
    views = BatchedMultiCrop(cfg)(_batch(3, 160), torch.Generator().manual_seed(0))
    assert [tuple(v.shape) for v in views] == [(3, 3, 128, 128)] * 2 + [(3, 3, 64, 64)] * 2


def test_multicrop_randomness_per_sample_and_view():
    same = torch.full((4, 3, 32, 32), 128, dtype=torch.uint8)
    same[:, :, :16] = 30  # structure, so that different crops differ
    views = BatchedMultiCrop(MultiCropConfig())(same, torch.Generator().manual_seed(0))
    g0 = views[0]
    assert not torch.allclose(g0[0], g0[1])  # identical images, different samples -> different views
    assert not torch.allclose(views[0], views[1])  # different views of the same images
    again = BatchedMultiCrop(MultiCropConfig())(same, torch.Generator().manual_seed(0))
    assert all(torch.equal(a, b) for a, b in zip(views, again))  # reproducible from the generator


def test_multicrop_rank_slices_match_the_global_batch():
    x, aug = _batch(8), BatchedMultiCrop(MultiCropConfig(blur_p=[1.0, 0.1, 0.5]))
    full = aug(x, torch.Generator().manual_seed(3))
    parts = [aug(x[i * 4:(i + 1) * 4], torch.Generator().manual_seed(3), global_batch=8, offset=i * 4) for i in range(2)]
    for v, (a, b) in enumerate(zip(*parts)):
        torch.testing.assert_close(torch.cat([a, b]), full[v])


def test_reference_pipeline_same_shapes():
    views = per_image_multicrop(MultiCropConfig())(_batch(2))
    assert [tuple(v.shape) for v in views] == [(2, 3, 32, 32)] * 2 + [(2, 3, 16, 16)] * 6


def test_multicrop_bad_input():
    with pytest.raises(ValueError, match=r"expected a uint8 batch \(B, 3, H, W\)"):
        BatchedMultiCrop(MultiCropConfig())(torch.rand(2, 3, 32, 32))
    with pytest.raises(ValueError, match=r"blur_p must be a number or \[first global"):
        BatchedMultiCrop(MultiCropConfig(blur_p=[0.1, 0.2]))(_batch(2))
