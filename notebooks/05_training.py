# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Training AoT-ADMM with LeJEPA, at CPU scale
#
# The paper pretrains on an A100 for 800 epochs (Table 1). This chapter runs the same pipeline —
# multi-crop views, the AoT-ADMM encoder, the projection head, $\mathcal L=\mathcal L_{\text{pred}}+\alpha\,\mathcal L_{\text{SIGReg}}$
# (Eq. `total`), AdamW with warm-up and cosine decay, then a linear probe — at a scale that fits two
# CPU cores, and reads the numbers from runs recorded in `results/` (config, commit, seed,
# hardware and wall time travel with them). Where a recorded run is missing, the cell trains a
# small one now and says so.
#
# The commands that produced the recorded runs:
#
# ```bash
# export AOT_DATA=../shared/data
# aot pretrain -c configs/cpu/aot_admm_cifar10.yaml && aot probe -c configs/cpu/aot_admm_cifar10.yaml
# for f in aot_admm crate aot; do aot pretrain -c configs/cpu/compare_${f}_cifar10.yaml; aot probe -c configs/cpu/compare_${f}_cifar10.yaml; done
# aot record runs/<name> results/cpu/<name>
# ```

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import torch

import aot_lib
from aot_lib import paper
from aot_lib.augment import CIFAR_MEAN, CIFAR_STD, BatchedMultiCrop, MultiCropConfig
from aot_lib.book import pick, run_record
from aot_lib.config import load_config
from aot_lib.data import DataError, load_split

ROOT = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()
RESULTS = ROOT / "results"
print(run_record(seed=0))

# %% [markdown]
# ## The views LeJEPA sees
#
# Two global $32\times32$ and six local $16\times16$ crops per image (the paper's CIFAR setting),
# made for the whole batch at once by `aot_lib.augment.BatchedMultiCrop`. The offline CIFAR-10
# copy is read through `$AOT_DATA`; without it the cell falls back to synthetic images.

# %%
try:
    images = load_split("cifar10", "test").images[:4]
    source = "CIFAR-10 test images"
except DataError as e:
    print("no CIFAR-10 here:", str(e).split(".")[0])
    g = torch.Generator().manual_seed(0)
    images = (torch.rand(4, 3, 32, 32, generator=g) * 255).to(torch.uint8)
    source = "synthetic images (CIFAR-10 not found)"
views = BatchedMultiCrop(MultiCropConfig())(images, torch.Generator().manual_seed(0))
mean, std = torch.tensor(CIFAR_MEAN).view(3, 1, 1), torch.tensor(CIFAR_STD).view(3, 1, 1)
fig, axes = plt.subplots(4, 9, figsize=(9, 4.2))
for i in range(4):
    axes[i, 0].imshow(images[i].permute(1, 2, 0))
    for v, view in enumerate(views):
        axes[i, v + 1].imshow((view[i] * std + mean).clamp(0, 1).permute(1, 2, 0))
for ax in axes.flat:
    ax.axis("off")
for j, title in enumerate(["image", "global 1", "global 2"] + [f"local {k}" for k in range(1, 7)]):
    axes[0, j].set_title(title, fontsize=8)
fig.suptitle(source, fontsize=9)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Load the recorded runs, or train small ones now


