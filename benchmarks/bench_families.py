"""One whole LeJEPA training step per encoder family, eager and regionally compiled, interleaved.

    python benchmarks/bench_families.py [--settings tiny,w192] [--repeats 7] [--modes eager,compiled]

A step is what pretraining does (Algorithm 1): 2 global 32 px + 6 local 16 px views, the views of
one size through the encoder together (:class:`~aot_lib.objectives.lejepa.LeJEPAModel`), the projector
(:class:`~aot_lib.objectives.heads.LeJEPAProjector`), prediction loss + SIGReg, backward, AdamW. The views are
drawn once per repeat, outside the timed region, and the same views go to every family, so
augmentation cost (equal for all) does not dilute the ratios.

Settings: ``tiny`` = the paper's Tiny width (d 384, depth 12, 6 heads), batch 64, projector 2048
hidden, 1024 slices; ``w192`` = the CPU-scale configs (``configs/cpu/*_cifar10.yaml``: d 192, depth 6,
6 heads, batch 256, projector 1024 hidden, 512 slices); ``smoke`` = d 32, depth 2, 2 heads, batch 8
with a small projector, to check the script runs.

Modes: ``eager`` (AoT-ADMM with its fused state update, :mod:`aot_lib.models.fused`) and ``compiled``
(:func:`aot_lib.models.compile.compile_blocks`: one compiled layer per family, reused for every layer;
the rest of the step eager). The families run interleaved, repeat by repeat, in an order that
rotates each repeat, so a drift in machine speed hits them alike; each ratio is the median of the
per-repeat ratios. ``compile_s`` is the first (compiling) step minus the median step; by default
the inductor cache is a fresh empty folder, so it is a cold compile (``--warm-cache`` keeps
torch's usual cache). The JSON also records the number of compiled graphs after warm-up and at the
end (equal: nothing recompiled while timing) and the encoders' FLOP ratios
(:func:`aot_lib.count_flops`, matrix products and attention only).

Targets (judged on an idle machine): compiled AoT-ADMM <= 1.05 x AoT and <= 0.50 x CRATE; eager
<= 1.30 x AoT and <= 0.70 x CRATE.
"""
import argparse
import atexit
import gc
import os
import shutil
import statistics
import tempfile
import time

import torch
from _common import peak_rss_mb, write

from aot_lib import LeJEPALoss, count_flops, create_model
from aot_lib.book.benchmarks import FAMILY_NAMES
from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig
from aot_lib.models.compile import compile_blocks
from aot_lib.objectives.heads import LeJEPAProjector
from aot_lib.objectives.lejepa import LeJEPAModel

SETTINGS = {
    "tiny": {"overrides": {}, "batch": 64, "projector_hidden": 2048, "slices": 1024},
    "w192": {"overrides": {"embed_dim": 192, "depth": 6, "num_heads": 6}, "batch": 256,
             "projector_hidden": 1024, "slices": 512},
    "smoke": {"overrides": {"embed_dim": 32, "depth": 2, "num_heads": 2}, "batch": 8,
              "projector_hidden": 64, "slices": 64},
}
FAMILIES = tuple(FAMILY_NAMES)  # the white-box families of Tables 1 and 3, from the registry
TARGETS = {"eager": {"aot": 1.30, "crate": 0.70}, "compiled": {"aot": 1.05, "crate": 0.50}}


def build(fam: str, setting: dict, device: str):
    torch.manual_seed(0)
    enc = create_model(f"{fam}_tiny", num_classes=0, **setting["overrides"]).to(device)
    model = LeJEPAModel(enc, LeJEPAProjector(enc.num_features, setting["projector_hidden"], 128),
                        LeJEPALoss(num_slices=setting["slices"])).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)

    def step(views):
        out = model(views)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return model, step


def flops(fam: str, setting: dict) -> dict:
    m = create_model(f"{fam}_tiny", num_classes=0, **setting["overrides"])
    g, loc = count_flops(m, img_size=32), count_flops(m, img_size=16)
    b = setting["batch"]
    return {"encoder_gflops_per_32px_image": g / 1e9, "encoder_gflops_per_step_forward": (2 * b * g + 6 * b * loc) / 1e9}


def graphs() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def timed(fn, *args) -> float:
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    t = time.perf_counter()
    fn(*args)
    sync()
    return time.perf_counter() - t


def summary(times: list[float]) -> dict:
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "times_s": times}


def ratio(a: list[float], b: list[float]) -> dict:
    r = [x / y for x, y in zip(a, b)]
    return {"median": statistics.median(r), "min": min(r), "max": max(r)}


