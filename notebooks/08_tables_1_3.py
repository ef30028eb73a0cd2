# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,mystnb,-user_expressions
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
# alike, over seeds: a verdict and interval per table claim; Figure 3 from one seed.

# %% tags=["remove-input"]
from aot_lib.book.pages import open_chapter

open_chapter(seed=0)

# %% tags=["remove-input"]
from aot_lib.book.inline import phrases
from aot_lib.evidence import paper

# the paper's Table 3: AoT-ADMM over AoT at each size and data set (the paper's numbers)
t3_gains = [acc[f"aot_admm_{size}"] - acc[f"aot_{size}"]
            for acc in paper.LINEAR_PROBE_ACC.values()
            for size in ("tiny", "small", "base")]
paper_t3 = phrases(low=f"{min(t3_gains):.2f}", high=f"{max(t3_gains):.2f}")

# %% [markdown]
# The paper claims (Table 1) that AoT-ADMM keeps CRATE's linear-probe accuracy while
# dropping the ISTA dictionary, about 31 % of the parameters and well over half the
# FLOPs; (Figure 3) that the two pretrain along "closely matched convergence
# trajectories"; (Table 3) that the ADMM-derived layer beats AoT, the attention-only
# Transformer with the same parameter count but without the unrolled ADMM state, by
# {eval}`paper_t3.low` to {eval}`paper_t3.high` points in the paper's numbers.
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
from IPython.display import display

from aot_lib import evidence
from aot_lib.evidence import paper, stats
from aot_lib.book.inline import phrases
from aot_lib.book.pages import Dropdown
from aot_lib.book.panels import curves_panel
from aot_lib.book.paper_tables import (encoder_sizes, floor_gains_table, floor_picks,
                                       edge_floor_gains_table, run_label,
                                       reprobe_table, floor_reprobes, cell_reprobes,
                                       split_control,
                                       table1_cpu, table3_cpu)
from aot_lib.book.plotting import FIGURE_WIDTH_IN, plot_training_curves
from aot_lib.book.recorded import read_curve, seed_runs_table
from aot_lib.book.tables import Col, Table, sweep_table, verdict_table
from aot_lib.objectives.lejepa import alpha_from_lejepa_lambda
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
sweep = phrases(picks=", ".join(f"{NAMES[f]} {lr:g}" for f, lr in final_lr.items()))
picks_read_test = {r["family"] for r in evidence.sweep_rows(RESULTS)
                   if r["table"] == "Tables 1/3" and r["read_test"]
                   and r["lr"] == final_lr[r["family"]]}
assert picks_read_test == {"aot_admm"}, \
    "the text: of the picks, only AoT-ADMM's ever read the test split"

# %% [markdown]
# Each family trains its final runs below at its own best point: {eval}`sweep.picks`.
# AoT-ADMM's point has a history the others lack: it is the recipe sweep's r2, which was
# first probed with the test split read and first picked with those scores in view
# ({ref}`sec-recipe`); this sweep scored it again on validation only. No probe of
# CRATE's or AoT's points had the test split.

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
size = encoder_sizes(ROOT)  # family -> (params in M, GFLOPs) at this chapter's scale
cells = {key: evidence.cell_runs(RESULTS, name) for key, name in CELLS.items()}
display(table1_cpu(RESULTS, cells, size))

# %% [markdown]
# How far pretraining lifts each cell above its floor, paired by seed (seed $k$'s
# pretrained encoder against seed $k$'s untrained one, and against the pixels probed
# with seed $k$'s split), is in {numref}`tbl-table1-floor-gains`; descriptive, no claim
# is judged on it.

# %% tags=["hide-input"]
gains, floors = floor_gains_table(
    RESULTS, CELLS, name="tbl-table1-floor-gains",
    caption="What pretraining adds over the floor: mean of the per-seed differences "
    "with its 95 % CI")
display(gains)
assert floors, "the floor's runs ship with the records: results/cpu/baselines/"
above = [f for f in floors if f["diff"].n > 1 and f["diff"].low > 0]
floor = phrases(above=len(above), n=len(floors),
                low=f"{min(f['diff'].mean for f in floors):.1f}",
                high=f"{max(f['diff'].mean for f in floors):.1f}")

# %% [markdown]
# In {eval}`floor.above` of the {eval}`floor.n` comparisons the whole interval lies
# above 0; the gains run from {eval}`floor.low` to {eval}`floor.high` points.
#
# **Post hoc: the same floors on a wider grid.** A floor whose probe picks an end of
# its grid may sit lower than a probe with more rates would put it, and a gain over it
# higher. After seeing that these floors did, an addendum to the plan has every one of
# them probed again on the wide grid of
# {ref}`the 30-minute cells' floors <sec-floors-30>` (1e-4 to 1e-1), into
# `results/cpu/baselines_wide/`; the records above stay as they were.
# {numref}`tbl-table1-floors-wide` shows the floors and gains on it.

# %% tags=["hide-input"]
wide_table, floors_wide = floor_gains_table(
    RESULTS, CELLS, baselines="baselines_wide", levels=True,
    name="tbl-table1-floors-wide",
    caption="Post hoc: the first recipe's cells over their floors probed again on "
    "the wide grid: each side's linear top-1 (mean ± std over its seeds) and the mean "
    "of the per-seed gains with its 95 % CI")
display(wide_table)
picks_first = floor_picks(RESULTS, CELLS)
picks_wide = floor_picks(RESULTS, CELLS, "baselines_wide")
edges_wide = [p for p in picks_wide if p["at_top"] or p["at_bottom"]]
gain_first = {(f["family"], f["data"], f["floor"]): f["diff"].mean for f in floors}
moved = [f["diff"].mean - gain_first[f["family"], f["data"], f["floor"]]
         for f in floors_wide]
(grid_wide,) = {tuple(p["grid"]) for p in picks_wide}


def floor_cpus(baselines: str) -> str:
    """What the floors under CELLS were computed with, as their run.json says."""
    labels = {evidence.numerics_label(r) for (_, d), n in CELLS.items()
              for runs in evidence.floor_cells(RESULTS, n, d, baselines).values()
              for r in runs or ()}
    return " and ".join(sorted(labels))


wide = phrases(
    cpus_first=floor_cpus("baselines"), cpus_wide=floor_cpus("baselines_wide"),
    expected=len(picks_first), recorded=len(picks_wide),
    first_edges=sum(p["at_top"] or p["at_bottom"] for p in picks_first),
    grid=", ".join(f"{x:g}" for x in grid_wide), n=len(floors_wide),
    above=sum(f["diff"].n > 1 and f["diff"].low > 0 for f in floors_wide),
    low=f"{min(f['diff'].mean for f in floors_wide):.1f}",
    high=f"{max(f['diff'].mean for f in floors_wide):.1f}",
    moved_low=f"{min(moved):+.2f}", moved_high=f"{max(moved):+.2f}",
    edges=len(edges_wide), top=sum(p["at_top"] for p in edges_wide),
    bottom=sum(p["at_bottom"] for p in edges_wide))

# %% [markdown]
# On the first grid, {eval}`wide.first_edges` of the {eval}`wide.expected` floor probes
# had picked an end. {eval}`wide.recorded` of the {eval}`wide.expected` are probed
# again, on the grid
# {eval}`wide.grid`. In {eval}`wide.above` of the {eval}`wide.n` comparisons the
# whole interval lies above 0; the gains run from {eval}`wide.low` to {eval}`wide.high`
# points, each between {eval}`wide.moved_low` and {eval}`wide.moved_high` points from
# its gain over the first grid's floor. Each move mixes the wider grid with a change of
# machine: the first floors were computed with {eval}`wide.cpus_first`, these with
# {eval}`wide.cpus_wide` and at a later commit, which moves a probe slightly by itself
# (the control of {numref}`tbl-floors-30-edge` measures how much).
# {eval}`wide.edges` of the {eval}`wide.recorded` probes still pick an end of the wide
# grid ({eval}`wide.top` at its top,
# {eval}`wide.bottom` at its bottom); these floors are a check beside the records, and
# the addendum that added them did not extend them. A later one did:
#
# (sec-floors-wide-edge)=
# **Post hoc: the wide-grid floors still at an end, extended.** The issue asks that no
# floor pick the edge of its grid, and these are the floors it first named. A fourth
# addendum to the plan, written after these records were seen and before any of the
# following, probes each of them again with the grid extended outward on that side a
# rate at a time while the pick stays at the end (`probe.lr_below`, `probe.lr_above`;
# `scripts/evidence_runs.sh floors_wide_edge`, `results/cpu/baselines_wide_edge/`), and
# one floor whose pick was inside as a control: on the CPU type of its wide-grid record
# the same numbers must come back; where they do not, the extended floors are shown
# apart and the gains above stay over the wide-grid floors.

