"""Datasets as uint8 image tensors: CIFAR-10/100 (torchvision), and ImageFolder trees or zips.

Every split is decoded once into a ``(N, 3, H, W)`` uint8 tensor and cached on disk, so training
augments whole batches on the device (:mod:`aot_lib.data.augment`) and never waits on image decoding.

**Where the data is looked for** (``root``): the argument (a relative one may also be found under
``$AOT_DATA``), else ``$AOT_DATA``, else ``~/.cache/aot_lib/data``. For ``cifar10`` / ``cifar100``
the root may hold torchvision's ``cifar-10-batches-py`` / ``cifar-100-python``, an ImageFolder zip
whose name starts with the dataset name (``cifar10-jpeg.zip``, ``cifar100-png.zip``: the offline
copies), or a folder ``cifar10/{train,test}``; ``download=True`` fetches through torchvision.
``imagefolder`` takes a root (folder or zip) holding ``train/`` and ``test/`` or ``val/`` with one
folder per class. Labels are indices into the sorted list of class folders.

The decoded tensors are cached on disk (:mod:`aot_lib.data.tensor_cache`).

**Class lists.** A class present in one split only silently shifts every label after it, so
:func:`load_pair` (what a trainer should call for train + test) compares the two splits' class
lists from the file listing *before* decoding anything and raises one :class:`DataError` naming
the classes found in one split only; :func:`check_same_classes` does the same check on two
:class:`ImageData` or two lists of names, and :func:`list_classes` lists one split cheaply.

**Provenance.** Every :class:`ImageData` carries a :class:`~aot_lib.data.provenance.Provenance`: what was read,
from where, and the key and label tables show (:mod:`aot_lib.data.provenance`).

**Normalisation statistics** of every dataset live in :data:`DATASET_STATS`;
:func:`normalization_stats` maps a dataset name to ``(mean, std)`` (``imagefolder`` -> ImageNet's).
"""
from __future__ import annotations

import hashlib
import io
import os
import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from ..files import sha256_file, torch_save
from .provenance import DISPLAY_NAMES, OFFLINE_COPIES, Provenance, slug  # noqa: F401  (public here too)
from .tensor_cache import CACHE_VERSION, cache_dir, cache_path, read_cache  # noqa: F401  (public here too)
from .imagefolder import folder_images, is_image_name, zip_images

__all__ = ["DataError", "ImageData", "Provenance", "load_split", "load_pair", "list_classes", "check_same_classes",
           "describe_split",
           "data_root", "cache_dir", "slug", "DATASET_STATS", "normalization_stats", "CACHE_VERSION"]

TORCHVISION_DIRS = {"cifar10": "cifar-10-batches-py", "cifar100": "cifar-100-python"}

