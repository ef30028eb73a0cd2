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


def one_per_family() -> list[str]:
    """The first registered model of every registered family (the registry's, so a family of one's own is in)."""
    from aot_lib import list_families

    return [f.models[0] for f in list_families().values()]


def require(module: str, package: str):
    """``pytest.importorskip`` whose reason names the missing package and the fix (README command 2 installs the
    [dev] extra, which has everything the tests import; tests/conftest.py fails a CI session on such a skip)."""
    return pytest.importorskip(module, reason=f"{package} is not installed (needed by this test); "
                                              "pip install -e '.[dev]' installs it")


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
        # the CPU on every machine: tests compare with CPU references at float32 tolerances, and `auto` picks CUDA and
        # bf16-mixed where a GPU is (the suite on an H200 failed 12 tests so); CUDA has tests of its own
        "fabric.accelerator=cpu",
        "views.global_size=16", "views.local_size=8", "views.n_local=2",
        "projector.hidden_dim=32", "projector.out_dim=8", "loss.num_slices=16",
        "optim.batch_size=8", "optim.max_steps=4", "probe.epochs=5", "probe.knn_k=3",
        "finetune.epochs=1", "finetune.batch_size=8", "distill.epochs=1", "distill.batch_size=8",
        *extra,
    ])


def top1_from_run(run: Path, data_root: Path) -> float:
    """Test accuracy (%) of a fine-tuning or distillation run's ``last.ckpt``, computed here, independently of
    ``aot_lib.training.supervised.evaluate``: the test images decoded with PIL from ``data_root/test/<class>/`` (labels: the
    sorted class index), the model rebuilt from the run's ``config.yaml`` and the checkpoint's full state dict (head
    included), inputs scaled to [0, 1], resized with antialiasing to the evaluation size when needed (the size
    fine-tuning evaluates at: ``finetune.image_size``, else the global view size) and normalised with the statistics
    the run's ``run.json`` records."""
    import json

    import torch.nn.functional as F

    from aot_lib.models.registry import create_model

    cfg = load_config(run / "config.yaml")
    kind = json.loads((run / "run.json").read_text())
    ckpt = torch.load(run / "last.ckpt", map_location="cpu", weights_only=True)
    state = ckpt["model"]
    classes = sorted(d.name for d in (data_root / "test").iterdir())
    files = [(f, k) for k, c in enumerate(classes) for f in sorted((data_root / "test" / c).iterdir())]
    x = torch.stack([torch.from_numpy(np.array(Image.open(f).convert("RGB"))).permute(2, 0, 1) for f, _ in files])
    y = torch.tensor([k for _, k in files])
    with torch.random.fork_rng():  # building a model draws initial weights: leave the caller's global RNG as it was
        model = create_model(cfg["model"]["name"], num_classes=len(classes), **cfg["model"]["overrides"])
        grid = int(round((state["stem.pos_embed"].shape[1] - 1) ** 0.5))  # the checkpoint's own patch grid
        model = create_model(cfg["model"]["name"], num_classes=len(classes),
                             **{**cfg["model"]["overrides"], "img_size": grid * model.patch_size})
    model.load_state_dict(state)
    size = (cfg.get(ckpt["kind"]) or {}).get("image_size") or cfg["views"]["global_size"]
    x = x.float() / 255
    if x.shape[-1] != size:
        x = F.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
    mean, std = (torch.tensor(kind["normalization"][k]).view(1, 3, 1, 1) for k in ("mean", "std"))
    with torch.no_grad():
        pred = model.eval()((x - mean) / std).argmax(1)
    return 100 * (pred == y).sum().item() / len(y)


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


def _value_and_grad(fn, x: torch.Tensor, autocast: bool, loss):
    x = x.detach().clone().requires_grad_(True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        assert (x @ x.mT).dtype == (torch.bfloat16 if autocast else x.dtype)  # autocast really is on
        out = fn(x)
    loss(out).backward()
    return out, x.grad


def assert_float32_under_bf16_autocast(fn, x: torch.Tensor, outputs=lambda out: [out], loss=lambda out: out.sum()):
    """``fn(x)`` under CPU bf16 autocast computes what it computes without it, in float32: the ``outputs(fn(x))``
    and the gradient of ``loss(fn(x))`` agree to float32 rounding (rtol 1e-6 is a few ulps; on the CPU they are in fact
    bitwise), where bf16 products (8 significant bits) would be off by ~1e-3 relative. For bf16 ``x`` (e.g. a projector
    run under autocast): the float32 result of its float32 values, and the float32 gradient rounded once to bf16."""
    ref, ref_grad = _value_and_grad(fn, x, False, loss)
    out, grad = _value_and_grad(fn, x, True, loss)
    for a, b in zip(outputs(out), outputs(ref)):
        assert a.dtype == torch.float32
        torch.testing.assert_close(a, b, rtol=1e-6, atol=0)
    torch.testing.assert_close(grad, ref_grad, rtol=1e-6, atol=1e-6 * ref_grad.abs().max().item())
    x16 = x.to(torch.bfloat16)
    ref, ref_grad = _value_and_grad(fn, x16.float(), False, loss)
    out, grad = _value_and_grad(fn, x16, True, loss)
    assert grad.dtype == torch.bfloat16
    for a, b in zip(outputs(out), outputs(ref)):
        assert a.dtype == torch.float32
        torch.testing.assert_close(a, b, rtol=1e-6, atol=0)  # the same float32 computation, as above
    torch.testing.assert_close(grad, ref_grad.to(torch.bfloat16), rtol=0, atol=0)  # one rounding of equal values


def free_port() -> int:
    """A TCP port nobody listens on now (the OS picks it): two test runs side by side never share a rendezvous."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
