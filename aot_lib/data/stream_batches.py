"""The resumable stream a trainer reads once per step: :class:`StreamBatches` over a
:func:`aot_lib.data.streaming.make_stream_loader` loader (epochs chained, decoding on ``decode_device`` when
the workers only read bytes), whose state goes into the checkpoint and resumes mid-epoch to the same batches.
"""
from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass

import torch

from .datasets import DataError
from .decode import decode_rgb, fit_square

__all__ = ["StreamBatches", "StreamBatch"]


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
