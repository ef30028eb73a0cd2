"""Streaming ImageNet-scale data: litdata chunks of the original JPEG/PNG bytes, decoded batch by batch.

:mod:`aot_lib.data.datasets` decodes a whole split into one uint8 tensor, which is right for CIFAR and wrong
for ImageNet-1K (about 100 GB of RAM at 160 px, and a stored centre crop hides the image borders from
every random crop). This module keeps the images encoded on disk and decodes them while training,
on `litdata <https://github.com/Lightning-AI/litData>`_, Lightning's streaming library (it fits the
Fabric stack this project trains with; WebDataset is the usual alternative, without a resumable loader).

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
  give one-class batches.
* The output appears atomically: it is written to ``DEST/.<split>.partial-<pid>`` and renamed.

**Streaming** (:class:`StreamingImages`, :func:`make_stream_loader`, :class:`StreamBatches`). Loader
worker processes decode each image with ``torchvision.io.decode_image`` (PIL as a fallback) and turn
it into one square uint8 *working image* of ``image_size`` pixels taken from the full-resolution
image; :class:`~aot_lib.data.augment.BatchedMultiCrop` then cuts every view from that working image on the
training device, with the colour, blur and solarize ops batched there as before. ``fit`` says how the
working image is taken:

* ``"crop"`` (default): the largest square, at a random position along the longer side (drawn from
  ``(seed, epoch, id)``), resized with antialiasing. The whole image is covered over the epochs (its
  borders included) and the aspect ratio is kept, so a view's aspect is BatchedMultiCrop's own
  ``ratio`` draw; a view's ``scale`` is relative to that square (on a 4:3 image, 3/4 of the image).
* ``"squash"``: the whole image resized to a square. A view's scale is then exactly its share of the
  image, but its aspect is stretched by the image's (4:3 images give views 4/3 wider than drawn).

Working size: a global view of scale ``s`` covers ``sqrt(s) * image_size`` pixels, so
:func:`working_size_for` picks ``global_size / sqrt(min global scale)`` (256 for the ImageNet recipe:
128 px views, scale 0.25) and no global view is upsampled; views are then resampled once more from
the working image, which is what bounds their resolution, not the stored images.

With ``decode_device`` set (e.g. ``"cuda"``), the workers only read the bytes and the main process
decodes the batch on that device (``torchvision.io.decode_jpeg(list, device=...)``, nvJPEG on a GPU;
PNGs and anything the device decoder refuses go through the CPU), then crops and resizes there: the
same images as the worker path up to decoder rounding, and the option for hosts with few CPU cores per
GPU. A CUDA context is never created in a worker.

**Batches, sharding and resume.** :func:`make_stream_loader` builds litdata's ``StreamingDataLoader``
(shuffle, drop_last) over one process's share of the data: litdata reads the rank and world size from
``torch.distributed`` (initialised by Fabric's DDP launch, so create the loader after
``fabric.launch()``) or from the ``WORLD_SIZE`` / ``GLOBAL_RANK`` / ``NNODES`` environment variables,
and splits the chunks over ranks and loader workers; the order of an epoch is a function of
``(seed, epoch)`` and of the world size, worker count and batch size. :class:`StreamBatches` is what a
trainer calls once per step (``next()`` -> uint8 ``(B, 3, S, S)`` on the device, epochs chained); its
``state_dict()`` goes into the checkpoint and ``load_state_dict()`` resumes mid-epoch to the same
batches. The state is the same on every rank (it counts batches, not ranks), so rank 0's copy resumes
all of them. Resuming with another world size, worker count or batch size is litdata's "elastic"
resume: no image is repeated or skipped within the epoch, but the batches differ from an uninterrupted
run.

Needs litdata (``pip install 'aot_lib[stream]'``); importing this module does not.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import io
import json
import math
import os
import re
import shutil
import sys
import time
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from .datasets import IMG_EXT, DataError

try:  # optional: everything that streams needs it, importing this module (the CLI) does not
    from litdata import StreamingDataLoader, StreamingDataset
    _LITDATA_MISSING: ImportError | None = None
except ImportError as _e:  # pragma: no cover - exercised only without litdata
    StreamingDataset, StreamingDataLoader = object, None
    _LITDATA_MISSING = _e

__all__ = ["convert_imagefolder", "read_meta", "StreamingImages", "make_stream_loader", "StreamBatches",
           "StreamBatch", "working_size_for", "default_stream_workers", "decode_rgb", "fit_square",
           "split_path", "stream_provenance", "add_convert_parser", "run_convert", "main", "FORMAT", "FORMAT_VERSION", "REENCODE_QUALITY"]

FORMAT = "aot_lib.streaming"
FORMAT_VERSION = 1  # bump when the sample layout or meta.json changes
META_FILE, FILES_FILE = "meta.json", "files.txt"
REENCODE_QUALITY = 90  # libjpeg quality for re-encoded JPEGs (max_side): visually lossless, FFCV's default too
_BLOCK = 512  # images per block handed to the worker pool; two blocks in flight bound the memory (~110 MB on ImageNet)
FITS = ("crop", "squash")


def _require_litdata() -> None:
    if _LITDATA_MISSING is not None:
        raise DataError(f"streaming needs litdata ({_LITDATA_MISSING}); install it with "
                        "pip install 'aot_lib[stream]' (or pip install litdata)")


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
    by_class: dict[str, list[str]] = {}
    for c in sorted(d for d in split_dir.iterdir() if d.is_dir()):
        imgs = sorted(f.relative_to(p).as_posix() for f in c.iterdir()
                      if f.suffix.lower() in IMG_EXT and not f.name.startswith(".") and f.is_file())
        if imgs:
            by_class[c.name] = imgs
    return _finish(by_class, "folder", p, split_dir.relative_to(p).as_posix() if split_dir != p else ".", layout)


def _list_zip(p: Path, split: str, layout: str) -> _Source:
    try:
        with zipfile.ZipFile(p) as zf:
            names = [i.filename for i in zf.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, OSError) as e:
        raise DataError(f"convert: {p} is not a readable zip ({e}); copy it again, or give an ImageFolder tree {layout}") from None
    by_class: dict[str, list[str]] = {}
    tops: set[str] = set()
    splits: set[str] = set()
    for n in names:
        parts = n.split("/")
        if parts[0] == "__MACOSX" or parts[-1].startswith("."):  # macOS resource forks (._name.jpg), hidden files
            continue
        if len(parts) >= 3 and n.lower().endswith(IMG_EXT):
            splits.add(parts[-3])
            if parts[-3] == split:
                tops.add("/".join(parts[:-2]))
                by_class.setdefault(parts[-2], []).append(n)
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

def _default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


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
    _require_litdata()
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
    workers = _default_workers() if num_workers is None else int(num_workers)
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
        if dest.exists():  # an earlier conversion (checked above): moved aside, then removed
            old = dest.parent / f".{dest.name}.old-{os.getpid()}"
            os.replace(dest, old)
            os.replace(tmp, dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, dest)
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
    from .datasets import Provenance

    meta = read_meta(path, split)
    src = Path(meta["source"])
    key = re.sub(r"[^a-z0-9]+", "_", src.stem.lower()).strip("_") or "data"
    label = (f"{src.name}:{meta['split_dir']} streamed from litdata chunks "
             f"({meta['n_images']:,} images, {len(meta['classes'])} classes)")
    return Provenance("stream", "litdata", meta["path"], split, meta["split_dir"], int(meta["n_images"]),
                      f"{key}_stream", label, None)


# ----------------------------------------------------------------------------- decoding and fitting

# torchvision 0.29 deprecates its image decoders in favour of TorchCodec (a DeprecationWarning on every call,
# silenced below); they still work, and PIL is the fallback in decode_rgb. Moving to torchcodec's decoders is
# a change of decode_rgb and StreamBatches._decode only.


def decode_rgb(data, device: str | torch.device = "cpu") -> torch.Tensor:
    """An encoded image (bytes or a 1-D uint8 tensor) as a uint8 ``(3, H, W)`` tensor (PIL when torchvision cannot)."""
    from torchvision.io import ImageReadMode, decode_image

    t = data if torch.is_tensor(data) else torch.frombuffer(bytearray(data), dtype=torch.uint8)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # torchvision 0.29 points to TorchCodec; see the note above decode_rgb
            img = decode_image(t.cpu(), mode=ImageReadMode.RGB)
        if img.dtype != torch.uint8:
            raise RuntimeError(f"decoded as {img.dtype}")
    except RuntimeError:
        from PIL import Image

        pil = Image.open(io.BytesIO(t.cpu().numpy().tobytes())).convert("RGB")
        img = torch.frombuffer(bytearray(pil.tobytes()), dtype=torch.uint8).reshape(pil.size[1], pil.size[0], 3).permute(2, 0, 1)
    return img.to(device)


_M64 = (1 << 64) - 1


def _mix64(x: int) -> int:
    """splitmix64's finaliser: a cheap, well-mixed 64-bit hash."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _crop_u(seed: int, epoch: int, idx: int) -> float:
    """The working crop's position in [0, 1): a function of (seed, epoch, image id) only, so a resumed
    run, another worker count or another decode device gives the same crops."""
    return _mix64(_mix64(_mix64(int(seed) & _M64) ^ int(epoch)) ^ int(idx)) / 2.0**64