# %% tags=["hide-input"]
WIDE_EDGE_DIR = "baselines_wide_edge"
reprobes_wide = floor_reprobes(RESULTS, CELLS, "baselines_wide", WIDE_EDGE_DIR)
display(reprobe_table(
    reprobes_wide, name="tbl-table1-floors-wide-edge",
    caption="Post hoc: the first recipe's floors that picked an end of the wide grid, "
    "probed again with the grid extended outward at that end, beside their wide-grid "
    "probe (and the control, whose pick was inside)"))
WIDE_CONTROL = "baseline_init_cpu_aot_admm_cifar10"  # the fourth addendum's control
split_w = split_control(reprobes_wide, WIDE_CONTROL)
control_w, again_w, moved_w = split_w.control, split_w.others, split_w.moved
(cpu_first_w,), (cpu_again_w,) = split_w.numerics_first, split_w.numerics_again
differs_w = split_w.control_rates
assert {r["run"] for r in again_w} == {p["run"] for p in edges_wide}, "the text: all"
assert not any(r["again"]["at_top"] or r["again"]["at_bottom"] for r in again_w), \
    "the text: none still at an end"
assert not control_w["same"] and differs_w, "the text: the control did not come back"
assert (control_w["again"]["lr"], control_w["again"]["top1"]) == (
    control_w["first"]["lr"], control_w["first"]["top1"]), "the text: pick, test same"
assert cpu_first_w != cpu_again_w, "the text: two CPU types"
assert {p["run"] for p in picks_first} == {p["run"] for p in picks_wide}, \
    "the text: every floor of the first recipe has its wide-grid probe"
encoders_w = [r for r in reprobes_wide if not r["run"].startswith("baseline_pixels")]
assert max(r["shared_diff"] for r in encoders_w) < max(
    r["shared_diff"] for r in reprobes_wide), "the text: the pixels moved most"
new_pick = [abs(m) for r, m in zip(again_w, moved_w)
            if r["again"]["lr"] != r["first"]["lr"] and r in encoders_w]
assert max(new_pick) > max(r["shared_diff"] for r in encoders_w), \
    "the text: at a new pick an encoder's test moved more than its machine alone"
assert max(new_pick) == max(abs(m) for m in moved_w), "the text: the largest, new pick"
assert max(abs(m) for m in moved_w) < min(f["diff"].mean for f in floors_wide), \
    "the text: every move small beside the floor gains"
wide_edge = phrases(
    recorded=len(again_w), cpu_first=cpu_first_w,
    cpu_again=cpu_again_w, control_rates=len(differs_w),
    control_lrs=", ".join(f"{lr:g}" for lr in differs_w),
    control_diff=f"{control_w['shared_diff']:.2f}",
    beyond=sum(r["again"]["lr"] not in r["first"]["grid"] for r in again_w),
    low=f"{min(moved_w):+.2f}", high=f"{max(moved_w):+.2f}",
    shared_max=f"{max(r['shared_diff'] for r in reprobes_wide):.2f}",
    encoders_max=f"{max(r['shared_diff'] for r in encoders_w):.2f}",
    moved_max=f"{max(abs(m) for m in moved_w):.2f}")

# %% [markdown]
# All {eval}`wide_edge.recorded` floors at an end are probed again
# ({numref}`tbl-table1-floors-wide-edge`). The control's numbers did not all come
# back: its wide-grid record ran with {eval}`wide_edge.cpu_first`, this one with
# {eval}`wide_edge.cpu_again`, and at {eval}`wide_edge.control_rates` of its rates
# ({eval}`wide_edge.control_lrs`) the validation accuracy moved, by up to
# {eval}`wide_edge.control_diff` points, while its pick and test accuracy stayed the
# same. So, as the addendum says for this case, the extended floors are shown apart.
# Of the {eval}`wide_edge.recorded` edge floors, {eval}`wide_edge.beyond` picked a rate
# the wide grid did not have; the test accuracy of all {eval}`wide_edge.recorded`
# moved by {eval}`wide_edge.low` to {eval}`wide_edge.high` points, and none still sits
# at an end of the rates it tried: no floor of the first recipe now picks the edge of
# its grid. At the rates both probes tried, which is what the other CPU type and the
# code since move by themselves, the validation accuracy moved by up to
# {eval}`wide_edge.shared_max` points for raw pixels and {eval}`wide_edge.encoders_max`
# for the untrained encoders. The largest test move above, {eval}`wide_edge.moved_max`
# points, came with a newly picked rate and is larger than the encoders' own machine
# move; every move is small beside the floor gains above ({eval}`wide.low` to
# {eval}`wide.high` points).

# %% tags=["hide-input"]
wide_gains_table, wide_gains = edge_floor_gains_table(
    RESULTS, CELLS, "baselines_wide", WIDE_EDGE_DIR,
    name="tbl-table1-floors-wide-edge-gains",
    caption="Post hoc: what the first recipe's cells add over their floor's wide-grid "
    "record and over the same floor probed again with the grid extended, for the "
    "floors whose every seed was probed again")
display(wide_gains_table)
assert wide_gains, "the text: some floors have every seed probed again"
wide_gain_rows = phrases(n=len(wide_gains),
                         low=f"{min(r['moved'] for r in wide_gains):+.2f}",
                         high=f"{max(r['moved'] for r in wide_gains):+.2f}")

# %% [markdown]
# {numref}`tbl-table1-floors-wide-edge-gains` sets the gain over each extended floor
# beside the gain over its wide-grid record, for the {eval}`wide_gain_rows.n` cell
# floors whose every seed was probed again: each gain moved by
# {eval}`wide_gain_rows.low` to {eval}`wide_gain_rows.high` points.

# %% [markdown]
# Each pretraining run of the tables above, as recorded (its wall time was taken on a
# 2-core machine that other work shared, so it is not a speed measurement: the speed
# comparison is the interleaved benchmark of {ref}`ch-training`):

# %% tags=["hide-input"]
display(
    Dropdown(
        "The recorded runs of this chapter",
        seed_runs_table(
            {key: cells[key] for key in CELLS},
            score="linear top-1 (%)",
            wall="pretraining (min, shared machine)",
        ),
    )
)

# %% tags=["hide-input"]
claims = {row["claim"].key: row for row in evidence.claim_rows(RESULTS)}
picks = {fam: evidence.probe_lr_picks(cells[fam, "cifar10"]) for fam in NAMES}
picks_all = [p for ps in picks.values() for p in ps]
grids = sorted({tuple(p["grid"]) for p in picks_all})
assert any(p["at_top"] for p in picks_all), "the text reads picks at the grid's top"
probe = phrases(
    grids=" or ".join(str(list(g)) for g in grids),
    top=sum(p["at_top"] for p in picks_all), n=len(picks_all),
    per_family=", ".join(f"{NAMES[f]} {sum(p['at_top'] for p in ps)} of {len(ps)}"
                         for f, ps in picks.items()))

