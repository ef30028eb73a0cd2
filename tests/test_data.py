"""Data loading (ImageFolder trees and zips, CIFAR from the offline copies) and batched multi-crop."""
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig, per_image_multicrop
from aot_lib.data.datasets import (DATASET_STATS, DataError, ImageData, check_same_classes, describe_split, list_classes,
                          load_pair, load_split, normalization_stats)
from helpers import make_imagefolder, make_offline_zip, zip_tree


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
    # images stored at 16 px and asked for at 16 px: the decoded pixels themselves, class by class in file order
    files = sorted((tree / "test").glob("*/*.png"))
    want = torch.stack([torch.from_numpy(np.array(Image.open(f).convert("RGB"))).permute(2, 0, 1) for f in files])
    assert torch.equal(native.images, want) and native.labels.tolist() == [0, 0, 1, 1]
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
                    reason="the offline CIFAR-10 copy is not at $AOT_DATA/cifar10-jpeg.zip: set AOT_DATA to the "
                           "folder that holds it (.ci/run: ../shared/data)")
def test_offline_cifar10_copy():
    test = load_split("cifar10", "test")
    assert test.images.shape == (10_000, 3, 32, 32)
    assert test.classes[:3] == ["airplane", "automobile", "bird"]
    assert torch.bincount(test.labels).tolist() == [1000] * 10


# ---------------------------------------------------------------------------- multi-crop

def _batch(b=6, size=32):
    return torch.randint(0, 256, (b, 3, size, size), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))


def test_multicrop_default_recipe_on_a_gray_image():
    """The default CIFAR recipe, every random op live, on a constant gray image g = 100/255: crops, flips and blur
    average equal pixels, and contrast, saturation, hue and grayscale fix gray, so every view of every image is again
    a constant gray, of value b * g with brightness b in [0.6, 1.4] (1 when jitter is off), or 1 - b * g where that
    was solarised (b * g >= 1/2), which at this g lies in [1 - 1.4 g, 1/2], inside [0.6 g, 1.4 g] too. Float32: a
    constant is reproduced to a few roundings, 1e-6."""
    cfg = MultiCropConfig()
    g = 100 / 255
    views = BatchedMultiCrop(cfg)(torch.full((16, 3, 32, 32), 100, dtype=torch.uint8), torch.Generator().manual_seed(0))
    assert [tuple(v.shape) for v in views] == [(16, 3, 32, 32)] * 2 + [(16, 3, 16, 16)] * 6
    mean, std = torch.tensor(cfg.mean).view(1, 3, 1, 1), torch.tensor(cfg.std).view(1, 3, 1, 1)
    values = []
    for v in views:
        raw = v * std + mean
        value = raw[:, :1, :1, :1]
        torch.testing.assert_close(raw, value.expand_as(raw), atol=1e-6, rtol=0)  # constant and gray
        values += value.flatten().tolist()
    assert all(0.6 * g - 1e-6 <= val <= 1.4 * g + 1e-6 for val in values)
    assert sum(abs(val - g) < 1e-6 for val in values) > 0  # views without jitter keep g exactly
    assert len({round(val, 4) for val in values}) > 50  # and the brightness is drawn per image and view


