"""What the data readers compute, value by value: torchvision's CIFAR pickles, the resize and centre crop,
the cache's validity rules and the exact wording of every refusal (mutmut survivors in data.py).

torchvision's CIFAR readers are exercised for real on tiny pickles laid out as the official archives are;
only the archives' MD5 sums (class attributes that name the official files) point at the tiny ones, and a
"download" writes them instead of reaching the network.
"""
import hashlib
import os
import pickle
import re
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import aot_lib.data.datasets as data_mod
from aot_lib.data.datasets import (DataError, ImageData, Provenance, check_same_classes, data_root, describe_split,
                          list_classes, load_pair, load_split, normalization_stats)
from helpers import CodeOnUnpickle, make_imagefolder, make_offline_zip, zip_tree


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------- torchvision's CIFAR pickles

def _raw(n: int, seed: int) -> np.ndarray:
    """``n`` images as the official pickles store them: one row of 3072 bytes each, channel-major."""
    return np.random.default_rng(seed).integers(0, 256, (n, 3 * 32 * 32), dtype=np.uint8)


CIFAR10_NAMES = ["plane", "car", "bird"]
CIFAR100_NAMES = ["apple", "bee", "cup", "dog"]


def _write_cifar(root: Path, name: str) -> dict:
    """Tiny stand-ins for the official ``cifar-10-batches-py/`` or ``cifar-100-python/`` files."""
    import torchvision

    if name == "cifar10":
        folder = root / "cifar-10-batches-py"
        folder.mkdir(parents=True, exist_ok=True)
        train = {f"data_batch_{k}": (_raw(2, k), [k % 3, (k + 1) % 3]) for k in range(1, 6)}
        test = {"test_batch": (_raw(3, 9), [2, 0, 1])}
        for fname, (x, y) in {**train, **test}.items():
            (folder / fname).write_bytes(pickle.dumps({"data": x, "labels": y}))
        (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": CIFAR10_NAMES}))
        cls, meta = torchvision.datasets.CIFAR10, "batches.meta"
    else:
        folder = root / "cifar-100-python"
        folder.mkdir(parents=True, exist_ok=True)
        train, test = {"train": (_raw(5, 1), [3, 0, 1, 2, 3])}, {"test": (_raw(2, 2), [1, 0])}
        for fname, (x, y) in {**train, **test}.items():
            (folder / fname).write_bytes(pickle.dumps({"data": x, "fine_labels": y, "coarse_labels": [0] * len(y)}))
        (folder / "meta").write_bytes(pickle.dumps({"fine_label_names": CIFAR100_NAMES, "coarse_label_names": ["x"]}))
        cls, meta = torchvision.datasets.CIFAR100, "meta"
    return {"cls": cls, "folder": folder, "train": train, "test": test, "meta": meta}


def _trust(monkeypatch, files: dict) -> None:
    """Point torchvision's expected MD5 sums at the tiny files (its integrity check then runs for real)."""
    cls, folder = files["cls"], files["folder"]
    monkeypatch.setattr(cls, "train_list", [[f, _md5(folder / f)] for f in files["train"]])
    monkeypatch.setattr(cls, "test_list", [[f, _md5(folder / f)] for f in files["test"]])
    monkeypatch.setattr(cls, "meta", {**cls.meta, "md5": _md5(folder / files["meta"])})


def _expected(split_files: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The images (N, 3, 32, 32) and labels, read from the pickled rows by hand."""
    x = np.concatenate([v[0] for v in split_files.values()]).reshape(-1, 3, 32, 32)
    y = sum((list(v[1]) for v in split_files.values()), [])
    return torch.from_numpy(x), torch.tensor(y)


@pytest.mark.parametrize("name,names", [("cifar10", CIFAR10_NAMES), ("cifar100", CIFAR100_NAMES)])
def test_torchvision_pickles_read_channel_major_with_their_labels_and_classes(tmp_path, monkeypatch, name, names):
    files = _write_cifar(tmp_path, name)
    _trust(monkeypatch, files)
    for split in ("train", "test"):
        data = load_split(name, split, root=tmp_path)
        images, labels = _expected(files[split])
        assert data.images.dtype == torch.uint8 and data.images.is_contiguous()
        assert torch.equal(data.images, images) and torch.equal(data.labels, labels)
        assert data.classes == names
        p = data.provenance
        assert (p.dataset, p.reader, p.path, p.split, p.split_dir, p.n_images, p.key, p.image_size) == (
            name, "torchvision", str(files["folder"]), split, "", len(labels), name, 32)
        assert p.label == {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}[name] + " (official)"
        assert describe_split(name, split, root=tmp_path) == p
    assert list_classes(name, "test", root=tmp_path) == names  # from the meta file, nothing decoded
    train, test = load_pair(name, root=tmp_path)
    assert train.classes == test.classes == names and len(test) == len(_expected(files["test"])[1])


def test_torchvision_images_resized_to_a_requested_size(tmp_path, monkeypatch):
    files = _write_cifar(tmp_path, "cifar10")
    x = np.zeros((1, 3, 32, 32), np.uint8)
    x[0, 0] = 255  # red everywhere: any antialiased resize keeps a constant image constant
    x[0, 2, :, 16:] = 200  # blue on the right half only: the resize keeps the split at the middle
    (files["folder"] / "test_batch").write_bytes(pickle.dumps({"data": x.reshape(1, -1), "labels": [1]}))
    _trust(monkeypatch, files)
    data = load_split("cifar10", "test", root=tmp_path, image_size=16)
    assert data.images.shape == (1, 3, 16, 16) and data.images.dtype == torch.uint8
    assert data.provenance.image_size == 16
    assert (data.images[0, 0] == 255).all() and (data.images[0, 1] == 0).all()  # no overshoot past 255 or 0
    blue = data.images[0, 2].int()
    # the antialiased bicubic kernel reaches 4 source pixels (2 output pixels) across the edge at 16
    assert (blue[:, :6] == 0).all() and (blue[:, 10:] == 200).all()
    reference = torch.nn.functional.interpolate(torch.from_numpy(x).float(), size=16, mode="bicubic", antialias=True)
    assert torch.equal(data.images, reference.round().clamp(0, 255).to(torch.uint8))
    assert torch.equal(load_split("cifar10", "test", root=tmp_path, image_size=32).images, torch.from_numpy(x))


def test_torchvision_download_fetches_then_reads(tmp_path, monkeypatch):
    import torchvision.datasets.cifar as tv_cifar

    calls = []

    def fake_download(url, root, filename=None, md5=None, **kw):  # what the network would leave on disk
        calls.append(url)
        _trust(monkeypatch, _write_cifar(Path(root), "cifar10"))

    monkeypatch.setattr(tv_cifar, "download_and_extract_archive", fake_download)
    with pytest.raises(DataError, match="cifar10 not found"):
        load_split("cifar10", "train", root=tmp_path)  # download=False never fetches
    assert not calls
    data = load_split("cifar10", "train", root=tmp_path, download=True)
    assert len(calls) == 1 and len(data) == 10 and data.classes == CIFAR10_NAMES


def test_torchvision_failure_is_one_data_error(tmp_path):
    (tmp_path / "cifar-10-batches-py").mkdir()  # the folder, but not the files
    with pytest.raises(DataError, match=r"^torchvision could not load cifar10 from .*: Dataset not found or corrupted"):
        load_split("cifar10", "train", root=tmp_path)


def test_torchvision_folder_is_preferred_to_a_zip_beside_it(tmp_path, monkeypatch):
    _trust(monkeypatch, _write_cifar(tmp_path, "cifar10"))
    zip_tree(make_imagefolder(tmp_path / "tree", n_train=1, n_test=1, size=8), tmp_path / "cifar10-x.zip")
    assert load_split("cifar10", "test", root=tmp_path).provenance.reader == "torchvision"


# ---------------------------------------------------------------------------- finding the data

def test_zip_names_that_belong_to_a_dataset(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=1, n_test=1, size=8)
    zip_tree(tree, tmp_path / "cifar100-other.zip")  # cifar100's, not cifar10's
    with pytest.raises(DataError, match="cifar10 not found"):
        load_split("cifar10", "train", root=tmp_path)
    for sep in ("_", ".", "-"):
        root = tmp_path / f"r{sep}"
        root.mkdir()
        z = zip_tree(tree, root / f"cifar10{sep}x.zip" if sep != "." else root / "cifar10.zip")
        assert load_split("cifar10", "train", root=root).provenance.path == str(z)


def test_cifar_as_a_plain_folder(tmp_path):
    make_imagefolder(tmp_path / "cifar10", n_train=2, n_test=1, size=8)
    data = load_split("cifar10", "test", root=tmp_path)
    p = data.provenance
    assert (p.reader, p.path, p.split_dir) == ("folder", str(tmp_path / "cifar10"), "test")
    assert data.provenance.key == "cifar10_folder"
    assert data.provenance.label == f"CIFAR-10 (ImageFolder folder {tmp_path / 'cifar10'}; provenance unknown)"


def test_zip_source_names_the_member_folder(tmp_path):
    z = zip_tree(make_imagefolder(tmp_path / "tree", n_train=1, n_test=1, size=8), tmp_path / "t.zip")
    p = load_split("imagefolder", "test", root=z).provenance
    assert (p.reader, p.path, p.split_dir) == ("zip", str(z), "test")


def test_imagefolder_root_that_is_not_there(tmp_path):
    with pytest.raises(DataError, match=r"imagefolder root .*nope\.zip does not exist: give a folder with train/"):
        load_split("imagefolder", "train", root=tmp_path / "nope.zip")


def test_data_root_order(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("AOT_DATA", str(tmp_path))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    assert data_root() == tmp_path
    assert data_root(tmp_path / "abs") == tmp_path / "abs"  # absolute: taken as given, even when missing
    (tmp_path / "rel").mkdir()
    assert data_root("rel") == tmp_path / "rel"  # missing here, present under AOT_DATA
    assert data_root("gone") == Path("gone")  # missing in both: as given, for the error to name
    (home / "rel").mkdir()
    assert data_root("rel") == Path("rel")  # present here: not looked up
    monkeypatch.delenv("AOT_DATA")
    assert data_root() == home / ".cache" / "aot_lib" / "data"
    monkeypatch.delenv("AOT_CACHE")
    assert data_mod.cache_dir() == home / ".cache" / "aot_lib"


# ---------------------------------------------------------------------------- listing

def test_non_images_and_folders_named_like_images_are_skipped(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1, size=8)
    (tree / "train" / "cat" / "notes.txt").write_text("not an image")
    (tree / "train" / "cat" / "odd.png").mkdir()  # a folder, not a file
    assert len(load_split("imagefolder", "train", root=tree)) == 4
    z = zip_tree(tree, tmp_path / "t.zip")
    assert len(load_split("imagefolder", "train", root=z)) == 4


def test_zip_without_a_top_folder(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1, size=8)
    z = tmp_path / "flat.zip"
    with zipfile.ZipFile(z, "w") as zf:  # train/<class>/<image> at the zip's root
        for f in sorted(tree.rglob("*.png")):
            zf.write(f, f.relative_to(tree).as_posix())
        zf.writestr("README.txt", "three parts deep? no: one")
        zf.writestr("train/cat/notes.txt", "not an image")
    data = load_split("imagefolder", "train", root=z)
    assert len(data) == 4 and data.classes == ["cat", "dog"]


def test_refusals_name_what_is_wrong(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=1, n_test=1, size=8)
    with pytest.raises(ValueError, match=r"^split must be 'train' or 'test', got 'val'$"):
        load_split("imagefolder", "val", root=tree)
    (tmp_path / "empty" / "train").mkdir(parents=True)
    with pytest.raises(DataError, match=r"train: no class folders with images found$"):
        load_split("imagefolder", "train", root=tmp_path / "empty")
    (tmp_path / "only_train" / "train" / "cat").mkdir(parents=True)
    with pytest.raises(DataError, match=r"holds no test or val/ folder for the test split$"):
        load_split("imagefolder", "test", root=tmp_path / "only_train")
    z = tmp_path / "t.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("tiny/train/cat/a.png", (tree / "train" / "cat" / "0000.png").read_bytes())
    with pytest.raises(DataError, match=r"t\.zip holds no 'test/val/<class>/<image>' tree for the test split$"):
        load_split("imagefolder", "test", root=z)
    mixed = make_imagefolder(tmp_path / "cifar10", n_train=1, n_test=1, size=8)
    Image.fromarray(np.zeros((6, 6, 3), np.uint8)).save(mixed / "train" / "dog" / "small.png")
    with pytest.raises(DataError, match=r"images have different sizes \[\(3, 6, 6\), \(3, 8, 8\)\]\.\.\.; "
                                        r"set data\.image_size to resize them$"):
        load_split("cifar10", "train", root=tmp_path)


def test_class_order_mismatch_is_its_own_refusal():
    with pytest.raises(DataError, match=r"^the data: train and test hold the same classes in a different order; "
                                        r"labels would not match\. Fix: list the classes in the same \(sorted\) order"):
        check_same_classes(["a", "b"], ["b", "a"])
    with pytest.raises(DataError, match=r"Only in train: a\. Only in test: none\."):
        check_same_classes(["a", "b"], ["b"])
    many = [f"c{k:02d}" for k in range(11)]
    with pytest.raises(DataError, match=r"Only in train: c00, c01, c02, c03, c04, c05, c06, c07, c08, c09, "
                                        r"\.\.\. \(11 in all\)\. Only in test: none"):
        check_same_classes(many, [])
    with pytest.raises(DataError, match=r"Only in train: c00, .*, c09\. Only in test"):
        check_same_classes(many[:10], [])  # ten: listed in full


def test_load_pair_names_the_data_in_its_refusal(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", classes=("a", "b"), n_train=1, n_test=1, size=8)
    (tree / "test" / "b" / "0000.png").unlink()
    with pytest.raises(DataError, match=f"^imagefolder at {re.escape(str(tree))}: train and test have different"):
        load_pair("imagefolder", root=tree)


# ---------------------------------------------------------------------------- decoding

def _ramp(w: int, h: int) -> Image.Image:
    """An RGB image whose every pixel says where it is (x in red, y in green)."""
    x = np.zeros((h, w, 3), np.uint8)
    x[..., 0] = (np.arange(w) * 255 // max(1, w - 1))[None, :]
    x[..., 1] = (np.arange(h) * 255 // max(1, h - 1))[:, None]
    x[..., 2] = 77
    return Image.fromarray(x)


@pytest.mark.parametrize("w,h,resized,box", [
    (48, 24, (32, 16), (8, 0, 24, 16)),  # wide: shorter side 24 -> 16, then the middle 16 columns
    (24, 48, (16, 32), (0, 8, 16, 24)),  # tall: the middle 16 rows
    (30, 17, (28, 16), (6, 0, 22, 16)),  # odd: round(30 * 16 / 17) = 28, left = (28 - 16) // 2
    (19, 16, (19, 16), (1, 0, 17, 16)),  # 3 columns too many: left = 3 // 2 = 1 (a box at 1.5 would round to 2)
    (16, 19, (16, 19), (0, 1, 16, 17)),  # 3 rows too many: top = 1
])
def test_resize_is_shorter_side_then_centre_crop(w, h, resized, box):
    img = _ramp(w, h)
    got = data_mod._to_tensor(img, 16)
    ref = np.asarray(img.resize(resized, Image.BICUBIC).crop(box))  # the geometry worked out by hand
    assert torch.equal(got, torch.from_numpy(ref.copy()).permute(2, 0, 1))


def test_decoding_keeps_non_square_images_and_converts_modes():
    img = _ramp(6, 4)
    got = data_mod._to_tensor(img, None)
    assert got.shape == (3, 4, 6) and torch.equal(got, torch.from_numpy(np.asarray(img).copy()).permute(2, 0, 1))
    gray = Image.fromarray(np.arange(12, dtype=np.uint8).reshape(3, 4) * 20, mode="L")
    got = data_mod._to_tensor(gray, None)
    assert got.shape == (3, 3, 4) and all(torch.equal(got[c], got[0]) for c in range(3))
    assert torch.equal(got[0], torch.from_numpy(np.asarray(gray).copy()))


def test_images_are_read_in_name_order_per_sorted_class(tmp_path):
    root = tmp_path / "t"
    for cls, names in {"b": ["2.png", "10.png"], "a": ["x.png"]}.items():
        (root / "train" / cls).mkdir(parents=True)
        for k, n in enumerate(names):
            Image.fromarray(np.full((4, 4, 3), 10 * k + (100 if cls == "b" else 0), np.uint8)).save(root / "train" / cls / n)
    data = load_split("imagefolder", "train", root=root, image_size=4)
    assert data.classes == ["a", "b"] and data.labels.tolist() == [0, 1, 1]
    assert data.images[:, 0, 0, 0].tolist() == [0, 110, 100]  # b/10.png before b/2.png: sorted as text


# ---------------------------------------------------------------------------- the cache

def _entries(tmp_path):
    return sorted((tmp_path / "cache" / "tensors").glob("*.pt"))


def test_a_valid_cache_entry_is_read_not_decoded(tmp_path, monkeypatch):
    tree = make_imagefolder(tmp_path / "tree", classes=("a", "b", "c"), n_train=2, n_test=1, size=8)
    first = load_split("imagefolder", "train", root=tree, image_size=8)
    (entry,) = _entries(tmp_path)
    blob = torch.load(entry, weights_only=True)
    assert blob["version"] == data_mod.CACHE_VERSION and len(blob["key"]) == 64
    # <source stem>-<split>-<size>-<8 hex of the source's path>-<16 hex of the key>.pt
    assert re.fullmatch(rf"tree-train-8-[0-9a-f]{{8}}-{blob['key'][:16]}\.pt", entry.name)
    assert torch.equal(blob["images"], first.images) and torch.equal(blob["labels"], first.labels)
    assert blob["classes"] == ["a", "b", "c"]

    def no_decoding(*a):
        raise AssertionError("decoded again although the cache entry is valid")

    monkeypatch.setattr(data_mod, "_decode_folder", no_decoding)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a valid entry raises no "unusable" warning
        again = load_split("imagefolder", "train", root=tree, image_size=8)
    assert torch.equal(again.images, first.images) and again.labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert again.provenance.image_size == 8


def _tamper(entry: Path, **change):
    blob = torch.load(entry, weights_only=True)
    blob.update(change)
    torch.save(blob, entry)


class _NotATensor:  # a pickled object that weights_only loading refuses
    pass


@pytest.mark.parametrize("change", [
    dict(version=data_mod.CACHE_VERSION + 1),
    dict(key="0" * 64),
    dict(images=torch.zeros(4, 3, 8, 8)),  # float, not uint8
    dict(images=torch.zeros(3, 8, 8, dtype=torch.uint8)),  # not (N, 3, H, W)
    dict(labels=torch.zeros(4, 1, dtype=torch.long)),
    dict(labels=torch.tensor([0, 1, 1])),  # fewer labels than images
    dict(classes=["cat", 2]),
    dict(labels=torch.tensor([0, 0, 1, 2])),  # label 2 of 2 classes
    dict(labels=torch.tensor([-1, 0, 1, 1])),
    dict(extra=_NotATensor()),
])
def test_an_unusable_cache_entry_is_rebuilt_with_a_warning_at_the_callers_line(tmp_path, change):
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1, size=8)
    good = load_split("imagefolder", "train", root=tree, image_size=8)
    (entry,) = _entries(tmp_path)
    _tamper(entry, **change)
    with pytest.warns(UserWarning, match=r"(?s)cache entry .* is unusable \(.+\); decoding the images again") as rec:
        again = load_split("imagefolder", "train", root=tree, image_size=8)
    if "MUTANT_UNDER_TEST" not in os.environ:  # mutmut's trampolines add a frame between caller and callee
        assert rec[0].filename == __file__  # stacklevel: the warning points at the caller of load_split
    assert torch.equal(again.images, good.images) and torch.equal(again.labels, good.labels)
    blob = torch.load(entry, weights_only=True)  # rewritten whole
    assert blob["version"] == data_mod.CACHE_VERSION and "extra" not in blob


def test_cache_entries_are_per_source_folder(tmp_path):
    a = make_imagefolder(tmp_path / "a" / "tree", n_train=1, n_test=1, size=8)
    b = make_imagefolder(tmp_path / "b" / "tree", n_train=1, n_test=1, size=8, seed=5)
    da = load_split("imagefolder", "train", root=a, image_size=8)
    db = load_split("imagefolder", "train", root=b, image_size=8)
    assert len(_entries(tmp_path)) == 2 and not torch.equal(da.images, db.images)
    assert torch.equal(load_split("imagefolder", "train", root=a, image_size=8).images, da.images)


# ---------------------------------------------------------------------------- torchvision: class lists and downloads

@pytest.mark.parametrize("name,names", [("cifar10", CIFAR10_NAMES), ("cifar100", CIFAR100_NAMES)])
def test_torchvision_class_list_comes_from_the_meta_file_alone(tmp_path, name, names):
    files = _write_cifar(tmp_path, name)
    for fname in [*files["train"], *files["test"]]:
        (files["folder"] / fname).unlink()  # only the meta file left: nothing could be decoded
    assert list_classes(name, "test", root=tmp_path) == names


def _py2_pickle(d: dict[str, list[bytes]]) -> bytes:
    """A protocol-2 pickle of a dict of lists of Python 2 ``str`` (SHORT_BINSTRING), as the official metas are."""
    def s(b: bytes) -> bytes:
        return b"U" + bytes([len(b)]) + b

    out = b"\x80\x02}("
    for k, vals in d.items():
        out += s(k.encode()) + b"](" + b"".join(s(v) for v in vals) + b"e"
    return out + b"u."


def test_torchvision_meta_from_python2_is_read_as_torchvision_reads_it(tmp_path, monkeypatch):
    import torchvision

    files = _write_cifar(tmp_path, "cifar10")
    (files["folder"] / "batches.meta").write_bytes(_py2_pickle({"label_names": [b"caf\xe9", b"car", b"bird"]}))
    _trust(monkeypatch, files)
    reference = torchvision.datasets.CIFAR10(str(tmp_path), train=False).classes  # torchvision's own reader
    assert reference == ["caf\xe9", "car", "bird"]
    assert list_classes("cifar10", "test", root=tmp_path) == reference


def _fake_download(monkeypatch) -> list:
    """torchvision's download writes the tiny CIFAR-10 files instead of reaching the network; returns the calls."""
    import torchvision.datasets.cifar as tv_cifar

    calls = []

    def fake(url, root, filename=None, md5=None, **kw):
        calls.append(root)
        _trust(monkeypatch, _write_cifar(Path(root), "cifar10"))

    monkeypatch.setattr(tv_cifar, "download_and_extract_archive", fake)
    return calls


def _partial_cifar10(root: Path, monkeypatch, keep: tuple[str, ...]) -> None:
    """An interrupted copy: ``cifar-10-batches-py/`` holding only the files in ``keep``."""
    files = _write_cifar(root, "cifar10")
    _trust(monkeypatch, files)
    for f in files["folder"].iterdir():
        if f.name not in keep:
            f.unlink()


def test_download_false_never_fetches(tmp_path, monkeypatch):
    calls = _fake_download(monkeypatch)
    for call in (describe_split, list_classes):
        with pytest.raises(DataError, match="cifar10 not found"):
            call("cifar10", "test", root=tmp_path)
    with pytest.raises(DataError, match="cifar10 not found"):
        load_pair("cifar10", root=tmp_path)
    assert calls == [] and list(tmp_path.iterdir()) == []


def test_download_true_is_passed_on_by_every_entry_point(tmp_path, monkeypatch):
    calls = _fake_download(monkeypatch)
    names = CIFAR10_NAMES
    # nothing there yet
    assert list_classes("cifar10", "test", root=tmp_path / "a", download=True) == names
    assert describe_split("cifar10", "test", root=tmp_path / "b", download=True).n_images == 3
    train, test = load_pair("cifar10", root=tmp_path / "c", download=True)
    assert (len(train), len(test), train.classes) == (10, 3, names)
    # an interrupted download: the folder only
    (tmp_path / "d" / "cifar-10-batches-py").mkdir(parents=True)
    assert list_classes("cifar10", "test", root=tmp_path / "d", download=True) == names
    # the meta file only: the class lists need no download, the images do
    _partial_cifar10(tmp_path / "e", monkeypatch, keep=("batches.meta",))
    assert describe_split("cifar10", "train", root=tmp_path / "e", download=True).n_images == 10
    _partial_cifar10(tmp_path / "f", monkeypatch, keep=("batches.meta",))
    assert [len(x) for x in load_pair("cifar10", root=tmp_path / "f", download=True)] == [10, 3]
    assert len(calls) == 6  # one fetch per root


def test_torchvision_resize_saturates_instead_of_wrapping(tmp_path, monkeypatch):
    files = _write_cifar(tmp_path, "cifar10")
    x = np.zeros((1, 3, 32, 32), np.uint8)
    x[0, 0, :, 16:] = 255  # a 0 -> 255 step: the bicubic kernel's negative lobes overshoot past 255 beside it
    (files["folder"] / "test_batch").write_bytes(pickle.dumps({"data": x.reshape(1, -1), "labels": [1]}))
    _trust(monkeypatch, files)
    red = load_split("cifar10", "test", root=tmp_path, image_size=16).images[0, 0].int()
    assert (red[:, 9:] == 255).all()  # saturated at 255, never wrapped around to a dark value
    assert (red[:, 1:] >= red[:, :-1]).all()  # a step stays monotone once clamped to [0, 255]
    tiny = load_split("cifar10", "test", root=tmp_path, image_size=3)  # a size equal to the channel count
    assert tiny.images.shape == (1, 3, 3, 3) and tiny.provenance.image_size == 3


# ---------------------------------------------------------------------------- decoding: progress and messages

@pytest.mark.parametrize("n,shown", [(1999, False), (2000, True)])
def test_progress_bar_from_2000_images_and_not_left_behind(capsys, n, shown):
    one = Image.fromarray(np.full((1, 1, 3), 9, np.uint8))
    images, labels, classes = data_mod._decode_tree({"a": list(range(n))}, lambda h: one, None, "mine")
    assert images.shape == (n, 3, 1, 1) and classes == ["a"] and len(labels) == n
    err = capsys.readouterr().err
    if not shown:
        assert err == ""
    else:
        assert "decoding mine:" in err and f"0/{n}" in err  # described, with the number of images to decode
        assert not err.endswith("\n") and err.rstrip(" \r").endswith("it/s]")  # cleared when done (leave=False)
        assert "100%" not in err


def test_size_mismatch_lists_three_shapes(tmp_path):
    d = tmp_path / "cifar10" / "train" / "a"
    d.mkdir(parents=True)
    for k in range(4):
        Image.fromarray(np.zeros((4 + k, 4, 3), np.uint8)).save(d / f"{k}.png")
    with pytest.raises(DataError, match=r"images have different sizes \[\(3, 4, 4\), \(3, 5, 4\), \(3, 6, 4\)\]\.\.\.;"):
        load_split("cifar10", "train", root=tmp_path)


def test_a_corrupt_image_in_a_zip_is_named_with_the_zip(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=1, n_test=1, size=8)
    (tree / "train" / "cat" / "0000.png").write_bytes(b"garbage")
    z = zip_tree(tree, tmp_path / "t.zip")
    with pytest.raises(DataError, match=r"^t\.zip:train: cannot decode image tiny/train/cat/0000\.png"):
        load_split("imagefolder", "train", root=z, image_size=8)


def test_a_missing_train_split_is_named(tmp_path):
    (tmp_path / "only_test" / "test" / "cat").mkdir(parents=True)
    with pytest.raises(DataError, match=r"holds no train/ folder for the train split$"):
        load_split("imagefolder", "train", root=tmp_path / "only_test")
    tree = make_imagefolder(tmp_path / "tree", n_train=1, n_test=1, size=8)
    z = tmp_path / "t.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.write(tree / "test" / "cat" / "0000.png", "tiny/test/cat/a.png")
    with pytest.raises(DataError, match=r"t\.zip holds no 'train/<class>/<image>' tree for the train split$"):
        load_split("imagefolder", "train", root=z)


def test_keys_of_odd_folder_names(tmp_path):
    for folder, key in [("(My Tree)", "my_tree"), ("(-)", "data")]:  # trimmed of '_'; nothing left: "data"
        tree = make_imagefolder(tmp_path / folder, n_train=1, n_test=1, size=8)
        assert describe_split("imagefolder", "train", root=tree).key == key


def test_a_known_copy_needs_its_top_folder(tmp_path):
    make_offline_zip(tmp_path / "cifar10-jpeg.zip", "elsewhere", fmt="jpg")  # right name and depth, other top
    assert describe_split("cifar10", "train", root=tmp_path).key == "cifar10_zip_cifar10_jpeg"


# ---------------------------------------------------------------------------- the cache: more rules

def test_first_load_warns_nothing_and_a_one_class_entry_is_valid(tmp_path, monkeypatch):
    tree = make_imagefolder(tmp_path / "tree", classes=("a",), n_train=1, n_test=1, size=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cache entry yet is not an unusable one
        first = load_split("imagefolder", "train", root=tree, image_size=8)
    (entry,) = _entries(tmp_path)
    real_decode = data_mod._decode_folder
    monkeypatch.setattr(data_mod, "_decode_folder", lambda *a: pytest.fail("a valid one-class entry decoded again"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.equal(load_split("imagefolder", "train", root=tree, image_size=8).images, first.images)
    monkeypatch.setattr(data_mod, "_decode_folder", real_decode)
    _tamper(entry, labels=torch.tensor([1]))  # one image, label 1 of 1 class
    with pytest.warns(UserWarning, match="does not hold what its name promises"):
        again = load_split("imagefolder", "train", root=tree, image_size=8)
    assert again.labels.tolist() == [0]


def test_the_unusable_entry_warning_says_why(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=1, n_test=1, size=8)
    load_split("imagefolder", "train", root=tree, image_size=8)
    (entry,) = _entries(tmp_path)
    _tamper(entry, key="0" * 64)
    with pytest.warns(UserWarning) as rec:
        load_split("imagefolder", "train", root=tree, image_size=8)
    assert str(rec[0].message) == (f"cache entry {entry} is unusable (it does not hold what its name promises); "
                                   "decoding the images again")


def test_a_cache_entry_is_never_unpickled_as_code(tmp_path, monkeypatch):
    tree = make_imagefolder(tmp_path / "tree", n_train=1, n_test=1, size=8)
    good = load_split("imagefolder", "train", root=tree, image_size=8)
    (entry,) = _entries(tmp_path)
    marker = tmp_path / "ran"
    _tamper(entry, extra=CodeOnUnpickle(marker))
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # torch's default (and torch < 2.6's) is to unpickle
    with pytest.warns(UserWarning, match="cache entry .* is unusable"):
        again = load_split("imagefolder", "train", root=tree, image_size=8)
    assert not marker.exists() and torch.equal(again.images, good.images)


def test_another_process_removing_entries_is_not_an_error(tmp_path, monkeypatch):
    """Two processes (e.g. DDP ranks) share the cache: an entry may vanish between our listing and our unlink."""
    tree = make_imagefolder(tmp_path / "tree", n_train=1, n_test=1, size=8)
    load_split("imagefolder", "train", root=tree, image_size=8)
    (stale,) = _entries(tmp_path)
    real_glob = Path.glob

    def glob_then_vanish(self, pattern):  # the other process removes each stale entry just after we list it
        for p in real_glob(self, pattern):
            if p == stale:
                p.unlink()
            yield p

    monkeypatch.setattr(Path, "glob", glob_then_vanish)
    (tree / "train" / "cat" / "extra.png").write_bytes((tree / "train" / "cat" / "0000.png").read_bytes())
    assert len(load_split("imagefolder", "train", root=tree, image_size=8)) == 3
    monkeypatch.setattr(Path, "glob", real_glob)
    (entry,) = _entries(tmp_path)
    _tamper(entry, key="0" * 64)  # unusable; the other process removes it while we read it
    real_load = torch.load

    def load_then_vanish(path, *a, **k):
        Path(path).unlink()
        return real_load(path, *a, **k)

    monkeypatch.setattr(torch, "load", load_then_vanish)
    with pytest.warns(UserWarning, match="is unusable"):
        assert len(load_split("imagefolder", "train", root=tree, image_size=8)) == 3


def test_non_square_images_record_the_same_size_as_a_hand_made_imagedata(tmp_path):
    d = tmp_path / "cifar10" / "train" / "a"
    d.mkdir(parents=True)
    Image.fromarray(np.zeros((4, 6, 3), np.uint8)).save(d / "0.png")  # 6 wide, 4 high, kept as is (no image_size)
    data = load_split("cifar10", "train", root=tmp_path)
    assert data.images.shape == (1, 3, 4, 6)
    by_hand = ImageData(data.images, data.labels, data.classes, "x").provenance
    assert data.provenance.image_size == by_hand.image_size == 6  # the width, as the torchvision reader records


# ---------------------------------------------------------------------------- checksums

def _zip_with_sums(folder: Path, name: str, line: str | None = None) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    z = zip_tree(make_imagefolder(folder / "tree", n_train=1, n_test=1, size=8), folder / name)
    sums = folder / "SHA256SUMS"
    digest = hashlib.sha256(z.read_bytes()).hexdigest()
    sums.write_text((line or f"{digest}  {name}").format(digest=digest, bad="0" * 64) + "\n")
    return z, sums


def test_checksums_accepted_refused_and_checked_once(tmp_path, monkeypatch):
    monkeypatch.setattr(data_mod, "_VERIFIED", set())
    hashed = []
    real = data_mod.sha256_file
    monkeypatch.setattr(data_mod, "sha256_file", lambda p: hashed.append(p) or real(p))
    z, _ = _zip_with_sums(tmp_path / "good", "ok.zip", "{bad} *other.zip\n{digest}  ok.zip")
    for _ in range(2):
        assert len(load_split("imagefolder", "train", root=z, image_size=8)) == 2
    assert hashed == [z]  # verified once per process, not at every opening
    z, _ = _zip_with_sums(tmp_path / "unlisted", "ok.zip", "{bad}  other.zip")  # not listed: not checked
    assert len(load_split("imagefolder", "train", root=z, image_size=8)) == 2
    z, sums = _zip_with_sums(tmp_path / "bin", "Xt.zip", "{bad} *Xt.zip")  # sha256sum -b's "*name" form
    with pytest.raises(DataError, match=rf"^{re.escape(str(z))} does not match its checksum in {re.escape(str(sums))}: "
                                        r"the file is corrupt or incomplete; copy it again \(or delete it and "
                                        r"download the data\)\.$"):
        load_split("imagefolder", "train", root=z, image_size=8)


def test_checksum_memo_is_per_file(tmp_path, monkeypatch):
    monkeypatch.setattr(data_mod, "_VERIFIED", set())
    a, sums_a = _zip_with_sums(tmp_path / "a", "t.zip")
    b, sums_b = _zip_with_sums(tmp_path / "b", "t.zip", "{bad}  t.zip")
    b.write_bytes(a.read_bytes())  # same bytes, size and times as a, but b's SHA256SUMS disagrees
    for p, q in ((a, b), (sums_a, sums_b)):
        os.utime(q, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns))
    assert len(load_split("imagefolder", "train", root=a, image_size=8)) == 2
    with pytest.raises(DataError, match="does not match its checksum"):
        load_split("imagefolder", "train", root=b, image_size=8)


# ---------------------------------------------------------------------------- hand-made data, subsets, load_pair

def test_hand_made_imagedata_provenance_field_by_field():
    images = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    p = ImageData(images, torch.tensor([0, 1]), ["a", "b"], "mine").provenance
    # nothing is known of a hand-made tensor but its source string, its size and its count (module docstring:
    # reader "memory"); no split was read
    assert p == Provenance(dataset="unknown", reader="memory", path="mine", split="", split_dir="", n_images=2,
                           key="memory", label="in-memory images (mine)", image_size=4, subset_of=None)
    flat = ImageData(torch.zeros(2, 4, 4, dtype=torch.uint8), torch.tensor([0, 1]), ["a", "b"], "x").provenance
    assert flat.image_size is None  # not (N, 3, H, W): no image size to report
    with pytest.raises(AttributeError, match=r"^nope$"):
        p.nope  # noqa: B018 - the attribute access is what is tested


def _numbered(labels: list[int], classes: list[str]) -> ImageData:
    """Image i is filled with the value i, so a subset shows which images it kept."""
    n = len(labels)
    images = torch.arange(n, dtype=torch.uint8).view(n, 1, 1, 1).expand(n, 3, 2, 2).contiguous()
    return ImageData(images, torch.tensor(labels), classes, "src")


def test_subset_keeps_the_first_images_of_every_class():
    d = _numbered([0, 0, 0, 1, 2, 2, 1], ["a", "b", "c"])
    sub = d.subset(3)  # 3 // 3 = 1 per class: the first a, b and c
    assert sub.images[:, 0, 0, 0].tolist() == [0, 3, 4] and sub.labels.tolist() == [0, 1, 2]
    assert sub.provenance.path == "src"
    assert d.subset(2).labels.tolist() == [0, 1, 2]  # fewer than one per class: still one of each
    whole = d.subset(len(d))  # n = N: everything, unbalanced as it is, and no subset in the provenance
    assert torch.equal(whole.images, d.images) and whole.provenance == d.provenance
    sub6 = d.subset(6)
    again = sub6.subset(3)  # a subset of a subset: one suffix, counted against the full split
    assert again.provenance.key == "memory_sub3" and again.provenance.subset_of == 7
    assert again.provenance.label == "in-memory images (src) — subset: 3 of 7 images"


def test_load_pair_sizes_subsets_and_names_a_decoded_mismatch(tmp_path):
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=3, size=16)
    train, test = load_pair("imagefolder", root=tree, image_size=8, test_subset=2)
    assert train.images.shape == (4, 3, 8, 8) and test.images.shape == (2, 3, 8, 8)
    entry = next(e for e in _entries(tmp_path) if "-train-" in e.name)
    _tamper(entry, classes=["cat", "emu"])  # a cache entry whose class list disagrees with the files
    with pytest.raises(DataError, match=f"^imagefolder at {re.escape(str(tree))}: train and test have different"):
        load_pair("imagefolder", root=tree, image_size=8)


def test_unknown_normalisation_names_the_known_ones():
    with pytest.raises(DataError, match=r"^no normalisation statistics for dataset 'svhn'; known: cifar10, cifar100, "
                                        r"imagenet, imagefolder, stream$"):
        normalization_stats("svhn")
