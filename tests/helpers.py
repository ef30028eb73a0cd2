"""Tiny data sets and configs made inside the tests (nothing is downloaded)."""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

from aot_lib.config import load_config


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


def tiny_config(data_root: Path, out_dir: Path, *extra: str) -> dict:
    """A model and loss small enough for a test to run a few steps in about a second."""
    return load_config(None, [
        "data.name=imagefolder", f"data.root={data_root}", "data.image_size=16",
        f"run.out_dir={out_dir}", "run.name=tiny", "run.progress=false", "run.log_every=1", "run.ckpt_every=2",
        "model.name=aot_admm_tiny", "model.overrides={embed_dim: 32, depth: 1, num_heads: 2, patch_size: 4}",
        "views.global_size=16", "views.local_size=8", "views.n_local=2",
        "projector.hidden_dim=32", "projector.out_dim=8", "loss.num_slices=16",
        "optim.batch_size=8", "optim.max_steps=4", "probe.epochs=5", "probe.knn_k=3",
        "finetune.epochs=1", "finetune.batch_size=8", "distill.epochs=1", "distill.batch_size=8",
        *extra,
    ])
