"""Batched multi-crop vs torchvision's per-image v2 pipeline (8 views: 2 x 32 px + 6 x 16 px).

    python benchmarks/bench_multicrop.py [--batch 256]
Targets on 2 CPU cores: batched >= 5,000 images/s, and >= 15x the per-image pipeline per core.
"""
import argparse

import torch
from _common import timeit, write

from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig, per_image_multicrop


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--per-image-batch", type=int, default=64)
    args = ap.parse_args()
    cfg = MultiCropConfig()
    x = torch.randint(0, 256, (args.batch, 3, 32, 32), dtype=torch.uint8)
    batched, reference = BatchedMultiCrop(cfg), per_image_multicrop(cfg)
    g = torch.Generator().manual_seed(0)
    threads = torch.get_num_threads()
    res = {}
    for n in sorted({1, threads}):
        torch.set_num_threads(n)
        tb = timeit(lambda: batched(x, g), repeats=7)
        tr = timeit(lambda: reference(x[: args.per_image_batch]), repeats=3, warmup=1)
        res[f"threads_{n}"] = {
            "batched_images_per_s": args.batch / tb["median_s"],
            "per_image_images_per_s": args.per_image_batch / tr["median_s"],
        }
        res[f"threads_{n}"]["speedup"] = res[f"threads_{n}"]["batched_images_per_s"] / res[f"threads_{n}"]["per_image_images_per_s"]
    torch.set_num_threads(threads)
    top = res[f"threads_{threads}"]
    write("multicrop", {
        "views": "2 x 32 px + 6 x 16 px", "batch": args.batch, "results": res,
        "targets": {"batched_images_per_s >= 5000": top["batched_images_per_s"] >= 5000,
                    "per-core speedup >= 15": res["threads_1"]["speedup"] >= 15},
    })


if __name__ == "__main__":
    main()