# Per-channel mean and std of the pixel values in [0, 1] (the standard published values).
DATASET_STATS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "cifar10": ((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    "cifar100": ((0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)),
    "imagenet": ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
}
_STATS_ALIAS = {"imagefolder": "imagenet", "stream": "imagenet"}  # ImageFolder and streamed data: like ImageNet


class DataError(RuntimeError):
    """Missing, unreadable or corrupt data; the message says how to fix it."""


def normalization_stats(name: str) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """``(mean, std)`` for a dataset name (``cifar10``, ``cifar100``, ``imagenet``; ``imagefolder`` -> ImageNet)."""
    key = _STATS_ALIAS.get(name, name)
    if key not in DATASET_STATS:
        raise DataError(f"no normalisation statistics for dataset {name!r}; known: "
                        f"{', '.join([*DATASET_STATS, *_STATS_ALIAS])}")
    return DATASET_STATS[key]


@dataclass
class ImageData:
    images: torch.Tensor  # (N, 3, H, W) uint8
    labels: torch.Tensor  # (N,) int64
    classes: list[str]
    # what was read; for images made by hand, a few words on where they came from (-> reader "memory")
    provenance: Provenance | str = "hand-made"

    def __post_init__(self):
        if isinstance(self.provenance, str):
            self.provenance = Provenance("unknown", "memory", self.provenance, "", "", len(self.labels), "memory",
                                         f"in-memory images ({self.provenance})",
                                         int(self.images.shape[-1]) if self.images.ndim == 4 else None)

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, n: int | None) -> "ImageData":
        """The first ``n // classes`` images of every class (a balanced, deterministic subset)."""
        if n is None or n >= len(self):
            return self
        per = max(1, n // len(self.classes))
        keep = torch.cat([torch.nonzero(self.labels == c).flatten()[:per] for c in range(len(self.classes))])
        keep = keep.sort().values
        p = self.provenance
        full = p.subset_of or len(self)
        prov = p.replace(n_images=len(keep), subset_of=full, key=f"{p.key.split('_sub')[0]}_sub{len(keep)}",
                                   label=f"{p.label.split(' — subset')[0]} — subset: {len(keep):,} of {full:,} images")
        return ImageData(self.images[keep], self.labels[keep], self.classes, prov)


# ----------------------------------------------------------------------------- paths and files

def data_root(root: str | os.PathLike | None = None) -> Path | str:
    """Where a data source is read, for every source (CIFAR, ImageFolder, converted streams): ``root``, else
    ``$AOT_DATA``, else ``~/.cache/aot_lib/data``. A relative ``root`` that does not exist from here is looked
    up under ``$AOT_DATA`` (so a config can say ``imagenette160-subset.zip``); a URL (``s3://...``, streams
    only) is returned as given."""
    env = os.environ.get("AOT_DATA")
    if root is not None:
        if "://" in str(root):
            return str(root)
        p = Path(root).expanduser()
        if not p.is_absolute() and not p.exists() and env and (Path(env).expanduser() / p).exists():
            return Path(env).expanduser() / p
        return p
    return Path(env or Path.home() / ".cache" / "aot_lib" / "data").expanduser()


_VERIFIED: set[tuple] = set()  # (zip, size, mtime_ns, SHA256SUMS mtime_ns) already checked in this process


def _verify_checksum(zpath: Path) -> None:
    """If a ``SHA256SUMS`` file lies beside the zip, the zip must match it."""
    sums = zpath.parent / "SHA256SUMS"
    if not sums.exists():
        return
    st = zpath.stat()
    seen = (str(zpath.resolve()), st.st_size, st.st_mtime_ns, sums.stat().st_mtime_ns)
    if seen in _VERIFIED:
        return
    expected = {line.split()[1].lstrip("*"): line.split()[0] for line in sums.read_text().splitlines() if line.strip()}
    if zpath.name in expected and sha256_file(zpath) != expected[zpath.name]:
        raise DataError(f"{zpath} does not match its checksum in {sums}: the file is corrupt or incomplete; "
                        "copy it again (or delete it and download the data).")
    _VERIFIED.add(seen)


def _to_tensor(img, size: int | None) -> torch.Tensor:
    from PIL import Image

    img = img.convert("RGB")
    if size is not None and img.size != (size, size):
        w, h = img.size
        s = size / min(w, h)  # shorter side to `size` (PIL's bicubic is antialiased), then a centre crop
        img = img.resize((max(size, round(w * s)), max(size, round(h * s))), Image.BICUBIC)
        w, h = img.size
        left, top = (w - size) // 2, (h - size) // 2
        img = img.crop((left, top, left + size, top + size))
    t = torch.frombuffer(bytearray(img.tobytes()), dtype=torch.uint8)
    return t.reshape(img.size[1], img.size[0], 3).permute(2, 0, 1)


def _decode_tree(files: dict[str, list], read, size: int | None, desc: str) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """``files``: class name -> list of handles; ``read(handle)`` opens a PIL image."""
    from tqdm.auto import tqdm

    classes = sorted(files)
    if not classes:
        raise DataError(f"{desc}: no class folders with images found")
    images, labels = [], []
    total = sum(len(v) for v in files.values())
    with tqdm(total=total, desc=f"decoding {desc}", leave=False, disable=total < 2000) as bar:
        for label, cls in enumerate(classes):
            for handle in sorted(files[cls], key=str):
                try:
                    images.append(_to_tensor(read(handle), size))
                except Exception as e:  # noqa: BLE001 - any decoder error means a corrupt image
                    raise DataError(f"{desc}: cannot decode image {handle}: {e}; the data is corrupt, copy it again") from None
                labels.append(label)
                bar.update()
    shapes = {tuple(x.shape) for x in images}
    if len(shapes) != 1:
        raise DataError(f"{desc}: images have different sizes {sorted(shapes)[:3]}...; set data.image_size to resize them")
    return torch.stack(images), torch.tensor(labels), classes


def _split_names(split: str) -> tuple[str, ...]:
    return ("train",) if split == "train" else ("test", "val")


# ----------------------------------------------------------------------------- listing a split (cheap)

@dataclass
class _Listing:
    """One split of a zip or folder, listed but not decoded."""
    kind: str  # zip | folder
    path: Path
    split_dir: str
    files: dict[str, list]  # class -> zip member names / file paths (classes with at least one image)
    fingerprint: str  # hash of everything the decoded tensor depends on (but the image size)
    provenance: dict  # Provenance fields but n_images / image_size / split / dataset


def _open_zip(zpath: Path) -> zipfile.ZipFile:
    _verify_checksum(zpath)
    try:
        return zipfile.ZipFile(zpath)
    except (zipfile.BadZipFile, OSError) as e:
        raise DataError(f"{zpath} is not a readable zip ({e}); copy it again or point data.root elsewhere") from None


def _zip_provenance(zpath: Path, name: str, index: dict[str, dict[str, list]], infos: list) -> dict:
    """Key and label of a zip: a known offline copy only when its name *and* structure match."""
    copy = OFFLINE_COPIES.get(zpath.name)
    if copy is not None:
        images = [i.filename for i in infos if is_image_name(i.filename)]
        ok = (bool(images) and all(n.split("/")[0] == copy.top and len(n.split("/")) == 4 for n in images)
              and all(n.lower().endswith(copy.ext) for n in images) and all(s in index for s in copy.splits))
        if ok:
            train, test = (sum(len(v) for v in index[s].values()) for s in copy.splits)
            classes = len(set(index[copy.splits[0]]) | set(index[copy.splits[1]]))
            return {"key": copy.key, "label": copy.label.format(train=train, test=test, classes=classes)}
    if name in DISPLAY_NAMES:
        return {"key": f"{name}_zip_{slug(zpath.stem)}",
                "label": f"{DISPLAY_NAMES[name]} (ImageFolder zip {zpath.name}; provenance unknown)"}
    return {"key": slug(zpath.stem), "label": f"ImageFolder zip {zpath.name}"}


def _list_zip(zpath: Path, name: str, split: str) -> _Listing:
    with _open_zip(zpath) as zf:
        infos = zf.infolist()
    index = zip_images([i.filename for i in infos])  # split folder -> class -> member names
    for split_name in _split_names(split):
        if split_name in index:
            st = zpath.stat()
            h = hashlib.sha256(f"zip|{st.st_size}|{st.st_mtime_ns}|{split_name}".encode())
            for i in infos:
                h.update(f"\n{i.filename}|{i.file_size}|{i.CRC}".encode())
            return _Listing("zip", zpath, split_name, index[split_name], h.hexdigest(),
                            _zip_provenance(zpath, name, index, infos))
    raise DataError(f"{zpath} holds no '{'/'.join(_split_names(split))}/<class>/<image>' tree for the {split} split")


def _list_folder(root: Path, name: str, split: str) -> _Listing:
    for split_name in _split_names(split):
        d = root / split_name
        if d.is_dir():
            files = folder_images(d)
            h = hashlib.sha256(f"folder|{split_name}".encode())
            for f in (f for imgs in files.values() for f in imgs):
                st = f.stat()
                h.update(f"\n{f.relative_to(root).as_posix()}|{st.st_size}|{st.st_mtime_ns}".encode())
            if name in DISPLAY_NAMES:
                prov = {"key": f"{name}_folder", "label": f"{DISPLAY_NAMES[name]} (ImageFolder folder {root}; provenance unknown)"}
            else:
                prov = {"key": slug(root.name), "label": f"ImageFolder folder {root}"}
            return _Listing("folder", root, split_name, files, h.hexdigest(), prov)
    raise DataError(f"{root} holds no {' or '.join(_split_names(split))}/ folder for the {split} split")


def _listing(name: str, split: str, root, download: bool):
    """``("torchvision", root)`` or a :class:`_Listing` of one split."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    kind, path = _locate(name, data_root(root), download)
    if kind == "torchvision":
        return kind, path
    return kind, (_list_zip if kind == "zip" else _list_folder)(path, name, split)


# ----------------------------------------------------------------------------- readers

def _decode_zip(lst: _Listing, size: int | None):
    from PIL import Image

    with _open_zip(lst.path) as zf:
        return _decode_tree(lst.files, lambda n: Image.open(io.BytesIO(zf.read(n))), size, f"{lst.path.name}:{lst.split_dir}")


def _decode_folder(lst: _Listing, size: int | None):
    from PIL import Image

    return _decode_tree(lst.files, Image.open, size, str(lst.path / lst.split_dir))


def _from_torchvision(name: str, root: Path, split: str, download: bool):
    import torchvision

    cls = torchvision.datasets.CIFAR10 if name == "cifar10" else torchvision.datasets.CIFAR100
    try:
        ds = cls(str(root), train=split == "train", download=download)
    except RuntimeError as e:
        raise DataError(f"torchvision could not load {name} from {root}: {e}") from None
    images = torch.from_numpy(ds.data).permute(0, 3, 1, 2).contiguous()
    return images, torch.tensor(ds.targets), list(ds.classes)


def _torchvision_classes(name: str, root: Path, download: bool) -> list[str]:
    meta = root / TORCHVISION_DIRS[name] / ("batches.meta" if name == "cifar10" else "meta")
    if meta.exists():
        with open(meta, "rb") as f:
            return list(pickle.load(f, encoding="latin1")["label_names" if name == "cifar10" else "fine_label_names"])
    return _from_torchvision(name, root, "test", download)[2]


def _locate(name: str, root: Path, download: bool):
    """What to read for a dataset name: ('torchvision'|'zip'|'folder', path)."""
    if name in TORCHVISION_DIRS:
        if (root / TORCHVISION_DIRS[name]).is_dir():
            return "torchvision", root
        zips = sorted(p for p in root.glob(f"{name}*.zip") if p.name[len(name):len(name) + 1] in ("-", "_", "."))
        if zips:
            return "zip", zips[0]
        if (root / name / "train").is_dir():
            return "folder", root / name
        if download:
            return "torchvision", root
        raise DataError(
            f"{name} not found under {root}. Point AOT_DATA (or data.root / --data-root) at a folder holding "
            f"torchvision's {TORCHVISION_DIRS[name]}/, an ImageFolder zip named {name}-*.zip, or {name}/train and "
            f"{name}/test; or set data.download=true on a machine with internet."
        )
    if name == "imagefolder":
        if root.is_file() and root.suffix == ".zip":
            return "zip", root
        if root.is_dir():
            return "folder", root
        raise DataError(f"imagefolder root {root} does not exist: give a folder with train/ and test/ (or val/), or a zip of one")
    raise DataError(f"unknown dataset {name!r}: use cifar10, cifar100 or imagefolder")


# ----------------------------------------------------------------------------- public API

def load_split(name: str, split: str, root: str | os.PathLike | None = None, download: bool = False,
               image_size: int | None = None) -> ImageData:
    """One split (``"train"`` or ``"test"``) as an :class:`ImageData`, decoded once and cached.

    Calling it again is cheap: the zip's central directory (or the folder) is listed and the
    cached tensor read back, unless an image or class changed since (then it is decoded again).
    """
    kind, lst = _listing(name, split, root, download)
    if kind == "torchvision":
        images, labels, classes = _from_torchvision(name, lst, split, download)
        if image_size is not None and image_size != images.shape[-1]:
            images = torch.nn.functional.interpolate(images.float(), size=image_size, mode="bicubic",
                                                     antialias=True).round().clamp(0, 255).to(torch.uint8)
        prov = Provenance(name, "torchvision", str(lst / TORCHVISION_DIRS[name]), split, "", len(labels), name,
                          f"{DISPLAY_NAMES[name]} (official)", int(images.shape[-1]))
        return ImageData(images, labels, classes, prov)
    if name == "imagefolder" and image_size is None:
        image_size = 160
    cached, key, prefix = cache_path(lst, split, image_size)
    got = read_cache(cached, key) if cached.exists() else None
    decoded = got is None
    if decoded:
        got = (_decode_zip if kind == "zip" else _decode_folder)(lst, image_size)
    images, labels, classes = got
    data = ImageData(images, labels, classes, _provenance(name, split, lst, len(labels), int(images.shape[-1])))
    if decoded:
        torch_save({"version": CACHE_VERSION, "key": key, "images": images, "labels": labels, "classes": classes}, cached)
        for old in cached.parent.glob(f"{prefix}*.pt"):  # entries of older contents of this source
            if old != cached:
                old.unlink(missing_ok=True)
    return data


def _provenance(name: str, split: str, lst: _Listing, n: int, size: int | None) -> Provenance:
    return Provenance(name, lst.kind, str(lst.path), split, lst.split_dir, n, lst.provenance["key"],
                      lst.provenance["label"], size)


def describe_split(name: str, split: str, root: str | os.PathLike | None = None, download: bool = False) -> Provenance:
    """The :class:`Provenance` :func:`load_split` would give, from the file listing (nothing is decoded,
    so ``image_size`` is None; torchvision's pickles are read)."""
    kind, lst = _listing(name, split, root, download)
    if kind == "torchvision":
        return load_split(name, split, root, download).provenance
    return _provenance(name, split, lst, sum(len(v) for v in lst.files.values()), None)


def list_classes(name: str, split: str, root: str | os.PathLike | None = None, download: bool = False) -> list[str]:
    """The sorted class list of one split, from the file listing (nothing is decoded)."""
    kind, lst = _listing(name, split, root, download)
    if kind == "torchvision":
        return _torchvision_classes(name, lst, download)
    return sorted(lst.files)


def _names(x) -> list[str]:
    return list(x.classes) if isinstance(x, ImageData) else list(x)


def check_same_classes(train, test, what: str = "the data") -> list[str]:
    """Raise :class:`DataError` unless ``train`` and ``test`` (ImageData or lists of class names) have the
    same class list; returns it."""
    a, b = _names(train), _names(test)
    if a == b:
        return a

    def show(xs):
        xs = sorted(xs)
        return ", ".join(xs[:10]) + (f", ... ({len(xs)} in all)" if len(xs) > 10 else "") if xs else "none"

    only_train, only_test = set(a) - set(b), set(b) - set(a)
    if not only_train and not only_test:
        raise DataError(f"{what}: train and test hold the same classes in a different order; labels would not "
                        "match. Fix: list the classes in the same (sorted) order in both splits.")
    raise DataError(
        f"{what}: train and test have different classes. Only in train: {show(only_train)}. Only in test: "
        f"{show(only_test)}. A label is the index of its class in the sorted class list, so a class present in one "
        "split only shifts the label of every class after it and the test labels would be wrong. Fix: give both "
        "splits the same class folders (add the missing ones, or remove the extra ones), then run again.")


def load_pair(name: str, root: str | os.PathLike | None = None, download: bool = False, image_size: int | None = None,
              train_subset: int | None = None, test_subset: int | None = None) -> tuple[ImageData, ImageData]:
    """Train and test splits with the same class list (checked before anything is decoded), each cut
    to its balanced subset when ``*_subset`` is given."""
    what = f"{name} at {data_root(root)}"
    check_same_classes(list_classes(name, "train", root, download), list_classes(name, "test", root, download), what)
    train = load_split(name, "train", root, download, image_size)
    test = load_split(name, "test", root, download, image_size)
    check_same_classes(train, test, what)  # the decoded lists too (cheap)
    return train.subset(train_subset), test.subset(test_subset)
