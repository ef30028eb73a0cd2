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
# (ch-tables-1-3)=
# # Tables 1 and 3 and Figure 3, at CPU scale
#
# **This chapter:** AoT-ADMM against CRATE (the paper's Table 1 and Figure 3) and AoT
# (Table 3) under one CPU budget, with the paper's numbers beside ours.
#
# The paper's claim in Table 1 is that AoT-ADMM keeps CRATE's linear-probe accuracy
# while dropping the ISTA dictionary, about 31 % of the parameters and well over half
# the FLOPs; Figure 3 that the two pretrain along "closely matched convergence
# trajectories"; Table 3 that the ADMM-derived layer beats AoT, the attention-only
# Transformer with the same parameter count but without the unrolled ADMM state, by 4–7
# points.
#
# **What is scaled down, for every run of this chapter** (one budget, the CPU recipe of
# {ref}`ch-recipe-audit`, `configs/cpu/recipe.yaml`): width 192 and depth 6 (Tiny is 384
# and 12), 10 epochs (not 800), projector 1024-1024-64 (not 2048-2048-128), 256 SIGReg
# slices (not 1024), learning rate $2\times10^{-3}$ (not $5\times10^{-4}$, which is for
# 800 epochs). The views, batch, optimiser, schedule shape and loss are the paper's; the
# linear probe is the quick protocol of {ref}`ch-training`. CIFAR-100 is the offline
# copy's held-out split (see the README of the data folder). So the accuracies are not
# the paper's and are not meant to be; the comparisons between families under one
# budget are what this chapter tests.
#
# The commands (each run is pretrained, probed and recorded into `results/cpu/`):
#
# ```bash
# export AOT_DATA=../shared/data
# scripts/run_configs.sh results/cpu configs/cpu/{aot_admm,crate}_cifar10.yaml \
#     configs/cpu/{aot_admm,crate}_cifar10_seed1.yaml \
#     configs/cpu/{aot_admm,crate}_cifar100.yaml configs/cpu/aot_cifar10.yaml
# ```

# %%
from pathlib import Path
from statistics import mean

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import aot_lib
from aot_lib.book import paper
from aot_lib.book.pages import pick, run_record_box
from aot_lib.book.recorded import load_recorded_run, run_notices, run_status
from aot_lib.training.config import load_config
from aot_lib.data.datasets import DataError
from aot_lib.book.plotting import plot_training_curves
from aot_lib.book.tables import Col, Table

ROOT = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()
NAMES = {"aot_admm": "AoT-ADMM", "crate": "CRATE", "aot": "AoT"}
# (family, data set, seed, config under configs/cpu/); the run's name is in its config
SPECS = [("aot_admm", "cifar10", 0, "aot_admm_cifar10.yaml"),
         ("aot_admm", "cifar10", 1, "aot_admm_cifar10_seed1.yaml"),
         ("crate", "cifar10", 0, "crate_cifar10.yaml"),
         ("crate", "cifar10", 1, "crate_cifar10_seed1.yaml"),
         ("aot_admm", "cifar100", 0, "aot_admm_cifar100.yaml"),
         ("crate", "cifar100", 0, "crate_cifar100.yaml"),
         ("aot", "cifar10", 0, "aot_cifar10.yaml")]
run_record_box(seed=0)


def label(data: str) -> str:
    """'cifar10' -> 'CIFAR-10'."""
    return data.upper().replace("CIFAR", "CIFAR-")

# %% [markdown]
# (sec-tables-runs)=
# ## The runs
#
# Each run is read from `results/cpu/<name>` when recorded (config, commit, seed,
# hardware and wall time travel with it). One that is not recorded yet is trained now at
# smoke scale from the same config, and every table marks it: such a row says the
# pipeline runs, not what the method reaches.

# %%
runs, missing = {}, []
for fam, data, seed, config in SPECS:
    name = load_config(ROOT / "configs" / "cpu" / config)["run"]["name"]
    try:
        r = load_recorded_run(ROOT, name, config, smoke_steps=pick(30, 150))
    except DataError:
        missing.append(name)
        continue
    runs[fam, data, seed] = r
for note in run_notices(runs.values(), missing):
    display(note)


# %% [markdown]
# (sec-table1-cpu)=
# ## Table 1: AoT-ADMM against CRATE
#
# Parameters and FLOPs are counted on the encoders as these configs build them (without
# the classification head, as the paper counts; FLOPs of one 32-px image, a multiply-add
# counted as two). The paper's columns are its Tiny models after 800 epochs on an A100.

# %%
size = {}  # family -> (params in M, GFLOPs) at this chapter's width and depth
for fam in NAMES:
    cfg = load_config(ROOT / "configs" / "cpu" / f"{fam}_cifar10.yaml")
    model = aot_lib.create_model(cfg["model"]["name"], num_classes=0,
                                 **cfg["model"]["overrides"])
    size[fam] = (aot_lib.count_params(model) / 1e6, aot_lib.count_flops(model) / 1e9)


