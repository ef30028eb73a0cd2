"""Streaming ImageNet-scale data: litdata chunks of the original JPEG/PNG bytes (written by
:mod:`aot_lib.data.convert`), decoded batch by batch.

:mod:`aot_lib.data.datasets` decodes a whole split into one uint8 tensor, which is right for CIFAR and wrong
for ImageNet-1K (about 100 GB of RAM at 160 px, and a stored centre crop hides the image borders from
every random crop). This module keeps the images encoded on disk and decodes them while training,
on `litdata <https://github.com/Lightning-AI/litData>`_, Lightning's streaming library (it fits the
Fabric stack this project trains with; WebDataset is the usual alternative, without a resumable loader).

The jobs, one module each: converting a split (:mod:`aot_lib.data.convert`, ``aot convert``); decoding an
image and fitting its working image (:mod:`aot_lib.data.decode`); the litdata dataset and loader (here:
:class:`StreamingImages`, :func:`make_stream_loader`, and :func:`open_stream`, what a trainer opens); the
resumable batches a trainer reads per step (:mod:`aot_lib.data.stream_batches`).

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

import hashlib
import json
from pathlib import Path

import torch

from ..runtime import cpu_cores
from .convert import META_FILE, read_meta, split_path, stream_provenance
from .datasets import DataError
from .decode import FITS, crop_position, decode_rgb, fit_square, working_size_for
from .litdata_import import StreamingDataLoader, StreamingDataset, require_litdata
from .stream_batches import StreamBatches

__all__ = ["StreamingImages", "make_stream_loader", "open_stream", "default_stream_workers"]


def default_stream_workers(processes_per_node: int = 1, cap: int = 16) -> int:
    """Loader workers per training process: this machine's cores shared by its processes, one left for
    the training process itself, at most ``cap`` (more rarely helps and costs memory)."""
    return max(1, min(cap, cpu_cores() // max(1, processes_per_node) - 1))


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
        require_litdata()
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
        u = crop_position(self.seed, self.current_epoch, idx)
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
    require_litdata()
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


def open_stream(path, batch_size: int, *, global_size: int, global_scale, device, world_size: int = 1, rank: int = 0,
                processes_per_node: int = 1, image_size: int | None = None, num_workers: int | None = None,
                split: str = "train", seed: int = 0, fit: str = "crop", decode_device: str | None = None):
    """What a trainer opens for one process: its resumable :class:`~aot_lib.data.stream_batches.StreamBatches`
    over :func:`make_stream_loader` (checked against the trainer's ``world_size`` and ``rank``; pinned memory
    on a GPU), and the converted split's :class:`~aot_lib.data.datasets.Provenance` (what run files record).

    ``image_size`` None: :func:`~aot_lib.data.decode.working_size_for` the global views (``global_size``, the
    smallest of ``global_scale``), so none is upsampled; ``num_workers`` None: :func:`default_stream_workers`."""
    device = torch.device(device)
    loader = make_stream_loader(path, batch_size, image_size=image_size or working_size_for(global_size, global_scale),
                                split=split, seed=seed, fit=fit, decode_device=decode_device,
                                num_workers=default_stream_workers(processes_per_node) if num_workers is None else num_workers,
                                pin_memory=device.type == "cuda", expect_world_size=world_size, expect_rank=rank)
    return StreamBatches(loader, device=device), stream_provenance(path)
