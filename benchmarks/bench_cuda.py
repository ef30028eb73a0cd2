"""The trainer on a GPU: CUDA, bf16 and compiled layers checked against float64, and step times measured.

    AOT_DATA=... python benchmarks/bench_cuda.py [--part agreement trainer paper] [--steps 200]

Made for a machine with CUDA (on a CPU it runs the same code, ``--device cpu``, to check the script itself).
Each part writes its own JSON (``results/benchmarks/cuda_<part>.json``, or under ``$AOT_BENCH_DIR``):

* ``agreement``: every family's encoder at the CPU recipe's shape (width 192, depth 6, 6 heads) on one batch
  of 64 CIFAR-sized images, its features on the device in float32, under bf16 autocast and with compiled layers
  under bf16, against the same encoder in float64 on the CPU: relative error ``||f - f64|| / ||f64||``; and the
  LeJEPA loss (eqs. ``eq:lejepa``) of the recipe's model, the same way.
* ``trainer``: :func:`aot_lib.training.pretrain.pretrain` itself on the 30-minute recipe config
  (``configs/cpu/cpu30/cpu30_aot_admm_cifar10.yaml``, CIFAR-10 from ``$AOT_DATA``) for ``--steps`` steps, twice:
  ``32-true`` eager and ``bf16-mixed`` with compiled layers (``fabric.precision=auto``, ``model.compile=auto``: what
  a GPU gets by default). Images/s are the trainer's own log after its first 20 steps (compilation excluded).
* ``paper``: one LeJEPA step of each family's Base config (``configs/paper/table{1,3}/*_base_cifar10.yaml``: width
  384, depth 12, batch 256, 2 x 32 px + 6 x 16 px views) under bf16 with compiled layers, on random images (the
  time does not depend on what they show): median step time, peak GPU memory, and the hours 800 epochs of
  50,000 images take on this one GPU, beside what ``results/benchmarks/estimates_a100.json`` modelled for an A100.

The commit the code came from is ``$AOT_SOURCE_COMMIT`` where the caller sets it: a device machine's copy of the
repository may hold a ``.git`` of another commit than its files (``results/benchmarks/cuda_device_calls.json``).
"""
from __future__ import annotations

import argparse
import csv
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from _common import ROOT, write

from aot_lib import create_model
from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig, prepare_images
from aot_lib.models.compile import compile_blocks
from aot_lib.runtime import git_commit
from aot_lib.training.builders import normalization_for, schedule_steps
from aot_lib.training.config import load_config
from aot_lib.training.optim import param_groups
from aot_lib.training.pretrain import build_lejepa_model, pretrain

FAMILIES = ("aot_admm", "crate", "aot")
RECIPE = ROOT / "configs" / "cpu" / "cpu30" / "cpu30_aot_admm_cifar10.yaml"
RECIPE_SHAPE = dict(embed_dim=192, depth=6, num_heads=6)
CIFAR_TRAIN_IMAGES = 50_000  # the configs' data set (CIFAR-10's training split)
PAPER_TABLE = {"aot_admm": "table1", "crate": "table1", "aot": "table3"}  # AoT is Table 3's


def source() -> dict:
    """The commit the code came from: ``$AOT_SOURCE_COMMIT`` when the caller sets it (a device copy's git may stand
    at another commit than its files: on 2026-11-27 it said 197faaa+dirty for files of f0a2b53), else git's."""
    return {"source_commit": os.environ.get("AOT_SOURCE_COMMIT") or git_commit(ROOT)}


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def rel_err(x: torch.Tensor, ref: torch.Tensor) -> float:
    return float((x.double().cpu() - ref).norm() / ref.norm())


