"""Datasets as uint8 image tensors: CIFAR-10/100 (torchvision), and ImageFolder trees or zips.

Every split is decoded once into a ``(N, 3, H, W)`` uint8 tensor and cached on disk, so training
augments whole batches on the device (:mod:`aot_lib.augment`) and never waits on image decoding.

Where the data is looked for (``root``): the argument (a relative one may also be found under
``$AOT_DATA``), else ``$AOT_DATA``, else ``~/.cache/aot_lib/data``. For ``cifar10`` / ``cifar100`` the root may hold torchvision's
``cifar-10-batches-py`` / ``cifar-100-python``, an ImageFolder zip whose name starts with the
dataset name (``cifar10-jpeg.zip``, ``cifar100-png.zip``: the offline copies), or a folder
``cifar10/{train,test}``; ``download=True`` fetches through torchvision. ``imagefolder`` takes a
root (folder or zip) holding ``train/`` and ``test/`` or ``val/`` with one folder per class.
Decoded tensors are cached under ``$AOT_CACHE`` (default ``~/.cache/aot_lib``).
"""
from __future__ import annotations

import hashlib
import io
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = ["DataError", "ImageData", "load_split", "data_root", "cache_dir", "atomic_save"]

IMG_EXT = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
TORCHVISION_DIRS = {"cifar10": "cifar-10-batches-py", "cifar100": "cifar-100-python"}


class DataError(RuntimeError):
    """Missing, unreadable or corrupt data; the message says how to fix it."""


