# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     notebook_metadata_filter: -jupytext.text_representation
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# (ch-tables-1-3)=
# # Tables 1 and 3 and Figure 3, at CPU scale
#
# **This chapter:** AoT-ADMM against CRATE (Table 1, Figure 3) and AoT (Table 3), tuned
# alike on validation data, over seeds, with an interval and a verdict per claim.

# %% tags=["remove-input"]
from aot_lib.book.pages import open_chapter

open_chapter(seed=0)

# %% [markdown]
# The paper claims (Table 1) that AoT-ADMM keeps CRATE's linear-probe accuracy while
# dropping the ISTA dictionary, about 31 % of the parameters and well over half the
# FLOPs; (Figure 3) that the two pretrain along "closely matched convergence
# trajectories"; (Table 3) that the ADMM-derived layer beats AoT, the attention-only
# Transformer with the same parameter count but without the unrolled ADMM state, by 4–7
# points.
#
# **What is scaled down, for every run of this chapter outside its 30-minute section**
# (the first CPU recipe of {ref}`the recipe chapter <ch-recipe-audit>`,
# `configs/cpu/recipe.yaml`): width 192 and depth 6 (Tiny is 384 and 12), 10 epochs
# (not 800), projector 1024-1024-64 and 256 SIGReg slices (our paper-scale defaults,
# 2048-2048-128 and 1024, come from LeJEPA's code: the paper does not state them). The
# views, batch, optimiser, schedule shape and loss are the paper's. The 30-minute
# recipe ({ref}`sec-two-recipes`) changes the epochs, the local views and the probe's
# learning-rate grid (the recipe chapter lists them). The accuracies are therefore not
# the paper's and are not meant to be: the comparisons between families under one
# budget are what this chapter tests.
#
# **The data.** CIFAR-10 is the offline copy in `$AOT_DATA`: the official images
# re-encoded as JPEG (quality 75), so a few tenths of a point below the PNG originals.
# The CIFAR-100 "test" split is 10,000 images held out from the official training set
# (the official test set is not in the offline copy). `data.download=true` fetches the
# official sets where a network is available. The linear probe is the
# {ref}`quick protocol <sec-quick-probe>`: a linear classifier on frozen features of
# un-augmented images, its learning rate chosen on a 10 % validation split of the
# training set.
#
# The commands (each run is pretrained, probed and recorded into `results/cpu/`; a run
# recorded already is skipped):
#
# ```bash
# export AOT_DATA=../shared/data
# nice -n 10 scripts/evidence_runs.sh sweeps seeds
# ```

# %% tags=["hide-input"]
import json
from pathlib import Path
from statistics import mean, median

import matplotlib.pyplot as plt
from IPython.display import Markdown, display

import aot_lib
from aot_lib import evidence
from aot_lib.evidence import paper, stats
from aot_lib.book.pages import Dropdown
from aot_lib.book.panels import curves_panel
from aot_lib.book.plotting import FIGURE_WIDTH_IN, plot_training_curves
from aot_lib.book.recorded import read_curve
from aot_lib.book.tables import Col, Table, sweep_table
from aot_lib.training.config import load_config

ROOT = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()
RESULTS = ROOT / "results" / "cpu"
NAMES, DATA = evidence.TABLE13_NAMES, evidence.TABLE13_DATA
CELLS = evidence.TABLE13_CELLS  # (family, data set) -> the pretrained cell's run name

# %% [markdown]
# (sec-equal-tuning)=
# ## One tuning budget for every family
#
# Each family gets the same small sweep: learning rate $\in\{10^{-3}, 2\times10^{-3},
# 4\times10^{-3}\}$ at 3 epochs, every other setting the recipe's. Each point is scored
# **only** on the probe's validation split (10 % of the CIFAR-10 training images,
# stratified; `probe.test=false`; the table's note names the points whose history holds
# an earlier probe that read the test split), and each family trains its
# final runs at its own best point. The split is seen unlabelled during pretraining,
# like the rest of the training set; its labels are used only to choose. The sweep's
# recorded runs are under `results/cpu/sweep/` (`aot_lib.evidence.SWEEPS` lists
# them); {numref}`tbl-sweep-tables-1-3` shows every point.

# %% tags=["hide-input"]
shown, picks = sweep_table(
    RESULTS, "Tables 1/3", NAMES,
    "The equal learning-rate sweep: 3 epochs, validation scores only",
    name="tbl-sweep-tables-1-3")
display(shown)

final_lr = {
    fam: load_config(ROOT / "configs" / "cpu" / f"{fam}_cifar10.yaml")["optim"]["lr"]
    for fam in NAMES
}
assert all(final_lr[fam] == picks["Tables 1/3", fam] for fam in NAMES), (
    final_lr,
    picks,
)
same = len(set(final_lr.values())) == 1
display(
    Markdown(
        "Every family's best validation score is at the same learning rate, "
        f"{final_lr['aot_admm']:g}, the one all final runs below use."
        if same
        else "The families' best points differ, and each trains at its own: "
        + ", ".join(f"{NAMES[f]} {lr:g}" for f, lr in final_lr.items())
        + "."
    )
)