def fit_square(img: torch.Tensor, size: int, u: float = 0.5, fit: str = "crop") -> torch.Tensor:
    """A uint8 ``(3, size, size)`` working image from a full-resolution uint8 ``(3, H, W)`` image.

    ``fit="crop"``: the largest square at position ``u`` along the longer side (0: left/top, 1:
    right/bottom); ``"squash"``: the whole image. Resized with antialiasing (bilinear).
    """
    import torch.nn.functional as F

    if fit not in FITS:
        raise ValueError(f"fit must be one of {FITS}, got {fit!r}")
    h, w = img.shape[-2:]
    if fit == "crop" and h != w:
        s = min(h, w)
        off = min(int(u * (max(h, w) - s + 1)), max(h, w) - s)  # every offset equally likely
        img = img[:, off:off + s, :] if h > w else img[:, :, off:off + s]
    if img.shape[-2:] == (size, size):
        return img.contiguous()
    if img.device.type == "cpu":  # uint8 bilinear with antialiasing has a fast CPU kernel
        return F.interpolate(img[None], size=(size, size), mode="bilinear", antialias=True, align_corners=False)[0]
    out = F.interpolate(img[None].float(), size=(size, size), mode="bilinear", antialias=True, align_corners=False)[0]
    return out.round_().clamp_(0, 255).to(torch.uint8)