# %% [markdown]
# The quick probe picks its learning rate on validation data from {eval}`probe.grids`;
# it picked the top of that grid in {eval}`probe.top` of the {eval}`probe.n` CIFAR-10
# runs ({eval}`probe.per_family`). A pick at the top says the grid may stop short of an
# encoder's best rate: the linear probes may understate every family a little, and a
# family that gains more from a larger rate would be understated more.
# The check below probes the same encoders with the grid extended by one step. It is
# post hoc: it was run after those picks were seen, on 2026-11-25, before the analysis
# plan existed (commit 494e894 records it).

# %% tags=["hide-input"]
WIDE = RESULTS / "probe_wide"  # scripts/reprobe.py --set 'probe.lr=[...]' --dest
wide = {fam: evidence.wide_probe(cells[fam, "cifar10"], WIDE) for fam in NAMES}
display(Dropdown(
    "The CIFAR-10 runs probed again with a wider learning-rate grid",
    Table([dict(model=NAMES[f], seed=k, **w) for f, by_seed in wide.items()
           for k, w in by_seed.items()],
          [Col("model"), Col("seed"), Col("lr0", "lr, recorded", ".0e"),
           Col("top1_0", "linear top-1 (%), recorded", ".2f"),
           Col("lr", "lr, wider grid", ".0e"),
           Col("val", "val. (%), wider grid", ".2f"),
           Col("top1", "linear top-1 (%), wider grid", ".2f")])))
moved = [w for by_seed in wide.values() for w in by_seed.values()]
# the CIFAR-10 claims re-paired on the wider grid, judged by the plan's rules
again = {r["claim"].key[:2]: r for r in evidence.wide_claims(
    RESULTS, [claims["t1_cifar10"], claims["t3_cifar10"]], WIDE)}
assert all(r["same"] for r in again.values()), "the text: both verdicts stay"
wider = phrases(
    grid=moved[0]["grid"], top=sum(w["lr"] == max(w["grid"]) for w in moved),
    n=len(moved),
    shifts=", ".join(
        f"{NAMES[f]} {mean(w['top1'] - w['top1_0'] for w in ws.values()):+.2f}"
        for f, ws in wide.items()),
    t1=f"{again['t1']['diff'].mean:+.2f}", t1_ci=again["t1"]["diff"].interval(),
    t3=f"{again['t3']['diff'].mean:+.2f}", t3_ci=again["t3"]["diff"].interval())

# %% [markdown]
# With the grid {eval}`wider.grid`, validation picked the new top rate in
# {eval}`wider.top` of {eval}`wider.n` runs; the test accuracy moved by
# {eval}`wider.shifts` points on average. Re-paired on the wider grid, AoT-ADMM − CRATE
# is {eval}`wider.t1` points, {eval}`wider.t1_ci`, and AoT-ADMM − AoT {eval}`wider.t3`,
# {eval}`wider.t3_ci`: both verdicts stay as they are with the recorded grid.

# %% [markdown]
# (sec-cells-10-edge)=
# **Post hoc: the runs still at the top, extended.** A pick at the top of the wider
# grid leaves the same doubt one step further up. A fifth addendum to the plan, written
# after these probes were seen and before any of the following, probes each run whose
# wider-grid pick is its top again, with the grid extended upward a rate at a time
# while the pick stays at the top (`scripts/evidence_runs.sh cells10_edge`,
# `results/cpu/probe_wide_edge/`); one run whose pick was inside is probed again the
# same way, as a control of what the machine, the torch version and the code since
# move. The verdicts stay the recorded probe's.

# %% tags=["hide-input"]
EDGE_WIDE = RESULTS / "probe_wide_edge"  # copied from runs/probe_wide_edge
runs_10 = [x.name for f in NAMES for x in cells[f, "cifar10"]]
edges_10 = cell_reprobes(RESULTS, WIDE.name, EDGE_WIDE.name, runs=runs_10)
display(reprobe_table(
    edges_10, what="run", name="tbl-table1-edge-probes",
    caption="Post hoc: the first recipe's CIFAR-10 runs whose wider-grid probe picked "
    "its top, probed again with the grid extended upward, beside their wider-grid "
    "probe (and the control, whose pick was inside)"))
CELL10_CONTROL = "cpu_aot_admm_cifar10"  # the fifth addendum's control
split_10 = split_control(edges_10, CELL10_CONTROL)
control_10, extended_10, moved_10 = split_10.control, split_10.others, split_10.moved
(cpu_first_10,), (cpu_again_10,) = split_10.numerics_first, split_10.numerics_again
top_10 = {x.name for f in NAMES for x in cells[f, "cifar10"]
          for w in evidence.wide_probe([x], WIDE).values() if w["lr"] == max(w["grid"])}
assert {r["run"] for r in extended_10} == top_10, "the text: each run at the top, again"
assert control_10["same"], "the text: the control came back the same"
assert not any(r["again"]["at_top"] for r in extended_10), "the text: none at the edge"
assert all(r["shared_diff"] == 0 for r in edges_10), "the text: same at shared rates"
again_edge = {r["claim"].key[:2]: r for r in evidence.wide_claims(
    RESULTS, [claims["t1_cifar10"], claims["t3_cifar10"]], [EDGE_WIDE, WIDE])}
assert all(r["same"] for r in again_edge.values()), "the text: both verdicts stay"
assert cpu_first_10 != cpu_again_10, "the text: another torch and CPU"
above_10 = [r for r in extended_10 if r["again"]["lr"] > max(r["first"]["grid"])]
edge10 = phrases(
    n=len(extended_10), beyond=len(above_10), kept=len(extended_10) - len(above_10),
    tried=f"{max(max(r['again']['grid']) for r in extended_10):g}",
    low=f"{min(moved_10):+.2f}", high=f"{max(moved_10):+.2f}",
    unmoved=sum(m == 0 for m in moved_10), cpu_first=cpu_first_10,
    cpu_again=cpu_again_10,
    t1=f"{again_edge['t1']['diff'].mean:+.2f}",
    t1_ci=again_edge["t1"]["diff"].interval(),
    t3=f"{again_edge['t3']['diff'].mean:+.2f}",
    t3_ci=again_edge["t3"]["diff"].interval())

# %% [markdown]
# All {eval}`edge10.n` runs at the top are probed again
# ({numref}`tbl-table1-edge-probes`). {eval}`edge10.beyond` picked a rate above the
# wider grid's top and {eval}`edge10.kept` kept it; none still picks the top of the
# rates it tried (up to {eval}`edge10.tried`). Their test accuracy moved by
# {eval}`edge10.low` to {eval}`edge10.high` points; {eval}`edge10.unmoved` of the
# {eval}`edge10.n` kept it to the last digit. The wider-grid probes had run with
# {eval}`edge10.cpu_first`, these with {eval}`edge10.cpu_again`; even so, at every rate
# both probes tried, every run and the control gave the same validation accuracy to
# the last digit. Re-paired with these probes, AoT-ADMM −
# CRATE is {eval}`edge10.t1` points, {eval}`edge10.t1_ci`, and AoT-ADMM − AoT
# {eval}`edge10.t3`, {eval}`edge10.t3_ci`: both verdicts stay.

# %% [markdown]
# (sec-cells-100-wide)=
# **Post hoc: the CIFAR-100 runs, not probed wider until the sixth addendum.** The
# first recipe's wider grid (the pre-plan check above) covered its CIFAR-10 runs only;
# the plan's sixth addendum calls it the first addendum's, which it is not (the first
# addendum is the 30-minute cells'). A survey of every cell
# run's newest probe, made after all of the above, found CIFAR-100 runs still picking
# the top of their recorded grid. A sixth addendum to the plan, written then and before
# any of these probes, probes all the runs of Table 1's CIFAR-100 row, both sides of
# its claim, on the CIFAR-10 runs' wider grid, extended upward in the same probe a rate
# at a time while the pick stays at the top (`scripts/evidence_runs.sh cells100_wide`,
# `results/cpu/probe_wide/`).

