"""Tiny data sets and configs made inside the tests (nothing is downloaded)."""
from __future__ import annotations

import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from aot_lib.training.config import load_config


def make_imagefolder(root: Path, classes=("cat", "dog"), n_train: int = 16, n_test: int = 8, size: int = 16,
                     fmt: str = "png", seed: int = 0) -> Path:
    """Class k: noisy images around a class colour, so a probe has something to learn."""
    rng = np.random.default_rng(seed)
    for split, n in (("train", n_train), ("test", n_test)):
        for k, cls in enumerate(classes):
            d = root / split / cls
            d.mkdir(parents=True, exist_ok=True)
            base = np.zeros(3)
            base[k % 3] = 200
            for i in range(n):
                img = np.clip(base + rng.normal(0, 40, (size, size, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(img).save(d / f"{i:04d}.{fmt}")
    return root


def zip_tree(src: Path, dest: Path, top: str = "tiny") -> Path:
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_STORED) as zf:
        for f in sorted(src.rglob("*")):
            if f.is_file():
                zf.write(f, f"{top}/{f.relative_to(src)}")
    return dest


def raises_exactly(error: type[BaseException], message: str):
    """``pytest.raises`` matching the whole message, word for word (a changed word is a changed refusal)."""
    return pytest.raises(error, match="^" + re.escape(message) + "$")


class CodeOnUnpickle:
    """Unpickling this calls ``open(marker, "w")``: the file appearing means the pickle ran code."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def pickled_code_checkpoint(path: Path, marker: Path) -> Path:
    """A checkpoint-shaped file whose unpickling would create ``marker`` (a stand-in for any code)."""
    torch.save({"model": {}, "config": {}, "x": CodeOnUnpickle(marker)}, path)
    return path


def tiny_config(data_root: Path, out_dir: Path, *extra: str) -> dict:
    """A model and loss small enough for a test to run a few steps in about a second."""
    return load_config(None, [
        "data.name=imagefolder", f"data.root={data_root}", "data.image_size=16",
        f"run.out_dir={out_dir}", "run.name=tiny", "run.progress=false", "run.log_every=1", "run.ckpt_every=2",
        "model.name=aot_admm_tiny", "model.overrides={embed_dim: 32, depth: 1, num_heads: 2, patch_size: 4}",
        "model.compile=false",  # compiling costs more than these few steps; tests/test_compile.py covers it
        "views.global_size=16", "views.local_size=8", "views.n_local=2",
        "projector.hidden_dim=32", "projector.out_dim=8", "loss.num_slices=16",
        "optim.batch_size=8", "optim.max_steps=4", "probe.epochs=5", "probe.knn_k=3",
        "finetune.epochs=1", "finetune.batch_size=8", "distill.epochs=1", "distill.batch_size=8",
        *extra,
    ])


def make_offline_zip(dest: Path, top: str, fmt: str = "png", classes=("cat", "dog"), n_train: int = 3, n_test: int = 2,
                     test_dir: str = "test") -> Path:
    """A tiny zip shaped like the offline copies: ``<top>/{train,<test_dir>}/<class>/<image>``, named ``dest``."""
    tree = make_imagefolder(dest.parent / f"{dest.stem}-tree", classes=classes, n_train=n_train, n_test=n_test,
                            size=8, fmt=fmt)
    if test_dir != "test":
        (tree / "test").rename(tree / test_dir)
    return zip_tree(tree, dest, top=top)


def ddp_first_step(fabric, cfg: dict, images, out_file: str) -> None:
    """One LeJEPA forward/backward at the initial parameters under ``fabric`` (1 or 2 processes): writes
    the global loss, every gradient and the projector's BatchNorm statistics (rank 0) to ``out_file``.
    Nothing here depends on an optimiser, so the two set-ups must agree to float32 summation order."""
    import torch

    from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig
    from aot_lib.training.builders import normalization_for
    from aot_lib.training.pretrain import build_lejepa_model

    torch.manual_seed(0)
    model = fabric.setup_module(build_lejepa_model(cfg))
    gb, world, rank = len(images), fabric.world_size, fabric.global_rank
    local = gb // world
    aug = BatchedMultiCrop(MultiCropConfig.from_config(cfg["views"], *normalization_for(cfg)))
    views = aug(images[rank * local:(rank + 1) * local], torch.Generator().manual_seed(1), global_batch=gb,
                offset=rank * local)
    out = model(views)
    fabric.backward(out.loss)
    loss = fabric.all_reduce(out.loss.detach(), reduce_op="mean")
    inner = model.module if hasattr(model, "module") else model
    result = {"loss": loss, "grads": {n: p.grad.detach().clone() for n, p in inner.named_parameters()},
              "buffers": {n: b.detach().clone() for n, b in inner.named_buffers() if "running" in n}}
    if fabric.is_global_zero:
        torch.save(result, out_file)
    fabric.barrier()


def free_port() -> int:
    """A TCP port nobody listens on now (the OS picks it): two test runs side by side never share a rendezvous."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