def test_multicrop_imagenet_recipe_with_blur():
    """The ImageNet recipe's geometry (160-px images, 128-px global and 64-px local views) with blur and solarize
    forced on or off per view and the random crop fixed to the whole image: a global view is the bilinear resize to
    128 px, a local view the 2x area downsample (mipmap level 1 of a 2.5x shrink) resized bilinearly to 64 px, then
    torchvision's Gaussian blur with a kernel of about a tenth of the view (27 at 128 px, 13 at 64 px), or
    solarisation. Tolerance: float32 sums of up to 2 x 27 taps of values <= 1, ~1e-6; 1e-5 is ample."""
    import torch.nn.functional as F
    from torchvision.transforms.v2 import functional as TF

    cfg = MultiCropConfig(n_global=2, n_local=2, global_size=128, local_size=64, global_scale=(1.0, 1.0),
                          local_scale=(1.0, 1.0), ratio=(1.0, 1.0), flip_p=0.0, jitter_p=0.0, grayscale_p=0.0,
                          blur_p=[1.0, 0.0, 1.0], solarize_p=[0.0, 1.0, 0.0], blur_sigma=(1.5, 1.5),
                          mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    x = _batch(3, 160)
    views = BatchedMultiCrop(cfg)(x, torch.Generator().manual_seed(0))
    f = x.float() / 255
    big = F.interpolate(f, size=(128, 128), mode="bilinear", align_corners=False)
    small = F.interpolate(F.avg_pool2d(f, 2), size=(64, 64), mode="bilinear", align_corners=False)
    want = [TF.gaussian_blur(big, [27, 27], [1.5, 1.5]), torch.where(big >= 0.5, 1 - big, big),
            TF.gaussian_blur(small, [13, 13], [1.5, 1.5]), TF.gaussian_blur(small, [13, 13], [1.5, 1.5])]
    assert len(views) == 4
    for got, ref in zip(views, want):
        torch.testing.assert_close(got, ref, atol=1e-5, rtol=0)


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


def test_reference_pipeline_agrees_with_the_batched_one():
    """per_image_multicrop (torchvision, one image at a time) and BatchedMultiCrop compute the same views once their
    random choices are forced: whole-image crops, flips on, solarize on view 0, grayscale on view 1, blur with a
    fixed sigma on the local view, normalised with CIFAR's statistics. torchvision works in uint8: its blur rounds
    (half a step, 0.5/255), its grayscale truncates (up to one step) and weighs red 0.2989 instead of 0.299 (at most
    1e-4 * 255 = 0.03 step); 1.05 uint8 steps divided by the smallest std bound the difference in normalised units
    (the flip and solarisation are exact)."""
    from aot_lib.data.augment import CIFAR_STD

    cfg = MultiCropConfig(n_global=2, n_local=1, global_size=32, local_size=32, global_scale=(1.0, 1.0),
                          local_scale=(1.0, 1.0), ratio=(1.0, 1.0), flip_p=1.0, jitter_p=0.0, grayscale_p=[0.0, 1.0, 0.0],
                          solarize_p=[1.0, 0.0, 0.0], blur_p=[0.0, 0.0, 1.0], blur_sigma=(1.2, 1.2))
    x = _batch(4)
    reference = per_image_multicrop(cfg)(x)
    batched = BatchedMultiCrop(cfg)(x, torch.Generator().manual_seed(0))
    assert len(reference) == len(batched) == 3
    tol = (1.05 / 255) / min(CIFAR_STD)
    for v, (a, b) in enumerate(zip(reference, batched)):
        torch.testing.assert_close(a, b, atol=tol, rtol=0, msg=f"view {v}")
    # the views differ from one another: each forced op did something
    assert all((reference[i] - reference[j]).abs().max() > 10 * tol for i in range(3) for j in range(i))


def test_multicrop_bad_input():
    with pytest.raises(ValueError, match=r"expected a uint8 batch \(B, 3, H, W\)"):
        BatchedMultiCrop(MultiCropConfig())(torch.rand(2, 3, 32, 32))
    with pytest.raises(ValueError, match=r"blur_p must be a number or \[first global"):
        BatchedMultiCrop(MultiCropConfig(blur_p=[0.1, 0.2]))(_batch(2))


# ---------------------------------------------------------------------------- the decoded-image cache

def _entries(tmp_path):
    return sorted((tmp_path / "cache" / "tensors").glob("*.pt"))


def _bump_mtime(path: Path, seconds: int = 10):
    st = path.stat()  # an explicit new mtime: the filesystem's clock may not tick between two writes
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + seconds * 10**9))


def test_cache_sees_an_added_image(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=3, n_test=1)
    assert len(load_split("imagefolder", "train", root=tree, image_size=8)) == 6
    (tree / "train" / "cat" / "extra.png").write_bytes((tree / "train" / "cat" / "0000.png").read_bytes())
    data = load_split("imagefolder", "train", root=tree, image_size=8)
    assert len(data) == 7 and data.labels.tolist() == [0] * 4 + [1] * 3
    assert len(_entries(tmp_path)) == 1  # the stale entry was replaced, not kept beside the new one


def test_cache_sees_an_added_class(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1)
    assert load_split("imagefolder", "train", root=tree, image_size=8).classes == ["cat", "dog"]
    make_imagefolder(tree, classes=("ant",), n_train=2, n_test=1, seed=1)
    data = load_split("imagefolder", "train", root=tree, image_size=8)
    assert data.classes == ["ant", "cat", "dog"] and data.labels.tolist() == [0, 0, 1, 1, 2, 2]