def part_agreement(device: torch.device) -> dict:
    torch.manual_seed(0)
    images = torch.randint(0, 256, (64, 3, 32, 32), dtype=torch.uint8)
    x = prepare_images(images, 32, (0.5, 0.5, 0.5), (0.25, 0.25, 0.25))
    rows = {}
    for fam in FAMILIES:
        enc = create_model(f"{fam}_tiny", num_classes=0, **RECIPE_SHAPE).eval()
        with torch.no_grad():
            ref = enc.double()(x.double()).cpu()
            enc = enc.float().to(device)
            xd = x.to(device)
            fp32 = enc(xd)
            with torch.autocast(device.type, dtype=torch.bfloat16):
                bf16 = enc(xd)
                compile_blocks(enc)
                bf16_compiled = enc(xd)
        rows[fam] = {"fp32": rel_err(fp32, ref), "bf16": rel_err(bf16, ref), "bf16_compiled": rel_err(bf16_compiled, ref)}
    # the LeJEPA loss of the recipe's AoT-ADMM model on one batch of views, against float64 on the CPU
    cfg = load_config(RECIPE)
    torch.manual_seed(0)
    model = build_lejepa_model(cfg).eval()
    aug = BatchedMultiCrop(MultiCropConfig.from_config(cfg["views"], *normalization_for(cfg)))
    views = aug(images, torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref = model.double()([v.double() for v in views]).loss.cpu()
        model = model.float().to(device)
        dv = [v.to(device) for v in views]
        loss32 = model(dv).loss
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss16 = model(dv).loss
    rows["lejepa_loss_aot_admm"] = {"fp32": rel_err(loss32.reshape(1), ref.reshape(1)),
                                    "bf16": rel_err(loss16.float().reshape(1), ref.reshape(1)),
                                    "float64_value": float(ref)}
    return {"relative_error_vs_cpu_float64": rows, "images": "64 random CIFAR-sized images (uint8, fixed seed)",
            "shape": RECIPE_SHAPE, "cuda_matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_tf32": torch.backends.cudnn.allow_tf32}


def _trainer_log(run_dir: Path) -> list[dict]:
    rows = []
    for f in sorted(run_dir.glob("logs/*/metrics.csv")):
        rows += [r for r in csv.DictReader(f.open()) if r.get("images_per_s")]
    return rows


def part_trainer(device: torch.device, steps: int) -> dict:
    recipe = load_config(RECIPE)
    oc = recipe["optim"]
    _, recipe_steps, _ = schedule_steps(CIFAR_TRAIN_IMAGES, oc["batch_size"], oc["epochs"], oc["warmup_epochs"], None)
    out = {}
    variants = {"fp32_eager": ["fabric.precision=32-true", "model.compile=false"],
                "default": ["fabric.precision=auto", "model.compile=auto"]}
    for label, extra in variants.items():
        with tempfile.TemporaryDirectory() as tmp:
            cfg = load_config(RECIPE, [f"run.out_dir={tmp}", f"run.name=cuda_{label}", f"optim.max_steps={steps}",
                                       "monitor.every=0", "run.progress=false", f"run.ckpt_every={steps}",
                                       f"fabric.accelerator={device.type}", *extra])
            t0 = time.perf_counter()
            metrics = pretrain(cfg)
            wall = time.perf_counter() - t0
            log = _trainer_log(Path(tmp) / f"cuda_{label}")
            steady = [float(r["images_per_s"]) for r in log if int(float(r["step"])) > 20]
            run = json.loads((Path(tmp) / f"cuda_{label}" / "run.json").read_text())
        ips = statistics.median(steady) if steady else None
        out[label] = {"overrides": extra, "precision": run.get("fabric", {}).get("precision", run.get("precision")),
                      "steps": steps, "wall_s": wall, "final_loss": metrics.get("loss"),
                      "loss_by_step": {int(float(r["step"])): float(r["loss"]) for r in log if r.get("loss")},
                      "images_per_s_after_step_20": ips,
                      "recipe_minutes_at_that_rate": (recipe_steps * oc["batch_size"] / ips / 60) if ips else None}
    return {"config": str(RECIPE.relative_to(ROOT)), "results": out, "recipe_steps": recipe_steps,
            "recipe_batch": oc["batch_size"]}


def part_paper(device: torch.device, steps: int, batch_override: int | None = None) -> dict:
    estimates = json.loads((ROOT / "results" / "benchmarks" / "estimates_a100.json").read_text())
    modelled = {r["config"]: r for r in estimates["rows"]}
    rows = {}
    for fam in FAMILIES:
        name = f"{PAPER_TABLE[fam]}/{fam}_base_cifar10"
        cfg = load_config(ROOT / "configs" / "paper" / f"{name}.yaml")
        torch.manual_seed(0)
        model = build_lejepa_model(cfg).to(device)
        compile_blocks(model)
        oc = cfg["optim"]
        opt = torch.optim.AdamW(param_groups(model, oc["weight_decay"]), lr=oc["lr"])
        aug = BatchedMultiCrop(MultiCropConfig.from_config(cfg["views"], *normalization_for(cfg)))
        batch = batch_override or oc["batch_size"]
        images = torch.randint(0, 256, (batch, 3, 32, 32), dtype=torch.uint8, device=device)
        gen = torch.Generator().manual_seed(0)
        if device.type == "cuda":  # the last family's memory freed (gc below), so this peak is this family's
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()

        def step(model=model, opt=opt, aug=aug, images=images, gen=gen):
            views = aug(images, gen)  # outside autocast, as in the trainer (Fabric's autocast wraps the model alone)
            with torch.autocast(device.type, dtype=torch.bfloat16):
                loss = model(views).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        t0 = time.perf_counter()
        for _ in range(3):  # the first step compiles (global and local views: one graph each), the next settle
            step()
        sync(device)
        warm_s = time.perf_counter() - t0
        times = []
        for _ in range(steps):
            t = time.perf_counter()
            step()
            sync(device)
            times.append(time.perf_counter() - t)
        s = statistics.median(times)
        _, total, _ = schedule_steps(CIFAR_TRAIN_IMAGES, batch, oc["epochs"], oc["warmup_epochs"], None)
        rows[fam] = {"config": name, "batch": batch, "step_s_median": s, "step_s_min": min(times), "step_s_max": max(times),
                     "timed_steps": steps, "first_3_steps_s": warm_s, "images_per_s": batch / s,
                     "hours_800_epochs_this_device": total * s / 3600, "schedule_steps": total,
                     "modelled_hours_800_epochs_1xA100": modelled.get(name, {}).get("hours_1xA100"),
                     "peak_gpu_memory_gb": torch.cuda.max_memory_allocated() / 1e9 if device.type == "cuda" else None}
        del step, model, opt  # free this family's memory before the next is built
        gc.collect()
    return {"precision": "bf16 autocast, compiled layers (what a GPU run gets by default)", "results": rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", nargs="+", default=["agreement", "trainer", "paper"], choices=["agreement", "trainer", "paper"])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=200, help="trainer steps per variant")
    ap.add_argument("--paper-steps", type=int, default=10, help="timed steps per family at the paper's scale")
    ap.add_argument("--paper-batch", type=int, default=None, help="default: the config's (256); smaller to check the script")
    args = ap.parse_args()
    device = torch.device(args.device)
    gpu = {"gpu": torch.cuda.get_device_name(device)} if device.type == "cuda" else {"gpu": None}
    for part in args.part:
        t0 = time.perf_counter()
        if part == "agreement":
            payload = part_agreement(device)
        elif part == "trainer":
            payload = part_trainer(device, args.steps)
        else:
            payload = part_paper(device, args.paper_steps, args.paper_batch)
        write(f"cuda_{part}" if device.type == "cuda" else f"cuda_{part}_on_{device.type}",
              {**source(), **gpu, "device": str(device), "part_wall_s": time.perf_counter() - t0, **payload})
        sys.stdout.flush()


if __name__ == "__main__":
    main()
