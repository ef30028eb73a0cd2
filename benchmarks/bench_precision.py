"""bf16 against fp32 on the CPU: one whole LeJEPA step of the 30-minute recipe per family, interleaved (issue 55).

    python benchmarks/bench_precision.py [--config configs/cpu/cpu30/cpu30_aot_admm_cifar10.yaml] [--repeats 7]

Each unit is (family, precision): the recipe's model built by the trainer's own code
(:func:`aot_lib.training.pretrain.build_lejepa_model` on the config with ``model.name`` swapped), set up by Lightning
Fabric with ``precision`` ``32-true`` or ``bf16-mixed`` (what ``fabric.precision`` selects in a run: on a CPU,
``torch.autocast("cpu", bfloat16)`` around the forward), and one step is views -> forward -> backward -> AdamW. The
views are drawn once per repeat, outside the timed region, and every unit gets the same views; the units run in an
order that rotates each repeat, so a drift in machine speed hits them alike. Each bf16/fp32 ratio is the median of
the per-repeat ratios. The CPU's bf16 instructions are recorded (``avx512_bf16``, ``amx_bf16`` in /proc/cpuinfo):
without them bf16 is emulated and slower.

Writes ``results/benchmarks/precision_<vendor>_<isa>.json`` (``precision_amd_avx2``: two CPU types of one vendor
differ in their instruction set; the first record, ``precision_amd.json``, is the AMD EPYC with AVX-512).
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from _common import ROOT, peak_rss_mb, record_path, write

from aot_lib.book.benchmarks import FAMILY_NAMES
from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig
from aot_lib.data.datasets import normalization_stats
from aot_lib.training.config import load_config
from aot_lib.training.optim import param_groups
from aot_lib.training.pretrain import build_lejepa_model

PRECISIONS = {"fp32": "32-true", "bf16": "bf16-mixed"}


def cpu_bf16_flags() -> list[str]:
    try:
        flags = next(ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags")).split()
    except (OSError, StopIteration):
        return []
    return sorted(f for f in flags if "bf16" in f or f.startswith("amx"))


def unit(cfg: dict, precision: str):
    from lightning_fabric import Fabric

    torch.manual_seed(0)
    fabric = Fabric(accelerator="cpu", devices=1, precision=PRECISIONS[precision])
    model = build_lejepa_model(cfg)
    opt = torch.optim.AdamW(param_groups(model, cfg["optim"]["weight_decay"]), lr=cfg["optim"]["lr"])
    model, opt = fabric.setup(model, opt)

    def step(views) -> float:
        out = model(views)
        fabric.backward(out.loss)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return float(out.loss.detach())
    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="configs/cpu/cpu30/cpu30_aot_admm_cifar10.yaml")
    ap.add_argument("--families", default=",".join(FAMILY_NAMES))
    ap.add_argument("--precisions", default="fp32,bf16")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--name", default=None, help="output name (default precision_<vendor>_<isa>)")
    args = ap.parse_args()
    cpu = "amd" if "AMD" in Path("/proc/cpuinfo").read_text() else "intel"
    isa = torch.backends.cpu.get_cpu_capability().lower()  # what tells two types of one vendor apart
    name = args.name or f"precision_{cpu}_{isa}"
    record_path(name)  # refuses an existing record before minutes of timing, not after
    base = load_config(ROOT / args.config)
    families, precisions = args.families.split(","), args.precisions.split(",")
    units = {}
    for fam in families:
        cfg = load_config(ROOT / args.config, [f"model.name={fam}_tiny"])
        for p in precisions:
            units[(fam, p)] = unit(cfg, p)
    mean, std = normalization_stats(base["data"]["name"])
    aug = BatchedMultiCrop(MultiCropConfig.from_config(base["views"], mean, std))
    batch = base["optim"]["batch_size"]
    images = torch.randint(0, 256, (batch, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)
    first, losses = {}, {k: [] for k in units}
    v = aug(images, g)
    for k, step in units.items():
        t = time.perf_counter()
        losses[k].append(step(v))
        first[k] = time.perf_counter() - t
        for _ in range(args.warmup):
            losses[k].append(step(v))
    times = {k: [] for k in units}
    keys = list(units)
    for r in range(args.repeats):
        v = aug(images, g)
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            t = time.perf_counter()
            losses[k].append(units[k](v))
            times[k].append(time.perf_counter() - t)
        print(f"repeat {r}: " + ", ".join(f"{f}/{p} {times[(f, p)][-1]:.2f} s" for f, p in keys), flush=True)
    results = {}
    for fam in families:
        row = {p: {"median_s": statistics.median(times[(fam, p)]), "min_s": min(times[(fam, p)]),
                   "max_s": max(times[(fam, p)]), "times_s": times[(fam, p)], "first_step_s": first[(fam, p)],
                   "losses": losses[(fam, p)]} for p in precisions}
        if {"fp32", "bf16"} <= set(precisions):
            r = [b / a for a, b in zip(times[(fam, "fp32")], times[(fam, "bf16")])]
            row["bf16_over_fp32"] = {"median": statistics.median(r), "min": min(r), "max": max(r)}
        results[fam] = row
    write(name, {
        "config": args.config, "batch": batch, "views": base["views"], "repeats": args.repeats,
        "threads": torch.get_num_threads(), "cpu_bf16_flags": cpu_bf16_flags(), "results": results,
        "peak_rss_mb": peak_rss_mb(),
        "note": "interleaved units on an idle machine; a step = forward, backward, AdamW on views drawn beforehand"})


if __name__ == "__main__":
    main()