# %% [markdown]
# (sec-table1-cpu)=
# ## Table 1: AoT-ADMM against CRATE
#
# A cell is one model on one data set over its seeds (seed $k$ changes the data order,
# the views, the initialisation and the SIGReg directions). Parameters and FLOPs are
# counted on the encoders as these configs build them (without the classification head,
# as the paper counts; FLOPs of one 32-px image, a multiply-add counted as two). The
# columns of {numref}`tbl-table1-cpu` marked as the paper's are its Tiny models after
# 800 epochs on an A100. Under the pretrained rows is the floor every accuracy is read
# against: the same probe on each seed's encoder at its initialisation, before any
# pretraining step, and on the raw pixels (`aot baseline init|pixels`,
# `results/cpu/baselines/`).

# %% tags=["hide-input"]
size = {}  # family -> (params in M, GFLOPs) at this chapter's width and depth
for fam in NAMES:
    cfg = load_config(ROOT / "configs" / "cpu" / f"{fam}_cifar10.yaml")
    model = aot_lib.create_model(
        cfg["model"]["name"], num_classes=0, **cfg["model"]["overrides"]
    )
    size[fam] = (aot_lib.count_params(model) / 1e6, aot_lib.count_flops(model) / 1e9)

cells = {key: evidence.cell_runs(RESULTS, name) for key, name in CELLS.items()}


def cell_row(fam: str, data: str) -> dict:
    runs = cells[fam, data]
    s = stats.summarize([r.top1 for r in runs])
    return dict(
        model=NAMES[fam],
        data=DATA[data],
        n=s.n,
        params=size[fam][0],
        flops=size[fam][1],
        linear=str(s),
        seeds=", ".join(str(r.seed) for r in runs),
        paper=paper.LINEAR_PROBE_ACC[data].get(f"{fam}_tiny"),
        paper_params=paper.PARAMS_M.get(f"{fam}_tiny"),
        paper_flops=paper.FLOPS_G.get(f"{fam}_tiny"),
    )


def floor_table_rows(data: str, families) -> list[dict]:
    """The probes' floor on ``data``: each family's encoders at initialisation, then raw
    pixels (``aot baseline``; results/cpu/baselines/), probed as the pretrained runs."""
    rows = []
    for fam in families:
        floor = evidence.floor_cells(RESULTS, CELLS[fam, data], data)
        for what in ("untrained", "pixels") if fam == families[-1] else ("untrained",):
            runs = floor[what]
            if not runs:
                continue
            s = stats.summarize([r.top1 for r in runs])
            label = f"{NAMES[fam]}, untrained" if what == "untrained" else "raw pixels"
            rows.append(dict(
                model=label,
                data=DATA[data], n=s.n, linear=str(s),
                seeds=", ".join(str(r.seed) for r in runs),
                params=size[fam][0] if what == "untrained" else None,
                flops=size[fam][1] if what == "untrained" else None))
    return rows


FLOOR_NOTE = (
    "Rows 'untrained' and 'raw pixels' are the floor: the same probe on each seed's "
    "encoder at its initialisation, and on the normalised pixels themselves (3,072 "
    "values); chance is 10 % on CIFAR-10 and 1 % on CIFAR-100.")

# the result and the paper's beside it first: on a phone they show before any scroll
COLS = [
    Col("model"),
    Col("linear", "linear top-1 (%), mean ± std"),
    Col("paper", "linear top-1 (%), Tiny", ".2f", paper=True),
    Col("data"),
    Col("seeds"),
    Col("params", "params (M)", ".2f"),
    Col("flops", "GFLOPs", ".3f"),
    Col("paper_params", "params (M), Tiny", ".2f", paper=True),
    Col("paper_flops", "GFLOPs, Tiny", ".2f", paper=True),
]
display(
    Table(
        [cell_row(f, d) for f, d in CELLS if f != "aot"]
        + [r for d in DATA for r in floor_table_rows(d, ("aot_admm", "crate"))],
        COLS,
        caption="The paper's Table 1 at CPU scale: LeJEPA pretraining (width 192, "
        "depth 6, 10 epochs), linear probe on the test split",
        name="tbl-table1-cpu",
        notes=[
            "mean ± sample standard deviation over the seeds listed; one seed has no "
            "spread.",
            "CIFAR-100's test split is held out of the official training set (the "
            "offline copy has no official test set), so its accuracies are not on the "
            "paper's test images.",
            FLOOR_NOTE,
        ],
    )
)

# %% [markdown]
# How far pretraining lifts each cell above its floor, paired by seed (seed $k$'s
# pretrained encoder against seed $k$'s untrained one, and against the pixels probed
# with seed $k$'s split), is in {numref}`tbl-table1-floor-gains`; descriptive, no claim
# is judged on it.

# %% tags=["hide-input"]
floors = evidence.floor_rows(RESULTS, CELLS, NAMES, DATA)


def gain(f) -> str:
    d = f["diff"]
    ci = f" [{d.low:+.2f}, {d.high:+.2f}]" if d.n > 1 else " (one seed)"
    return f"{d.mean:+.2f}{ci}"