def working_size_for(global_size: int, global_scale=(0.25, 1.0), multiple: int = 8) -> int:
    """Working-image side so that no global view is upsampled: ``global_size / sqrt(min global scale)``,
    rounded up to a multiple of ``multiple`` (256 for 128 px views of scale >= 0.25)."""
    side = global_size / math.sqrt(min(global_scale))
    return int(math.ceil(side / multiple - 1e-9) * multiple)  # 1e-9: 256.0 stays 256, not 264


def default_stream_workers(processes_per_node: int = 1, cap: int = 16) -> int:
    """Loader workers per training process: this machine's cores shared by its processes, one left for
    the training process itself, at most ``cap`` (more rarely helps and costs memory)."""
    return max(1, min(cap, _default_workers() // max(1, processes_per_node) - 1))


# ----------------------------------------------------------------------------- the dataset

class StreamingImages(StreamingDataset):
    """One converted split (its folder or the converted root with ``split``; a local path or an ``s3://`` ...
    URL) as litdata samples
    ``{"image": uint8 (3, S, S), "label": int, "id": int}`` (working images; see the module docstring).

    With ``decode=False`` the sample is ``{"data": 1-D uint8 tensor of the encoded bytes, "label",
    "id", "u": crop position}`` and the batch is decoded by :class:`StreamBatches` (``decode_device``).
    Everything else (``cache_dir``, ``max_cache_size``, ``storage_options`` ...) goes to litdata's
    ``StreamingDataset``.
    """

    def __init__(self, path, image_size: int, *, split: str = "train", seed: int = 0, shuffle: bool = True,
                 drop_last: bool | None = True, fit: str = "crop", decode: bool = True, **litdata_kwargs):
        _require_litdata()
        if fit not in FITS:
            raise ValueError(f"fit must be one of {FITS}, got {fit!r}")
        if int(image_size) < 1:
            raise ValueError(f"image_size must be a positive number of pixels, got {image_size}")
        path = split_path(path, split)
        url = "://" in path
        self.meta = self.fingerprint = None
        if not url:
            path = str(Path(path).expanduser().resolve())
            self.meta = read_meta(path)
            try:
                chunks = json.loads((Path(path) / "index.json").read_text())["chunks"]
            except (OSError, ValueError, KeyError):
                raise DataError(f"{path} has {META_FILE} but no readable index.json: the conversion did not finish; "
                                "convert again") from None
            # what the chunks hold (names, sizes, item counts), not where they are: a moved copy resumes
            self.fingerprint = hashlib.sha256(json.dumps(chunks, sort_keys=True).encode()).hexdigest()[:16]
        super().__init__(path, shuffle=shuffle, drop_last=drop_last, seed=seed, **litdata_kwargs)
        self.image_size, self.fit, self.decode = int(image_size), fit, bool(decode)

    @property
    def classes(self) -> list[str] | None:
        return None if self.meta is None else list(self.meta["classes"])

    def __getitem__(self, index):
        item = super().__getitem__(index)
        if not isinstance(item, dict) or "image" not in item:  # slices: raw samples
            return item
        idx, label = int(item["id"]), int(item["label"])
        u = _crop_u(self.seed, self.current_epoch, idx)
        if not self.decode:
            return {"data": torch.frombuffer(bytearray(item["image"]), dtype=torch.uint8), "label": label, "id": idx, "u": u}
        img = fit_square(decode_rgb(item["image"]), self.image_size, u, self.fit)
        return {"image": img, "label": label, "id": idx}


def _collate_encoded(items: list[dict]) -> dict:
    """Batch of undecoded samples: the byte tensors stay a list (their lengths differ)."""
    return {"data": [it["data"] for it in items], "label": torch.tensor([it["label"] for it in items]),
            "id": torch.tensor([it["id"] for it in items]), "u": torch.tensor([it["u"] for it in items], dtype=torch.float64)}


def make_stream_loader(path, batch_size: int, *, image_size: int, split: str = "train", seed: int = 0,
                       num_workers: int = 0, shuffle: bool = True, drop_last: bool = True, fit: str = "crop",
                       decode_device: str | None = None, pin_memory: bool = False, prefetch_factor: int | None = None,
                       expect_world_size: int | None = None, expect_rank: int | None = None, **litdata_kwargs):
    """litdata's ``StreamingDataLoader`` over this process's share of a converted split (``path``: the
    converted root, read at ``path/<split>``, or the split folder itself).

    ``batch_size`` is the per-process batch (the global batch divided by the world size). ``num_workers``
    loader processes decode (0: this process). ``decode_device`` None decodes in the workers; a device
    (``"cuda"``) leaves decoding to :class:`StreamBatches` on that device. ``expect_world_size`` /
    ``expect_rank`` (Fabric's) are checked against what litdata detected, so a loader made before the
    process group exists fails here instead of silently reading every image on every rank.
    """
    _require_litdata()
    ds = StreamingImages(path, image_size, split=split, seed=seed, shuffle=shuffle, drop_last=drop_last, fit=fit,
                         decode=decode_device is None, **litdata_kwargs)
    env = ds.distributed_env
    if (expect_world_size is not None and env.world_size != expect_world_size) or \
            (expect_rank is not None and env.global_rank != expect_rank):
        raise RuntimeError(f"litdata sees rank {env.global_rank} of {env.world_size} processes, the trainer rank "
                           f"{expect_rank} of {expect_world_size}: create the stream loader after fabric.launch() "
                           "(torch.distributed initialised), or set WORLD_SIZE and GLOBAL_RANK")
    loader = StreamingDataLoader(ds, batch_size=batch_size, num_workers=num_workers, shuffle=shuffle, drop_last=drop_last,
                                 pin_memory=pin_memory, prefetch_factor=prefetch_factor,
                                 collate_fn=None if decode_device is None else _collate_encoded)
    loader.decode_device = decode_device  # read by StreamBatches
    if len(loader) == 0:
        raise DataError(f"{path}: {len(ds)} images on this process ({env.world_size} processes) do not make one batch of "
                        f"{batch_size}; lower the batch size")
    return loader


# ----------------------------------------------------------------------------- what the trainer calls

@dataclass
class StreamBatch:
    images: torch.Tensor  # uint8 (B, 3, S, S) on the device
    labels: torch.Tensor  # int64 (B,)
    ids: torch.Tensor  # int64 (B,): lines of files.txt


class StreamBatches:
    """One batch per training step from a :func:`make_stream_loader` loader, epoch after epoch.

    ``next()`` -> uint8 ``(B, 3, S, S)`` on ``device`` (``next_batch()`` adds labels and ids);
    ``steps_per_epoch`` batches make an epoch; ``state_dict()`` after step ``k`` (put it in the
    checkpoint with the step) and ``load_state_dict()`` before the first ``next()`` resume at batch
    ``k + 1``. ``position`` counts the batches taken since the start of training.
    """

    STATE_FORMAT = 1

    def __init__(self, loader, device: str | torch.device = "cpu"):
        self.loader, self.device = loader, torch.device(device)
        self.decode_device = getattr(loader, "decode_device", None)
        self.position = 0
        self._it = None
        self._warned = False

    @property
    def steps_per_epoch(self) -> int:
        return len(self.loader)

    @property
    def n_images(self) -> int:
        """Images in the converted split (all ranks): what a trainer's schedule should be computed from
        (``n_images // global_batch`` steps an epoch), since litdata's own epoch length depends on the
        number of loader workers (each drops its last partial batch)."""
        ds = self.loader.dataset
        return int(ds.meta["n_images"]) if ds.meta is not None else len(ds) * ds.distributed_env.world_size

    @property
    def epoch(self) -> int:
        """Epochs started so far (litdata counts from 1)."""
        return int(self.loader.current_epoch)

    def _raw(self):
        if self._it is None:
            self._it = iter(self.loader)
        try:
            return next(self._it)
        except StopIteration:  # the epoch is over: the next one
            self._it = iter(self.loader)
            return next(self._it)

    def next_batch(self) -> StreamBatch:
        b = self._raw()
        self.position += 1
        if self.decode_device is None:
            images = b["image"]
        else:
            images = self._decode(b)
        nb = self.device.type == "cuda"
        return StreamBatch(images.to(self.device, non_blocking=nb), b["label"].long(), b["id"].long())

    def next(self) -> torch.Tensor:
        return self.next_batch().images

    def _decode(self, b: dict) -> torch.Tensor:
        """Decode a batch of encoded images on ``decode_device`` (JPEGs in one batched call), then fit them."""
        from torchvision.io import ImageReadMode, decode_jpeg

        dev = torch.device(self.decode_device)
        data, ds = b["data"], self.loader.dataset
        imgs: list[torch.Tensor | None] = [None] * len(data)
        jpegs = [k for k, d in enumerate(data) if len(d) > 2 and int(d[0]) == 0xFF and int(d[1]) == 0xD8]
        if jpegs:  # one batched call (nvJPEG on a GPU; libjpeg-turbo, as in the workers, on the CPU)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)  # see the note above decode_rgb
                    out = decode_jpeg([data[k] for k in jpegs], mode=ImageReadMode.RGB, device=dev)
                for k, img in zip(jpegs, out):
                    imgs[k] = img
            except RuntimeError as e:  # e.g. a JPEG variant the device decoder does not read: the CPU does
                if not self._warned:
                    warnings.warn(f"decoding on {dev} failed ({e}); this batch is decoded on the CPU", stacklevel=2)
                    self._warned = True
        for k, d in enumerate(data):
            if imgs[k] is None:
                imgs[k] = decode_rgb(d, dev)
        return torch.stack([fit_square(img, ds.image_size, float(u), ds.fit) for img, u in zip(imgs, b["u"].tolist())])

    def state_dict(self) -> dict:
        """Plain containers only (loads with ``torch.load(weights_only=True)``); the same on every rank."""
        return {"format": self.STATE_FORMAT, "position": self.position, "data": self.loader.dataset.fingerprint,
                "loader": self.loader.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Resume where ``state`` was taken. The data may have moved (another mount, another node): the
        chunks' fingerprint is compared, not the path. A changed world size, worker count or batch size
        resumes with litdata's elastic resume (no image repeated or skipped within the epoch, but other
        batches than the uninterrupted run), with a warning."""
        if not isinstance(state, dict) or state.get("format") != self.STATE_FORMAT or "loader" not in state:
            raise DataError("the checkpoint's data-stream state is not one this version of aot_lib wrote; "
                            "resume with the version that made it, or start a new run")
        state = copy.deepcopy(state)
        ds, saved = self.loader.dataset, state["loader"]["dataset"]
        if state.get("data") is not None and ds.fingerprint is not None:
            if state["data"] != ds.fingerprint:
                raise DataError(f"the checkpoint was made on other data than {ds.input_dir.path} (its chunks differ); "
                                "resume with the data it was made with, or start a new run")
            saved["input_dir_path"] = ds.input_dir.path  # same chunks, perhaps elsewhere
        now = {"world_size": ds.distributed_env.world_size, "num_workers": self.loader.num_workers or 1,
               "batch_size": self.loader.batch_size}
        changed = {k: (saved.get(k), v) for k, v in now.items() if saved.get(k) != v}
        if changed:
            warnings.warn("resuming the data stream with " + ", ".join(f"{k} {b} (was {a})" for k, (a, b) in changed.items())
                          + ": litdata's elastic resume keeps the epoch free of repeats, but the batches differ from an "
                          "uninterrupted run", stacklevel=2)
        self.loader.load_state_dict(state["loader"])
        self.position = int(state["position"])
        self._it = None


# ----------------------------------------------------------------------------- command line

def add_convert_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``convert`` on an argparse sub-parser set (``aot convert SRC DEST ...``)."""
    p = subparsers.add_parser("convert", help="convert an ImageFolder tree or zip into litdata chunks for streaming",
                              description="Convert one split of an ImageFolder tree (<root>/<split>/<class>/<image>) "
                                          "or zip into litdata chunks of the original JPEG/PNG bytes, for data.name=stream.")
    p.add_argument("src", help="ImageFolder root (holding <split>/) or a zip of one")
    p.add_argument("dest", help="converted root: the split goes to DEST/<split> (new or empty, unless --overwrite "
                                "replaces an earlier conversion)")
    p.add_argument("--split", default="train", help="split folder to convert (default: train; e.g. val)")
    p.add_argument("--workers", type=int, default=None, help="processes reading and checking images (default: all cores)")
    p.add_argument("--chunk-bytes", default="64MB", help="litdata chunk size (default: 64MB)")
    p.add_argument("--max-side", type=int, default=None,
                   help="re-encode images whose longer side is larger (default: keep every file as it is)")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier conversion at DEST/<split>")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show the full traceback of an error")
    return p


def run_convert(args) -> int:
    """Run a parsed ``convert`` command; prints a summary, returns the exit status (errors are raised)."""
    meta = convert_imagefolder(args.src, args.dest, split=args.split, num_workers=args.workers,
                               chunk_bytes=args.chunk_bytes, max_side=args.max_side, overwrite=args.overwrite)
    print(json.dumps({k: meta[k] for k in ("split", "n_images", "reencoded", "image_bytes", "seconds")}
                     | {"classes": len(meta["classes"]), "path": meta["path"]}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m aot_lib.data.streaming convert SRC DEST ...`` (the same as ``aot convert``)."""
    parser = argparse.ArgumentParser(prog="python -m aot_lib.data.streaming")
    add_convert_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return run_convert(args)
    except KeyboardInterrupt:
        print("convert: interrupted; nothing was written to the destination", file=sys.stderr)
        return 130
    except (DataError, ValueError, OSError) as e:
        if getattr(args, "debug", False):
            raise
        print(f"convert: {str(e).strip().splitlines()[0]}".replace("convert: convert: ", "convert: "), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