# %% tags=["hide-input"]
runs_100 = [x.name for (f, d), xs in cells.items() if d == "cifar100" for x in xs]
wide_100 = cell_reprobes(RESULTS, None, WIDE.name, runs=runs_100)
display(reprobe_table(
    wide_100, what="run", name="tbl-table1-cifar100-wide",
    caption="Post hoc: Table 1's CIFAR-100 runs probed on the wider grid extended "
    "upward, beside the probe the tables read"))
assert {r["run"] for r in wide_100} == set(runs_100), "the text: every CIFAR-100 run"
assert not any(r["again"]["at_top"] for r in wide_100), "the text: none at the top"
assert all(r["shared_diff"] == 0 for r in wide_100), "the text: same at shared rates"
(again_100,) = evidence.wide_claims(RESULTS, [claims["t1_cifar100"]], [EDGE_WIDE, WIDE])
assert again_100["same"], "the text: the verdict stays"
moved_100 = [r["again"]["top1"] - r["first"]["top1"] for r in wide_100]
assert all(r["first"]["at_top"] for r in wide_100
           if r["again"]["lr"] != r["first"]["lr"]), "the text: only top picks moved"
wide100 = phrases(
    n=len(wide_100), top=sum(r["first"]["at_top"] for r in wide_100),
    moved=sum(r["again"]["lr"] != r["first"]["lr"] for r in wide_100),
    low=f"{min(moved_100):+.2f}", high=f"{max(moved_100):+.2f}",
    tried=f"{max(max(r['again']['grid']) for r in wide_100):g}",
    cpu=" and ".join(sorted({r["again"]["numerics"] for r in wide_100})),
    diff=f"{again_100['diff'].mean:+.2f}", ci=again_100["diff"].interval(),
    verdict=again_100["verdict"])

# %% [markdown]
# Of the {eval}`wide100.n` runs ({numref}`tbl-table1-cifar100-wide`, on
# {eval}`wide100.cpu`), {eval}`wide100.top` had picked the top of their recorded grid;
# {eval}`wide100.moved` of those picks moved, and none picks the top of the rates it
# tried (up to {eval}`wide100.tried`). The test accuracy moved by {eval}`wide100.low`
# to {eval}`wide100.high` points, and at every rate both probes tried the validation
# accuracy came back to the last digit. Re-paired with these probes, AoT-ADMM − CRATE
# on CIFAR-100 is {eval}`wide100.diff` points, {eval}`wide100.ci`; the verdict stays
# the recorded one ({eval}`wide100.verdict`).

# %% [markdown]
# **How to read the verdicts.** The paper's claim is parity: AoT-ADMM − CRATE within a
# margin the analysis plan (`results/cpu/plan.yaml`) sets for Table 1: the largest gap
# the paper itself calls comparable there (the Tiny CIFAR-10 gap), rounded up to the
# next half point. The plan was written after these runs, so these verdicts are post
# hoc. The difference is taken seed by seed (the same seed gives both families the same
# data order and views) and its 95 % interval is Student's $t$ over the seeds. Parity is
# reproduced when the whole interval lies inside the margin. The paper makes the claim
# for the smaller model ("achieves competitive performance while reducing the parameter
# count", its abstract), so each row adds a secondary, one-sided reading, chosen after
# all the seeds were in (commit 4188fc9): non-inferiority, AoT-ADMM trailing CRATE by
# no more than the margin anywhere in the interval
# (`aot_lib.evidence.stats.noninferiority`; the interval's lower bound,
# a one-sided test at 2.5 %). The two readings part only where AoT-ADMM may be ahead by
# more than the margin.

# %% tags=["hide-input"]
display(verdict_table(
    evidence.verdict_rows([claims[k] for k in ("t1_cifar10", "t1_cifar100")]),
    caption="Table 1's claim at CPU scale, one line per data set",
    name="tbl-table1-verdicts"))
tiny_params = paper.PARAMS_M["aot_admm_tiny"], paper.PARAMS_M["crate_tiny"]
sizes = phrases(
    fewer=f"{1 - size['aot_admm'][0] / size['crate'][0]:.0%}",
    flops=f"{size['aot_admm'][1] / size['crate'][1]:.2f}",
    paper_fewer=f"{1 - tiny_params[0] / tiny_params[1]:.0%}",
    paper_flops=f"{paper.FLOPS_G['aot_admm_tiny'] / paper.FLOPS_G['crate_tiny']:.2f}",
    paper_prose=f"{paper.SAVING_PCT_PROSE['tiny']:.1f}")

# %% [markdown]
# {numref}`tbl-table1-verdicts` gives the verdicts. At this width AoT-ADMM has
# {eval}`sizes.fewer` fewer parameters than CRATE and {eval}`sizes.flops`× its FLOPs
# per image (the paper, Tiny: {eval}`sizes.paper_fewer` and {eval}`sizes.paper_flops`×
# by its table; its prose says {eval}`sizes.paper_prose` %, which
# {numref}`tbl-architecture-admm-savings` recomputes).

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
assert curves, "the monitored runs ship with the records (configs/cpu/*_seed2.yaml)"
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

# %% tags=["hide-input"]
# Time to a common accuracy on the seeds both families ran with the monitor (the best of
# several seeds would favour the family with more of them): one seed so far, said below.
common = sorted(
    {s for f, s in curves if f == "aot_admm"} & {s for f, s in curves if f == "crate"}
)
assert len(common) == 1, "the text speaks of one seed: rewrite it for a mean over seeds"
(seed,) = common
curve = {fam: (evidence.modelled_minutes([s for s, _, _ in curves[fam, seed]],
                                         step_s[fam]),
               [a for _, _, a in curves[fam, seed]]) for fam in ("aot_admm", "crate")}
target = min(accs[-1] for _, accs in curve.values())
reach = {fam: evidence.first_reaching(*curve[fam], target) for fam in curve}
knn = phrases(seed=seed, target=f"{target:.2f}", admm=f"{reach['aot_admm']:.1f}",
              crate=f"{reach['crate']:.1f}",
              ratio=f"{reach['crate'] / reach['aot_admm']:.2f}", n_bench=len(bench),
              commits=f"commit{'s' * (len(commits) > 1)} {', '.join(commits)}",
              steps=", ".join(f"{NAMES[f]} {s:.2f} s" for f, s in step_s.items()))

# %% [markdown]
# Only seed {eval}`knn.seed` ran with the monitor in both AoT-ADMM and CRATE, so what
# follows is one run against one run, with no spread to read it against. Both its curves
# reach {eval}`knn.target` % validation k-NN accuracy (the lower of their final values,
# a threshold read post hoc from these curves, as no plan fixed one); AoT-ADMM first at
# {eval}`knn.admm` modelled minutes, CRATE at {eval}`knn.crate`
# ({eval}`knn.ratio`× as long). Benchmarked step times (median of {eval}`knn.n_bench`
# interleaved recordings at {eval}`knn.commits`): {eval}`knn.steps`.

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
# read once: the figure, the α check and the final-losses table
curves0 = {fam: read_curve(r.folder) for fam, r in seed0.items()}
plot_training_curves({NAMES[fam]: c for fam, c in curves0.items()})
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


# Eq. (19): total = prediction + alpha * SIGReg, alpha from the runs' own LeJEPA lambda
lejepa_lambda = {load_config(r.folder / "config.yaml")["loss"]["lejepa_lambda"]
                 for r in seed0.values()}
assert len(lejepa_lambda) == 1, "the note: one alpha for the three runs"
(lam,) = lejepa_lambda
alpha = alpha_from_lejepa_lambda(lam)
for c in curves0.values():  # the logged total is that sum at every step
    # float32 logging: within 1e-5 relative
    assert all(abs(t - (p + alpha * g)) <= 1e-5 * max(1.0, abs(t))
               for t, p, g in zip(c["loss"], c["pred"], c["sigreg"]))