gains = {}
for f in floors:
    row = gains.setdefault((f["family"], f["data"]), dict(
        model=NAMES[f["family"]], data=DATA[f["data"]], seeds=f["diff"].n))
    row[f["floor"]] = gain(f)
display(Table(
    list(gains.values()),
    [Col("model"), Col("data"), Col("untrained", "over its untrained encoder (points)"),
     Col("pixels", "over raw pixels (points)"), Col("seeds")],
    caption="What pretraining adds over the floor: mean of the per-seed differences "
    "with its 95 % CI",
    name="tbl-table1-floor-gains"))
above = [f for f in floors if f["diff"].n > 1 and f["diff"].low > 0]
display(Markdown(
    f"In {len(above)} of the {len(floors)} comparisons the whole interval lies above "
    f"0; the gains run from {min(f['diff'].mean for f in floors):.1f} to "
    f"{max(f['diff'].mean for f in floors):.1f} points."
    if floors else
    "*The floor (untrained encoders and raw pixels) is not recorded yet: "
    "`scripts/evidence_runs.sh baselines`.*"))

# %% [markdown]
# Each run of the table, as recorded (its wall time was taken on a 2-core machine that
# other work shared, so it is not a speed measurement: the speed comparison is the
# interleaved benchmark of {ref}`ch-training`):

# %% tags=["hide-input"]
display(
    Dropdown(
        "The recorded runs of this chapter",
        Table(
            [
                dict(
                    run=r.name,
                    seed=r.seed,
                    top1=r.top1,
                    commit=r.commit[:10],
                    numerics=evidence.numerics_label(r),
                    wall=r.wall_time_s / 60,
                )
                for key in CELLS
                for r in cells[key]
            ],
            [
                Col("run"),
                Col("seed"),
                Col("top1", "linear top-1 (%)", ".2f"),
                Col("commit"),
                Col("numerics", "torch, CPU, instruction set"),
                Col("wall", "pretraining (min, shared machine)", ".1f"),
            ],
        ),
    )
)

# %% tags=["hide-input"]
claims = {row["claim"].key: row for row in evidence.claim_rows(RESULTS)}
picks = {fam: evidence.probe_lr_picks(cells[fam, "cifar10"]) for fam in NAMES}
picks_all = [p for ps in picks.values() for p in ps]
grids = sorted({tuple(p["grid"]) for p in picks_all})
display(
    Markdown(
        "The quick probe picks its learning rate on validation data from "
        + " or ".join(str(list(g)) for g in grids)
        + f"; it picked the top of that grid in {sum(p['at_top'] for p in picks_all)} "
        f"of the {len(picks_all)} CIFAR-10 runs ("
        + ", ".join(
            f"{NAMES[f]} {sum(p['at_top'] for p in ps)} of {len(ps)}"
            for f, ps in picks.items()
        )
        + "). "
        + (
            "A pick at the top says the grid may stop short of an encoder's best "
            "rate: the linear probes may understate every family a little, and a "
            "family that gains more from a larger rate would be understated more "
            "(Exercise 4). The check below probes the same encoders with the grid "
            "extended by one step."
            if any(p["at_top"] for p in picks_all)
            else "Every pick lies inside its grid."
        )
    )
)

# %% tags=["hide-input"]
WIDE = RESULTS / "probe_wide"  # scripts/reprobe.py --set 'probe.lr=[...]' --dest
if WIDE.exists():
    wide = {fam: evidence.wide_probe(cells[fam, "cifar10"], WIDE) for fam in NAMES}
    display(
        Dropdown(
            "The CIFAR-10 runs probed again with a wider learning-rate grid",
            Table(
                [
                    dict(model=NAMES[f], seed=k, **w)
                    for f, by_seed in wide.items()
                    for k, w in by_seed.items()
                ],
                [
                    Col("model"),
                    Col("seed"),
                    Col("lr0", "lr, recorded", ".0e"),
                    Col("top1_0", "linear top-1 (%), recorded", ".2f"),
                    Col("lr", "lr, wider grid", ".0e"),
                    Col("val", "val. (%), wider grid", ".2f"),
                    Col("top1", "linear top-1 (%), wider grid", ".2f"),
                ],
            ),
        )
    )
    moved = [w for by_seed in wide.values() for w in by_seed.values()]
    shift = {
        f: mean(w["top1"] - w["top1_0"] for w in ws.values()) for f, ws in wide.items()
    }
    # the CIFAR-10 claims re-paired on the wider grid, judged by the plan's rules
    again = {
        r["claim"].key[:2]: r
        for r in evidence.wide_claims(
            RESULTS, [claims["t1_cifar10"], claims["t3_cifar10"]], WIDE
        )
    }
    same = {key: r["same"] for key, r in again.items()}
    display(
        Markdown(
            f"With the grid {moved[0]['grid']}, validation picked the new top rate in "
            f"{sum(w['lr'] == max(w['grid']) for w in moved)} of {len(moved)} runs; "
            "the test accuracy moved by "
            + ", ".join(f"{NAMES[f]} {d:+.2f}" for f, d in shift.items())
            + " points on average. Re-paired on the wider grid, AoT-ADMM − CRATE is "
            f"{again['t1']['diff'].mean:+.2f} points, "
            f"{again['t1']['diff'].interval()}, "
            f"and AoT-ADMM − AoT {again['t3']['diff'].mean:+.2f}, "
            f"{again['t3']['diff'].interval()}: "
            + (
                "both verdicts stay as they are with the recorded grid."
                if all(same.values())
                else "a verdict changes ("
                + ", ".join(k for k, v in same.items() if not v)
                + "), so the recorded grid's edge matters for it."
            )
        )
    )
