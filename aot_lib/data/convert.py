"""Converting an ImageFolder split into litdata chunks for streaming (``aot convert``), and reading what a
conversion wrote (its ``meta.json``: :func:`read_meta`, :func:`split_path`, :func:`stream_provenance`).

**Converting** (:func:`convert_imagefolder`, ``aot convert SRC DEST --split train``). One split of an
ImageFolder tree ``<root>/<split>/<class>/<image>`` or of a zip whose members are
``[<top>/]<split>/<class>/<image>`` becomes the folder ``DEST/<split>`` (so ``--split train`` and
``--split val`` fill one converted root, like the source): litdata chunks (``index.json``,
``chunk-*.bin``) of samples ``{"image": bytes, "label": int, "id": int}``, plus ``meta.json`` (the
class list and counts) and ``files.txt`` (line ``id`` is the source path of image ``id``). The bytes
are the source files' own JPEG/PNG bytes: nothing is decoded for storage. Exceptions, each counted in ``meta.json``
(``reencoded``): ``max_side`` re-encodes images whose longer side is larger (JPEG quality
:data:`REENCODE_QUALITY` for JPEG sources, PNG otherwise), and images the streaming decoder would not
read as 8-bit RGB (16-bit PNG, BMP, WebP ...) are re-encoded as PNG.

* Labels are indices into the sorted list of class folders that hold at least one image, and ids
  follow (class, file name) order: the same labels as :func:`aot_lib.data.datasets.load_split` on the same tree.
* Every image is decoded once while converting (JPEGs at 1/8 scale in the DCT domain, which still
  reads the whole entropy-coded stream), so a truncated or corrupt file stops the conversion with one
  :class:`~aot_lib.data.datasets.DataError` that lists the bad files; so does a missing or empty source.
* The samples are written in a fixed pseudo-random order (``shuffle_seed``), by one writer in the
  main process while ``num_workers`` processes read and check the files: the chunk layout is a function
  of the source alone (not of the number of workers), and every chunk is a random mix of classes.
  This matters because litdata shuffles the chunk order and the order inside chunks, so one batch is
  drawn from one or two chunks (about 550 ImageNet images per 64 MB chunk): class-sorted chunks would

Needs litdata (``pip install 'aot_lib[stream]'``) to convert; importing this module does not.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from ..files import swap_into_place
from ..runtime import cpu_cores
from .datasets import DataError, Provenance, slug
from .imagefolder import IMG_EXT, folder_images, zip_images
from .litdata_import import require_litdata

__all__ = ["convert_imagefolder", "read_meta", "split_path", "stream_provenance", "FORMAT", "FORMAT_VERSION",
           "META_FILE", "FILES_FILE", "REENCODE_QUALITY"]

FORMAT = "aot_lib.streaming"
FORMAT_VERSION = 1  # bump when the sample layout or meta.json changes
META_FILE, FILES_FILE = "meta.json", "files.txt"
REENCODE_QUALITY = 90  # libjpeg quality for re-encoded JPEGs (max_side): visually lossless, FFCV's default too
_BLOCK = 512  # images per block handed to the worker pool; two blocks in flight bound the memory (~110 MB on ImageNet)


# ----------------------------------------------------------------------------- listing the source

@dataclass
class _Source:
    kind: str  # zip | folder
    path: Path
    split_dir: str  # the split folder, relative to the zip root / the folder (e.g. "imagenette160/train")
    classes: list[str]
    files: list[str]  # zip member names / paths relative to `path`, in id order
    labels: list[int]


def _list_source(src, split: str) -> _Source:
    p = Path(src).expanduser()
    layout = f"<root>/{split}/<class>/<image> (ImageNet-1K layout) or a zip of one"
    if not p.exists():
        raise DataError(f"convert: {p} does not exist; give an ImageFolder tree {layout}")
    if p.is_file():
        return _list_zip(p, split, layout)
    split_dir = p / split if (p / split).is_dir() else (p if p.name == split else None)
    if split_dir is None:
        found = sorted(d.name for d in p.iterdir() if d.is_dir())
        raise DataError(f"convert: {p} has no {split}/ folder (it holds: {', '.join(found[:10]) or 'no folders'}); "
                        f"give an ImageFolder tree {layout}, or pick the split with --split")
    by_class = {c: [f.relative_to(p).as_posix() for f in imgs] for c, imgs in folder_images(split_dir).items()}
    return _finish(by_class, "folder", p, split_dir.relative_to(p).as_posix() if split_dir != p else ".", layout)


def _list_zip(p: Path, split: str, layout: str) -> _Source:
    try:
        with zipfile.ZipFile(p) as zf:
            names = [i.filename for i in zf.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, OSError) as e:
        raise DataError(f"convert: {p} is not a readable zip ({e}); copy it again, or give an ImageFolder tree {layout}") from None
    index = zip_images(names)  # skips macOS resource forks (__MACOSX/, ._name.jpg) and hidden files
    by_class, splits = index.get(split, {}), set(index)
    tops = {n.rsplit("/", 2)[0] for members in by_class.values() for n in members}
    if len(tops) > 1:
        raise DataError(f"convert: {p} holds several {split}/ folders ({', '.join(sorted(tops)[:4])}); "
                        "keep one split tree per zip")
    if not by_class and splits:
        raise DataError(f"convert: {p} holds no {split}/<class>/<image> members (its split folders: "
                        f"{', '.join(sorted(splits)[:10])}); pick one with --split")
    return _finish({c: sorted(v) for c, v in sorted(by_class.items())}, "zip", p, next(iter(tops), split), layout)


def _finish(by_class: dict[str, list[str]], kind: str, path: Path, split_dir: str, layout: str) -> _Source:
    if not by_class:
        raise DataError(f"convert: {path} holds no images for this split ({', '.join(IMG_EXT)} files in class "
                        f"folders); give an ImageFolder tree {layout}")
    classes = sorted(by_class)
    files, labels = [], []
    for label, c in enumerate(classes):
        files += by_class[c]
        labels += [label] * len(by_class[c])
    return _Source(kind, path, split_dir, classes, files, labels)


# ----------------------------------------------------------------------------- checking one image (worker side)

_STATE: dict = {}  # per process: the source being converted and an open zip (never shared across a fork)


def _worker_init(kind: str, path: str, files: list[str], max_side: int | None) -> None:
    _STATE.clear()
    _STATE.update(kind=kind, path=path, files=files, max_side=max_side, pid=os.getpid(), zip=None)


def _read(i: int) -> bytes:
    if _STATE["kind"] == "folder":
        return (Path(_STATE["path"]) / _STATE["files"][i]).read_bytes()
    if _STATE["zip"] is None or _STATE["pid"] != os.getpid():  # a forked child opens its own handle
        _STATE.update(zip=zipfile.ZipFile(_STATE["path"]), pid=os.getpid())
    return _STATE["zip"].read(_STATE["files"][i])


# What torchvision's decoder reads as 8-bit RGB exactly like PIL's convert("RGB") (checked in the tests):
# these are stored as they are; anything else is re-encoded.
_KEEP = {"JPEG": {"RGB", "L", "CMYK"}, "PNG": {"RGB", "L", "P", "RGBA", "LA", "1"}}


def _check_image(raw: bytes, max_side: int | None) -> tuple[bytes, bool]:
    """``(bytes to store, re-encoded?)``; raises on a file that is not a decodable image."""
    from PIL import Image

    img = Image.open(io.BytesIO(raw))
    fmt, (w, h) = img.format, img.size
    too_big = max_side is not None and max(w, h) > max_side
    if fmt in _KEEP and img.mode in _KEEP[fmt] and not too_big:
        if fmt == "JPEG":  # decode at 1/8 scale (DCT domain): every byte of the stream is still read
            img.draft(img.mode, (max(1, w // 8), max(1, h // 8)))
        img.load()
        return raw, False
    if too_big and fmt == "JPEG":
        img.draft("RGB", (max(1, w * max_side // max(w, h)), max(1, h * max_side // max(w, h))))
    img = img.convert("RGB")  # decodes everything (raises on a corrupt file)
    if too_big:
        s = max_side / max(w, h)
        img = img.resize((max(1, round(w * s)), max(1, round(h * s))), Image.BICUBIC)  # PIL's resize antialiases
    out = io.BytesIO()
    if fmt == "JPEG":
        img.save(out, "JPEG", quality=REENCODE_QUALITY)
    else:
        img.save(out, "PNG")
    return out.getvalue(), True


def _prepare(i: int) -> tuple[int, bytes | None, str | None, bool]:
    """``(id, bytes, error, re-encoded)`` for image ``i`` of the source (runs in a pool worker)."""
    try:
        raw = _read(i)
    except Exception as e:  # noqa: BLE001 - an unreadable file or zip member is reported, not raised here
        return i, None, f"cannot be read ({type(e).__name__}: {e})", False
    try:
        data, reencoded = _check_image(raw, _STATE["max_side"])
    except Exception as e:  # noqa: BLE001 - any decoder error means a corrupt image
        return i, None, f"is not a decodable image ({type(e).__name__}: {e})", False
    return i, data, None, reencoded


# ----------------------------------------------------------------------------- conversion

def _is_ours(d: Path) -> bool:
    try:
        return json.loads((d / META_FILE).read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


@contextlib.contextmanager
def _single_process_env():
    """litdata reads WORLD_SIZE / GLOBAL_RANK / NNODES before torch.distributed: make it see one process."""
    keys = ("WORLD_SIZE", "GLOBAL_RANK", "NNODES")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(WORLD_SIZE="1", GLOBAL_RANK="0", NNODES="1")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _blocks(order: list[int], pool):
    """Results of :func:`_prepare` in ``order``, with at most two blocks of images in flight."""
    blocks = [order[k:k + _BLOCK] for k in range(0, len(order), _BLOCK)]
    if pool is None:
        for b in blocks:
            yield from map(_prepare, b)
        return
    pending = pool.map_async(_prepare, blocks[0], chunksize=8) if blocks else None
    for k in range(len(blocks)):
        ahead = pool.map_async(_prepare, blocks[k + 1], chunksize=8) if k + 1 < len(blocks) else None
        yield from pending.get()
        pending = ahead


def convert_imagefolder(src, dest, *, split: str = "train", num_workers: int | None = None, chunk_bytes: str | int = "64MB",
                        max_side: int | None = None, shuffle_seed: int | None = 0, overwrite: bool = False,
                        progress: bool = True) -> dict:
    """Convert one split of an ImageFolder tree or zip into litdata chunks at ``dest/<split>``; returns its ``meta.json``.

    ``src``: a folder holding ``<split>/<class>/<image>`` (or the split folder itself), or a zip whose
    members are ``[<top>/]<split>/<class>/<image>``. ``num_workers`` processes read and check the images
    (default: every CPU core; 0 reads in this process). ``chunk_bytes``: litdata's chunk size.
    ``max_side``: re-encode images whose longer side is larger to that side (None: keep every file as it
    is). ``shuffle_seed``: the fixed order the samples are written in (None: class order; see the module
    docstring for why not). ``overwrite``: replace an earlier conversion at ``dest/<split>``.
    ``dest`` is the converted data set's root, like the source's: convert ``--split train`` and
    ``--split val`` to the same ``dest``.

    Raises :class:`~aot_lib.data.datasets.DataError` (nothing is left behind) for a missing or empty source, an
    existing ``dest/<split>``, and unreadable or undecodable images (all of them listed).
    """
    require_litdata()
    from litdata.streaming.writer import BinaryWriter
    from tqdm.auto import tqdm

    if max_side is not None and max_side < 1:
        raise ValueError(f"max_side must be a positive number of pixels, got {max_side}")
    source = _list_source(src, split)
    dest = Path(dest).expanduser() / split
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        if not (overwrite and _is_ours(dest)):
            fix = ("pass --overwrite (overwrite=True) to replace it" if _is_ours(dest)
                   else "choose an empty or new folder (it does not hold an earlier conversion, so it is never replaced)")
            raise DataError(f"convert: {dest} already exists and is not empty; {fix}")
    n = len(source.files)
    workers = cpu_cores() if num_workers is None else int(num_workers)
    order = list(range(n))
    if shuffle_seed is not None:
        order = torch.randperm(n, generator=torch.Generator().manual_seed(int(shuffle_seed))).tolist()

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    errors: list[str] = []
    reencoded = total_bytes = 0
    t0 = time.time()
    pool = None
    try:
        with _single_process_env():  # one writer, rank 0, even inside a DDP job or under WORLD_SIZE (else merge() waits)
            writer = BinaryWriter(str(tmp), chunk_bytes=chunk_bytes)
        args = (source.kind, str(source.path), source.files, max_side)
        if workers > 0:
            import multiprocessing as mp

            # fork where there is one: the workers only run PIL and zipfile, and start in milliseconds
            ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
            pool = ctx.Pool(workers, initializer=_worker_init, initargs=args)
        else:
            _worker_init(*args)
        with tqdm(total=n, desc=f"convert {source.path.name}:{source.split_dir}", unit="img", disable=not progress,
                  dynamic_ncols=True) as bar:
            for k, (i, data, err, re_) in enumerate(_blocks(order, pool)):
                if err is not None:
                    errors.append(f"{source.files[i]} {err}")
                elif not errors:  # after the first error only the checking goes on (to list every bad file)
                    writer[k] = {"image": data, "label": source.labels[i], "id": i}
                    reencoded += re_
                    total_bytes += len(data)
                bar.update()
        if pool is not None:
            pool.close()
            pool.join()
            pool = None
        if errors:
            shown = "; ".join(errors[:10]) + (f"; ... ({len(errors)} in all)" if len(errors) > 10 else "")
            raise DataError(f"convert: {len(errors)} of {n} images in {source.path} cannot be used: {shown}. Fix: replace "
                            "or delete these files (or copy the data again), then run the conversion again")
        writer.done()
        writer.merge(num_workers=1)
        counts = [0] * len(source.classes)
        for label in source.labels:
            counts[label] += 1
        import litdata

        meta = {"format": FORMAT, "version": FORMAT_VERSION, "split": split, "split_dir": source.split_dir,
                "path": str(dest.resolve()), "source": str(source.path.resolve()), "source_kind": source.kind, "n_images": n,
                "classes": source.classes, "class_counts": counts, "max_side": max_side, "reencoded": reencoded,
                "image_bytes": total_bytes, "chunk_bytes": chunk_bytes, "shuffle_seed": shuffle_seed,
                "sample": {"image": "encoded JPEG/PNG bytes", "label": "int", "id": "int: line of files.txt"},
                "litdata": litdata.__version__, "seconds": round(time.time() - t0, 1),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        (tmp / FILES_FILE).write_text("".join(f"{f}\n" for f in source.files))
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2))
        swap_into_place(tmp, dest)  # an earlier conversion there (checked above) is replaced
        return meta
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        shutil.rmtree(tmp, ignore_errors=True)


def split_path(path, split: str = "train") -> str:
    """The folder of one converted split: ``path`` itself when it holds ``meta.json`` (a split folder),
    else ``path/<split>`` (a converted root). A URL gets ``/<split>`` unless it already ends with it."""
    if isinstance(path, str) and "://" in path:
        return path if path.rstrip("/").rsplit("/", 1)[-1] == split else f"{path.rstrip('/')}/{split}"
    p = Path(path).expanduser()
    return str(p if (p / META_FILE).exists() else p / split)


def read_meta(path, split: str = "train") -> dict:
    """``meta.json`` of a converted split (local path: the split folder, or the root holding ``<split>/``);
    :class:`~aot_lib.data.datasets.DataError` when it is not one."""
    p = Path(split_path(path, split))
    f = p / META_FILE
    try:
        meta = json.loads(f.read_text())
    except FileNotFoundError:
        raise DataError(f"{p} is not a converted split (no {META_FILE}); make one with "
                        f"aot convert SRC {p.parent} --split {p.name}") from None
    except (OSError, ValueError) as e:
        raise DataError(f"{f} cannot be read ({e}); convert the data again") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise DataError(f"{f} was not written by aot convert; convert the data again")
    if meta.get("version") != FORMAT_VERSION:
        raise DataError(f"{p} was converted by another version of aot_lib (format {meta.get('version')}, "
                        f"this one reads {FORMAT_VERSION}); convert the data again")
    return meta


def stream_provenance(path, split: str = "train"):
    """:class:`aot_lib.data.datasets.Provenance` of a converted split (what run files record as ``data``), from its
    ``meta.json``: dataset ``stream``, reader ``litdata``, the source it was converted from in ``label``."""
    meta = read_meta(path, split)
    src = Path(meta["source"])
    key = slug(src.stem)
    label = (f"{src.name}:{meta['split_dir']} streamed from litdata chunks "
             f"({meta['n_images']:,} images, {len(meta['classes'])} classes)")
    return Provenance("stream", "litdata", meta["path"], split, meta["split_dir"], int(meta["n_images"]),
                      f"{key}_stream", label, None)