def table_row(fam: str, data: str, seed: int, r: dict) -> dict:
    p, cfg = r["probe"], load_config(r["dir"] / "config.yaml")
    return dict(model=NAMES[fam], data=label(data), seed=seed,
                width=cfg["model"]["overrides"]["embed_dim"],
                depth=cfg["model"]["overrides"]["depth"], epochs=cfg["optim"]["epochs"],
                params=size[fam][0], flops=size[fam][1], linear=p["linear_top1"],
                knn=p["knn_top1"], wall=r["run"]["wall_time_s"] / 60,
                probe_s=p["wall_time_s"], knn_k=p["knn_k"],
                cores=r["run"]["hardware"]["cpu_count"],
                status=run_status(r),
                paper=paper.LINEAR_PROBE_ACC[data].get(f"{fam}_tiny"),
                paper_params=paper.PARAMS_M.get(f"{fam}_tiny"),
                paper_flops=paper.FLOPS_G.get(f"{fam}_tiny"))


def scale(rows: list[dict]) -> str:
    """'width 192, depth 6, 10 epochs': from the rows' own configs."""
    scales = {(r["width"], r["depth"], r["epochs"]) for r in rows}
    return "; ".join(f"width {w}, depth {d}, {e} epochs" for w, d, e in sorted(scales))


def cores(rows: list[dict]) -> str:
    """The CPU core counts the rows' runs recorded (run.json), e.g. '2 CPU cores'."""
    counts = sorted({r["cores"] for r in rows})
    return " or ".join(map(str, counts)) + " CPU cores"


def knn_k(rows: list[dict]) -> str:
    """The k of the rows' recorded k-NN probes (probe.json)."""
    return " or ".join(str(k) for k in sorted({r["knn_k"] for r in rows}))


def probe_minutes(rows: list[dict]) -> str:
    """The recorded probes' wall times (probe.json) of a table's rows, as a range."""
    times = [r["probe_s"] / 60 for r in rows]
    lo, hi = min(times), max(times)
    return f"{lo:.1f} min" if round(lo, 1) == round(hi, 1) else f"{lo:.1f}–{hi:.1f} min"


COLS = [Col("model"), Col("data"), Col("seed"), Col("params", "params (M)", ".2f"),
        Col("flops", "GFLOPs", ".3f"), Col("wall", "pretraining (min)", ".1f"),
        Col("linear", "linear top-1 (%)", ".2f"), Col("knn", "k-NN top-1 (%)", ".2f"),
        Col("status", "run"),
        Col("paper_params", "params (M), Tiny", ".2f", paper=True),
        Col("paper_flops", "GFLOPs, Tiny", ".2f", paper=True),
        Col("paper", "linear top-1 (%), Tiny, 800 ep.", ".2f", paper=True)]
table1 = [table_row(fam, data, seed, r) for (fam, data, seed), r in runs.items()
          if fam in ("aot_admm", "crate")]
if table1:
    display(Table(
        table1, COLS,
        caption=f"Table 1 at CPU scale: LeJEPA pretraining ({scale(table1)}), "
                "linear probe",
        notes=[f"Pretraining wall time on {cores(table1)} (the linear and k-NN probes "
               f"took {probe_minutes(table1)} more); the machine is shared, so times "
               "are indicative. The CIFAR-100 AoT-ADMM run shared it with test runs "
               "at its start, which inflates its time; the speed comparison below uses "
               "the CIFAR-10 pair of seed 0.",
               "Linear probe: the quick protocol of the training chapter (features of "
               "un-augmented images; lr and weight decay chosen on a validation "
               f"split); k-NN: the {knn_k(table1)} "
               "nearest neighbours by cosine similarity, "
               "weighted as in DINO."]))

# %% [markdown]
# Two seeds on CIFAR-10 say how much of a difference between families another seed could
# make (seed 1 changes the data order, the views, the initialisation and the SIGReg
# directions). Only recorded runs count here:

# %%
spread = {}
for fam in ("aot_admm", "crate"):
    accs = [runs[fam, "cifar10", s]["probe"]["linear_top1"] for s in (0, 1)
            if (fam, "cifar10", s) in runs and runs[fam, "cifar10", s]["recorded"]]
    if len(accs) == 2:
        spread[fam] = (mean(accs), abs(accs[0] - accs[1]))
if spread:
    display(Table(
        [dict(model=NAMES[f], mean=m, gap=g) for f, (m, g) in spread.items()],
        [Col("model"), Col("mean", "mean linear top-1 (%), 2 seeds", ".2f"),
         Col("gap", "|seed 0 − seed 1| (points)", ".2f")],
        caption="Seed spread on CIFAR-10"))
else:
    print("no family has both CIFAR-10 seeds recorded yet")


# %% [markdown]
# How the AoT-ADMM − CRATE gap compares with the paper's at Tiny scale, per data set
# (recorded runs of seed 0 only):

