"""What the three commands (pretrain, probe, supervised) build the same way from a config: the encoder, the
data (where it is, one split or the train/test pair), the input normalisation and the step schedule.

The commands import these from here and never from one another.
"""
from __future__ import annotations

from ..data.datasets import data_root, load_pair, load_split, normalization_stats
from ..models.registry import create_model, import_model_modules

__all__ = ["build_encoder", "data_location", "load_data", "load_train_test", "normalization_for", "schedule_steps"]


def build_encoder(cfg: dict, num_classes: int = 0, img_size: int | None = None):
    """The configured encoder (``model.name`` with ``model.overrides``, after importing ``model.imports``: a spawned
    process registers a user's family too) at the global view size."""
    import_model_modules(cfg["model"].get("imports", ()))
    kw = dict(cfg["model"]["overrides"])
    kw.setdefault("img_size", img_size or cfg["views"]["global_size"])
    return create_model(cfg["model"]["name"], num_classes=num_classes, **kw)


def normalization_for(cfg: dict) -> tuple[tuple, tuple]:
    """Mean and std the encoder's inputs are normalised with: the statistics of the data it is trained on."""
    return normalization_stats(cfg["data"]["name"])


def data_location(cfg: dict):
    """Where the configured data is read, for every ``data.name`` (in memory or streamed): ``data.root``
    resolved once by :func:`aot_lib.data.datasets.data_root` (``$AOT_DATA`` when unset, or holding a relative root)."""
    return data_root(cfg["data"]["root"])


def load_data(cfg: dict, split: str, size: int | None = None):
    """One split of the configured data set (with ``data.*_subset`` applied)."""
    dc, root = cfg["data"], data_location(cfg)
    data = load_split(dc["name"], split, root=root, download=dc["download"],
                      image_size=size if size is not None else dc["image_size"])
    return data.subset(dc["train_subset"] if split == "train" else dc["test_subset"])


def load_train_test(cfg: dict):
    """Both splits of the configured data set, with the same classes in the same order (else one clear error)."""
    dc, root = cfg["data"], data_location(cfg)
    return load_pair(dc["name"], root=root, download=dc["download"], image_size=dc["image_size"],
                     train_subset=dc["train_subset"], test_subset=dc["test_subset"])


def schedule_steps(n_images: int, batch_size: int, epochs: int, warmup_epochs: float, max_steps: int | None):
    """``(steps_per_epoch, total_steps, warmup_steps)``; one clear error when not even one batch fits."""
    steps_per_epoch = n_images // batch_size
    if steps_per_epoch == 0:
        raise ValueError(f"batch size {batch_size} is larger than the training set ({n_images} images); lower it")
    total = max_steps if max_steps is not None else epochs * steps_per_epoch
    warmup = min(total, round(warmup_epochs * steps_per_epoch)) if max_steps is None else min(total, max(1, total // 20))
    return steps_per_epoch, total, warmup