else:
    display(Markdown("*The wider-grid check (`results/cpu/probe_wide/`) is not "
                     "recorded yet.*"))

# %% [markdown]
# The paper's claim is parity: AoT-ADMM − CRATE within a margin the analysis plan
# (`results/cpu/plan.yaml`) sets for Table 1: the largest gap the paper itself calls
# comparable there (the Tiny CIFAR-10 gap), rounded up to the next half point. The plan
# was written after these runs, so these verdicts are post hoc. The
# difference is taken seed by seed (the same seed gives both families the same data
# order and views) and its 95 % interval is Student's $t$ over the seeds. Parity is
# reproduced when the whole interval lies inside the margin. The paper makes the claim
# for the smaller model ("maintains competitive performance while reducing the
# parameter count"), so each sentence adds a secondary, one-sided reading, chosen after
# the first seeds were in: non-inferiority, AoT-ADMM trailing CRATE by no more than the
# margin anywhere in the interval (`aot_lib.evidence.stats.noninferiority`; the
# interval's lower bound, a one-sided test at 2.5 %). The two readings part only where
# AoT-ADMM may be ahead by more than the margin.

# %% tags=["hide-input"]
display(
    Markdown(
        "\n\n".join(f"* {claims[k]['sentence']}" for k in ("t1_cifar10", "t1_cifar100"))
    )
)
fewer = 1 - size["aot_admm"][0] / size["crate"][0]
flops = size["aot_admm"][1] / size["crate"][1]
display(
    Markdown(
        f"At this width AoT-ADMM has {fewer:.0%} fewer parameters than CRATE and "
        f"{flops:.2f}× its FLOPs per image (the paper, Tiny: "
        f"{1 - paper.PARAMS_M['aot_admm_tiny'] / paper.PARAMS_M['crate_tiny']:.0%} and "
        f"{paper.FLOPS_G['aot_admm_tiny'] / paper.FLOPS_G['crate_tiny']:.2f}× by "
        f"its table; its prose says {paper.SAVING_PCT_PROSE['tiny']:.1f} %, which "
        f"{{numref}}`tbl-architecture-admm-savings` recomputes)."
    )
)

# %% [markdown]
# (sec-knn-curves)=
# ## Learning curves: accuracy against epochs and against time
#
# The efficiency claim (AoT-ADMM reaches CRATE's accuracy at lower cost) needs curves,
# not end points. Runs made with the online k-NN monitor (`monitor.knn: true`,
# `aot_lib.training.monitors.OnlineKNN`) log, once an epoch, the k-NN accuracy of 5,000
# images of the validation split against a bank of 10,000 training images, without
# gradients or random draws (the training trajectory is bitwise the same with or without
# it). Time is *modelled*: steps × each family's median step time in the interleaved
# benchmark (`results/benchmarks/families_run*.json`, width 192, eager; its commit is
# named under the figure), because the runs' own wall times were taken on a shared
# machine ({numref}`fig-knn-curves`). That benchmark predates the recipe search's
# throughput work: {numref}`fig-time-to-accuracy` puts the same runs on a newer and
# different measurement (the search's clock, augmentation included), where the same
# steps take fewer minutes, so compare minutes within one figure.

# %% tags=["hide-input"]
bench = [
    json.loads(p.read_text())
    for p in sorted((ROOT / "results" / "benchmarks").glob("families_run*.json"))
]
step_s = {
    fam: median(evidence.seconds_per_step(b)[fam] for b in bench) for fam in NAMES
}
commits = sorted({b["commit"][:7] for b in bench})
curves = {}
for fam in NAMES:
    for r in cells[fam, "cifar10"]:
        try:
            curves[fam, r.seed] = evidence.knn_curve(r.folder)
        except evidence.NoKnnMonitor:  # a run made before the monitor existed
            pass

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Validation k-NN accuracy of every recorded CIFAR-10 run with the online monitor, one line per run (family and seed in the legend; runs recorded before the monitor existed have none), against the epoch (left) and against the modelled pretraining time, steps $\\times$ the family's benchmarked step time (right).", "name": "fig-knn-curves"}}
if curves:
    fig, (ax_e, ax_t) = plt.subplots(1, 2, figsize=(FIGURE_WIDTH_IN, 3.6), sharey=True)
    colours = {"aot_admm": "C0", "crate": "C1", "aot": "C2"}
    for (fam, seed), rows in sorted(curves.items()):
        steps, epochs, accs = zip(*rows)
        label = f"{NAMES[fam]}, seed {seed}"
        ax_e.plot(epochs, accs, marker="o", ms=3, color=colours[fam], label=label)
        ax_t.plot(
            evidence.modelled_minutes(steps, step_s[fam]),
            accs,
            marker="o",
            ms=3,
            color=colours[fam],
            label=label,
        )
    ax_e.set_xlabel("epoch")
    ax_t.set_xlabel("modelled pretraining time (min, 2 CPU cores)")
    ax_e.set_ylabel("k-NN top-1, validation (%)")
    ax_e.legend(fontsize=8)
    fig.tight_layout()
    plt.show()
