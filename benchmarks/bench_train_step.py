"""One LeJEPA training step (multi-crop -> encoder -> projector -> loss -> backward -> AdamW)
for AoT-ADMM, CRATE and AoT at equal scale; SIGReg's share of the step; peak memory.

    python benchmarks/bench_train_step.py [--scale tiny] [--batch 64] [--repeats 5]
Targets on 2 CPU cores: AoT-ADMM / CRATE step time <= 0.5; SIGReg <= 3 % of a step.
"""
import argparse
import gc

import torch
from _common import peak_rss_mb, timeit, write

from aot_lib import LeJEPALoss, count_flops, create_model
from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig
from aot_lib.objectives.heads import LeJEPAProjector
from aot_lib.objectives.lejepa import LeJEPAModel


def step_fn(name, batch, device, proj_hidden, slices):
    torch.manual_seed(0)
    enc = create_model(name, num_classes=0).to(device)
    model = LeJEPAModel(enc, LeJEPAProjector(enc.num_features, proj_hidden, 128), LeJEPALoss(num_slices=slices)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
    aug = BatchedMultiCrop(MultiCropConfig())
    x = torch.randint(0, 256, (batch, 3, 32, 32), dtype=torch.uint8, device=device)
    g = torch.Generator().manual_seed(0)

    def step():
        out = model(aug(x, g))
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step, model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="tiny")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--projector-hidden", type=int, default=2048)
    ap.add_argument("--slices", type=int, default=1024)
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    res = {}
    for fam in ("aot_admm", "crate", "aot"):
        name = f"{fam}_{args.scale}"
        step, model = step_fn(name, args.batch, device, args.projector_hidden, args.slices)
        rss0 = peak_rss_mb()
        t = timeit(step, repeats=args.repeats, warmup=1)
        res[name] = {"step_s": t["median_s"], "images_per_s": args.batch / t["median_s"], "timing": t,
                     "encoder_gflops_per_image": count_flops(create_model(name)) / 1e9,
                     "peak_rss_mb": peak_rss_mb(), "peak_rss_increase_mb": peak_rss_mb() - rss0}
        if device == "cuda":
            res[name]["cuda_max_memory_mb"] = torch.cuda.max_memory_allocated() / 2**20
        del step, model
        gc.collect()
    # SIGReg alone on embeddings of the size one step produces: (8 views, batch, 128)
    y = torch.randn(8, args.batch, 128, device=device, requires_grad=True)
    sig = LeJEPALoss(num_slices=args.slices).sigreg
    ts = timeit(lambda: sig(y).backward(), repeats=args.repeats, warmup=1)
    a, c = res[f"aot_admm_{args.scale}"]["step_s"], res[f"crate_{args.scale}"]["step_s"]
    share = ts["median_s"] / a
    write(f"train_step_{args.scale}", {
        "batch": args.batch, "views": "2 x 32 px + 6 x 16 px", "projector_hidden": args.projector_hidden,
        "sigreg_slices": args.slices, "device": device, "results": res,
        "ratio_aot_admm_over_crate": a / c, "ratio_aot_over_crate": res[f"aot_{args.scale}"]["step_s"] / c,
        "sigreg_fwd_bwd_s": ts["median_s"], "sigreg_share_of_aot_admm_step": share,
        "targets": {"aot_admm/crate <= 0.5": a / c <= 0.5, "sigreg share <= 3%": share <= 0.03},
    })


if __name__ == "__main__":
    main()