@dataclass
class ImageData:
    images: torch.Tensor  # (N, 3, H, W) uint8
    labels: torch.Tensor  # (N,) int64
    classes: list[str]
    source: str

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, n: int | None) -> "ImageData":
        """The first ``n // classes`` images of every class (a balanced, deterministic subset)."""
        if n is None or n >= len(self):
            return self
        per = max(1, n // len(self.classes))
        keep = torch.cat([torch.nonzero(self.labels == c).flatten()[:per] for c in range(len(self.classes))])
        keep = keep.sort().values
        return ImageData(self.images[keep], self.labels[keep], self.classes, self.source + f" (subset {len(keep)})")


def data_root(root: str | os.PathLike | None = None) -> Path:
    """``root``, else ``$AOT_DATA``, else ``~/.cache/aot_lib/data``. A relative ``root`` that does not
    exist from here is looked up under ``$AOT_DATA`` (so a config can say ``imagenette160-subset.zip``)."""
    env = os.environ.get("AOT_DATA")
    if root is not None:
        p = Path(root).expanduser()
        if not p.is_absolute() and not p.exists() and env and (Path(env).expanduser() / p).exists():
            return Path(env).expanduser() / p
        return p
    return Path(env or Path.home() / ".cache" / "aot_lib" / "data").expanduser()


def cache_dir() -> Path:
    return Path(os.environ.get("AOT_CACHE") or Path.home() / ".cache" / "aot_lib").expanduser()


def atomic_save(obj, path: Path) -> None:
    """``torch.save`` to a temporary file in the same folder, then rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _verify_checksum(zpath: Path) -> None:
    """If a ``SHA256SUMS`` file lies beside the zip, the zip must match it."""
    sums = zpath.parent / "SHA256SUMS"
    if not sums.exists():
        return
    expected = {line.split()[1].lstrip("*"): line.split()[0] for line in sums.read_text().splitlines() if line.strip()}
    if zpath.name in expected and _sha256(zpath) != expected[zpath.name]:
        raise DataError(f"{zpath} does not match its checksum in {sums}: the file is corrupt or incomplete; "
                        "copy it again (or delete it and download the data).")


def _to_tensor(img, size: int | None) -> torch.Tensor:
    from PIL import Image

    img = img.convert("RGB")
    if size is not None and img.size != (size, size):
        w, h = img.size
        s = size / min(w, h)  # shorter side to `size`, then a centre crop
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


def _from_zip(zpath: Path, split: str, size: int | None) -> tuple[torch.Tensor, torch.Tensor, list[str], str]:
    from PIL import Image

    _verify_checksum(zpath)
    try:
        zf = zipfile.ZipFile(zpath)
    except (zipfile.BadZipFile, OSError) as e:
        raise DataError(f"{zpath} is not a readable zip ({e}); copy it again or point data.root elsewhere") from None
    with zf:
        names = [n for n in zf.namelist() if n.lower().endswith(IMG_EXT)]
        for split_name in _split_names(split):
            files: dict[str, list] = {}
            for n in names:
                parts = n.split("/")
                if len(parts) >= 3 and parts[-3] == split_name:
                    files.setdefault(parts[-2], []).append(n)
            if files:
                imgs, labels, classes = _decode_tree(files, lambda n: Image.open(io.BytesIO(zf.read(n))), size,
                                                     f"{zpath.name}:{split_name}")
                return imgs, labels, classes, f"{zpath}:{split_name}"
    raise DataError(f"{zpath} holds no '{'/'.join(_split_names(split))}/<class>/<image>' tree for the {split} split")


def _from_folder(root: Path, split: str, size: int | None):
    from PIL import Image

    for split_name in _split_names(split):
        d = root / split_name
        if d.is_dir():
            files = {c.name: [f for f in c.iterdir() if f.suffix.lower() in IMG_EXT] for c in d.iterdir() if c.is_dir()}
            imgs, labels, classes = _decode_tree({k: v for k, v in files.items() if v}, Image.open, size, str(d))
            return imgs, labels, classes, str(d)
    raise DataError(f"{root} holds no {' or '.join(_split_names(split))}/ folder for the {split} split")


def _from_torchvision(name: str, root: Path, split: str, download: bool):
    import torchvision

    cls = torchvision.datasets.CIFAR10 if name == "cifar10" else torchvision.datasets.CIFAR100
    try:
        ds = cls(str(root), train=split == "train", download=download)
    except RuntimeError as e:
        raise DataError(f"torchvision could not load {name} from {root}: {e}") from None
    images = torch.from_numpy(ds.data).permute(0, 3, 1, 2).contiguous()
    return images, torch.tensor(ds.targets), list(ds.classes), f"torchvision {name} at {root}"


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


def load_split(name: str, split: str, root: str | os.PathLike | None = None, download: bool = False,
               image_size: int | None = None) -> ImageData:
    """One split (``"train"`` or ``"test"``) as an :class:`ImageData`, decoded once and cached."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    root = data_root(root)
    kind, path = _locate(name, root, download)
    if kind == "torchvision":
        images, labels, classes, source = _from_torchvision(name, path, split, download)
        if image_size is not None and image_size != images.shape[-1]:
            images = torch.nn.functional.interpolate(images.float(), size=image_size, mode="bicubic",
                                                     antialias=True).round().clamp(0, 255).to(torch.uint8)
        return ImageData(images, labels, classes, source)
    if name == "imagefolder" and image_size is None:
        image_size = 160
    st = path.stat()
    key = hashlib.sha1(f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{split}|{image_size}".encode()).hexdigest()[:16]
    cached = cache_dir() / "tensors" / f"{path.stem}-{split}-{image_size}-{key}.pt"
    if cached.exists():
        try:
            blob = torch.load(cached, weights_only=True)
            return ImageData(blob["images"], blob["labels"], blob["classes"], blob["source"])
        except Exception:  # noqa: BLE001 - a broken cache entry is rebuilt
            cached.unlink(missing_ok=True)
    if kind == "zip":
        images, labels, classes, source = _from_zip(path, split, image_size)
    else:
        images, labels, classes, source = _from_folder(path, split, image_size)
    atomic_save({"images": images, "labels": labels, "classes": classes, "source": source}, cached)
    return ImageData(images, labels, classes, source)