else:
    display(
        Markdown(
            "*No CIFAR-10 run with the k-NN monitor is recorded yet: the seed-2 runs "
            "(`configs/cpu/*_cifar10_seed2.yaml`) and AoT's seeds 1 and 2 carry it "
            "(`scripts/evidence_runs.sh seeds`).*"
        )
    )

# %% tags=["hide-input"]
# Time to a common accuracy, on the mean curve over the seeds both families monitored
# (the best of several seeds would favour the family with more of them).
common = sorted(
    {s for f, s in curves if f == "aot_admm"} & {s for f, s in curves if f == "crate"}
)
if common:
    mean_curve = {}
    for fam in ("aot_admm", "crate"):
        steps = [s for s, _, _ in curves[fam, common[0]]]
        assert all([s for s, _, _ in curves[fam, k]] == steps for k in common), fam
        accs = [mean(curves[fam, k][i][2] for k in common) for i in range(len(steps))]
        mean_curve[fam] = (evidence.modelled_minutes(steps, step_s[fam]), accs)
    target = min(curve_accs[-1] for _, curve_accs in mean_curve.values())
    reach = {
        fam: evidence.first_reaching(*mean_curve[fam], target) for fam in mean_curve
    }
    display(
        Markdown(
            f"Over seed{'s' if len(common) > 1 else ''} "
            f"{', '.join(map(str, common))} (the seeds both families ran with the "
            f"monitor), the mean curves both reach {target:.2f} % validation k-NN "
            "accuracy (the lower of their final values); AoT-ADMM first at "
            f"{reach['aot_admm']:.1f} modelled minutes, CRATE at "
            f"{reach['crate']:.1f} ({reach['crate'] / reach['aot_admm']:.2f}× as "
            f"long), with step times of {step_s['aot_admm']:.2f} s and "
            f"{step_s['crate']:.2f} s."
        )
    )
display(
    Markdown(
        f"Benchmarked step times (median of {len(bench)} interleaved recordings at "
        f"commit{'s' * (len(commits) > 1)} {', '.join(commits)}): "
        + ", ".join(f"{NAMES[f]} {s:.2f} s" for f, s in step_s.items())
        + "."
    )
)

# %% [markdown]
# (sec-figure3-cpu)=
# ## Figure 3: pretraining dynamics
#
# The total loss $\mathcal L=\mathcal L_{\text{pred}}+\alpha\,\mathcal
# L_{\text{SIGReg}}$ (the paper's Eq. (19)), its prediction part and the SIGReg
# statistic, logged every 10 steps, for the seed-0 run of each family on CIFAR-10
# ({numref}`fig-figure3-cpu`), and where each ends in
# {numref}`tbl-figure3-final-losses`:

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The paper's Figure 3 at CPU scale: total loss, prediction loss and SIGReg statistic of the seed-0 CIFAR-10 runs of the three families, against the training step.", "name": "fig-figure3-cpu"}}
seed0 = {fam: next(r for r in cells[fam, "cifar10"] if r.seed == 0) for fam in NAMES}
plot_training_curves({NAMES[fam]: read_curve(r.folder) for fam, r in seed0.items()})
plt.show()

# %% [markdown]
# Every recorded CIFAR-10 run, not only seed 0, in {numref}`fig-curves-panel`: pick a
# family and one of the three logged quantities; one line per run (hover for its seed).

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The logged training curves of every recorded CIFAR-10 run of the chosen family (one line per seed) for the chosen quantity: the total loss of the paper's Eq. (19), its prediction part, or the SIGReg statistic, against the step.", "name": "fig-curves-panel"}}
curves_panel({(NAMES[fam], f"seed {r.seed}"): read_curve(r.folder)
              for fam in NAMES for r in cells[fam, "cifar10"]})


# %% tags=["hide-input"]
def tail_mean(values: list, n: int = 20) -> float:
    """The mean of the last ``n`` logged values: one logged batch is noisy."""
    return sum(values[-n:]) / len(values[-n:])


display(
    Table(
        [
            dict(
                model=NAMES[fam],
                loss=tail_mean(c["loss"]),
                pred=tail_mean(c["pred"]),
                sigreg=tail_mean(c["sigreg"]),
            )
            for fam, c in ((fam, read_curve(r.folder)) for fam, r in seed0.items())
        ],
        [
            Col("model"),
            Col("loss", "total loss", ".4f"),
            Col("pred", "prediction loss", ".4f"),
            Col("sigreg", "SIGReg", ".4f"),
        ],
        caption="Final losses on CIFAR-10, seed 0 (mean of the last 20 logged steps)",
        name="tbl-figure3-final-losses",
    )
)

