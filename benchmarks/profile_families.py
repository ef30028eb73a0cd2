"""Where one LeJEPA training step spends its time, per encoder family: torch.profiler's self CPU time per operator.

    python benchmarks/profile_families.py [--setting w192] [--steps 3] [--name profile_families_w192]

The step is :mod:`bench_families`'s (same views, model, loss and optimizer). Each family is warmed up, then
profiled over ``--steps`` steps; the JSON lists every operator's self time per step (ms) and calls per step,
per family, and the operators sorted by how much more AoT-ADMM spends on them than AoT: what the unrolled ADMM
state costs beyond the attention both share. Profiler overhead inflates the totals a little (a few %), alike for
every family; run it on an otherwise idle machine.
"""
import argparse

import torch
from _common import write
from bench_families import FAMILIES, SETTINGS, build
from torch.profiler import ProfilerActivity, profile

from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--setting", default="w192", choices=sorted(SETTINGS))
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=3, help="unprofiled steps first (the compiled kernels build here)")
    ap.add_argument("--name", default=None, help="output name (default profile_families_<setting>)")
    args = ap.parse_args()
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    setting = SETTINGS[args.setting]
    x = torch.randint(0, 256, (setting["batch"], 3, 32, 32), dtype=torch.uint8)
    views = BatchedMultiCrop(MultiCropConfig())(x, torch.Generator().manual_seed(0))
    per_family = {}
    for fam in FAMILIES:
        _, step = build(fam, setting, "cpu")
        for _ in range(args.warmup):
            step(views)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(args.steps):
                step(views)
        ops = {e.key: {"self_ms": e.self_cpu_time_total / 1e3 / args.steps, "calls": e.count / args.steps}
               for e in prof.key_averages()}
        per_family[fam] = {"total_ms": sum(o["self_ms"] for o in ops.values()),
                           "ops": dict(sorted(ops.items(), key=lambda kv: -kv[1]["self_ms"]))}
        print(f"{fam}: {per_family[fam]['total_ms']:.0f} ms a step (profiled)", flush=True)
    extra = {}
    if {"aot_admm", "aot"} <= set(per_family):
        a, b = per_family["aot_admm"]["ops"], per_family["aot"]["ops"]
        diff = {k: a.get(k, {}).get("self_ms", 0.0) - b.get(k, {}).get("self_ms", 0.0) for k in set(a) | set(b)}
        extra = {"aot_admm_minus_aot_ms": dict(sorted(diff.items(), key=lambda kv: -kv[1])[:25])}
    write(args.name or f"profile_families_{args.setting}",
          {"setting": {**setting, "name": args.setting}, "steps": args.steps, "families": per_family, **extra})


if __name__ == "__main__":
    main()
