"""Time and memory estimates of the paper's pretraining configs on one A100 and on eight, from counted FLOPs
and memory and from the share of a machine's matmul ceiling the trainer measurably reaches.

    python benchmarks/bench_estimates.py [--utilisation-from results/benchmarks/trainer_cpu_aot_admm_cifar10.json]

For each config in ``configs/paper/table{1,2,3}`` (pretraining ones): FLOPs per image of one LeJEPA step
(forward + backward over every view, projector and SIGReg; ``torch.utils.flop_counter``), the bytes the
autograd graph saves per image for backward (counted with saved-tensor hooks, float32), and the
parameter + AdamW state bytes. Estimates, not measurements:

* time = epochs x images x FLOPs/image / (GPUs x A100 bf16 dense peak x utilisation), where the
  utilisation is the share of this machine's fp32 matmul ceiling that ``bench_trainer`` measured for the
  CPU trainer (the same code, assumed to reach the same share of an A100's peak);
* memory per GPU = 16 bytes per parameter (fp32 weights, gradients, two AdamW moments) + saved activations
  per image x images per GPU, halved for bf16 activations.
"""
import argparse
import json
from pathlib import Path

import torch
from _common import ROOT, write

from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig
from aot_lib.training.config import load_config
from aot_lib.training.builders import normalization_for
from aot_lib.training.pretrain import build_lejepa_model

A100_BF16_PEAK = 312e12  # FLOP/s, dense, NVIDIA's A100 datasheet
A100_MEMORY = 80 * 2**30  # the 80 GB model
TRAIN_IMAGES = {"cifar10": 50_000, "cifar100": 50_000, "imagefolder": 1_281_167, "stream": 1_281_167}  # official train sets


def step_costs(cfg: dict, batch: int = 2) -> tuple[float, float, int]:
    """(FLOPs per image, saved bytes per image, parameters) of one LeJEPA step of ``cfg``."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = build_lejepa_model(cfg)
    v = cfg["views"]
    aug = BatchedMultiCrop(MultiCropConfig.from_config(v, *normalization_for(cfg)))
    size = max(v["global_size"], cfg["data"]["image_size"] or v["global_size"])
    views = aug(torch.randint(0, 256, (batch, 3, size, size), dtype=torch.uint8), torch.Generator().manual_seed(0))
    saved = [0]

    def pack(t):
        saved[0] += t.numel() * t.element_size()
        return t

    with FlopCounterMode(display=False) as counter:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            out = model(views)
        out.loss.backward()
    return counter.get_total_flops() / batch, saved[0] / batch, sum(p.numel() for p in model.parameters())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--utilisation-from", default=str(ROOT / "results/benchmarks/trainer_cpu_aot_admm_cifar10.json"))
    args = ap.parse_args()
    src = Path(args.utilisation_from)
    util = json.loads(src.read_text())["share_of_ceiling"] if src.exists() else None
    rows = []
    for table in ("table1", "table2", "table3"):
        for f in sorted((ROOT / "configs" / "paper" / table).glob("*.yaml")):
            if "finetune" in f.name:
                continue
            cfg = load_config(f)
            flops, saved, params = step_costs(cfg)
            n = TRAIN_IMAGES[cfg["data"]["name"]]
            gb, epochs = cfg["optim"]["batch_size"], cfg["optim"]["epochs"]
            row = {"config": f"{table}/{f.stem}", "model": cfg["model"]["name"], "epochs": epochs, "batch": gb,
                   "images": n, "gflop_per_image": flops / 1e9, "params_m": params / 1e6,
                   "saved_activation_mb_per_image_fp32": saved / 2**20}
            for gpus in (1, 8):
                per_gpu = gb / gpus
                mem = 16 * params + per_gpu * saved / 2  # bf16 activations
                row[f"memory_gb_per_gpu_{gpus}"] = mem / 2**30
                row[f"fits_80gb_{gpus}"] = mem < A100_MEMORY
                if util:
                    row[f"hours_{gpus}xA100"] = epochs * n * flops / (gpus * A100_BF16_PEAK * util) / 3600
            rows.append(row)
            print(row["config"], f"{flops / 1e9:.2f} GFLOP/img", f"{saved / 2**20:.1f} MB/img")
    write("estimates_a100", {"a100_bf16_peak_flops": A100_BF16_PEAK, "utilisation": util,
                             "utilisation_source": src.name if src.exists() else None,
                             "rows": rows, "label": "ESTIMATES from counted FLOPs and memory, not measurements",
                             "caveat": "optimistic for the CIFAR configs: at 32 px a view is 17 tokens, and GPU kernels "
                                       "that small are bound by launch and memory traffic, not by the matmul peak; "
                                       "read the CIFAR hours as a lower bound"})


if __name__ == "__main__":
    main()