def test_cache_rebuilt_when_an_image_is_rewritten_in_place(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1, size=8, fmt="bmp")  # BMP: size fixed by shape
    f = tree / "train" / "cat" / "0001.bmp"
    before = load_split("imagefolder", "train", root=tree, image_size=8)
    size = f.stat().st_size
    Image.fromarray(np.full((8, 8, 3), 7, np.uint8)).save(f)
    _bump_mtime(f)
    assert f.stat().st_size == size
    after = load_split("imagefolder", "train", root=tree, image_size=8)
    assert not torch.equal(before.images[1], after.images[1])
    assert (after.images[1] == 7).all() and torch.equal(before.images[0], after.images[0])


def test_cache_sees_a_changed_zip(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1)
    z = zip_tree(tree, tmp_path / "tiny.zip")
    assert load_split("imagefolder", "train", root=z, image_size=8).classes == ["cat", "dog"]
    make_imagefolder(tree, classes=("emu",), n_train=2, n_test=1, seed=2)
    zip_tree(tree, z)
    _bump_mtime(z)
    assert load_split("imagefolder", "train", root=z, image_size=8).classes == ["cat", "dog", "emu"]
    assert len(_entries(tmp_path)) == 1


def test_unusable_cache_entry_is_rebuilt(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1)
    good = load_split("imagefolder", "train", root=tree, image_size=8)
    (entry,) = _entries(tmp_path)
    entry.write_bytes(b"truncated")
    with pytest.warns(UserWarning, match="unusable"):
        again = load_split("imagefolder", "train", root=tree, image_size=8)
    assert torch.equal(again.images, good.images)
    blob = torch.load(entry, weights_only=True)  # an entry whose key does not match its name
    torch.save({**blob, "key": "0" * 64, "images": blob["images"] * 0}, entry)
    with pytest.warns(UserWarning, match="does not hold what its name promises"):
        again = load_split("imagefolder", "train", root=tree, image_size=8)
    assert torch.equal(again.images, good.images)


# ---------------------------------------------------------------------------- train / test class lists