# %%
def load_run(name: str, config: str) -> dict:
    """Recorded results/cpu/<name> if present; otherwise a smoke-sized run trained now."""
    rec = RESULTS / "cpu" / name
    if (rec / "probe.json").exists():
        run = {"source": f"recorded in results/cpu/{name}", "dir": rec}
    else:
        from aot_lib import train

        cfg = load_config(ROOT / "configs" / "cpu" / config, [
            f"run.out_dir={ROOT / 'runs' / 'book'}", "run.progress=false", "data.train_subset=2000", "data.test_subset=1000",
            f"optim.max_steps={pick(30, 150)}", "optim.batch_size=64", "probe.epochs=30"])
        train.pretrain(cfg)
        train.probe(cfg)
        run = {"source": f"trained now at smoke scale ({cfg['optim']['max_steps']} steps on 2,000 images): "
                         "no recorded run", "dir": ROOT / "runs" / "book" / cfg["run"]["name"]}
    import csv

    with open(run["dir"] / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    # runs recorded before the LeJEPAOutput rename logged "pred"/"sigreg"; newer ones "pred_loss"/"sigreg_loss"
    run["curve"] = {k: [float(r[k] if k in r else r[f"{k}_loss"]) for r in rows] for k in ("step", "loss", "pred", "sigreg")}
    for k in ("run", "probe", "metrics"):
        run[k] = json.loads((run["dir"] / f"{k}.json").read_text())
    run["config_text"] = (run["dir"] / "config.yaml").read_text()
    return run


def superseded(run: dict) -> str:
    """The notice a recorded run carries when the code has changed under it (the ``superseded``
    field of its run.json), to print next to every number taken from it; empty otherwise."""
    note = run["run"].get("superseded")
    return f"  [SUPERSEDED: {note}]" if note else ""


try:
    main_run = load_run("cpu_aot_admm_cifar10", "aot_admm_cifar10.yaml")
    families = {f: load_run(f"cpu3ep_{f}_cifar10", f"compare_{f}_cifar10.yaml") for f in ("aot_admm", "crate", "aot")}
    have_runs = True
except DataError as e:
    print("cannot train without data:", e)
    have_runs = False

# %% [markdown]
# ## AoT-ADMM on CIFAR-10 at CPU scale
#
# `configs/cpu/aot_admm_cifar10.yaml`: width 192, depth 6, 6 heads (Tiny is 384/12/6), the paper's
# views, optimiser, batch and learning rate, and a few epochs instead of 800. The record:

# %%
if have_runs:
    r = main_run
    print(r["source"] + superseded(r))
    print("epochs:", load_config(ROOT / "configs" / "cpu" / "aot_admm_cifar10.yaml")["optim"]["epochs"],
          "| steps:", r["metrics"]["step"], superseded(r))
    print({k: r["run"].get(k) for k in ("commit", "seed", "wall_time_s", "status", "total_steps", "train_images")},
          superseded(r))
    print("hardware:", r["run"]["hardware"])
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    if superseded(r):
        fig.suptitle(superseded(r).strip(), fontsize=8, color="darkred")
    for ax, key, title in zip(axes, ("loss", "pred", "sigreg"), ("total loss", "prediction loss", "SIGReg statistic")):
        ax.plot(r["curve"]["step"], r["curve"][key])
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
    axes[2].set_yscale("log")
    fig.tight_layout()
    plt.show()
    p = r["probe"]
    data_label = (p.get("data") or {}).get("test", {}).get("label") or "CIFAR-10 test images (provenance not recorded)"
    print(f"linear probe top-1 {p['linear_top1']:.2f} %, k-NN top-1 {p['knn_top1']:.2f} % "
          f"on {p['test_images']} images of {data_label}{superseded(r)}")
    print(f"paper, Table 1 (AoT-ADMM-Tiny, 800 epochs, A100): {paper.LINEAR_PROBE_ACC['cifar10']['aot_admm_tiny']} %")

# %% [markdown]
# ## Three families under identical settings
#
# AoT-ADMM, CRATE and AoT at the same width and depth, 3 epochs each: the small-scale analogue of the
# paper's Figure 3 (pretraining dynamics) and of Tables 1 and 3.

# %%
if have_runs:
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for fam, r in families.items():
        ax.plot(r["curve"]["step"], r["curve"]["loss"], label=fam + (" (superseded)" if superseded(r) else ""))
    ax.set_xlabel("step")
    ax.set_ylabel("LeJEPA loss")
    ax.legend()
    fig.tight_layout()
    plt.show()
    # params: the encoder as the code builds it now (without a head, as the paper counts)
    print(f"{'model':10s} {'params':>8s} {'linear %':>9s} {'k-NN %':>8s} {'final loss':>11s} {'wall (s)':>9s}  source")
    for fam, r in families.items():
        cfg = load_config(ROOT / "configs" / "cpu" / f"compare_{fam}_cifar10.yaml")
        params = aot_lib.count_params(aot_lib.create_model(cfg["model"]["name"], num_classes=0, **cfg["model"]["overrides"])) / 1e6
        print(f"{fam:10s} {params:7.2f}M {r['probe']['linear_top1']:9.2f} {r['probe']['knn_top1']:8.2f} "
              f"{r['metrics']['loss']:11.4f} {r['run']['wall_time_s']:9.0f}  {r['source']}{superseded(r)}")

# %% [markdown]
# ## Speed and memory
#
# The benchmark scripts under `benchmarks/` write JSON to `results/benchmarks/`; this is what they
# recorded (machine and commit inside each file).

# %%
for f in sorted((RESULTS / "benchmarks").glob("*.json")):
    b = json.loads(f.read_text())
    keys = {k: v for k, v in b.items() if k not in ("hardware", "results", "benchmark", "date")}
    print(f"{b['benchmark']}: {json.dumps(keys, default=str)[:600]}")

# %% [markdown]
# ## What we learned
#
# * The whole pipeline of Algorithm 1 runs on a laptop-class CPU; the recorded runs above say how
#   long it took and what it reached.
# * The CPU-scale accuracies are not the paper's and are not meant to be: they are a few epochs
#   of a half-width, half-depth model. They show the method learns, and they give a baseline for
#   anyone extending it on small hardware.