# %%
def gap_sentence(data: str) -> str | None:
    a, c = runs.get(("aot_admm", data, 0)), runs.get(("crate", data, 0))
    if not (a and c and a["recorded"] and c["recorded"]):
        return None
    ours = a["probe"]["linear_top1"] - c["probe"]["linear_top1"]
    theirs = (paper.LINEAR_PROBE_ACC[data]["aot_admm_tiny"]
              - paper.LINEAR_PROBE_ACC[data]["crate_tiny"])
    fewer = 1 - size["aot_admm"][0] / size["crate"][0]
    s = (f"**{label(data)}:** AoT-ADMM − CRATE = {ours:+.2f} points here, "
         f"{theirs:+.2f} in the paper (Tiny, 800 epochs), with {fewer:.0%} fewer "
         "parameters")
    if data == "cifar10":  # the pair timed on an otherwise idle machine (table notes)
        speed = c["run"]["wall_time_s"] / a["run"]["wall_time_s"]
        s += f" and CRATE's pretraining taking {speed:.2f}× as long"
    s += "."
    if data == "cifar10" and "crate" in spread and "aot_admm" in spread:
        s += (f" The two seeds of each family differ by {spread['aot_admm'][1]:.2f} "
              f"(AoT-ADMM) and {spread['crate'][1]:.2f} points (CRATE).")
    return s


lines = [s for s in (gap_sentence("cifar10"), gap_sentence("cifar100")) if s]
display(Markdown("\n\n".join(lines) if lines else
                 "*No pair of recorded AoT-ADMM and CRATE runs yet.*"))

# %% [markdown]
# (sec-figure3-cpu)=
# ## Figure 3: pretraining dynamics
#
# The total loss
# $\mathcal L=\mathcal L_{\text{pred}}+\alpha\,\mathcal L_{\text{SIGReg}}$ (Eq.
# `total`), its prediction part and the SIGReg statistic, logged every 10 steps, for the
# two families on CIFAR-10 (seed 0) and, for Table 3 below, AoT:

# %% tags=["hide-input"]
curves = {NAMES[fam] + ("" if r["recorded"] else " (smoke)"): r["curve"]
          for (fam, data, seed), r in runs.items() if data == "cifar10" and seed == 0}
if curves:
    plot_training_curves(curves)
    plt.show()


# %%
def final(curve: dict, key: str, n: int = 20) -> float:
    """The mean of the last ``n`` logged values: one logged batch is noisy."""
    return mean(curve[key][-n:])


rows = [dict(model=NAMES[fam], status=run_status(r), loss=final(r["curve"], "loss"),
             pred=final(r["curve"], "pred"), sigreg=final(r["curve"], "sigreg"),
             steps=r["metrics"]["step"])
        for (fam, data, seed), r in runs.items() if data == "cifar10" and seed == 0]
if rows:
    display(Table(
        rows,
        [Col("model"), Col("steps"), Col("loss", "total loss", ".4f"),
         Col("pred", "prediction loss", ".4f"), Col("sigreg", "SIGReg", ".4f"),
         Col("status", "run")],
        caption="Final losses on CIFAR-10, seed 0 (mean of the last 20 logged steps)"))

# %% [markdown]
# (sec-table3-cpu)=
# ## Table 3: AoT-ADMM against AoT
#
# AoT (Wang et al.) is the attention-only Transformer without the unrolled ADMM state:
# the same attention, the same parameter count to within the ADMM coefficients and
# thresholds, no $V$ and $W$ carried between layers. Same budget as above:

# %%
table3 = [table_row(fam, data, seed, r) for (fam, data, seed), r in runs.items()
          if data == "cifar10" and seed == 0 and fam in ("aot_admm", "aot")]
if table3:
    display(Table(
        table3, [c for c in COLS if c.key != "paper_flops"],
        caption="Table 3 at CPU scale: AoT-ADMM and AoT, CIFAR-10, seed 0",
        notes=["The paper's Table 3 prints no FLOPs."]))
a, o = runs.get(("aot_admm", "cifar10", 0)), runs.get(("aot", "cifar10", 0))
if a and o and a["recorded"] and o["recorded"]:
    ours = a["probe"]["linear_top1"] - o["probe"]["linear_top1"]
    theirs = (paper.LINEAR_PROBE_ACC["cifar10"]["aot_admm_tiny"]
              - paper.LINEAR_PROBE_ACC["cifar10"]["aot_tiny"])
    display(Markdown(
        f"AoT-ADMM − AoT on CIFAR-10: **{ours:+.2f} points** here, {theirs:+.2f} in "
        f"the paper (Tiny, 800 epochs); AoT's pretraining took "
        f"{o['run']['wall_time_s'] / a['run']['wall_time_s']:.2f}× as long as "
        "AoT-ADMM's."))

# %% [markdown]
# ## What we learned
#
# * Where this scale agrees with the paper and where it does not is in the sentences
#   under each table: they are computed from the recorded runs, not written by hand.
# * A difference between two families smaller than the gap between two seeds of one
#   family is not evidence either way.
# * Ten epochs at half width and half depth cannot show whether the paper's ranking at
#   800 epochs holds: short runs favour whatever learns fastest at the start. They do
#   show, under one fixed budget, what the ADMM-derived layer buys against CRATE
#   (parameters, FLOPs, wall time) and what it costs or gains in accuracy.