# %% [markdown]
# (sec-table3-cpu)=
# ## Table 3: AoT-ADMM against AoT
#
# AoT (Wang et al.) is the attention-only Transformer without the unrolled ADMM state:
# the same attention, the same parameter count to within the ADMM coefficients and
# thresholds, no $V$ and $W$ carried between layers. Same budget and tuning as above.
# The paper's Table 3 has a CIFAR-100 half too; with this 10-epoch recipe it was not
# tested (no AoT run on CIFAR-100 was recorded). The analysis plan
# (`results/cpu/plan.yaml`) includes it for the 30-minute recipe.
# {numref}`tbl-table3-cpu` shows the CIFAR-10 half.

# %% tags=["hide-input"]
display(
    Table(
        [cell_row(f, "cifar10") for f in ("aot_admm", "aot")]
        + floor_table_rows("cifar10", ("aot_admm", "aot")),
        [c for c in COLS if c.key != "paper_flops"],
        caption="The paper's Table 3 at CPU scale: AoT-ADMM and AoT, CIFAR-10",
        name="tbl-table3-cpu",
        notes=["The paper's Table 3 prints no FLOPs.", FLOOR_NOTE],
    )
)
display(Markdown(f"* {claims['t3_cifar10']['sentence']}"))

# %% [markdown]
# (sec-two-recipes)=
# ## The same claims at the 30-minute recipe
#
# Every verdict above rests on one recipe: 10 epochs, against the paper's 800. The
# {ref}`recipe search <sec-recipe-search>` picks a second one, on validation data
# only, for accuracy per CPU-minute. The analysis plan fixed how its cells are judged
# before any of their runs: the same rules and margins, 5 seeds on CIFAR-10 and 3 on
# CIFAR-100, and Table 3's CIFAR-100 half included. {numref}`tbl-two-recipes` sets the
# two recipes side by side, claim by claim. A verdict that holds at both says more
# than either alone; one that flips between final verdicts says the ranking depends on
# how long the models trained. An interim verdict (fewer seeds recorded than the plan
# asks for) can still move with the seeds to come.

# %% tags=["hide-input"]
def verdict_cells(row, prefix):
    """One recipe's reading of a claim as table cells under ``prefix``: chapter 1's
    results table and `aot verdicts` print the same row (`evidence.verdict_rows`)."""
    if row is None:
        return {prefix + "verdict": "not tested"}
    (v,) = evidence.verdict_rows([row])
    return {prefix + "verdict": v["verdict"], prefix + "ours": v["ours"],
            prefix + "ci": v["interval"], prefix + "seeds": v["seeds"]}


first_rows = {r["claim"].key: r for r in evidence.claim_rows(RESULTS)}
rows_30 = evidence.claim_rows(RESULTS, evidence.CLAIMS_30MIN)
pending = sum(r["verdict"] == "pending" for r in rows_30)
pick = evidence.recipe_pick(ROOT)
assert {(r["claim"].key.split("_")[1], r["plan"].seeds) for r in rows_30} \
    == {("cifar10", 5), ("cifar100", 3)}, "the seeds the text above states"


def short_what(claim) -> str:
    """A 30-minute claim's name without the recipe: the section is about that recipe."""
    return claim.what.replace(", 30-minute recipe)", ")")


two = [dict(claim=short_what(r["claim"]),
            paper=r["claim"].paper_gap,
            **verdict_cells(first_rows.get(r["claim"].key.removesuffix("_30min")),
                            "first_"),
            **verdict_cells(r, "new_"))
       for r in rows_30]
display(Table(
    two,
    [Col("claim", "comparison (A − B, points)"),
     Col("first_verdict", "10 epochs: verdict"), Col("new_verdict", "30 min: verdict"),
     Col("first_ours", "10 epochs: ours"), Col("first_ci", "10 epochs: 95 % CI"),
     Col("first_seeds", "10 epochs: seeds"),
     Col("new_ours", "30 min: ours"), Col("new_ci", "30 min: 95 % CI"),
     Col("new_seeds", "30 min: seeds"), Col("paper", "paper", "+.2f", paper=True)],
    caption="Tables 1 and 3 at two recipes: the 10-epoch runs above and the 30-minute "
            "recipe's cells",
    name="tbl-two-recipes",
    notes=["Both judged as the analysis plan (results/cpu/plan.yaml) says; seeds: "
           "paired seeds recorded, of the number the plan asks for. 30 min: "
           + ("the recipe the search picked, "
              f"{pick['candidate']} at {pick['epochs']} epochs (AoT-ADMM's steps sized "
              "to 30 minutes; every family trains the same epochs)" if pick else
              "the search's pick, not made yet")
           + "." + (" Pending: the cells' runs are not all recorded yet "
                    "(scripts/evidence_runs.sh cpu30)." if pending else "")]))
display(Markdown(
    f"{len(rows_30) - pending} of the {len(rows_30)} claims at the 30-minute recipe "
    "have recorded runs so far. "
    + " ".join(r["sentence"] for r in rows_30 if r["verdict"] != "pending")))

# %% [markdown]
# The 30-minute cells' probe chose its learning rate from 1e-3 to 3e-2. An addendum to
# the plan, written before any probe on a wider grid, adds a check beside the verdicts,
# as for the first recipe: every run's encoder probed again with 1e-1 added, at the
# cells' own commit. The verdicts stay the recorded probe's.

