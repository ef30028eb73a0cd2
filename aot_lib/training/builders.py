"""What the three commands (pretrain, probe, supervised) build the same way from a config: the encoder, the
data (where it is, one split or the train/test pair), the input normalisation and the step schedule.

The commands import these from here and never from one another.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from ..config_format import built_model
from ..data.datasets import data_root, load_pair, load_split, normalization_stats
from ..models.registry import create_model, import_model_modules

__all__ = ["build_encoder", "data_location", "load_data", "load_train_test", "normalization_for", "schedule_steps",
           "encoder_inputs", "EncoderInputs", "input_spec"]


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


class EncoderInputs(NamedTuple):
    """A split as an encoder reads it: ``images`` float ``(N, 3, S, S)`` normalised, ``labels`` ``(N,)``, the class
    names, and where they come from (``data``: the data set's name, ``size``: ``S``, ``mean``/``std``)."""
    images: torch.Tensor
    labels: torch.Tensor
    classes: list
    data: str
    size: int
    mean: tuple
    std: tuple


def input_spec(cfg: dict) -> dict:
    """What an encoder trained with config ``cfg`` reads: the data set's name, the image size its network was
    built at, and the normalisation (:func:`normalization_for`). Recorded in an exported encoder's ``config.json``
    as ``inputs`` (:func:`aot_lib.training.recording.export_checkpoint`)."""
    mean, std = normalization_for(cfg)
    size = built_model(cfg)["overrides"]["img_size"]
    return {"data": cfg["data"]["name"], "image_size": int(size), "mean": list(mean), "std": list(std)}


def encoder_inputs(encoder, split: str = "test", root=None, limit: int | None = None, seed: int = 0) -> EncoderInputs:
    """A split of the data a recorded encoder was trained on, as it expects its inputs: at its image size,
    normalised with its training data's statistics; ``limit``: that many images drawn without replacement by
    ``seed`` (kept in the split's order; a split's files are sorted by class, so its first images are one class). ``encoder``: a pretrained
    folder (``results/cpu/<run>/encoder``); what it expects is read from its ``config.json`` (``inputs``), or, for
    a record written before that key, from its run's ``config.yaml`` beside it. ``root``: default ``$AOT_DATA``.

    >>> x = encoder_inputs("results/cpu/cpu_aot_admm_cifar10/encoder", "test", limit=512)
    >>> aot_lib.from_pretrained("results/cpu/cpu_aot_admm_cifar10/encoder").forward_features(x.images)
    """
    from pathlib import Path

    from ..data.augment import prepare_images
    from ..models.pretrained import CONFIG_NAME, PretrainedError, read_pretrained_config

    folder = Path(encoder)
    spec = read_pretrained_config(folder).get("inputs")
    if spec is None:
        run_config = folder / ".." / "config.yaml"
        if not run_config.is_file():
            raise PretrainedError(f"{folder / CONFIG_NAME} does not say what data the encoder reads, and no config.yaml "
                                  f"of its run sits beside the folder; give the images yourself, normalised as it was "
                                  "trained")
        from .config import load_config

        spec = input_spec(load_config(run_config.resolve()))
    data = load_split(spec["data"], split, root=data_root(root))
    keep = torch.arange(len(data.labels))
    if limit is not None and limit < len(keep):
        keep = torch.randperm(len(keep), generator=torch.Generator().manual_seed(seed))[:int(limit)].sort().values
    images = prepare_images(data.images[keep], spec["image_size"], spec["mean"], spec["std"])
    return EncoderInputs(images, data.labels[keep], list(data.classes), spec["data"], spec["image_size"],
                         tuple(spec["mean"]), tuple(spec["std"]))