display(
    Table(
        [
            dict(
                model=NAMES[fam],
                loss=tail_mean(c["loss"]),
                pred=tail_mean(c["pred"]),
                sigreg=tail_mean(c["sigreg"]),
            )
            for fam, c in curves0.items()
        ],
        [
            Col("model"),
            Col("loss", "total loss", ".4f"),
            Col("pred", "prediction loss", ".4f"),
            Col("sigreg", "SIGReg", ".4f"),
        ],
        caption="Final losses on CIFAR-10, seed 0 (mean of the last 20 logged steps)",
        name="tbl-figure3-final-losses",
        notes=[f"Total = prediction + α · SIGReg (Eq. (19)), α = λ/(1 − λ) = "
               f"{alpha:.4f} for the runs' LeJEPA λ = {lam:g} (loss.lejepa_lambda); "
               "each logged step satisfies it."],
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
display(table3_cpu(RESULTS, cells, size))
display(verdict_table(evidence.verdict_rows([claims["t3_cifar10"]]),
                    caption="Table 3's claim at CPU scale, CIFAR-10",
                    name="tbl-table3-verdicts"))

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

# %% tags=["remove-input"]
# the half hour's clock: the recipe's AoT-ADMM steps at each idle step-time measurement
recipe_steps = pick["epochs"] * (evidence.TRAIN_IMAGES["cifar10"] // load_config(
    ROOT / "configs" / "cpu" / "cpu30" / "recipe.yaml")["optim"]["batch_size"])
measured = evidence.step_time_measurements(ROOT, pick["candidate"], recipe_steps)
(clock_m,) = [m for m in measured if m["role"] == "the clock"]
(away_m,) = [m for m in measured if m["role"] == "other CPU"]  # the clock's commit
clock30 = phrases(cpu=clock_m["cpu"], minutes=f"{clock_m['minutes']['aot_admm']:.1f}",
                  away_cpu=away_m["cpu"], away=f"{away_m['minutes']['aot_admm']:.1f}")
goal_r2 = evidence.goal_round2(ROOT)
assert goal_r2 is not None and not goal_r2["reached"], "the text: round 2 fell short"

# %% [markdown]
# The recipe's half hour is the search's clock: AoT-ADMM's steps take
# {eval}`clock30.minutes` minutes at the idle step time of the {eval}`clock30.cpu`, and
# {eval}`clock30.away` on the {eval}`clock30.away_cpu` ({numref}`tbl-recipe-machines`).
# Round 2 of the search takes the slower CPU's wall time as its clock
# ({ref}`sec-recipe-search2`). Its recipe did not reach the goal, so the plan runs no
# Table 1 or Table 3 cells at it ({ref}`sec-round2-goal`).

# %% [markdown]
# (sec-multiplicity)=
# **Four claims at once.** Each verdict above is read at 95 %, so among four claims one
# could hold by chance more often than one time in twenty. The plan now judges the
# planned claims of a recipe as one family by Holm's step-down procedure at a familywise
# 5 % (`results/cpu/plan.yaml`, `multiplicity`; `aot_lib.evidence.holm_rows`). It was
# written after these four claims were recorded, so its reading of them is post hoc:
# {numref}`tbl-two-recipes-holm` sets it beside their verdicts, with the Bonferroni
# interval (level 1 − 0.05/4) Holm's first step uses.

# %% tags=["hide-input"]
holm_read = evidence.holm_rows(RESULTS, "cpu30")
display(Table(
    [{**r, "claim": short_what(c)} for c, r in zip(evidence.CLAIMS_30MIN, holm_read)],
    [Col("claim", "comparison (A − B, points)"), Col("verdict", "verdict at 95 %"),
     Col("holm", "under Holm (post hoc)"), Col("p", "p-value", ".2g"),
     Col("bonferroni", "Bonferroni CI"), Col("ahead", "ahead at 95 %"),
     Col("ahead_bonferroni", "ahead, Bonferroni")],
    caption="The 30-minute claims read by the plan's multiplicity rule, post hoc",
    name="tbl-two-recipes-holm",
    notes=["p-value: a gain's paired t-test of mean 0; parity's two one-sided tests "
           "against ±margin, the larger (TOST). Holm rejects in ascending order while "
           "p ≤ 0.05/(m − k)."]))
moved_holm = [r for r in holm_read if r["holm"] != r["verdict"]]
lost_lead = [short_what(c) for c, r in zip(evidence.CLAIMS_30MIN, holm_read)
             if r["ahead"] != r["ahead_bonferroni"]]
assert [c.key for c in evidence.CLAIMS_30MIN] == [r["key"] for r in holm_read]
assert lost_lead, "the text: a lead that no longer excludes 0"
multiplicity = phrases(moved=len(moved_holm), n=len(holm_read),
                       lost=", ".join(lost_lead) or "none")

# %% [markdown]
# Under Holm {eval}`multiplicity.moved` of the {eval}`multiplicity.n` verdicts change.
# What changes is who the interval puts ahead: at the Bonferroni level the lead no
# longer excludes 0 for {eval}`multiplicity.lost`.

# %% [markdown]
# The 30-minute cells' probe chose its learning rate from 1e-3 to 3e-2. The plan's first
# addendum, written after the first of the runs were recorded, some at that grid's top,
# and before any probe on a wider grid, adds a post-hoc check beside the verdicts, as
# for the first recipe: every run's encoder probed again with 1e-1 added, at the cells'
# own commit. The verdicts stay the recorded probe's.

# %% tags=["hide-input"]
runs_30 = [x for name in sorted({n for c in evidence.CLAIMS_30MIN for n in (c.a, c.b)})
           if (RESULTS / name).exists() for x in evidence.cell_runs(RESULTS, name)]
picks_30 = evidence.probe_lr_picks(runs_30)
wide_30 = evidence.wide_claims(RESULTS, rows_30, WIDE)
probed_30 = [x for x in runs_30 if (WIDE / x.name / "probe.json").exists()]


wide_30_runs = [w for x in probed_30 for w in evidence.wide_probe([x], WIDE).values()]
moved_30 = [w["top1"] - w["top1_0"] for w in wide_30_runs]  # test top-1: wide - rec.
# the addendum says the cells' own commit; a probe run at another says so below
later = [w for w in wide_30_runs if w["commit"] != w["commit0"]]
assert len(probed_30) == len(runs_30) and not any(r["missing"] for r in wide_30), \
    "the text: every run is probed on the wider grid"
assert later and all(w["shared_same"] for w in later), \
    "the text: the later-commit probes gave the recorded numbers on the shared rates"
display(Table(
    [dict(claim=short_what(r["claim"]), diff=f"{r['diff'].mean:+.2f}",
          ci=f"[{r['diff'].low:+.2f}, {r['diff'].high:+.2f}]", seeds=r["diff"].n,
          verdict=r["verdict"], recorded=r["verdict0"]) for r in wide_30],
    [Col("claim", "comparison (A − B, points)"), Col("verdict", "wider grid: verdict"),
     Col("recorded", "recorded probe: verdict"), Col("diff", "wider grid: ours"),
     Col("ci", "wider grid: 95 % CI"), Col("seeds")],
    caption="Post hoc: the 30-minute claims re-read with every run probed on the "
    "wider grid",
    name="tbl-two-recipes-wide"))
wide30 = phrases(
    top=sum(p["at_top"] for p in picks_30), n=len(picks_30), probed=len(probed_30),
    mean=f"{mean(moved_30):+.2f}", low=f"{min(moved_30):+.2f}",
    high=f"{max(moved_30):+.2f}", later=len(later), probes=len(wide_30_runs),
    same=sum(r["same"] for r in wide_30), claims=len(wide_30),
    still_top=sum(w["lr"] == max(w["grid"]) for w in wide_30_runs),
    wide_top=f"{max(max(w['grid']) for w in wide_30_runs):g}")

# %% [markdown]
# The recorded probe picked its grid's top rate in {eval}`wide30.top` of
# {eval}`wide30.n` 30-minute runs. All {eval}`wide30.probed` are probed on the wider
# grid; their test accuracy moved by {eval}`wide30.mean` points on average (from
# {eval}`wide30.low` to {eval}`wide30.high`), and {eval}`wide30.same` of the
# {eval}`wide30.claims` verdicts read the same on it ({numref}`tbl-two-recipes-wide`).
# {eval}`wide30.still_top` of the {eval}`wide30.probes` wider-grid probes still pick its
# top rate ({eval}`wide30.wide_top`): the addendum extends the grid by one step only.
#
# {eval}`wide30.later` of the {eval}`wide30.probes` wider-grid probes ran at a later
# commit than the addendum asks (an old copy of `scripts/reprobe.py` imported the
# environment's newer package). Each reproduces the recorded probe's validation accuracy
# at every rate both grids share, to the last digit.

# %% [markdown]
# (sec-cells-30-edge)=
# **Post hoc: the runs still at the top, extended.** A third addendum to the plan,
# written after those probes were seen and before any of these, probes each run whose
# wider-grid pick is its top again, with the grid extended upward a rate at a time
# while the pick stays at the top (`scripts/evidence_runs.sh cells30_edge`,
# `results/cpu/probe_wide_edge/`). One run whose pick was inside is probed again the
# same way, as a control of what the machine alone moves.

# %% tags=["hide-input"]
cell_edges = cell_reprobes(RESULTS, WIDE.name, EDGE_WIDE.name,
                           runs=[x.name for x in runs_30])
display(reprobe_table(
    cell_edges, what="run", name="tbl-two-recipes-edge-probes",
    caption="Post hoc: the 30-minute runs whose wider-grid probe picked its top, "
    "probed again with the grid extended upward, beside their wider-grid probe (and "
    "the control, whose pick was inside)"))
CELL_CONTROL = "cpu30_aot_admm_cifar10_seed1"  # the third addendum's control
split_30 = split_control(cell_edges, CELL_CONTROL)
cell_control, extended, moved_edge = split_30.control, split_30.others, split_30.moved
(cpu_again,) = split_30.numerics_again
top_runs = {x.name for x in probed_30 for w in evidence.wide_probe([x], WIDE).values()
            if w["lr"] == max(w["grid"])}
assert {r["run"] for r in extended} == top_runs, "the text: each run at the top, again"
# the claims read the control's probe again too: the note needs its numbers unchanged
assert cell_control["same"], "the text: the control came back the same"
edge_claims = evidence.wide_claims(RESULTS, rows_30, [EDGE_WIDE, WIDE])
machines = sorted({w["cpu"] or "CPU not recorded" for x in runs_30
                   for w in evidence.wide_probe([x], [EDGE_WIDE, WIDE]).values()})
display(Table(
    [dict(claim=short_what(r["claim"]), diff=f"{r['diff'].mean:+.2f}",
          ci=f"[{r['diff'].low:+.2f}, {r['diff'].high:+.2f}]", seeds=r["diff"].n,
          verdict=r["verdict"], wide=w["verdict"], recorded=r["verdict0"])
     for r, w in zip(edge_claims, wide_30)],
    [Col("claim", "comparison (A − B, points)"), Col("verdict", "extended: verdict"),
     Col("wide", "wider grid: verdict"), Col("recorded", "recorded probe: verdict"),
     Col("diff", "extended: ours"), Col("ci", "extended: 95 % CI"), Col("seeds")],
    caption="Post hoc: the 30-minute claims re-read with the runs still at the wider "
    "grid's top probed on the extended grid",
    name="tbl-two-recipes-edge",
    notes=["Every other run keeps its wider-grid probe (the control's probe again "
           "gave its numbers), so a claim's seeds were probed on "
           f"{len(machines)} CPU types: {'; '.join(machines)}."]))
cells_edge = phrases(
    n=len(extended),
    beyond=sum(r["again"]["lr"] > max(r["first"]["grid"]) for r in extended),
    still=sum(r["again"]["at_top"] for r in extended),
    tried=f"{max(max(r['again']['grid']) for r in extended):g}",
    low=f"{min(moved_edge):+.2f}", high=f"{max(moved_edge):+.2f}",
    unmoved=sum(m == 0 for m in moved_edge), cpu=cpu_again,
    shared_max=f"{max(r['shared_diff'] for r in extended):.2f}",
    same=sum(r["verdict"] == w["verdict"] for r, w in zip(edge_claims, wide_30)),
    claims=len(edge_claims))
assert all(w["claim"] == r["claim"] for r, w in zip(edge_claims, wide_30))
assert not any(r["again"]["at_top"] for r in extended), "the text: none at the edge"

# %% [markdown]
# All {eval}`cells_edge.n` runs are probed again
# ({numref}`tbl-two-recipes-edge-probes`), on {eval}`cells_edge.cpu`.
# {eval}`cells_edge.beyond` picked a rate above the wider grid's top, and none still
# picks the top of the rates it tried (up to {eval}`cells_edge.tried`): no 30-minute
# run's probe now picks the edge of its grid. Their test accuracy moved by
# {eval}`cells_edge.low` to {eval}`cells_edge.high` points; {eval}`cells_edge.unmoved`
# of the {eval}`cells_edge.n` kept it to the last digit. The control gave its
# wider-grid probe's numbers at every rate, to the last digit; at the rates both probes
# tried, the runs at the top moved by up to {eval}`cells_edge.shared_max` points of
# validation accuracy. {eval}`cells_edge.same` of the {eval}`cells_edge.claims` claims
# read as on the wider grid ({numref}`tbl-two-recipes-edge`); the verdicts stay the
# recorded probe's.

# %% [markdown]
# (sec-floors-30)=
# **The floor under the 30-minute cells.** They were recorded without one. An addendum
# to the plan, written after them and before any of their floors was probed, adds it
# post hoc: each seed's encoder at its initialisation, and the raw pixels, probed as the
# cells are but on a learning-rate grid wider at both ends, because the first recipe's
# floors picked the ends of theirs. Each floor gets at least the choice of rates the
# cells had; {numref}`tbl-floors-30` sets them side by side.

# %% tags=["hide-input"]
CELLS_30 = evidence.CELLS_30MIN  # (family, data set) -> the 30-minute cell's run name
floors30_table, floors_30 = floor_gains_table(
    RESULTS, CELLS_30, baselines=evidence.BASELINES_30MIN, levels=True,
    name="tbl-floors-30",
    caption="Post hoc: the 30-minute cells over their floor: each side's linear top-1 "
    "(mean ± std over its seeds) and the mean of the per-seed gains with its 95 % CI")
display(floors30_table)
picks_f30 = floor_picks(RESULTS, CELLS_30, evidence.BASELINES_30MIN)
edges_f30 = [p for p in picks_f30 if p["edge_gain"] is not None]
# every seed's untrained encoder, and the pixels once per data set and seed
expected_f30 = sum(len(evidence.cell_runs(RESULTS, n)) for n in CELLS_30.values()) \
    + sum(len(evidence.cell_runs(RESULTS, f"cpu30_aot_admm_{d}")) for d in DATA)
(grid_f30,) = {tuple(p["grid"]) for p in picks_f30}
steepest = max(edges_f30, key=lambda p: p["edge_gain"])  # still climbing the most there
floors30 = phrases(
    grid=", ".join(f"{x:g}" for x in grid_f30), recorded=len(picks_f30),
    expected=expected_f30, n=len(floors_30),
    above=sum(f["diff"].n > 1 and f["diff"].low > 0 for f in floors_30),
    low=f"{min(f['diff'].mean for f in floors_30):.1f}",
    high=f"{max(f['diff'].mean for f in floors_30):.1f}",
    edges=len(edges_f30), top=sum(p["at_top"] for p in edges_f30),
    bottom=sum(p["at_bottom"] for p in edges_f30),
    edge_gain=f"{steepest['edge_gain']:.2f}", edge_run=run_label(steepest["run"]))
assert all(("pixels" in p["run"]) == p["at_bottom"] for p in edges_f30), \
    "the text: the encoders at the top, the pixels at the bottom"

# %% [markdown]
# {eval}`floors30.recorded` of the {eval}`floors30.expected` floor runs are recorded, on
# the grid {eval}`floors30.grid`.
# In {eval}`floors30.above` of the {eval}`floors30.n` comparisons the whole interval
# lies above 0; the gains run from {eval}`floors30.low` to {eval}`floors30.high`
# points. Even on the wide grid, {eval}`floors30.edges` of the
# {eval}`floors30.recorded` floor probes picked an end: {eval}`floors30.top` untrained
# encoders its top and {eval}`floors30.bottom` raw-pixel floors its bottom. At that end
# the validation accuracy was up to {eval}`floors30.edge_gain` points above the next
# rate inward (largest for {eval}`floors30.edge_run`): a still wider grid could raise
# those floors, and the gains over them would shrink. The addendum had said
# such floors would be reported and not widened again. A second addendum, written
# after these records were seen and so post hoc, probes each of them again with the
# grid extended outward a rate at a time while the pick stays at the end
# (`scripts/evidence_runs.sh floors30_edge`, `results/cpu/baselines_cpu30_edge/`).

# %% tags=["hide-input"]
EDGE_DIR = evidence.BASELINES_30MIN_EDGE[0]
reprobes = floor_reprobes(RESULTS, CELLS_30, evidence.BASELINES_30MIN, EDGE_DIR)
display(reprobe_table(
    reprobes, name="tbl-floors-30-edge",
    caption="Post hoc: the 30-minute cells' floors that picked an end of the wide "
    "grid, probed again with the grid extended outward at that end, beside their "
    "first probe (and the control, whose pick was inside)"))
CONTROL = "baseline_init_cpu30_aot_admm_cifar10"  # the addendum's floor picked inside
split = split_control(reprobes, CONTROL)
control, edge_again, moved = split.control, split.others, split.moved
(cpu_first,), (cpu_again,) = split.numerics_first, split.numerics_again
assert not control["same"], "the text: the control did not come back the same"
edge = phrases(
    recorded=len(edge_again), expected=len(edges_f30), cpu_first=cpu_first,
    cpu_again=cpu_again, control_diff=f"{control['shared_diff']:.2f}",
    control_rates=len(split.control_rates),
    beyond=sum(r["again"]["lr"] not in r["first"]["grid"] for r in edge_again),
    low=f"{min(moved):+.2f}", high=f"{max(moved):+.2f}",
    still=sum(r["again"]["at_top"] or r["again"]["at_bottom"] for r in edge_again),
    remaining=len(edges_f30) - len(edge_again),
    shared_max=f"{max(r['shared_diff'] for r in reprobes):.2f}",
    shared_run=run_label(max(reprobes, key=lambda r: r["shared_diff"])["run"]))

# %% [markdown]
# (sec-floors-30-edge)=
# {eval}`edge.recorded` of those {eval}`edge.expected` floors are probed again
# ({numref}`tbl-floors-30-edge`, post hoc), beside the control the second addendum
# asks for: one floor whose pick was inside, probed again to see the same numbers
# come back. They did not quite. The control's pick and test accuracy are unchanged,
# but at {eval}`edge.control_rates` of its rates the validation accuracy moved, by
# {eval}`edge.control_diff` points. The first probes were computed with
# {eval}`edge.cpu_first`, the new ones with {eval}`edge.cpu_again` and at a later
# commit; the two instruction sets round differently, and we have not separated the
# two causes. As the second addendum says for this case, the new floors are shown
# apart, in this table, and the gains above stay over the first floors: a cell's
# seeds are not measured against floors from two machines.
#
# Of the {eval}`edge.recorded` edge floors probed again, {eval}`edge.beyond` picked a
# rate the wide grid did not have; their test accuracy moved by {eval}`edge.low` to
# {eval}`edge.high` points, and {eval}`edge.still` still sit at an end of the extended
# grid (floors still to be probed again: {eval}`edge.remaining`). At the rates
# both probes tried, the validation accuracy moved by up to {eval}`edge.shared_max`
# points ({eval}`edge.shared_run`): that is how far the other machine and commit alone
# move a floor's score here, so a move in test accuracy of that size may be rounding
# alone.

# %% tags=["hide-input"]
edge_gains_table, edge_gains = edge_floor_gains_table(
    RESULTS, CELLS_30, evidence.BASELINES_30MIN, EDGE_DIR,
    name="tbl-floors-30-edge-gains",
    caption="Post hoc: what the 30-minute cells add over their floor's first record "
    "and over the same floor probed again with the grid extended, for the floors "
    "whose every seed was probed again")
display(edge_gains_table)
probed_again = {p["run"] for p in edges_f30} | {CONTROL}
floors_by_cell = [
    runs for (_, d), n in CELLS_30.items()
    for runs in evidence.floor_cells(RESULTS, n, d, evidence.BASELINES_30MIN).values()
    if runs]
edge_gain_rows = phrases(
    n=len(edge_gains), possible=sum(all(r.name in probed_again for r in runs)
                                    for runs in floors_by_cell))

# %% [markdown]
# {numref}`tbl-floors-30-edge-gains` sets the gain over each floor probed again beside
# the gain over its first record, once every seed of that floor has been probed again:
# {eval}`edge_gain_rows.n` of the {eval}`edge_gain_rows.possible` cell floors that can
# be (a floor with some seeds inside the grid is not probed again whole, and is not
# shown: its seeds would come from two machines).

# %% [markdown]
# (sec-grid-edges)=
# **Where the grids stand.** The cell below takes every cell run and every floor of
# this chapter at its newest probe: the wider or extended one where there is one.

# %% tags=["hide-input"]
runs_all = [x for runs in cells.values() for x in runs] + runs_30
newest_cells = [w for x in runs_all
                for w in evidence.wide_probe([x], [EDGE_WIDE, WIDE]).values()]
assert len(picks_f30) == expected_f30, "the text: every 30-minute floor is recorded"
# each floor from its newest probe: the edge re-probe where it has one
floors_now = (floor_picks(RESULTS, CELLS, [WIDE_EDGE_DIR, "baselines_wide"])
              + floor_picks(RESULTS, CELLS_30, [EDGE_DIR, evidence.BASELINES_30MIN]))
cell_ends = [w for w in newest_cells if w["lr"] in (min(w["grid"]), max(w["grid"]))]
floor_ends = [p for p in floors_now if p["at_top"] or p["at_bottom"]]
grids_now = phrases(cells=len(newest_cells), floors=len(floors_now),
                    ends=len(cell_ends) + len(floor_ends))
assert not cell_ends and not floor_ends, "the text: no pick at an end"
assert all(r["same"] for r in [*again.values(), *again_edge.values(), again_100,
                              *wide_30, *edge_claims]), \
    "the text: no re-probing changes a verdict"

# %% [markdown]
# Of those {eval}`grids_now.cells` cell runs and {eval}`grids_now.floors` floors,
# {eval}`grids_now.ends` pick an end of the rates their probe tried: no cell or floor
# of this chapter picks the edge of its grid. The verdicts stay the recorded probes';
# none of the re-probings above changes one.

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
# 4. **A finer probe grid.** The chapter's grids step by about 3×. Probe one recorded
#    encoder of each family again on a finer grid around its pick (for a pick of 0.03,
#    `probe.lr=[0.02,0.03,0.05]`): copy a recorded run's `config.yaml` and `encoder/`
#    to a scratch folder `S` (as `scripts/reprobe.py` does: the probe writes beside the
#    encoder) and run `aot probe -c S/config.yaml --checkpoint S/encoder
#    'probe.lr=[0.02,0.03,0.05]'`. Is the gain over the recorded pick larger than what
#    a change of machine alone moves ({numref}`tbl-floors-30-edge`), and does the
#    family gap change?

# %% tags=["remove-input"]
verdicts = [claims[k] for k in ("t1_cifar10", "t1_cifar100", "t3_cifar10")]
counts = {v: sum(r["verdict"] == v for r in verdicts) for v in stats.VERDICTS}
assert all(r["plan"].post_hoc for r in verdicts), "the text: these are post hoc"
judged_30 = [r for r in rows_30 if r["verdict"] != "pending"]
assert judged_30 and not any(r["plan"].post_hoc or r["missing_seeds"]
                             for r in judged_30), "the text: planned, all seeds"
both = [(first_rows[r["claim"].key.removesuffix("_30min")], r) for r in judged_30
        if r["claim"].key.removesuffix("_30min") in first_rows]  # judged at both
moved = [short_what(new["claim"]) for old, new in both
         if old["verdict"] != new["verdict"]]
tally = evidence.one_sided_tally(verdicts)
assert tally["held"], "the text gives the closest one-sided reading's spare points"
learned = phrases(
    n=len(verdicts), reproduced=counts["reproduced"],
    contradicted=counts["contradicted"],
    unsettled=counts["not settled"], n_30=len(judged_30),
    reproduced_30=sum(r["verdict"] == "reproduced" for r in judged_30),
    both=len(both), moved=len(moved), moved_names=", ".join(moved) or "none",
    held=tally["held"], judged=tally["judged"], spare=f"{tally['spare']:.2f}")

# %% [markdown]
# ## What we learned
#
# * Of the 10-epoch recipe's {eval}`learned.n` claims, {eval}`learned.reproduced`
#   reproduced, {eval}`learned.contradicted` contradicted and {eval}`learned.unsettled`
#   not settled ({numref}`tbl-table1-verdicts`, {numref}`tbl-table3-verdicts`), all post
#   hoc: the plan that judges them was written after their runs. Read one-sided
#   (non-inferiority, a secondary reading), {eval}`learned.held` of the
#   {eval}`learned.judged` parity claims with an interval hold, the closest with
#   {eval}`learned.spare` points to spare.
# * At the 30-minute recipe, judged by a plan written before its runs and with all the
#   seeds it asks for, {eval}`learned.reproduced_30` of {eval}`learned.n_30` claims are
#   reproduced ({numref}`tbl-two-recipes`). Of the {eval}`learned.both` comparisons
#   judged at both recipes, the verdict moved for {eval}`learned.moved`:
#   {eval}`learned.moved_names`. Over their floor, probed post hoc on a wider grid,
#   pretraining adds {eval}`floors30.low` to {eval}`floors30.high` points
#   ({numref}`tbl-floors-30`), though {eval}`floors30.edges` of those
#   {eval}`floors30.recorded` floors picked an end of that grid; extended at that end,
#   none does ({ref}`where the grids stand <sec-grid-edges>`).
# * The learning rate was tuned alike, on validation data: each family's own best of
#   the same three points (AoT-ADMM's point was first picked with test scores in view,
#   then scored again on validation only). The projector, the SIGReg slices and the
#   normalisation were
#   chosen on AoT-ADMM alone and handed to CRATE and AoT ({ref}`ch-recipe-audit`),
#   which, if anything, favours AoT-ADMM.
# * A difference smaller than its interval's half-width is not evidence either way; ten
#   epochs at half width and depth cannot show whether the paper's ranking at 800 epochs
#   holds.

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
# (sec-recipe)=
# ###### Which knobs matter: the tuning runs
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
# :::{figure}
# :label: tbl-table1-floors-wide
# :kind: table
# :enumerator: 8.4
# Post hoc: the first recipe's cells over their floors probed again on the wide grid:
# each side's linear top-1 (mean ± std over its seeds) and the mean of the per-seed
# gains with its 95 % CI
# :::
#
# :::{figure}
# :label: tbl-floors-30-edge
# :kind: table
# :enumerator: 8.19
# Post hoc: the 30-minute cells' floors that picked an end of the wide grid, probed
# again with the grid extended outward at that end, beside their first probe (and the
# control, whose pick was inside)
# :::
#
# :::{figure}
# :label: tbl-table1-floors-wide-edge
# :kind: table
# :enumerator: 8.5
# Post hoc: the first recipe's floors that picked an end of the wide grid, probed again
# with the grid extended outward at that end, beside their wide-grid probe (and the
# control, whose pick was inside)
# :::
#
# :::{figure}
# :label: tbl-table1-floors-wide-edge-gains
# :kind: table
# :enumerator: 8.6
# Post hoc: what the first recipe's cells add over their floor's wide-grid record and
# over the same floor probed again with the grid extended, for the floors whose every
# seed was probed again
# :::
#
# (ch-training)=
# ###### Training AoT-ADMM with LeJEPA, at CPU scale
#
# :::{figure}
# :label: tbl-table1-edge-probes
# :kind: table
# :enumerator: 8.7
# Post hoc: the first recipe's CIFAR-10 runs whose wider-grid probe picked its top,
# probed again with the grid extended upward, beside their wider-grid probe (and the
# control, whose pick was inside)
# :::
#
# :::{figure}
# :label: tbl-table1-cifar100-wide
# :kind: table
# :enumerator: 8.8
# Post hoc: Table 1's CIFAR-100 runs probed on the wider grid extended upward, beside
# the probe the tables read
# :::
#
# :::{figure}
# :label: tbl-table1-verdicts
# :kind: table
# :enumerator: 8.9
# Table 1's claim at CPU scale, one line per data set
# :::
#
# :::{figure}
# :label: tbl-architecture-admm-savings
# :kind: table
# :enumerator: 4.5
# AoT-ADMM's savings over CRATE
# :::
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
# :enumerator: 8.10
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
# :enumerator: 8.11
# The paper's Table 3 at CPU scale: AoT-ADMM and AoT, CIFAR-10
# :::
#
# (sec-recipe-search)=
# ###### More accuracy per CPU-minute: the recipe search
#
# :::{figure}
# :label: tbl-two-recipes
# :kind: table
# :enumerator: 8.13
# Tables 1 and 3 at two recipes: the 10-epoch runs above and the 30-minute recipe's
# cells
# :::
#
# :::{figure}
# :label: tbl-recipe-machines
# :kind: table
# :enumerator: 7.6
# The recipe's 4,290 steps (c1_local2) by each idle measurement, in minutes per family
# :::
#
# (sec-recipe-search2)=
# ###### Round 2: the slower CPU’s wall time
#
# (sec-round2-goal)=
# ###### Round 2’s goal runs
#
# :::{figure}
# :label: tbl-two-recipes-holm
# :kind: table
# :enumerator: 8.14
# The 30-minute claims read by the plan's multiplicity rule, post hoc
# :::
#
# :::{figure}
# :label: tbl-two-recipes-wide
# :kind: table
# :enumerator: 8.15
# Post hoc: the 30-minute claims re-read with every run probed on the wider grid
# :::
#
# :::{figure}
# :label: tbl-two-recipes-edge-probes
# :kind: table
# :enumerator: 8.16
# Post hoc: the 30-minute runs whose wider-grid probe picked its top, probed again with
# the grid extended upward, beside their wider-grid probe (and the control, whose pick
# was inside)
# :::
#
# :::{figure}
# :label: tbl-two-recipes-edge
# :kind: table
# :enumerator: 8.17
# Post hoc: the 30-minute claims re-read with the runs still at the wider grid's top
# probed on the extended grid
# :::
#
# :::{figure}
# :label: tbl-floors-30
# :kind: table
# :enumerator: 8.18
# Post hoc: the 30-minute cells over their floor: each side's linear top-1 (mean ± std
# over its seeds) and the mean of the per-seed gains with its 95 % CI
# :::
#
# :::{figure}
# :label: tbl-floors-30-edge-gains
# :kind: table
# :enumerator: 8.20
# Post hoc: what the 30-minute cells add over their floor's first record and over the
# same floor probed again with the grid extended, for the floors whose every seed was
# probed again
# :::
#
# :::{figure}
# :label: tbl-table3-verdicts
# :kind: table
# :enumerator: 8.12
# Table 3's claim at CPU scale, CIFAR-10
# :::