# %% tags=["hide-input"]
runs_30 = [x for name in sorted({n for c in evidence.CLAIMS_30MIN for n in (c.a, c.b)})
           if (RESULTS / name).exists() for x in evidence.cell_runs(RESULTS, name)]
picks_30 = evidence.probe_lr_picks(runs_30)
wide_30 = evidence.wide_claims(RESULTS, rows_30, WIDE)
probed_30 = [x for x in runs_30 if (WIDE / x.name / "probe.json").exists()]


def wide_sentence(r: dict) -> str:
    """One claim's reading on the wider grid, or the runs it still waits for."""
    what = short_what(r["claim"])
    if r["missing"]:
        return f"{what}: waits for {', '.join(r['missing'])} on the wider grid."
    return (f"{what}: {r['diff'].mean:+.2f} points on the wider grid"
            + (f", {r['diff'].interval()}" if r["diff"].n > 1 else " (one seed)")
            + f"; {r['verdict']}"
            + (", as recorded." if r["same"]
               else f", where the record reads {r['verdict0']}."))


wide_30_runs = [w for x in probed_30 for w in evidence.wide_probe([x], WIDE).values()]
moved_30 = [w["top1"] - w["top1_0"] for w in wide_30_runs]  # test top-1: wide - rec.
# the addendum says the cells' own commit; a probe run at another says so here
later = [w for w in wide_30_runs if w["commit"] != w["commit0"]]
display(Markdown(
    f"The recorded probe picked its grid's top rate in "
    f"{sum(p['at_top'] for p in picks_30)} of {len(picks_30)} 30-minute runs. "
    + (f"{len(probed_30)} of them are probed on the wider grid so far; their test "
       f"accuracy moved by {mean(moved_30):+.2f} points on average (from "
       f"{min(moved_30):+.2f} to {max(moved_30):+.2f}). "
       + " ".join(wide_sentence(r) for r in wide_30)
       if probed_30 else "None is probed on the wider grid yet.")
    + (f" {len(later)} of the {len(wide_30_runs)} wider-grid probes ran at a later "
       "commit than their run's, not the cells' own as the addendum says: the clean "
       "clone's copy of `scripts/reprobe.py` predates 2b5b183, which makes the script "
       "import its own checkout's package, so it imported the newer checkout installed "
       "in the environment. "
       + (f"Each of the {len(later)} gives the recorded probe's validation accuracy "
          "at every rate both grids share, to the last digit: the later code gave "
          "the recorded numbers wherever the two can be compared."
          if all(w["shared_same"] for w in later) else
          f"{sum(not w['shared_same'] for w in later)} of them give a validation "
          "accuracy that differs from the recorded probe's at a rate both grids "
          "share: their wider-grid numbers are not the cells' own.")
       if later else "")))

# %% [markdown]
# ## Exercises
#
# 1. **How many seeds?** With the standard deviation of the paired CIFAR-10 difference
#    above, how many seeds would make the 95 % interval narrower than the plan's Table 1
#    margin (`results/cpu/plan.yaml`)? Use `aot_lib.evidence.stats.t_quantile` and solve
#    for $n$.
# 2. **Another selection rule.** Pick each family's learning rate by the validation
#    k-NN column instead of the linear probe (`evidence.sweep_rows`). Does any
#    pick change?
# 3. **Time to accuracy.** With `evidence.first_reaching`, find the modelled minutes at
#    which each recorded learning curve first reaches 30 %, 35 % and 40 %.
# 4. **A wider probe grid.** Probe one recorded encoder of each family again with
#    `probe.lr=[0.001,0.003,0.01,0.03]`: copy a recorded run's `config.yaml` and
#    `encoder/` to a scratch folder `S` (as `scripts/reprobe.py` does: the probe writes
#    beside the encoder) and run `aot probe -c S/config.yaml --checkpoint S/encoder
#    'probe.lr=[0.001,0.003,0.01,0.03]'`. Does the validation accuracy still rise at the
#    top, and does the family gap change?

# %% [markdown]
# ## What we learned

# %% tags=["hide-input"]
verdicts = [claims[k] for k in ("t1_cifar10", "t1_cifar100", "t3_cifar10")]
counts = {v: sum(r["verdict"] == v for r in verdicts) for v in stats.VERDICTS}
judged_30 = [r for r in rows_30 if r["verdict"] != "pending"]
both = [(first_rows[r["claim"].key.removesuffix("_30min")], r) for r in judged_30
        if r["claim"].key.removesuffix("_30min") in first_rows]  # judged at both
assert not any(r["plan"].post_hoc for r in judged_30), "the bullet says: plan first"
moved = [short_what(new["claim"])
         for old, new in both if old["verdict"] != new["verdict"]]


def ahead_words(r: dict) -> str:
    """', A ahead' for a parity claim whose interval excludes 0 (a gain's verdict says
    it already)."""
    who = stats.ahead_name(r["diff"], r["claim"].names)
    return f", {who} ahead" if r["claim"].claim == "parity" and who else ""


