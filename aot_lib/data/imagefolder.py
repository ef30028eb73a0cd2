"""Listing ImageFolder trees and zips (``<split>/<class>/<image>``): the one lister the in-memory loader
(:mod:`aot_lib.data.datasets`) and the converter for streaming (:mod:`aot_lib.data.convert`) share, so both see
the same images and give the same labels (indices into the sorted class list).

An image is a file with one of :data:`IMG_EXT`; hidden files (``.name``, e.g. macOS's ``._name.jpg`` resource
forks and ``.DS_Store``) and anything under a ``__MACOSX`` folder (what macOS's zip adds) are not images. A class
is a folder holding at least one image.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["IMG_EXT", "is_image_name", "folder_images", "zip_images"]

IMG_EXT = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
_SKIPPED_FOLDER = "__MACOSX"


def is_image_name(path: str) -> bool:
    """Whether a ``/``-separated path names an image: an image extension, not hidden, not under ``__MACOSX``."""
    parts = path.split("/")
    return (parts[-1].lower().endswith(IMG_EXT) and not parts[-1].startswith(".")
            and _SKIPPED_FOLDER not in parts[:-1] and not any(p.startswith(".") for p in parts[:-1] if p not in (".", "..")))


def folder_images(split_dir: Path) -> dict[str, list[Path]]:
    """class name -> its images (sorted paths), for the class folders of ``split_dir`` that hold images."""
    out: dict[str, list[Path]] = {}
    for c in sorted(d for d in split_dir.iterdir() if d.is_dir() and not d.name.startswith(".")
                    and d.name != _SKIPPED_FOLDER):
        imgs = sorted(f for f in c.iterdir() if is_image_name(f.name) and f.is_file())
        if imgs:
            out[c.name] = imgs
    return out


def zip_images(names: list[str]) -> dict[str, dict[str, list[str]]]:
    """split folder name -> class name -> member names (in the given order), for the members of a zip that
    are images at ``[<top>/]<split>/<class>/<image>``."""
    index: dict[str, dict[str, list[str]]] = {}
    for n in names:
        parts = n.split("/")
        if len(parts) >= 3 and is_image_name(n):
            index.setdefault(parts[-3], {}).setdefault(parts[-2], []).append(n)
    return index
