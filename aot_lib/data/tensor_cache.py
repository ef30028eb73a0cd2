"""The on-disk cache of decoded splits.

**Cache.** Decoded tensors are cached under ``$AOT_CACHE`` (default ``~/.cache/aot_lib``) in
``tensors/``, keyed on everything the tensor depends on: for a folder, the sorted list of
(relative path, size, mtime_ns) of every image file of that split; for a zip, the zip's size and
mtime plus its member list (names, sizes, CRCs from the central directory); plus the split, the
image size and :data:`CACHE_VERSION`. Adding, removing or rewriting an image (or a class) therefore
gives a new key, and the entry is decoded again; an entry that cannot be read or does not hold what
its name promises is rebuilt (with a warning), never used. Older entries of the same source are
deleted when a new one is written.
"""
from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

import torch

__all__ = ["CACHE_VERSION", "cache_dir", "read_cache", "cache_path"]

CACHE_VERSION = 2  # bump when the cached blob's layout or the decoding changes


def cache_dir() -> Path:
    return Path(os.environ.get("AOT_CACHE") or Path.home() / ".cache" / "aot_lib").expanduser()


def read_cache(path: Path, key: str):
    """The cached ``(images, labels, classes)``, or None (and the file removed) when it is unusable."""
    try:
        blob = torch.load(path, weights_only=True)
        images, labels, classes = blob["images"], blob["labels"], blob["classes"]
        ok = (blob.get("version") == CACHE_VERSION and blob.get("key") == key
              and isinstance(images, torch.Tensor) and images.dtype == torch.uint8 and images.ndim == 4
              and isinstance(labels, torch.Tensor) and labels.ndim == 1 and len(labels) == len(images)
              and isinstance(classes, list) and all(isinstance(c, str) for c in classes)
              and (len(labels) == 0 or 0 <= int(labels.min()) <= int(labels.max()) < len(classes)))
        if not ok:
            raise ValueError("it does not hold what its name promises")
        return images, labels, classes
    except Exception as e:  # noqa: BLE001 - an unreadable or wrong entry is rebuilt
        warnings.warn(f"cache entry {path} is unusable ({e}); decoding the images again", stacklevel=3)
        path.unlink(missing_ok=True)
        return None


def cache_path(lst, split: str, image_size: int | None) -> tuple[Path, str, str]:
    key = hashlib.sha256(f"v{CACHE_VERSION}|{lst.fingerprint}|{split}|{image_size}".encode()).hexdigest()
    where = hashlib.sha256(str(lst.path.resolve()).encode()).hexdigest()[:8]
    prefix = f"{lst.path.stem}-{split}-{image_size}-{where}-"
    return cache_dir() / "tensors" / f"{prefix}{key[:16]}.pt", key, prefix