recipes_bullet = (
    "* At the 30-minute recipe, judged by a plan written before its runs: "
    + "; ".join(f"{short_what(r['claim'])}: {evidence.verdict_label(r)}{ahead_words(r)}"
                for r in judged_30)
    + f". Of the {len(both)} comparisons judged at both recipes, the verdict "
    + (f"moved for {len(moved)}: {', '.join(moved)}" if moved else "moved for none")
    + "."
    + (" An interim verdict can still move as the plan's last seeds land."
       if any(r["missing_seeds"] for r in judged_30) else "")
    + "\n" if judged_30 else "")
display(
    Markdown(
        f"* Of the 10-epoch recipe's {len(verdicts)} claims, {counts['reproduced']} "
        "reproduced, "
        f"{counts['contradicted']} contradicted, "
        f"{counts['not settled']} not settled "
        "(each sentence above says why: the interval against the claim, and who "
        "is ahead where it excludes 0); every verdict here is post hoc, the plan "
        "that judges it having been written after its runs. "
        + evidence.one_sided_sentence(verdicts)
        + "\n"
        + recipes_bullet
        + "* The learning rate was tuned alike, on validation data: each family's own "
        "best of the same three points. The projector, the SIGReg slices and the "
        "normalisation were chosen on AoT-ADMM alone and handed to CRATE and AoT "
        "({ref}`ch-recipe-audit`), which, if anything, favours AoT-ADMM.\n"
        "* A difference smaller than its interval's half-width is not evidence either "
        "way; ten epochs at half "
        "width and depth cannot show whether the paper's ranking at 800 epochs holds."
    )
)

# %% [markdown] tags=["remove-cell"]
# % aot-jupyterlab-key
# % Written after a build by `python book/_ext/aot_book_build jupyterlab-key`;
# % the book leaves this cell out (its tag remove-cell).
# ##### This chapter's references, as the book numbers them
#
# In the book these are links; in JupyterLab this cell gives them their numbers and
# titles, and the works the chapter cites their full references.
#
# (ch-recipe-audit)=
# ###### A CPU recipe, Appendix A’s normalisation, and a white-box audit
#
# (sec-quick-probe)=
# ###### The quick probe protocol
#
# :::{figure}
# :label: tbl-sweep-tables-1-3
# :kind: table
# :enumerator: 8.1
# The equal learning-rate sweep: 3 epochs, validation scores only
# :::
#
# :::{figure}
# :label: tbl-table1-cpu
# :kind: table
# :enumerator: 8.2
# The paper's Table 1 at CPU scale: LeJEPA pretraining (width 192, depth 6, 10 epochs),
# linear probe on the test split
# :::
#
# :::{figure}
# :label: tbl-table1-floor-gains
# :kind: table
# :enumerator: 8.3
# What pretraining adds over the floor: mean of the per-seed differences with its 95 %
# CI
# :::
#
# (ch-training)=
# ###### Training AoT-ADMM with LeJEPA, at CPU scale
#
# :::{figure}
# :label: fig-knn-curves
# :enumerator: 8.1
# Validation k-NN accuracy of every recorded CIFAR-10 run with the online monitor, one
# line per run (family and seed in the legend; runs recorded before the monitor existed
# have none), against the epoch (left) and against the modelled pretraining time, steps
# $\times$ the family’s benchmarked step time (right).
# :::
#
# :::{figure}
# :label: fig-time-to-accuracy
# :enumerator: 7.2
# Validation k-NN accuracy against modelled pretraining minutes (steps times the idle,
# interleaved step time): the first recipe (10 epochs; the mean over those of its
# CIFAR-10 seeds recorded with the online monitor), the recipe search’s finalists at
# full length (seed 0), and the 30-minute recipe’s CIFAR-10 cells (the mean over their
# recorded seeds), one panel per family; the legend counts the runs behind each curve. A
# hollow marker at a curve’s end is the mean final linear probe on the validation split
# (each run’s own probe and learning-rate grid).
# :::
#
# :::{figure}
# :label: fig-figure3-cpu
# :enumerator: 8.2
# The paper’s Figure 3 at CPU scale: total loss, prediction loss and SIGReg statistic of
# the seed-0 CIFAR-10 runs of the three families, against the training step.
# :::
#
# :::{figure}
# :label: tbl-figure3-final-losses
# :kind: table
# :enumerator: 8.4
# Final losses on CIFAR-10, seed 0 (mean of the last 20 logged steps)
# :::
#
# :::{figure}
# :label: fig-curves-panel
# :enumerator: 8.3
# The logged training curves of every recorded CIFAR-10 run of the chosen family (one
# line per seed) for the chosen quantity: the total loss of the paper’s Eq. (19), its
# prediction part, or the SIGReg statistic, against the step.
# :::
#
# :::{figure}
# :label: tbl-table3-cpu
# :kind: table
# :enumerator: 8.5
# The paper's Table 3 at CPU scale: AoT-ADMM and AoT, CIFAR-10
# :::
#
# (sec-recipe-search)=
# ###### More accuracy per CPU-minute: the recipe search
#
# :::{figure}
# :label: tbl-two-recipes
# :kind: table
# :enumerator: 8.6
# Tables 1 and 3 at two recipes: the 10-epoch runs above and the 30-minute recipe's
# cells
# :::