def test_load_pair_rejects_a_class_in_one_split_only(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", classes=("cat", "dog", "emu"), n_train=2, n_test=1)
    (tree / "test" / "dog" / "0000.png").unlink()  # dog: train only
    make_imagefolder(tmp_path / "x", classes=("fox",), n_train=0, n_test=1)
    (tmp_path / "x" / "test" / "fox").rename(tree / "test" / "fox")  # fox: test only
    (tree / "train" / "cat" / "0000.png").write_bytes(b"garbage")  # checked before anything is decoded
    with pytest.raises(DataError, match=r"Only in train: dog\. Only in test: fox\..*shifts the label.*Fix: give both "
                                        r"splits the same class folders"):
        load_pair("imagefolder", root=tree, image_size=8)
    with pytest.raises(DataError, match=r"Only in train: none\. Only in test: fox"):
        check_same_classes(["cat"], ["cat", "fox"])


def test_load_pair_same_classes_and_subsets(tmp_path):
    z = zip_tree(make_imagefolder(tmp_path / "tree", n_train=4, n_test=3), tmp_path / "tiny.zip")
    train, test = load_pair("imagefolder", root=z, image_size=8, train_subset=4)
    assert train.classes == test.classes == ["cat", "dog"] == list_classes("imagefolder", "test", root=z)
    assert len(train) == 4 and len(test) == 6
    assert check_same_classes(train, test) == ["cat", "dog"]


# ---------------------------------------------------------------------------- provenance

def test_provenance_of_the_offline_cifar10_copy(tmp_path):
    make_offline_zip(tmp_path / "cifar10-jpeg.zip", "cifar10", fmt="jpg")
    data = load_split("cifar10", "test", root=tmp_path)
    p = data.provenance
    assert (p.dataset, p.reader, p.split, p.split_dir, p.n_images, p.image_size) == ("cifar10", "zip", "test", "test", 4, 8)
    assert p.key == "cifar10_jpeg" and p.label == "CIFAR-10 (official splits, JPEG q75 re-encoding)"
    assert p.path == str(tmp_path / "cifar10-jpeg.zip")
    assert describe_split("cifar10", "test", root=tmp_path) == p.replace(image_size=None)


def _entries_pickle(tmp_path, obj):
    torch.save(obj, tmp_path / "p.pt")
    return tmp_path / "p.pt"


def test_provenance_of_the_offline_cifar100_copy(tmp_path):
    make_offline_zip(tmp_path / "cifar100-png.zip", "cifar100", fmt="png", n_train=4, n_test=1)
    p = load_split("cifar100", "train", root=tmp_path).provenance
    assert p.key == "cifar100_heldout" and p.n_images == 8
    assert p.label == "CIFAR-100 (held-out split of the official train set: 8 train / 2 test)"
    sub = load_split("cifar100", "train", root=tmp_path).subset(4).provenance
    assert sub.key == "cifar100_heldout_sub4" and sub.n_images == 4 and sub.subset_of == 8
    assert sub.label.endswith("8 train / 2 test) — subset: 4 of 8 images")
    assert sub.as_dict()["label"] == sub.label and json.loads(json.dumps({"data": sub}))["data"] == sub  # run files
    assert torch.load(_entries_pickle(tmp_path, {"data": sub}), weights_only=True)["data"] == sub  # checkpoints


def test_provenance_is_detected_not_guessed(tmp_path):
    make_offline_zip(tmp_path / "cifar10-jpeg.zip", "cifar10", fmt="png")  # right name, wrong format
    p = describe_split("cifar10", "train", root=tmp_path)
    assert p.key == "cifar10_zip_cifar10_jpeg" and p.label == "CIFAR-10 (ImageFolder zip cifar10-jpeg.zip; provenance unknown)"
    make_offline_zip(tmp_path / "other" / "cifar100-extra.zip", "cifar100", fmt="png")  # right structure, other name
    assert describe_split("cifar100", "train", root=tmp_path / "other").label.endswith("provenance unknown)")
    nette = make_offline_zip(tmp_path / "imagenette160-subset.zip", "imagenette160", fmt="jpg", test_dir="val")
    p = describe_split("imagefolder", "test", root=nette)
    assert (p.key, p.split_dir) == ("imagenette160_subset", "val")
    assert p.label == "Imagenette-160 subset (6 train / 4 val, 2 ImageNet classes)"
    tree = make_imagefolder(tmp_path / "My Tree", n_train=1, n_test=1)
    p = describe_split("imagefolder", "train", root=tree)
    assert (p.reader, p.key, p.label) == ("folder", "my_tree", f"ImageFolder folder {tree}")
    p = describe_split("imagefolder", "train", root=zip_tree(tree, tmp_path / "tiny.zip"))
    assert (p.reader, p.key, p.label) == ("zip", "tiny", "ImageFolder zip tiny.zip")


def test_provenance_of_torchvision_originals(tmp_path, monkeypatch):
    import aot_lib.data.datasets as data_mod

    (tmp_path / "cifar-10-batches-py").mkdir()
    fake = (torch.zeros(3, 3, 32, 32, dtype=torch.uint8), torch.tensor([0, 1, 2]), ["a", "b", "c"])
    monkeypatch.setattr(data_mod, "_from_torchvision", lambda *a: fake)  # torchvision checks the real files' md5
    p = load_split("cifar10", "train", root=tmp_path).provenance
    assert (p.reader, p.key, p.label, p.n_images) == ("torchvision", "cifar10", "CIFAR-10 (official)", 3)


def test_hand_made_imagedata_has_a_provenance():
    d = ImageData(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), torch.tensor([0, 1]), ["a", "b"], "mine")
    assert (d.provenance.reader, d.provenance.n_images, d.provenance.label) == ("memory", 2, "in-memory images (mine)")


@pytest.mark.skipif(not (Path(os.environ.get("AOT_DATA", "")) / "cifar100-png.zip").exists(),
                    reason="the offline copies are not at $AOT_DATA/cifar10-jpeg.zip and cifar100-png.zip: set "
                           "AOT_DATA to the folder that holds them (.ci/run: ../shared/data)")
def test_provenance_of_the_real_offline_copies():
    p10 = describe_split("cifar10", "test")
    assert (p10.key, p10.n_images, p10.label) == ("cifar10_jpeg", 10_000, "CIFAR-10 (official splits, JPEG q75 re-encoding)")
    p100 = describe_split("cifar100", "train")
    assert (p100.key, p100.n_images) == ("cifar100_heldout", 40_000)
    assert p100.label == "CIFAR-100 (held-out split of the official train set: 40,000 train / 10,000 test)"
    assert len(list_classes("cifar100", "test")) == 100


# ---------------------------------------------------------------------------- normalisation statistics

def test_normalization_stats_have_one_home():
    from aot_lib.data import augment

    assert normalization_stats("cifar100") == ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762))
    assert normalization_stats("imagefolder") == normalization_stats("imagenet") == DATASET_STATS["imagenet"]
    assert (augment.CIFAR_MEAN, augment.CIFAR_STD) == normalization_stats("cifar10") == DATASET_STATS["cifar10"]
    assert MultiCropConfig().mean == augment.CIFAR_MEAN
    with pytest.raises(DataError, match="no normalisation statistics for dataset 'svhn'"):
        normalization_stats("svhn")
