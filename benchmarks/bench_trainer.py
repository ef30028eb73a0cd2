"""The whole pretraining step of a config, as the trainer runs it: throughput, a profile by part, and the
achieved GFLOP/s against this machine's measured matrix-product ceiling.

    AOT_DATA=../shared/data python benchmarks/bench_trainer.py [--config configs/cpu/aot_admm_cifar10.yaml]
        [--steps 30] [--warmup 5] [key=value ...]

Runs ``aot_lib.training.pretrain`` for ``warmup + steps`` steps in a temporary run folder under ``torch.profiler``
and splits the time of the measured steps by the trainer's named scopes (``data``, ``augment``,
``forward``, ``backward``, ``optimizer``, and the rest: loss checks, logging, checkpoints). FLOPs per image
are counted with ``torch.utils.flop_counter`` over one forward + backward of the LeJEPA model on the
config's views (every view, the projector and SIGReg included). Run it on an otherwise idle machine.
"""
import argparse
import tempfile
import time

import torch
from _common import write

from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig
from aot_lib.training.config import load_config
from aot_lib.training.builders import normalization_for
from aot_lib.training.pretrain import build_lejepa_model

SCOPES = ("data", "augment", "forward", "backward", "optimizer")


def matmul_ceiling(n: int = 2048, repeats: int = 5, trials: int = 5) -> float:
    """fp32 GFLOP/s of a large square matrix product with the threads torch uses here: the best of
    ``trials`` timings (a ceiling: one slow trial must not lower it)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    best = 0.0
    for _ in range(trials):
        t = time.perf_counter()
        for _ in range(repeats):
            a @ b
        best = max(best, 2 * n**3 * repeats / (time.perf_counter() - t) / 1e9)
    return best


def flops_per_image(cfg: dict, batch: int = 32) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = build_lejepa_model(cfg)
    aug = BatchedMultiCrop(MultiCropConfig.from_config(cfg["views"], *normalization_for(cfg)))
    size = cfg["data"]["image_size"] or 32
    views = aug(torch.randint(0, 256, (batch, 3, size, size), dtype=torch.uint8), torch.Generator().manual_seed(0))
    with FlopCounterMode(display=False) as counter:
        model(views).loss.backward()
    return counter.get_total_flops() / batch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/cpu/aot_admm_cifar10.yaml")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--name", default=None, help="output name (default: trainer_<run name>)")
    ap.add_argument("overrides", nargs="*")
    args = ap.parse_args()
    from torch.profiler import ProfilerActivity, profile, schedule

    from aot_lib import train

    with tempfile.TemporaryDirectory() as tmp:
        cfg = load_config(args.config, [*args.overrides, f"run.out_dir={tmp}", "run.progress=false",
                                        f"optim.max_steps={args.warmup + args.steps}", "run.ckpt_every=100000",
                                        "run.log_every=1"])
        step_times: list[float] = []
        from aot_lib.training import loop

        real_fit = loop.fit

        def timed_fit(fabric, run, model, opt, sched, step_fn, **kw):
            def timed(step):
                prof.step()
                step_times.append(time.perf_counter())
                return step_fn(step)
            return real_fit(fabric, run, model, opt, sched, timed, **kw)

        import aot_lib.training.pretrain as pretrain_mod

        pretrain_mod.fit = timed_fit
        with profile(activities=[ProfilerActivity.CPU],
                     schedule=schedule(wait=0, warmup=args.warmup, active=args.steps, repeat=1)) as prof:
            train.pretrain(cfg)
        pretrain_mod.fit = real_fit
        import csv

        with open(f"{tmp}/{cfg['run']['name']}/metrics.csv") as f:
            logged = [float(r["images_per_s"]) for r in csv.DictReader(f)][args.warmup:]
    measured = step_times[args.warmup:]
    step_s = (measured[-1] - measured[0]) / (len(measured) - 1)
    events = {e.key: e for e in prof.key_averages()}
    parts = {k: events[k].cpu_time_total / 1e6 / args.steps for k in SCOPES if k in events}
    parts["rest (loss checks, gradient norm, logging, loop)"] = max(0.0, step_s - sum(parts.values()))
    top_ops = sorted((e for e in prof.key_averages() if e.key.startswith("aten::")),
                     key=lambda e: e.self_cpu_time_total, reverse=True)[:12]
    gb = cfg["optim"]["batch_size"]
    fpi = flops_per_image(cfg)
    ceiling = matmul_ceiling()
    ips = gb / step_s
    write(args.name or f"trainer_{cfg['run']['name']}", {
        "config": args.config, "overrides": args.overrides, "batch_size": gb, "measured_steps": args.steps,
        "step_s": step_s, "images_per_s": ips, "images_per_s_logged_median": sorted(logged)[len(logged) // 2],
        "profile_s_per_step": parts, "profile_share": {k: v / step_s for k, v in parts.items()},
        "top_aten_ops_self_s_per_step": {e.key: e.self_cpu_time_total / 1e6 / args.steps for e in top_ops},
        "gflop_per_image_fwd_bwd": fpi / 1e9, "achieved_gflop_per_s": fpi * ips / 1e9,
        "matmul_ceiling_gflop_per_s": ceiling, "share_of_ceiling": fpi * ips / 1e9 / ceiling,
        "images_per_s_at_ceiling": ceiling * 1e9 / fpi,
        "note": "profile scopes are the trainer's record_function names; under the profiler a step is a few % slower",
    })


if __name__ == "__main__":
    main()