def run_setting(name: str, mode: str, args, device: str) -> dict:
    setting = SETTINGS[name]
    aug = BatchedMultiCrop(MultiCropConfig())
    x = torch.randint(0, 256, (setting["batch"], 3, 32, 32), dtype=torch.uint8)
    g = torch.Generator().manual_seed(0)

    def views():
        return [v.to(device) for v in aug(x, g)]

    steps, res = {}, {}
    graphs0 = graphs()
    for fam in args.families:
        model, step = build(fam, setting, device)
        if mode == "compiled":
            compile_blocks(model, backend=args.backend)
        v = views()
        first = timed(step, v)  # compiles both view sizes (forward and backward) in compiled mode
        for _ in range(args.warmup):
            step(v)
        steps[fam] = step
        res[fam] = {"first_step_s": first, **flops(fam, setting)}
    graphs_warm = graphs()
    times = {fam: [] for fam in args.families}
    for r in range(args.repeats):
        v = views()
        k = r % len(args.families)
        for fam in args.families[k:] + args.families[:k]:
            times[fam].append(timed(steps[fam], v))
    for fam in args.families:
        res[fam]["step"] = summary(times[fam])
        res[fam]["images_per_s"] = setting["batch"] / res[fam]["step"]["median_s"]
        if mode == "compiled":
            res[fam]["compile_s"] = res[fam]["first_step_s"] - res[fam]["step"]["median_s"]
    out = {"setting": {**setting, "name": name}, "mode": mode, "results": res,
           "graphs_compiled_after_warmup": graphs_warm - graphs0, "graphs_compiled_while_timing": graphs() - graphs_warm}
    if "aot_admm" in times:
        checks = {}
        for other in ("aot", "crate"):
            if other in times:
                out[f"ratio_aot_admm_over_{other}"] = ratio(times["aot_admm"], times[other])
                out[f"flop_ratio_aot_admm_over_{other}"] = {
                    k: res["aot_admm"][k] / res[other][k]
                    for k in ("encoder_gflops_per_32px_image", "encoder_gflops_per_step_forward")}
                limit = TARGETS[mode][other]
                checks[f"aot_admm/{other} <= {limit}"] = out[f"ratio_aot_admm_over_{other}"]["median"] <= limit
        out["targets"] = checks
    print(f"[{name} {mode}] " + ", ".join(f"{f} {res[f]['step']['median_s'] * 1e3:.0f} ms" for f in args.families)
          + "".join(f", aot_admm/{o} {out[f'ratio_aot_admm_over_{o}']['median']:.3f}"
                    for o in ("aot", "crate") if f"ratio_aot_admm_over_{o}" in out), flush=True)
    del steps
    gc.collect()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--settings", default="tiny,w192", help=f"comma-separated, of {sorted(SETTINGS)}")
    ap.add_argument("--modes", default="eager,compiled", help="comma-separated, of eager, compiled")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps after the first one")
    ap.add_argument("--backend", default="inductor", help="torch.compile backend of the compiled mode")
    ap.add_argument("--warm-cache", action="store_true", help="keep torch's compile cache (default: a fresh one)")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)")
    ap.add_argument("--name", default="families", help="output name (results/benchmarks/<name>.json, or $AOT_BENCH_DIR)")
    args = ap.parse_args()
    args.settings, args.modes = args.settings.split(","), args.modes.split(",")
    args.families = args.families.split(",")
    bad = [s for s in args.settings if s not in SETTINGS] + [m for m in args.modes if m not in TARGETS]
    if bad or args.repeats < 1:
        ap.error(f"unknown settings/modes {bad} or repeats < 1")
    if args.threads:
        torch.set_num_threads(args.threads)
    if not args.warm_cache:  # a fresh, empty compile cache, removed at exit
        cache = tempfile.mkdtemp(prefix="bench_families_inductor_")
        atexit.register(shutil.rmtree, cache, ignore_errors=True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    device = "cuda" if torch.cuda.is_available() else "cpu"
    runs = [run_setting(s, m, args, device) for m in args.modes for s in args.settings]
    write(args.name, {"device": device, "torch": torch.__version__, "threads": torch.get_num_threads(),
                      "views": "2 x 32 px + 6 x 16 px", "repeats": args.repeats, "backend": args.backend,
                      "cold_compile_cache": not args.warm_cache, "runs": runs, "peak_rss_mb": peak_rss_mb()})


if __name__ == "__main__":
    main()
