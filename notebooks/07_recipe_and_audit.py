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
# (ch-recipe-audit)=
# # A CPU recipe, Appendix A's normalisation, and a white-box audit
#
# **This chapter:** which knobs matter on two CPU cores; Appendix A's normalisation;
# beyond the paper, does a trained AoT-ADMM still do what it was derived to do?

# %% tags=["remove-input"]
from aot_lib.book.pages import open_chapter

open_chapter(seed=0)

# %% [markdown]
# The paper trains for 800 epochs at a learning rate of $5\times10^{-4}$. A few epochs
# on a CPU are a different regime, so the recipe of `configs/cpu/` is tuned here by
# short runs (`configs/cpu/sweep/`: AoT-ADMM on CIFAR-10, one seed each; the table
# captions give their size and length). CIFAR-10 is the offline copy in `$AOT_DATA`
# (the official images re-encoded as JPEG quality 75; `data.download=true` fetches the
# official set where a network is available). Every number below is read from a run
# recorded in `results/cpu/sweep/` (config, commit, seed, hardware and wall time travel
# with it); where none is recorded the first configuration is trained now at smoke scale
# and the page says so. The commands:
#
# ```bash
# export AOT_DATA=../shared/data
# scripts/run_configs.sh results/cpu/sweep configs/cpu/sweep/*.yaml
# ```

# %% tags=["hide-input"]
import csv
import json
from pathlib import Path
from statistics import mean, median

import matplotlib.pyplot as plt
import torch
from IPython.display import display

import aot_lib
from aot_lib.data.augment import prepare_images
from aot_lib import evidence
from aot_lib.book.inline import and_list, phrases
from aot_lib.book.pages import pick
from aot_lib.book.photos import example_images
from aot_lib.book.recorded import load_recorded_run
from aot_lib.book.sweeps import (FAMILY_NAMES, admm_rows, admm_settings, admm_table,
                                  config_changes, load_sweep, one_seed_side,
                                  recipe_sweep_table, run_scale, search_table,
                                  finalists_table,
                                  recipe_sweep_rows)
from aot_lib.config_format import flatten
from aot_lib.runtime import cpu_label
from aot_lib.files import load_yaml
from aot_lib.training.config import load_config
from aot_lib.data.datasets import normalization_stats
from aot_lib.models import admm_coefficients
from aot_lib.training.monitors import audit_layers, cls_attention
from aot_lib.book.panels import attention_panel
from aot_lib.book.plotting import (FIGURE_WIDTH_IN, plot_cls_attention, plot_monitors,
                                   plot_wall_curves)
from aot_lib.evidence.stats import PAPER_LARGEST_GAP, paired_difference
from aot_lib.training.probe import load_encoder
from aot_lib.book.tables import Col, Table
from aot_lib.book.benchmarks import pretraining_flops
from aot_lib.book.round2 import (bf16_check_table, cpu_types_table, goal_curves,
                                  goal_table, precision_table, search2_table)
from aot_lib.book.whitebox import initial_encoder
from aot_lib.theory.theorem1 import cw_quadrature, limit_ratio

ROOT = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()

# %% [markdown]
# (sec-recipe)=
# ## Which knobs matter: the tuning runs
#
# The first configuration, r0, is the CPU recipe as it stood before this sweep, with
# the paper's learning rate (how it differs from the recipe of {ref}`ch-training`'s run
# is printed below the table). r1 raises the learning rate for a short schedule; r2
# keeps r1's and shrinks the projector output and the SIGReg slices together. r3 and r4
# each change one thing from r2: Appendix A's normalisation, and a still larger
# learning rate.
#
# How the pick was made, as it happened. These runs were first probed with the test
# split read, and the recipe (r2) was first picked with those test accuracies in view.
# Later, r2 and r4 were probed again on the linear probe's **validation** split only
# (10 % of the training set, held out by the probe), as
# {ref}`the equal tuning <sec-equal-tuning>` selects, and the pick re-checked on
# validation. Both probes of
# each run stay in its record (`probe.json`, then `reprobes/`):
# {numref}`tbl-recipe-tuning-runs` shows the test scores of each run's first probe and
# the validation score of its newest, and the sentence below it ranks the runs both
# ways. One caveat a reader should weigh: these runs are AoT-ADMM only. The learning
# rate was then swept for every family alike ({ref}`sec-equal-tuning`), but the
# projector, the SIGReg slices and the normalisation chosen here were not: CRATE and
# AoT use the settings that suited AoT-ADMM, which, if anything, favours AoT-ADMM in the
# comparisons of {ref}`ch-tables-1-3`.

# %% tags=["hide-input"]
# the text: r1 and r2 each build on the run before; r3 and r4 each change one
# thing from r2
SWEEP_CONFIGS = ROOT / "configs" / "cpu" / "sweep"
built_on = {name: load_yaml((SWEEP_CONFIGS / f"{name}.yaml").read_text())["inherit"]
            for name in ("r1_lr2e-3", "r2_lr2e-3_proj64", "r3_normalize",
                         "r4_lr4e-3")}
assert built_on == {"r1_lr2e-3": "r0_paper_lr.yaml",
                    "r2_lr2e-3_proj64": "r1_lr2e-3.yaml",
                    "r3_normalize": "r2_lr2e-3_proj64.yaml",
                    "r4_lr4e-3": "r2_lr2e-3_proj64.yaml"}, built_on
runs, notices = load_sweep(ROOT, smoke_steps=pick(30, 150))
for notice in notices:
    display(notice)
rows = recipe_sweep_rows(runs)
if rows:
    display(recipe_sweep_table(rows, runs))
    tested = [r for r in rows if r["linear"] is not None]
    by_test = max(tested, key=lambda r: r["linear"])
    by_val = max(rows, key=lambda r: r["val"])
    reprobed = [r["run"].split("_")[0] for r in rows if r["probes"] > 1]
    # by the note's one-seed rule, who the pick cannot be told apart from
    tied = [r["run"].split("_")[0] for r in rows
            if r is not by_val and one_seed_side(by_val["val"] - r["val"]) == "tie"]
    assert by_val["run"] == "r2_lr2e-3_proj64" and tied and reprobed, \
        "the text: validation's best is the pick, tied with others"
    ranked = phrases(tested=len(tested), n=len(rows),
                     test_best=by_test["run"].split("_")[0],
                     test_score=f"{by_test['linear']:.2f}",
                     reprobed=" and ".join(reprobed),
                     val_best=by_val["run"].split("_")[0],
                     val_score=f"{by_val['val']:.2f}", tied=" and ".join(tied))

# what r0 changes against the recipe of the training chapter's recorded 10-epoch run
MAIN_DIR = ROOT / "results" / "cpu" / "cpu_aot_admm_cifar10"
recipe_file = MAIN_DIR / "config.yaml"
if not recipe_file.exists():
    recipe_file = ROOT / "configs" / "cpu" / "aot_admm_cifar10.yaml"
if "r0_paper_lr" in runs:
    r0_against = phrases(file=recipe_file.relative_to(ROOT), changes=", ".join(
        f"{k} {ours} (recipe: {theirs})"
        for k, ours, theirs in config_changes(
            runs["r0_paper_lr"]["dir"] / "config.yaml", recipe_file)))

# %% [markdown]
# {eval}`ranked.tested` of the {eval}`ranked.n` runs were first probed with the test
# split read; on that first probe the best test score was {eval}`ranked.test_best`'s
# ({eval}`ranked.test_score` %). {eval}`ranked.reprobed` were probed again later, on
# validation only. On validation (each run's newest probe) the best is
# {eval}`ranked.val_best` ({eval}`ranked.val_score` %), the recipe's pick; by the
# note's one-seed rule it ties with {eval}`ranked.tied`, so validation agrees with the
# pick without singling it out.
#
# r0 against the recipe of the training chapter's run ({eval}`r0_against.file`):
# {eval}`r0_against.changes`. So r0 is the recipe before this sweep, not that run cut
# short.

# %% tags=["hide-input"]
# the bar this project first set for a CPU recipe worth reporting (a definition)
BAR = {"top1": 50, "minutes": 35}
bar = phrases(**BAR)

# %% [markdown]
# (sec-recipe-10-epochs)=
# ## The tuned recipe, 10 epochs
#
# The sweep's choice, r2 (its settings are its row of {numref}`tbl-recipe-tuning-runs`),
# became `configs/cpu/recipe.yaml`; the AoT-ADMM, CRATE and AoT CPU configs share it.
# Its 10-epoch AoT-ADMM run ({numref}`tbl-recipe-ten-epoch-run`), against the bar this
# project first set for a CPU recipe worth reporting (at least {eval}`bar.top1` % linear
# probe in at most {eval}`bar.minutes` minutes of recorded wall time on two cores, the
# CPU model not recorded by runs of that time; a higher goal comes with the recipe
# search below):

# %% tags=["hide-input"]
SWEPT = ("optim.lr", "projector.out_dim", "loss.num_slices", "loss.sigreg_normalize")
if "r2_lr2e-3_proj64" in runs:  # the sentence above: the recipe is r2's settings
    r2 = flatten(load_config(runs["r2_lr2e-3_proj64"]["dir"] / "config.yaml"))
    recipe = flatten(load_config(recipe_file))
    assert all(r2[k] == recipe[k] for k in SWEPT), [(r2[k], recipe[k]) for k in SWEPT]
main_dir = MAIN_DIR
main = None
if (main_dir / "probe.json").exists():
    main = load_recorded_run(ROOT, "cpu_aot_admm_cifar10", "aot_admm_cifar10.yaml",
                             smoke_steps=0)
    wall = main["run"]["wall_time_s"] / 60
    assert "cpu_model" not in main["run"]["hardware"], \
        "the text: that run did not record its CPU model"
    lin = main["probe"]["linear_top1"]
    display(Table(
        [dict(run=main_dir.name, steps=main["metrics"]["step"], wall=wall, linear=lin,
              knn=main["probe"]["knn_top1"], probe=main["probe"]["wall_time_s"] / 60,
              bar="met" if lin >= BAR["top1"] and wall <= BAR["minutes"] else "missed",
              commit=str(main["run"].get("commit"))[:8])],
        [Col("run"), Col("steps"), Col("wall", "pretraining (min)", ".1f"),
         Col("probe", "probes (min)", ".1f"),
         Col("linear", "linear top-1 (%)", ".2f"), Col("knn", "k-NN top-1 (%)", ".2f"),
         Col("bar", f"≥ {BAR['top1']} % in ≤ {BAR['minutes']} min"), Col("commit")],
        caption=f"AoT-ADMM, {run_scale(load_config(main_dir / 'config.yaml'))}, the "
                "tuned "
                "recipe",
        name="tbl-recipe-ten-epoch-run",
        notes=[f"Wall times on {main['run']['hardware']['cpu_count']} CPU cores: "
               "pretraining, then the linear and k-NN probes (probe.json). They are "
               "as recorded, and other work may have shared the machine, which only "
               "lengthens them: the bar is about this one run, and no family is "
               "compared on it."]))
else:
    print("the 10-epoch run (configs/cpu/aot_admm_cifar10.yaml) is not recorded yet")

# %% [markdown]
# (sec-recipe-search)=
# ## More accuracy per CPU-minute: the recipe search
#
# The 10-epoch recipe ({numref}`tbl-recipe-ten-epoch-run`) trains for 10 of the paper's
# 800 epochs; the online k-NN curves of its runs are in {ref}`ch-tables-1-3`. The search
# asks what a half hour of steps, in modelled minutes on the search's clock (below),
# buys when it is spent differently: narrower or
# shallower networks that take more epochs, fewer local views, smaller patches (four
# times the tokens). Its
# rule was written into `scripts/recipe_search.py` before any screening run, and the
# book follows it here as it happened.
#
# * **Every family alike.** Each candidate changes scale or views only, never a
#   family's layers, and is screened on AoT-ADMM, CRATE and AoT: one run each, the
#   same budget. Tuning on AoT-ADMM alone and handing the result to the others is what
#   the first recipe did ({ref}`sec-recipe`); the search does not repeat it.
# * **A fixed half hour.** A candidate's full length is the number of epochs
#   AoT-ADMM's training steps fill in 30 minutes on the search's clock: the step time
#   measured idle, with the candidates and families interleaved
#   (`python scripts/recipe_search.py time`), on the machine the search ran on
#   ({numref}`tbl-recipe-machines` names its CPU and times the same steps on the other
#   kind). Its screening run is that schedule
#   compressed to 30 % of the epochs, warm-up and cosine included.
# * **Validation only.** A screening run reads no test image. It is scored by the
#   linear probe's validation accuracy (10 % of the training set, held out) and the
#   online k-NN on validation images.
# * **The pick.** The best mean validation linear probe over the three families, with
#   equal weights. The top two are trained at full length on every family. That says
#   how well the short runs predicted the long ones, and the better one at full length
#   becomes the recipe of the plan's 30-minute cells.
#
# {numref}`tbl-recipe-search-screening` is the screening, candidate by candidate.

# %% tags=["hide-input"]
table, facts = search_table(ROOT, load_config(recipe_file)["optim"]["epochs"])
display(table)
search, done = facts["rows"], facts["done"]
screened, se_diff = facts["screened"], facts["se_diff"]
# the rule as the text states it: screening runs 30 % of the full epochs; 10 % held out
assert all(r["epochs"] == max(1, round(0.3 * r["full_epochs"])) for r in search)
assert {r[f + "_val_images"] for r, f in done} <= {5000}, "the split the note states"
# ... and what the table's note says no candidate changes
assert {(r["batch"], r["lr"], r["projector"], r["slices"]) for r in search} \
    == {(256, 2e-3, (1024, 64), 256)}
best, second = sorted(screened, key=lambda r: -r["mean"])[:2]
assert best["mean"] - second["mean"] < se_diff, "the text: inside one run's noise"
screening = phrases(
    screened=len(screened), n=len(search), best=best["candidate"],
    best_mean=f"{best['mean']:.2f}", second=second["candidate"],
    second_mean=f"{second['mean']:.2f}", apart=f"{best['mean'] - second['mean']:.2f}")

# %% [markdown]
# {eval}`screening.screened` of {eval}`screening.n` candidates are screened on all
# three families. By the rule's score the best is {eval}`screening.best`
# ({eval}`screening.best_mean` %), then {eval}`screening.second`
# ({eval}`screening.second_mean` %): {eval}`screening.apart` points apart, inside one
# run's noise; the rule trains both at full length.

# %% [markdown]
# How each screening run learned is in {numref}`fig-search-curves`: the online k-NN on
# validation images after every epoch, against modelled minutes (steps times the idle
# step time of that candidate and family, measured interleaved), because the runs' own
# wall times were taken on a machine shared with other work. The clock here is the one
# the search was planned with (`results/cpu/search/step_times.json`), measured before
# its screening runs.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The recipe search's screening runs: validation k-NN accuracy after each epoch against modelled pretraining time (steps times the idle, interleaved step time), one panel per family, one line per candidate. Each run is its candidate's schedule of 30 modelled minutes on the search's clock, compressed to 30 % of the epochs.", "name": "fig-search-curves"}}
search_knn = evidence.search_curves(ROOT)
assert search_knn, "the screening runs ship with the records (results/cpu/search/)"
if search_knn:
    fig, axes = plt.subplots(1, 3, figsize=(FIGURE_WIDTH_IN, 3.4), sharey=True)
    for ax, (fam, name) in zip(axes, FAMILY_NAMES.items()):
        for k, r in enumerate(search):
            if (r["candidate"], fam) in search_knn:
                minutes, accs = zip(*search_knn[r["candidate"], fam])
                ax.plot(minutes, accs, marker="o", ms=2.5, color=f"C{k}",
                        label=r["candidate"])
        ax.set_title(name)
        ax.set_xlabel("modelled minutes")
    axes[0].set_ylabel("k-NN top-1, validation (%)")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    plt.show()

# %% [markdown]
# ### The finalists at full length
#
# The two best candidates by the rule are trained again at their full length, on every
# family, still scored on validation data only. Their epochs come from the idle step
# times, not from the screening runs' wall time a step: the one change made to the rule,
# after the screening and before any full-length run, because every screening run
# shared the machine with other work (`scripts/recipe_search.py` says so in its
# docstring, with the numbers).

# %% tags=["hide-input"]
table_final, finals = finalists_table(
    ROOT, 1, name="tbl-recipe-search-finalists",
    caption="The recipe search's finalists: validation linear top-1 at full length "
            "and in screening")
display(table_final)
assert len(finals) == 2 and all(r["mean"] is not None for r in finals)
a, b = sorted(finals, key=lambda r: -r["mean"])
assert [r["candidate"] for r in sorted(finals, key=lambda r: -r["mean_screen"])] \
    == [b["candidate"], a["candidate"]], "the text: screening had them the other way"
assert a["candidate"] == evidence.recipe_pick(ROOT)["candidate"], "the text: the pick"
finalists = phrases(better=a["candidate"], better_mean=f"{a['mean']:.2f}",
                    other_mean=f"{b['mean']:.2f}")

# %% [markdown]
# {numref}`tbl-recipe-search-finalists` sets each finalist's full runs beside its
# screening runs. At full length {eval}`finalists.better` is the better
# ({eval}`finalists.better_mean` % against {eval}`finalists.other_mean` %), and becomes
# the recipe of the plan's 30-minute cells. The screening had ranked them the other way
# round.

# %% [markdown]
# (sec-time-to-accuracy)=
# ### Time to accuracy, first recipe and new
#
# How long does a two-core CPU need to reach a given accuracy?
# {numref}`fig-time-to-accuracy` puts the first recipe's recorded CIFAR-10 runs, the
# finalists and the 30-minute recipe's recorded cells on one clock, per family.
# Their own wall times were taken on a shared machine and cannot be compared. The clock
# is therefore steps times the idle step time of each candidate and family, measured
# interleaved for all of them at once, where the first recipe is candidate c0. The
# newest such measurement is the clock (`evidence.step_clock`; older ones stay beside
# it, and {numref}`fig-search-curves` keeps the search's own), so every curve costs
# what its steps cost with the code of that commit. The curves are the online k-NN on
# validation images after each epoch. The marker at a curve's end is the mean final
# linear probe of the curve's runs on the validation split.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Validation k-NN accuracy against modelled pretraining minutes (steps times the idle, interleaved step time): the first recipe (10 epochs; the mean over those of its CIFAR-10 seeds recorded with the online monitor), the recipe search's finalists at full length (seed 0), and the 30-minute recipe's CIFAR-10 cells (the mean over their recorded seeds), one panel per family; the legend counts the runs behind each curve. A hollow marker at a curve's end is the mean final linear probe on the validation split (each run's own probe and learning-rate grid).", "name": "fig-time-to-accuracy"}}
tta = evidence.time_to_accuracy(ROOT)
recipes = list(dict.fromkeys(c["recipe"] for c in tta))
fig, axes = plt.subplots(1, 3, figsize=(FIGURE_WIDTH_IN, 3.4), sharey=True)
for ax, (fam, name) in zip(axes, FAMILY_NAMES.items()):
    for c in (c for c in tta if c["family"] == fam):
        k = recipes.index(c["recipe"])
        style = dict(color="black", ls="--") if k == 0 else dict(color=f"C{k}")
        ax.plot(c["minutes"], c["knn"], marker="o", ms=2.5,
                label=f"{c['recipe']}, {len(c['runs'])} run"
                + "s" * (len(c["runs"]) > 1),
                **style)
        if c["linear"] is not None:
            ax.plot(c["minutes"][-1], c["linear"], marker="D", mfc="none", ms=6,
                    color=style["color"], ls="none")
    ax.set_title(name)
    ax.set_xlabel("modelled minutes")
    ax.legend(fontsize=6, loc="lower right")
axes[0].set_ylabel("top-1, validation (%)")
fig.tight_layout()
plt.show()


# %% tags=["hide-input"]
firsts = {c["family"]: c for c in tta if c["recipe"] == recipes[0]}


def against_first(c: dict) -> dict:
    """A curve of the figure against its family's first recipe, as one table row."""
    first = firsts[c["family"]]
    passed = evidence.first_reaching(c["minutes"], c["knn"], first["knn"][-1])
    return dict(family=FAMILY_NAMES[c["family"]], recipe=c["recipe"], knn=c["knn"][-1],
                minutes=c["minutes"][-1], first_knn=first["knn"][-1],
                first_minutes=first["minutes"][-1], passed=passed,
                linear=c["linear"], first_linear=first["linear"])


display(Table(
    [against_first(c) for c in tta
     if c["recipe"] != recipes[0] and c["family"] in firsts],
    [Col("family"), Col("recipe"), Col("knn", "final k-NN (%)", ".1f"),
     Col("minutes", "after (min)", ".1f"),
     Col("passed", "passed the first recipe's final k-NN at (min)", ".1f"),
     Col("linear", "final val. linear (%)", ".2f"),
     Col("first_knn", "first recipe: final k-NN (%)", ".1f"),
     Col("first_minutes", "first recipe: after (min)", ".1f"),
     Col("first_linear", "first recipe: final val. linear (%)", ".2f")],
    caption="Each curve of the figure against its family's first recipe, in modelled "
            "minutes",
    name="tbl-recipe-time-to-accuracy",
    notes=["Validation k-NN and linear probe; an empty 'passed' cell: the curve never "
           "reached the first recipe's final value."]))
new_admm = [c for c in tta if c["family"] == "aot_admm"
            and c["recipe"].startswith("finalist") and c["linear"] is not None]
best_linear = max(new_admm, key=lambda c: c["linear"])
target = evidence.GOAL_30MIN
clock = evidence.step_clock(ROOT)
finalist_names = {c["recipe"].split()[1] for c in tta
                  if c["recipe"].startswith("finalist")}
reached = evidence.goal_30min(ROOT)
g, best = reached["summary"], reached["best"]
planned_seeds = evidence.planned(  # the CIFAR-10 cells' seeds, as the plan fixes
    ROOT / "results" / "cpu", evidence.CLAIMS_30MIN)["t1_cifar10_30min"].seeds
assert g.n == planned_seeds and not reached["reached"] and not reached["moonshot"], \
    "the text: every planned seed recorded, the goal not reached"
flops = pretraining_flops(reached["config"])
hw = clock["hardware"]
goal = phrases(
    top1=f"{target['top1']:.0f}", minutes=f"{target['minutes']:.0f}",
    moonshot=f"{target['moonshot']:.0f}", best_val=f"{best_linear['linear']:.2f}",
    best_val_recipe=best_linear["recipe"], clock=clock["path"], date=clock["date"][:10],
    commit=clock["commit"][:7],
    cpu=f"{hw['cpu_model']} ({hw['cpu_isa']}, {hw['cpu_count']} cores)",
    repeats=clock["repeats"],
    recipes="; ".join(f"{r['candidate']}, width {r['width']}, depth {r['depth']}, "
                      f"{r['local']} local views, patch {r['patch']}" for r in search
                      if r["candidate"] in finalist_names | {evidence.FIRST_RECIPE}),
    mean=f"{g.mean:.2f}", n=g.n, low=f"{g.low:.2f}", high=f"{g.high:.2f}",
    reached=reached["reached"], seed=best.seed, best=f"{best.top1:.2f}",
    best_minutes=f"{reached['minutes'][best.seed]:.1f}",
    best_wall=f"{best.wall_time_s / 60:.1f}", pflop=f"{flops['total'] / 1e15:.2f}")

# %% [markdown]
# {numref}`tbl-recipe-time-to-accuracy` reads each curve against its family's first
# recipe. The clock: {eval}`goal.clock`, measured {eval}`goal.date` at commit
# {eval}`goal.commit` on {eval}`goal.cpu`, {eval}`goal.repeats` interleaved repeats.
# The first recipe and the finalists: {eval}`goal.recipes`.
#
# **The goal.** This project set the 30-minute recipe a CIFAR-10 linear probe of
# {eval}`goal.top1` % for AoT-ADMM in {eval}`goal.minutes` modelled minutes of
# pretraining on the clock above,
# judged on the test split by the runs of the recipe's cells (the seeds the analysis
# plan fixes); it counts as reached when one recorded seed reaches it, and the mean over
# the seeds is given beside. The search's best validation score of a full-length
# AoT-ADMM run was {eval}`goal.best_val` %, the {eval}`goal.best_val_recipe`. On the
# test split the 30-minute recipe's AoT-ADMM scores {eval}`goal.mean` % over
# {eval}`goal.n` seeds (95 % interval {eval}`goal.low` to {eval}`goal.high`). Seeds at
# or above {eval}`goal.top1` % within {eval}`goal.minutes` modelled minutes:
# {eval}`goal.reached` of {eval}`goal.n`. The best, seed {eval}`goal.seed`, scores
# {eval}`goal.best` % after {eval}`goal.best_minutes` modelled minutes of pretraining
# ({eval}`goal.best_wall` minutes recorded, on a machine that other work may have
# shared; {eval}`goal.pflop` PFLOP). The moonshot, {eval}`goal.moonshot` %, is not
# reached.

# %% tags=["hide-input"]
cells30 = [c for c in tta if c["recipe"].startswith("30-minute")]
WIDE = ROOT / "results" / "cpu" / "probe_wide"  # scripts/reprobe.py --dest --set


def thirds(c: dict) -> tuple[float, float]:
    """Validation k-NN gained over the middle and the last third of its minutes."""
    m, end = c["minutes"], c["minutes"][-1]
    return (evidence.gain_between(m, c["knn"], end / 3, 2 * end / 3),
            evidence.gain_between(m, c["knn"], 2 * end / 3, end))


gaps = [evidence.validation_scores(r.folder)["linear"] - r.top1
        for r in reached["runs"]]
wide_goal = evidence.wide_probe(
    [r for r in reached["runs"] if (WIDE / r.name / "probe.json").exists()], WIDE)
wide_moved = [w["top1"] - w["top1_0"] for w in wide_goal.values()]
wide_top = max(max(w["grid"]) for w in wide_goal.values())
assert all(b < a for a, b in map(thirds, cells30)) and mean(gaps) > 0, \
    "the text: growth slowing; the test split below validation"
assert best_linear["linear"] < target["top1"], "the text: no finalist reached it either"
held = phrases(
    thirds="; ".join(f"{FAMILY_NAMES[c['family']]} {a:+.2f} and {b:+.2f} points "
                     f"(mean of {len(c['runs'])} seeds)"
                     for c in cells30 for a, b in [thirds(c)]),
    gap=f"{mean(gaps):.2f}", gap_low=f"{min(gaps):+.2f}", gap_high=f"{max(gaps):+.2f}",
    seeds=len(gaps), wide_top=f"{wide_top:g}",
    wide_picked=sum(w["lr"] == wide_top for w in wide_goal.values()),
    wide_n=len(wide_goal), wide_moved=f"{mean(wide_moved):+.2f}",
    wide_best=f"{max(w['top1'] for w in wide_goal.values()):.2f}")

# %% [markdown]
# What held it below the goal (a reading written after the first seeds were recorded,
# not part of the plan): over the middle and the last third of their modelled minutes,
# the 30-minute curves of validation k-NN gained {eval}`held.thirds`, the growth
# slowing as the learning rate decays. No full-length AoT-ADMM run of the search reached
# {eval}`goal.top1` % on validation either (the best, {eval}`goal.best_val` %), and the
# test split read {eval}`held.gap` points below the validation probe (the best of its
# learning-rate grid) on average over AoT-ADMM's {eval}`held.seeds` recorded seeds
# (from {eval}`held.gap_low` to {eval}`held.gap_high`). On the wider probe grid of the
# plan's addendum ({eval}`held.wide_top` added; a check, not the goal's judge),
# {eval}`held.wide_picked` of the {eval}`held.wide_n` seeds probed on it picked
# {eval}`held.wide_top`; the test top-1 moved by {eval}`held.wide_moved` points on
# average, the best seed scoring {eval}`held.wide_best` %.

# %% tags=["hide-input"]
rerun = evidence.recipe_rerun(ROOT)
assert rerun["commits"][0] != rerun["commits"][1], "the text: two commits"
pick_row = evidence.recipe_pick(ROOT)
cfg_file = (ROOT / "configs" / "cpu" / "search" / "final"
            / f"{pick_row['candidate']}_aot_admm.yaml")
cost = pretraining_flops(load_config(cfg_file))
search_clock = json.loads((ROOT / "results" / "cpu" / "search"
                           / "step_times.json").read_text())
was, now = (evidence.modelled_minutes(
    cost["steps"], c["steps"][pick_row["candidate"]]["aot_admm"]["median_s"])
    for c in (search_clock, clock))
budget = evidence.GOAL_30MIN["minutes"]
# the recipe's steps at the clock's step time of CRATE and AoT, in minutes
other = {f: evidence.modelled_minutes(
    cost["steps"], clock["steps"][pick_row["candidate"]][f]["median_s"])
    for f in ("crate", "aot")}
assert clock["commit"] != search_clock["commit"] and now < was, "the text: faster"
rounding = phrases(
    now=rerun["commits"][1][:7], was=rerun["commits"][0][:7],
    linear=", ".join(f"{b - a:+.2f} points ({lr.split(',')[0]})"
                     for lr, (a, b) in rerun["linear"].items()),
    knn=f"{rerun['knn'][1] - rerun['knn'][0]:+.2f}",
    monitor=f"{rerun['monitor'][1] - rerun['monitor'][0]:+.2f}")
recipe_cost = phrases(
    candidate=pick_row["candidate"], epochs=pick_row["epochs"],
    pflop=f"{cost['total'] / 1e15:.2f}", steps=f"{cost['steps']:,}",
    search_commit=search_clock["commit"][:7], was=f"{was:.1f}",
    clock_commit=clock["commit"][:7], now=f"{now:.1f}", unused=f"{budget - now:.1f}",
    crate=f"{other['crate']:.1f}", aot=f"{other['aot']:.1f}")

# %% [markdown]
# The recipe's seed 0 is the picked finalist's AoT-ADMM run again: the same config and
# seed, trained at commit {eval}`rounding.now` instead of {eval}`rounding.was`, whose
# CPU kernels round differently (the kernel history of the training chapter). At the
# learning rates both probes tried, its validation top-1 moved by
# {eval}`rounding.linear`; the probe's validation k-NN by {eval}`rounding.knn`, and the
# online monitor's last k-NN by {eval}`rounding.monitor`. That is how far
# floating-point rounding alone moves one run: part of the spread between seeds comes
# from it.
#
# The recipe, {eval}`recipe_cost.candidate` at {eval}`recipe_cost.epochs` epochs, costs
# {eval}`recipe_cost.pflop` PFLOP of AoT-ADMM pretraining ({eval}`recipe_cost.steps`
# steps of 256 images, three times the forward FLOPs): divide by what your machine
# sustains to scale these minutes. The search sized the recipe by its own clock (commit
# {eval}`recipe_cost.search_commit`): {eval}`recipe_cost.epochs` epochs of AoT-ADMM
# steps took {eval}`recipe_cost.was` minutes there. The clock above,
# {eval}`recipe_cost.clock_commit`, is faster: the same steps take
# {eval}`recipe_cost.now` minutes. The rule fixed each candidate's epochs by the
# search's clock, before any full-length run, and the recipe keeps them, so
# {eval}`recipe_cost.unused` minutes of AoT-ADMM's half hour go unused: a lever left for
# a later search, not taken after seeing the finalists. Every family trains the same
# epochs, so the half hour is AoT-ADMM's: at this clock the same steps take CRATE
# {eval}`recipe_cost.crate` and AoT {eval}`recipe_cost.aot` minutes.

# %% [markdown]
# The half hour is a property of the clock's machine, not of the recipe. The same
# script timed the same steps again, idle, at other commits or on another kind of CPU
# ({numref}`tbl-recipe-machines`).

# %% tags=["hide-input"]
machines = evidence.step_time_measurements(ROOT, pick_row["candidate"], cost["steps"])
display(Table(
    [{**m, "commit": m["commit"][:7], "date": m["date"][:10],
      **{f"{f}_min": v for f, v in m["minutes"].items()}} for m in machines],
    [Col("cpu", "CPU"), Col("commit"), Col("date"), Col("role", "against the clock"),
     *[Col(f"{f}_min", f"{name} (min)", ".1f") for f, name in FAMILY_NAMES.items()]],
    caption=f"The recipe's {cost['steps']:,} steps ({pick_row['candidate']}) by "
            "each idle measurement, in minutes per family",
    name="tbl-recipe-machines",
    notes=["Minutes: the steps times the median idle step of "
           "scripts/recipe_search.py time (the families interleaved); files: "
           + ", ".join(m["path"] for m in machines) + "."]))
base = machines[0]
(away,) = [m for m in machines if m["role"] == "other CPU"]  # only the CPU differs
away_epochs = pick_row["epochs"] * budget / away["minutes"]["aot_admm"]
assert away_epochs < pick_row["epochs"], "the text: the half hour buys fewer epochs"
elsewhere = phrases(
    cpu=away["cpu"], commit=away["commit"][:7],
    minutes=f"{away['minutes']['aot_admm']:.1f}",
    ratio=f"{away['minutes']['aot_admm'] / base['minutes']['aot_admm']:.2f}",
    clock=f"{base['minutes']['aot_admm']:.1f}", epochs=f"{away_epochs:.1f}",
    recipe_epochs=pick_row["epochs"])

# %% [markdown]
# On the {eval}`elsewhere.cpu`, at the clock's commit ({eval}`elsewhere.commit`),
# AoT-ADMM's steps take {eval}`elsewhere.minutes` minutes, {eval}`elsewhere.ratio`× the
# clock's {eval}`elsewhere.clock`: the half hour buys {eval}`elsewhere.epochs` of the
# recipe's {eval}`elsewhere.recipe_epochs` epochs there. A cell recorded on that
# machine trains the same steps; the goal and the curves keep the clock's minutes, and
# each record names its CPU.

# %% tags=["hide-input"]
plan_yaml = load_yaml((ROOT / "results" / "cpu" / "plan.yaml").read_text())
goal2 = plan_yaml["round2"]["goal"]
steps_min = evidence.ROUND2_STEP_BUDGET_S / 60
rule2 = phrases(steps=f"{steps_min:g}", rest=f"{goal2['wall_s'] / 60 - steps_min:g}",
                wall=f"{goal2['wall_s'] / 60:g}",
                proxy=f"{evidence.ROUND2_PROXY_FRACTION:.0%}".replace("%", " %"),
                seeds=goal2["seeds"], top1=f"{goal2['top1']:g}",
                moonshot=f"{goal2['moonshot']:g}")

# %% [markdown]
# (sec-recipe-search2)=
# ### Round 2: the slower CPU's wall time
#
# The half hour above is the clock's: a reader's laptop sees wall time, and on the
# slower of this project's two CPU types the same steps take longer. Round 2 of the
# search changes the clock and searches what round 1 held fixed. Its rule was written
# into `scripts/recipe_search2.py` before any screening run:
#
# * **The clock is wall time on the slower CPU**, the 2-core AMD EPYC with AVX-512
#   (of the two types the project had then). A candidate's
#   full length is the whole epochs AoT-ADMM's training steps fill in
#   {eval}`rule2.steps` minutes at its idle step time there; the other
#   {eval}`rule2.rest` minutes are for the monitor and the checkpoints, and a final run
#   whose recorded wall time passes {eval}`rule2.wall` minutes does not count.
# * **One change at a time** from round 1's recipe: the learning rate, the batch,
#   LeJEPA's λ, the SIGReg slices, the projector, the local views, and the shape (depth
#   4, and depth 4 at width 256, each a single candidate).
#   Every family alike, validation only, {eval}`rule2.proxy` of the full length, the
#   top two at full length, as in round 1.
# * **fp32**: bf16-mixed was timed beforehand and was slower on this CPU
#   ({numref}`tbl-bf16-cpu`).
# * **The goal is a mean.** AoT-ADMM on CIFAR-10 at the round-2 recipe,
#   {eval}`rule2.seeds` seeds: reached when the mean linear test top-1 of the seeds that
#   count is at least {eval}`rule2.top1` % (moonshot {eval}`rule2.moonshot` %), with its
#   95 % interval beside it; how many seeds reach {eval}`rule2.top1` % is secondary.
#   Round 1 counted the goal reached when one seed reached it; the plan fixed the
#   stricter reading for round 2 before any of its runs.

# %% tags=["hide-input"]
BF16_BENCHES = sorted((ROOT / "results" / "benchmarks").glob("precision_*.json"))
benches_bf16 = [json.loads(p.read_text()) for p in BF16_BENCHES]  # one per CPU type
bf16_table = precision_table(benches_bf16, name="tbl-bf16-cpu")
display(bf16_table)
ratios = {cpu: [r["ratio"] for r in bf16_table.rows if r["cpu"] == cpu]
          for cpu in dict.fromkeys(r["cpu"] for r in bf16_table.rows)}
(has,) = [b for b in benches_bf16 if b["cpu_bf16_flags"]]
(lacks,) = [b for b in benches_bf16 if not b["cpu_bf16_flags"]]
assert min(min(r) for r in ratios.values()) > 1, "the text: slower on every CPU type"
bf16 = phrases(low=f"{min(ratios[cpu_label(has['hardware'])]):.2f}",
               high=f"{max(ratios[cpu_label(has['hardware'])]):.2f}",
               cpu=cpu_label(has["hardware"]), flags=", ".join(has["cpu_bf16_flags"]),
               other=cpu_label(lacks["hardware"]),
               other_low=f"{min(ratios[cpu_label(lacks['hardware'])]):.1f}",
               other_high=f"{max(ratios[cpu_label(lacks['hardware'])]):.1f}")
bf16_acc = evidence.bf16_check(ROOT)
assert bf16_acc is not None and bf16_acc["matches"] is not None, \
    "the text: all four runs are recorded"
bf16_pairs = list(bf16_acc["pairs"].values())
bf16_runs = phrases(
    seeds=and_list([str(s) for s in evidence.BF16_CHECK["seeds"]]),
    commit=bf16_acc["commit"][:7],
    diffs=and_list([f"{p['diff']:+.2f}" for p in bf16_pairs]),
    mean=f"{bf16_acc['mean_diff']:+.2f}", spread=f"{bf16_acc['spread']:.2f}",
    verdict="matches" if bf16_acc["matches"] else "does not match",
    knn=and_list([f"{p['knn_bf16'] - p['knn_fp32']:+.2f}" for p in bf16_pairs]))

# %% [markdown]
# On the {eval}`bf16.cpu`, which has {eval}`bf16.flags`, a bf16-mixed step took
# {eval}`bf16.low` to {eval}`bf16.high` times the fp32 step, depending on the family:
# in a fixed number of minutes bf16 would buy fewer steps, so the rule keeps fp32 on
# this CPU type and an accuracy check at equal steps would decide nothing. The
# {eval}`bf16.other` has no bf16 instructions, so bf16 is emulated there, and a step
# took {eval}`bf16.other_low` to {eval}`bf16.other_high` times as long: fp32 there too.
# A CPU with AMX (a recent Intel Xeon) may differ; none has been at hand. For such a
# CPU the rule is fixed: bf16 is used if its step is faster there and its validation
# accuracy at equal steps is within fp32's seed spread over 2 seeds.
#
# What bf16 changes in accuracy is still worth knowing, for a GPU above all, where
# bf16-mixed is the default. An eighth addendum to the plan, written before any bf16
# training run, sets the check: round 2's base screening run of AoT-ADMM at seeds
# {eval}`bf16_runs.seeds`, each in fp32 and in bf16-mixed. A seed gives both precisions
# the same start, views and batches, so its difference isolates the arithmetic. bf16
# matches when the mean of the two differences is within the spread of the two fp32
# seeds. The four runs went after the goal's, one at a time, from one clean commit,
# {eval}`bf16_runs.commit` ({numref}`tbl-bf16-check`). bf16 minus fp32 was
# {eval}`bf16_runs.diffs` points of validation linear top-1, a mean of
# {eval}`bf16_runs.mean` against an fp32 seed spread of {eval}`bf16_runs.spread` points,
# so by the addendum's reading bf16-mixed **{eval}`bf16_runs.verdict`** fp32 within the
# seed spread; the validation k-NN moved by {eval}`bf16_runs.knn` points. Two seeds give
# a coarse spread, so this reads large changes only. fp32 stays all the same, since bf16
# is the slower arithmetic here. It is the CPU's bf16 arithmetic:
# what bf16-mixed does on a GPU is not measured by this check.

# %% tags=["hide-input"]
display(bf16_check_table(bf16_acc, name="tbl-bf16-check"))

# %% [markdown]
# The clock's CPU is "the slower of the two types" only as long as no slower one
# turns up. A third type did turn up: an AMD EPYC with AVX2 and no AVX-512. The same
# interleaved measurement, at the same commit as the AVX-512 one, was run on it while
# nothing else ran ({numref}`tbl-search2-cpu-types`).

# %% tags=["hide-input"]
STEP_CLOCK2 = ROOT / "results" / "cpu" / "search2"
clock2 = json.loads((STEP_CLOCK2 / "step_times_amd.json").read_text())
avx2 = json.loads((STEP_CLOCK2 / "step_times_amd_avx2.json").read_text())
cpu_types, step_ratios = cpu_types_table(clock2, avx2, name="tbl-search2-cpu-types")
display(cpu_types)
slower = [(r["candidate"], FAMILY_NAMES[f], r[f]) for r in cpu_types.rows
          for f in FAMILY_NAMES if r[f] > 1]
types = phrases(other=cpu_label(avx2["hardware"]), clock=cpu_label(clock2["hardware"]),
                low=f"{min(step_ratios):.2f}", high=f"{max(step_ratios):.2f}",
                median=f"{median(step_ratios):.2f}", n=len(step_ratios),
                slower=len(slower),
                which="; ".join(f"{c}'s {fam} step, {x:.2f}" for c, fam, x in slower),
                same=len(evidence.ROUND2_SAME_STEP_AS_BASE))
assert len(slower) == 1 and median(step_ratios) < 1, \
    "the text: the other CPU is faster but for one step"
screen2 = {r["candidate"]: r for r in evidence.search_rows(ROOT, round=2)}
same_step = ("width", "depth", "patch", "local", "batch", "projector", "slices")
assert slower[0][0] in evidence.ROUND2_SAME_STEP_AS_BASE and all(
    screen2[slower[0][0]][k] == screen2["r0_base"][k] for k in same_step), \
    "the text: the slower step's candidate computes what the base does"

# %% [markdown]
# On the {eval}`types.other` a step took {eval}`types.low` to {eval}`types.high` times
# the {eval}`types.clock`'s (median {eval}`types.median` over the {eval}`types.n`
# candidate-family pairs); {eval}`types.slower` pair was slower:
# {eval}`types.which`. That candidate computes the base's step (its network, views,
# batch, projector and slices are the base's), so the excess is noise. The rule gives
# the {eval}`types.same` candidates that compute the base's step one length, from the
# median of their timings (a clause added after the first timing and before any
# screening run or config). The
# {eval}`types.clock`
# stays the slower CPU type and round 2's lengths stand; every run's `run.json` names
# the CPU it ran on. The goal's runs later showed that one type is not one speed either
# ({ref}`sec-round2-goal`).
#
# {numref}`tbl-recipe-search2-screening` is the screening. The runs went one at a time
# in the background, from a clean clone at one commit.

# %% tags=["hide-input"]
table2, facts2 = search2_table(ROOT)
display(table2)
best2 = {f: max((r for r, g in facts2["done"] if g == f), key=lambda r: r[f])
         for f in FAMILY_NAMES}
plan_r2 = plan_yaml["round2"]
round2 = phrases(
    done=len(facts2["done"]), total=len(facts2["rows"]) * len(FAMILY_NAMES),
    screened=len(facts2["screened"]), candidates=len(facts2["rows"]),
    best="; ".join(f"{FAMILY_NAMES[f]} {r['candidate']} ({r['change']}, {r[f]:.2f} %)"
                   for f, r in best2.items()),
    which="; ".join(f"{FAMILY_NAMES[f]} {c} at {lr:g}" for c, f, lr in facts2["edges"]),
    up=", ".join(f"{x:g}" for x in plan_r2["probe_lr_above"]),
    down=", ".join(f"{x:.0e}".replace("e-0", "e-") for x in plan_r2["probe_lr_below"]))
assert facts2["edges"], "the text: some widened runs still pick an end"
# the rule's ranking (recipe_search2.py finalists applies it) of the whole screening
ranking = evidence.round2_ranking(facts2["rows"])
first, second, *rest = ranking
base2 = next(r for r in ranking if r["candidate"] == "r0_base")
assert len(facts2["done"]) == len(facts2["rows"]) * len(FAMILY_NAMES), "the text: all"
assert round(second["mean"], 2) > round(rest[0]["mean"], 2), \
    "the text: no tie at second"
ranked2 = phrases(
    first=f"{first['candidate']} ({first['change']}, {first['mean']:.2f} %)",
    second=f"{second['candidate']} ({second['change']}, {second['mean']:.2f} %)",
    next="; ".join(f"{r['candidate']} {r['mean']:.2f}" for r in rest[:3]),
    base=f"{base2['mean']:.2f}",
    base_place=f"{ranking.index(base2) + 1} of {len(ranking)}",
    ahead=f"{second['mean'] - base2['mean']:+.2f}", edges=len(facts2["edges"]))
assert (plan_r2["probe_lr_below"][0], plan_r2["probe_lr_above"][0]) == (
    evidence.ROUND2_WIDER["low"], evidence.ROUND2_WIDER["high"]), \
    "the text: the extension's first step is the search's"

# %% [markdown]
# All {eval}`round2.done` screening runs are recorded, every pick at an end of the grid
# probed again one step wider. The highest score in each family's column:
# {eval}`round2.best`. The rule ranks the candidates by their mean over the three
# families, rounded to 0.01 points, a tie going to the earlier candidate
# (`aot_lib.evidence.round2_ranking`, which `recipe_search2.py finalists` applies). The
# two finalists are **{eval}`ranked2.first`** and **{eval}`ranked2.second`**; next come
# {eval}`ranked2.next`. Round 1's recipe itself, r0, ranks
# {eval}`ranked2.base_place` with {eval}`ranked2.base` %, so the second finalist is
# {eval}`ranked2.ahead` points above it. Each number is one seed of a screening run,
# {eval}`rule2.proxy` of the full length: the full-length runs are what decide. The
# {eval}`ranked2.edges` runs still at the widened top count as they stand, as the rule
# says.
#
# The two finalists run at full length on every family, with a probe that takes the
# widening step itself (`probe.lr_below`, `probe.lr_above`, {ref}`sec-quick-probe`),
# and `recipe_search2.py recipe` writes the better one's cells, `configs/cpu/cpu30b/`.

# %% tags=["hide-input"]
final2_dir = ROOT / "configs" / "cpu" / "search2" / "final"
batches2 = "; ".join(
    f"{c.name.removesuffix('_aot_admm.yaml')}: "
    f"{load_config(c)['optim']['batch_size']}"
    for c in sorted(final2_dir.glob("*_aot_admm.yaml")))
table_final2, finals2 = finalists_table(
    ROOT, 2, name="tbl-recipe-search2-finalists",
    caption="Round 2's finalists: validation linear top-1 at full length and in "
            "screening",
    notes=[f"Each finalist keeps its screening batch ({batches2}) and trains the "
           "whole epochs in which its AoT-ADMM steps fill "
           f"{evidence.ROUND2_STEP_BUDGET_S // 60} minutes at its step time on the AMD "
           "EPYC (the rule in scripts/recipe_search2.py)."])
display(table_final2)
pick2 = evidence.recipe_pick(ROOT, round=2)
assert pick2 is not None, "the text: all six full-length runs are recorded"
other2 = next(r for r in finals2 if r["candidate"] != pick2["candidate"])
ahead2 = [n for f, n in FAMILY_NAMES.items() if pick2[f] > other2[f]]
assert pick2["place"] == 1 and len(ahead2) == len(FAMILY_NAMES), \
    "the text: the screening's order held, on every family"
gaps2 = [f"{n} {pick2[f] - other2[f]:.2f}" for f, n in FAMILY_NAMES.items()]
final2 = phrases(
    better=pick2["candidate"], better_mean=f"{pick2['mean']:.2f}",
    other=other2["candidate"], other_mean=f"{other2['mean']:.2f}",
    gaps=and_list(gaps2),
    gain=f"{pick2['mean'] - pick2['mean_screen']:.2f}",
    other_gain=f"{other2['mean'] - other2['mean_screen']:.2f}")
assert min(r["mean"] - r["mean_screen"] for r in finals2) > 0, "the text: added"

# %% [markdown]
# {numref}`tbl-recipe-search2-finalists` sets them beside their screening runs. At full
# length **{eval}`final2.better`** is the better, {eval}`final2.better_mean` % against
# {eval}`final2.other_mean` % for {eval}`final2.other` over the three families, and it
# is ahead on every family (by {eval}`final2.gaps` points): the screening's order held.
# It becomes round 2's recipe, whose cells `recipe_search2.py recipe` wrote into
# `configs/cpu/cpu30b/`. The full length added {eval}`final2.gain` points to its
# screening mean ({eval}`final2.other_gain` to the other's). Each score is one seed, so
# the gaps say which finalist the rule picks, not by how much one recipe beats the
# other.
#
# One added rate is not always enough. Some screening runs, probed again with one rate
# added past the end they picked, picked that new rate too: {eval}`round2.which`. The
# search ranks them as they stand, as its rule says. A round-2 cell's pick, though, must
# not sit at the edge of its grid. So a seventh addendum to the plan, written when the
# first of these were seen and before any finalist or round-2 cell ran, lets the probe
# of every round-2 cell and floor keep adding rates, one at a time, while its pick stays
# at an end: up through {eval}`round2.up`, and down through {eval}`round2.down`. The
# first rate it adds is the one the search adds, so where that one rate was enough, the
# pick is the same.

# %% tags=["hide-input"]
idle = phrases(most=plan_yaml["round2_idle"]["other_cores_max"],
               measured=plan_yaml["round2_idle"]["measured_idle_other_cores"],
               wall=f"{plan_yaml['round2']['goal']['wall_s']:,}",
               cpu=plan_yaml["round2"]["goal"]["cpu"])

# %% [markdown]
# The goal's runs are judged by their wall time, so the record has to say whether the
# machine was idle. From commit 30c3127 on, every run writes `other_cores` into its
# `run.json`: the CPU time the rest of the machine was busy while it ran (from Linux's
# `/proc`), in cores. The plan fixed, before any goal run, that a run counts toward the
# goal when it took at most {eval}`idle.wall` s on an {eval}`idle.cpu` with at most
# {eval}`idle.most` cores of other work; with only the system's own processes running,
# the AVX2 machine measured {eval}`idle.measured`. Either {eval}`idle.cpu` type counts,
# AVX-512 or AVX2 (the plan's note on the goal's CPU, also written before any goal
# run): the steps are the recipe's, so the CPU changes the wall time and not the
# accuracy, and each run's type is named beside it. A run on another CPU model does
# not count. Each row of
# `metrics.csv` also carries `wall_s`, the run's wall clock, so the goal runs' learning
# curves can be drawn against wall minutes (`evidence.knn_wall_curve`), which runs
# recorded before 30c3127 cannot be.

# %% [markdown]
# (sec-round2-goal)=
# ### Round 2's goal runs
#
# The goal's seeds run one at a time from a clean clone of the recipe's commit, each
# alone on the machine, in seed order ({numref}`tbl-round2-goal`, and their learning
# curves against wall minutes in {numref}`fig-round2-goal`).

# %% tags=["hide-input"]
goal_r2 = evidence.goal_round2(ROOT)
display(goal_table(goal_r2, name="tbl-round2-goal"))
g_rows = goal_r2["rows"]
g_steps = [r["steps"] for r in g_rows]
clock_step = clock2["steps"][pick2["candidate"]]["aot_admm"]["median_s"]
per_step = [r["wall_s"] / n for r, n in zip(g_rows, g_steps)]
seed0_val = json.loads((ROOT / "results" / "cpu" / "cpu30b_aot_admm_cifar10" /
                        "probe.json").read_text())["linear_val_best"]
assert seed0_val == pick2["aot_admm"], "the text: seed 0 is the finalist's run again"
assert all(r["counts"] for r in g_rows), "the text: every recorded seed counts"
assert all(0.4 < r["wall_s"] / goal2["wall_s"] < 0.6 for r in g_rows), \
    "the text: about half of the half hour"

assert max(r["top1"] for r in g_rows) < goal2["top1"], "the text: short of the goal"
g_sum = goal_r2["summary"]
g_picks = evidence.probe_lr_picks([r["run"] for r in g_rows])
assert not any(p["at_top"] or p["at_bottom"] for p in g_picks), "the text: all inside"
g_added = {r["seed"]: sorted(set(p["grid"]) - set(plan_yaml["round2"]["probe_lr"]))
           for r, p in zip(g_rows, g_picks)}
g_ext = {s: a for s, a in g_added.items() if a}
# the floors at the same probe (the plan: the untrained encoder and raw pixels at every
# seed of every round-2 cell; scripts/evidence_runs.sh floors2)
floors_r2 = evidence.floor_cells(ROOT / "results" / "cpu", "cpu30b_aot_admm_cifar10",
                                 "cifar10", "baselines_cpu30b")
fl = {k: {r.seed: r.top1 for r in runs} for k, runs in floors_r2.items()}
goal_by_seed = {r["seed"]: r["top1"] for r in g_rows}
assert all(set(v) == set(goal_by_seed) for v in fl.values()), "the text: every seed"
fl_picks = evidence.probe_lr_picks([r for runs in floors_r2.values() for r in runs])
assert not any(p["at_top"] or p["at_bottom"] for p in fl_picks), "the text: all inside"
over = {k: paired_difference(goal_by_seed, v) for k, v in fl.items()}
assert all(d.low > 0 for d in over.values()), "the text: above both floors"
top2 = max(plan_yaml["round2"]["probe_lr"])
assert all(p["lr"] == top2 for r, p in zip(g_rows, g_picks) if r["seed"] in g_ext), \
    "the text: the top kept"
assert len(g_rows) == goal2["seeds"] == g_sum.n, "the text: all recorded, all count"
assert not goal_r2["reached"] and goal_r2["at_goal"] == 0, "the text: no seed either"
goal_run = phrases(
    untrained=f"{mean(fl['untrained'].values()):.2f}",
    pixels=f"{mean(fl['pixels'].values()):.2f}",
    over_untrained=f"{over['untrained'].mean:.2f}",
    over_untrained_ci=f"{over['untrained'].low:.2f}–{over['untrained'].high:.2f}",
    over_pixels=f"{over['pixels'].mean:.2f}",
    over_pixels_ci=f"{over['pixels'].low:.2f}–{over['pixels'].high:.2f}",
    floors=len(fl_picks),
    recorded=len(g_rows), seeds=goal2["seeds"], mean=f"{g_sum.mean:.2f}",
    picks=and_list([f"{p['lr']:g}" for p in g_picks]),
    ext=and_list([str(s) for s in g_ext]),
    added=and_list(sorted({f"{x:g}" for a in g_ext.values() for x in a})),
    ci=f"{g_sum.low:.2f}–{g_sum.high:.2f}", below=f"{goal2['top1'] - g_sum.high:.2f}",
    minutes=and_list([f"{r['wall_s'] / 60:.1f}" for r in g_rows]),
    others=and_list([f"{r['other_cores']:.3f}" for r in g_rows]),
    top1=and_list([f"{r['top1']:.2f}" for r in g_rows]),
    short=f"{goal2['top1'] - max(r['top1'] for r in g_rows):.2f}",
    per_step=f"{min(per_step):.3f}–{max(per_step):.3f}",
    clock=f"{clock_step:.3f}", steps=f"{g_steps[0]:,}",
    budget=f"{evidence.ROUND2_STEP_BUDGET_S // 60}", seed0_val=f"{seed0_val:.2f}")

# %% [markdown]
# All {eval}`goal_run.seeds` seeds are recorded, and each counts: their pretraining took
# {eval}`goal_run.minutes` wall minutes with {eval}`goal_run.others` cores of other work
# beside them. Their linear test top-1 is {eval}`goal_run.top1` %, each probe's rate
# ({eval}`goal_run.picks`) inside the rates it tried: seeds {eval}`goal_run.ext` picked
# the top of the plan's grid and the extension then added {eval}`goal_run.added`, which
# did not beat it. The plan's primary
# reading is their mean, **{eval}`goal_run.mean` %** (95 % interval
# {eval}`goal_run.ci`): its interval ends {eval}`goal_run.below` points below the goal's
# {eval}`rule2.top1` %, so **the goal is not reached**. No seed reaches it either (the
# secondary reading); the best is {eval}`goal_run.short` points short. By the plan,
# round 2's Table 1 and Table 3 claims are therefore not run, and the rest of this
# section shows how far the recipe got and what limited it. Seed 0 is the picked
# finalist's AoT-ADMM run again, the same config and seed at a later commit, and its
# validation probe gives the finalist's {eval}`goal_run.seed0_val` % to the last digit.
#
# How far did the recipe get? Its floors at the same probe, at every seed (the plan's
# round-2 section; `scripts/evidence_runs.sh floors2`), are the encoder untrained,
# {eval}`goal_run.untrained` %, and raw pixels, {eval}`goal_run.pixels` % (means over
# the seeds). Pretraining adds {eval}`goal_run.over_untrained` points to the untrained
# encoder (95 % interval {eval}`goal_run.over_untrained_ci`, paired by seed) and
# {eval}`goal_run.over_pixels` to raw pixels ({eval}`goal_run.over_pixels_ci`). Each of
# the {eval}`goal_run.floors` floors picked its rate inside the rates it tried.
#
# The minutes are the surprise. The rule gave the recipe the whole epochs whose steps
# fill {eval}`goal_run.budget` minutes at the step time the clock measured for it,
# {eval}`goal_run.clock` s; the goal runs took {eval}`goal_run.per_step` s a step,
# monitor, checkpoints and all, so the {eval}`goal_run.steps` steps take about half of
# the half hour. The rule, fixed before any screening run, sets the length from the
# clock, so the goal is judged at this length.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The round-2 goal runs, one curve a seed: the online k-NN top-1 on validation images against its wall minutes, and a hollow marker at its final linear test top-1 where its pretraining ended; dotted, the goal of 60 % in 30 minutes.", "name": "fig-round2-goal"}}
assert (goal2["wall_s"], goal2["top1"]) == (1800, 60.0), "the caption: 30 minutes, 60 %"
plot_wall_curves(goal_curves(goal_r2), limit_min=goal2["wall_s"] / 60,
                 target=goal2["top1"])
plt.show()

# %% tags=["hide-input"]
clock_check = json.loads((ROOT / "results" / "benchmarks" /
                          "step_clock_amd.json").read_text())
arm = {k: v["median_of_rounds_s"] for k, v in clock_check["arms"].items()}
assert clock_check["old_commit"] == clock2["commit"], "the text: the clock's commit"
assert max(arm.values()) / min(arm.values()) < 1.1, "the text: the arms agree"
assert max(arm.values()) < 0.6 * clock_step, "the text: none accounts for the gap"
today = [st[c][f]["median_s"] / clock2["steps"][c][f]["median_s"]
         for st in clock_check["interleaved_steps"]["this"] for c in st for f in st[c]]
assert len(today) == 36 and max(today) < 1, "the text: each of the 36 faster today"
recipe_optim = load_config(ROOT / "configs" / "cpu" / "cpu30b" /
                           "cpu30b_aot_admm_cifar10.yaml")["optim"]
rule_now = evidence.round2_full_epochs(arm["this_alone"], recipe_optim["batch_size"])
assert rule_now > recipe_optim["epochs"], "the text: a longer recipe"
why = phrases(
    commit=clock2["commit"][:7], then=clock2["date"][:10], now=clock_check["date"][:10],
    alone=f"{arm['this_alone']:.3f}", mixed=f"{arm['this_interleaved']:.3f}",
    old_alone=f"{arm['old_alone']:.3f}", old_mixed=f"{arm['old_interleaved']:.3f}",
    lo=f"{min(today):.2f}", hi=f"{max(today):.2f}", med=f"{median(today):.2f}",
    factor=f"{1 / median(today):.1f}", epochs=recipe_optim["epochs"], rule_now=rule_now)

# %% [markdown]
# Why was the clock's step slower? The clock differs from a training run in two ways: it
# times 36 models (12 candidates × 3 families) one step each in a rotating order, and it
# was taken at commit {eval}`why.commit` on {eval}`why.then`.
# `benchmarks/bench_step_clock.py` takes the two apart with the clock's own timer, each
# arm in a process of its own, on an idle machine on {eval}`why.now`: r3_batch128's
# AoT-ADMM step took {eval}`why.alone` s alone and {eval}`why.mixed` s among all 36 at
# the current code, and {eval}`why.old_alone` s and {eval}`why.old_mixed` s at
# {eval}`why.commit`. Neither the interleaving nor the code accounts for the gap: each
# of the 36 steps the clock timed took {eval}`why.lo`–{eval}`why.hi` of its recorded
# time (median {eval}`why.med`). The machine was the difference. The one that measured
# the clock on {eval}`why.then` was about {eval}`why.factor` times slower than the one
# the goal ran on, though both report the same CPU model and instruction set (AMD EPYC,
# AVX-512): a cloud machine's name does not fix its speed, so a clock taken once sets
# lengths for another day only up to such a factor. At today's step time the rule would
# have given {eval}`why.rule_now` epochs instead of {eval}`why.epochs` (post hoc: a
# reading after the goal runs, not a run). Whether that length reaches the goal is not
# measured here.

# %% [markdown]
# (sec-admm-sweep)=
# ## Does the guess of the ADMM hyper-parameters matter?
#
# The paper never states $\eta,\gamma,\rho,\lambda$; this project's defaults (the
# defaults of `aot_lib.models.AoTADMM`, below) are a guess. Four short runs move them
# one at a time from r2, which is the baseline row of
# {numref}`tbl-recipe-admm-hyperparameters`:

# %% tags=["hide-input"]
default = admm_settings({"model": {"name": "aot_admm_tiny", "overrides": {}}})
a, b, c = admm_coefficients(default["eta"], default["gamma"], default["rho"])
defaults = phrases(eta=f"{default['eta']:g}", gamma=f"{default['gamma']:g}",
                   rho=f"{default['rho']:g}", lambd=f"{default['lambd']:g}",
                   abc=f"({a:g}, {b:g}, {c:g})",
                   tau=f"{default['lambd'] / default['rho']:g}")
admm = admm_rows(runs, baseline="r2_lr2e-3_proj64")
if len(admm) > 1:
    display(admm_table(admm))
base = next(r for r in admm if r["run"] == "r2_lr2e-3_proj64")
moved = [r for r in admm if r is not base]
groups = {k: [r for r in moved if one_seed_side(r["val"] - base["val"]) == k]
          for k in ("tie", "better", "worse")}
assert groups["tie"] and not groups["better"] and len(groups["worse"]) == 1, \
    "the text: some tie, none better, one worse"


def listed(rows: list[dict]) -> str:
    return ", ".join(f"{r['run']} (η = {r['eta']:g}, λ = {r['lambd']:g}: "
                     f"{r['val'] - base['val']:+.2f})" for r in rows)


admm_read = phrases(base=f"{base['val']:.2f}", tie_gap=f"{PAPER_LARGEST_GAP:.2f}",
                    ties=listed(groups["tie"]), worse=listed(groups["worse"]))

# %% [markdown]
# Defaults: η = {eval}`defaults.eta`, γ = {eval}`defaults.gamma`, ρ =
# {eval}`defaults.rho`, λ = {eval}`defaults.lambd`, so the branch coefficients start at
# (a, b, c) = {eval}`defaults.abc` and the threshold at τ = λ/ρ = {eval}`defaults.tau`.
#
# On validation, against the baseline r2's **{eval}`admm_read.base` %**, reading a gap
# under {eval}`admm_read.tie_gap` points as none: {eval}`admm_read.ties` are
# indistinguishable from it; {eval}`admm_read.worse` falls behind. No setting tried is
# clearly better than the default, and one is clearly worse: the guess is not free.

# %% [markdown]
# (sec-appendix-a)=
# ## Appendix A's normalisation before SIGReg
#
# Theorem 1 compares SIGReg with the rate gap $R(I)-R(\hat\Sigma)$ on the set of
# covariances with $\operatorname{tr}\Sigma=d$, and the appendix says how a trained
# network gets there: "Centering and the fixed normalized-energy condition of Theorem 1
# are imposed by the normalization preceding the regularizer."
# `loss.sigreg_normalize=true` does exactly that
# (`aot_lib.objectives.lejepa.energy_normalize`: the projector's outputs centred and
# scaled so that $\operatorname{tr}\hat\Sigma=d$, over the global batch when several
# processes train together under distributed data parallel, DDP). The
# paper describes the normalised form; whether it trains better at CPU scale is a
# measurement:

# %% tags=["hide-input"]
plain, normed = (next(r for r in rows if r["run"] == k)
                 for k in ("r2_lr2e-3_proj64", "r3_normalize"))
assert one_seed_side(normed["val"] - plain["val"]) == "worse", "the text: it hurts"
assert not load_config(None)["loss"]["sigreg_normalize"], "the text: the default is off"
appendix_a = phrases(plain=f"{plain['val']:.2f}", normed=f"{normed['val']:.2f}",
                     diff=f"{normed['val'] - plain['val']:+.2f}",
                     epochs=plain["scale"].rsplit(", ", 1)[-1])

# %% [markdown]
# Without the normalisation (r2) the linear probe reaches **{eval}`appendix_a.plain` %**
# on validation, with it (r3) **{eval}`appendix_a.normed` %** ({eval}`appendix_a.diff`
# points, same {eval}`appendix_a.epochs`): at this scale the normalisation hurts. The
# default (`loss.sigreg_normalize`) stays **off**; the paper's appendix describes the
# normalised form.

# %% [markdown]
# (sec-theorem1-practice)=
# ## Theorem 1, measured while training
#
# With `monitor.every` set, the trainer logs Theorem 1's two sides on a fixed batch (the
# first `monitor.images` training images, un-augmented): the sliced Epps-Pulley
# discrepancy of the normalised embeddings, its covariance part
# $\tfrac{2C_w}{d(d+2)}\|\hat\Sigma-I\|_F^2$ and the rate gap $R(I)-R(\hat\Sigma)$ at
# the $\varepsilon$ of `monitor.eps`, both printed below (`aot_lib.training.monitors`);
# and the effective rank of the encoder's features and of the embeddings (RankMe: the
# exponential of the entropy of the singular values scaled to sum to 1; at most the
# width). Near $\Sigma=I$ the theorem makes the ratio of the covariance part to the
# rate gap tend to $8C_w/(\theta^2 d(d+2))$ (dotted in {numref}`fig-monitors`), with
# $C_w$ the constant of SIGReg's weight function ({ref}`in closed form <sec-cw>`) and
# $\theta=c/(1+c)$, $c=d/\varepsilon^2$ ({ref}`the rate gap's expansion
# <sec-rate-gap>`).

# %% tags=["hide-input"]
# the 10-epoch run when it is recorded, else the sweep's best run
best = max(rows, key=lambda x: x["val"])["run"] if rows else None
if main is not None:
    best, r = main_dir.name, main
elif best:
    r = runs[best]
if best:
    with open(r["dir"] / "metrics.csv") as fh:
        logged = list(csv.DictReader(fh))
    cfg = load_config(r["dir"] / "config.yaml")
    d, eps = cfg["projector"]["out_dim"], cfg["monitor"]["eps"]
    cw = cw_quadrature(cfg["loss"]["t_max"], cfg["loss"]["n_points"])
    print(f"run {best}: {r['source']}")
    print(f"embedding width d = {d}, eps = {eps}, "
          f"fixed batch: the first {cfg['monitor']['images']} training images")

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The monitors of the run named above, on its fixed batch. Left: SIGReg per sample and its covariance part (log scale) with the rate gap $R(I)-R(\\hat\\Sigma)$ (dashed, right axis). Middle: covariance part over rate gap, against Theorem 1's limit at $\\Sigma=I$ (dotted). Right: RankMe of the encoder's features and of the projector's embeddings.", "name": "fig-monitors"}}
if best and any(x.get("theorem1/rate_gap") for x in logged):
    plot_monitors(logged, limit=limit_ratio(d, eps, cw))
    plt.show()

# %% [markdown]
# (sec-audit)=
# ## A white-box audit of the trained network
#
# AoT-ADMM's layers were derived as iterations of ADMM on the compression + sparsity
# objective (chapter {ref}`ch-admm`). Training is free to move every coefficient, so
# whether the trained layers still behave like those iterations is a question for the
# trained weights. Per layer, at the end of the run named above (the 10-epoch run; the
# sweep's best where that one is not recorded), on the fixed batch
# (`aot_lib.training.monitors.audit_layers`): the compression term $R^c(Z\mid U^\ell)$
# of the layer's input and output state with the layer's own subspaces (tokens at unit
# RMS; MSSA was derived as a descent step on it), the fraction of exact zeros and the
# mean $|V^\ell|$, the primal residual $\|Z^\ell-V^\ell\|/\|Z^\ell\|$, and the branch
# coefficients and threshold against their ADMM starting values
# ({numref}`tbl-recipe-layer-audit`).

# %% tags=["hide-input"]
if best and "monitors" in r["metrics"]:
    mon = r["metrics"]["monitors"]
    hp = admm_settings(cfg)
    eta, gamma, rho = hp["eta"], hp["gamma"], hp["rho"]
    a0, b0, c0 = admm_coefficients(eta, gamma, rho)
    tau0 = hp["lambd"] / rho
    layers = sorted({int(k.split("/")[1][1:]) for k in mon if k.startswith("audit/")})
    audit = [dict(layer=i, **{k.split("/")[2]: v for k, v in mon.items()
                              if k.startswith(f"audit/l{i}/")}) for i in layers]
    for a in audit:
        a["drc"] = a["rc_out"] - a["rc_in"]
        a["tau"] = f"{a['tau_mean']:.3f} ({a['tau_min']:.3f}–{a['tau_max']:.3f})"
    display(Table(
        audit,
        # Unicode, not \\(R^c\\): the header showed raw TeX in the book (issue 59)
        [Col("layer"), Col("rc_in", "Rᶜ in", ".2f"), Col("rc_out", "Rᶜ out", ".2f"),
         Col("drc", "change", "+.2f"), Col("zeros", "zeros in V", ".1%"),
         Col("l1", "mean |V|", ".3f"), Col("primal", "‖Z−V‖/‖Z‖", ".3f"),
         Col("a", "a", ".3f"), Col("b", "b", ".3f"), Col("c", "c", ".3f"),
         Col("tau", "τ mean (min–max)")],
        caption=f"White-box audit of {best} after {r['metrics']['step']} steps",
        name="tbl-recipe-layer-audit",
        notes=[f"ADMM start: a, b, c = {a0:.3f}, {b0:.3f}, {c0:.3f} (η = {eta}, "
               f"γ = {gamma}, ρ = {rho}) and τ = λ/ρ = {tau0:.3f}; "
               "τ = softplus(τ_raw) stays positive.",
               "A negative change: the layer lowered its compression term, as the MSSA "
               "step of the derivation does."],
    ))
    audit_read = phrases(
        lowering=sum(a["drc"] < 0 for a in audit), layers=len(audit), a0=f"{a0:.2f}",
        a=f"{min(a['a'] for a in audit):.2f}–{max(a['a'] for a in audit):.2f}",
        tau0=f"{tau0:.2f}",
        tau=f"{min(a['tau_min'] for a in audit):.3f}–"
            f"{max(a['tau_max'] for a in audit):.3f}")

# %% [markdown]
# {eval}`audit_read.lowering` of {eval}`audit_read.layers` layers lower their
# compression term (measured with the learned, non-orthonormal $U$; the control below
# orthonormalises it); the identity branch *a* moved from {eval}`audit_read.a0` to
# {eval}`audit_read.a`, and the thresholds from {eval}`audit_read.tau0` to
# {eval}`audit_read.tau`.

# %% [markdown]
# Where the class token looks, layer by layer (heads averaged), on four images
# ({numref}`fig-cls-attention`):

# %% tags=["hide-input"]
# The trained encoder: a recorded run's as users load it (aot_lib.from_pretrained on the
# run's safetensors export, sha256-checked), else the checkpoint of a run trained here.
encoder = enc_source = None
if best and (r["dir"] / "encoder" / "config.json").exists():
    enc_source = r["dir"] / "encoder"
    encoder = aot_lib.from_pretrained(enc_source)
    run_cfg = load_config(r["dir"] / "config.yaml")
elif best and (r["dir"] / "last.ckpt").exists():
    enc_source = r["dir"] / "last.ckpt"
    encoder, ckpt = load_encoder(enc_source)
    run_cfg = ckpt["config"]
if encoder is not None:
    mean, std = normalization_stats("cifar10")
    size = run_cfg["views"]["global_size"]
    print(f"weights: {enc_source.relative_to(ROOT)}")
else:
    print("no trained encoder recorded for this run")

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The class token's attention to the patches (heads averaged; brighter: more attention), one row per image, one column per layer, beside the image as the encoder sees it; one logarithmic colour scale for all maps, its bar on the right.", "name": "fig-cls-attention"}}
if encoder is not None:
    images, source, _ = example_images("cifar")
    x = prepare_images(images, size, mean, std)
    att = cls_attention(encoder, x)
    patches_per_side = size // encoder.patch_size
    plot_cls_attention(att, x, mean, std, grid=(patches_per_side, patches_per_side))
    plt.show()
    print(f"images: {source}")

# %% [markdown]
# The figure averages the heads. {numref}`fig-attention-panel` shows each head apart, on
# one colour scale with its bar, for the trained encoder and for the same network at its
# initialisation (built as the run built it, from the run's seed), so what training
# changed is one click away.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The class token's attention to the patches of the same four images, per layer and per head (or their mean), for the trained encoder and for its initialisation; one colour scale for both, its bar on the right. Computed for every setting when the page was built.", "name": "fig-attention-panel"}}
if encoder is not None:
    untrained = initial_encoder(run_cfg)
    maps = {"trained": att, "at initialisation": cls_attention(untrained, x)}
    shown = x * torch.tensor(std).view(3, 1, 1) + torch.tensor(mean).view(3, 1, 1)
    display(attention_panel(maps, grid=(patches_per_side, patches_per_side),
                            images=shown))

# %% [markdown]
# (sec-audit-control)=
# ### Against the untrained network, with orthonormal bases
#
# Two controls for the audit of {numref}`tbl-recipe-layer-audit`, both in
# {numref}`tbl-recipe-audit-control`. First, $R^c(Z\mid U)$ of the paper's Eq. (7)
# assumes each $U_k$ has orthonormal columns; the learned $U_k$ do not, so here each
# head's basis is orthonormalised (QR) first, which measures the subspaces alone.
# Second, the same table for the network at initialisation (the weights the run started
# from: `aot_lib.book.whitebox.initial_encoder`, the same config and seed): a layer that
# lowers $R^c$ only after training learned to. The control reads its own few images,
# not the monitor's fixed batch, so compare its two columns with each other rather
# than with the table above.

# %% tags=["hide-input"]
if encoder is not None:
    n_img = pick(10, 10)  # one image per CIFAR-10 class (the photographs without data)
    imgs, img_source, _ = example_images("cifar", n=n_img)
    xa = prepare_images(imgs, size, mean, std)
    init = initial_encoder(run_cfg)
    trained_rows = audit_layers(encoder, xa, orthonormal=True)
    init_rows = audit_layers(init, xa, orthonormal=True)
    control = [
        dict(layer=i + 1, t=t["rc_out"] - t["rc_in"], i=u["rc_out"] - u["rc_in"],
             tp=t.get("primal"), ip=u.get("primal"))
        for i, (t, u) in enumerate(zip(trained_rows, init_rows))
    ]
    display(Table(
        control,
        [Col("layer"), Col("t", "Rᶜ change, trained", "+.3f"),
         Col("i", "Rᶜ change, at init.", "+.3f"),
         Col("tp", "‖Z−V‖/‖Z‖, trained", ".3f"),
         Col("ip", "‖Z−V‖/‖Z‖, at init.", ".3f")],
        caption="The audit with orthonormalised bases, trained against untrained "
        f"({len(xa)} images: {img_source})",
        name="tbl-recipe-audit-control"))
    down_t = sum(c["t"] < 0 for c in control)
    down_i = sum(c["i"] < 0 for c in control)
    primal = [c["tp"] for c in control]
    primal_init = [c["ip"] for c in control]
    summed = {k: sum(c[k] for c in control) for k in ("t", "i")}
    # a layer whose residual is above this has not reached Z = V (the text's reading)
    CONVERGED_BELOW = 0.05
    # the images differ with and without AOT_DATA: the text gives the counts, and
    # reads them by a rule it states, so it holds for either
    control_read = phrases(
        trained=down_t, initial=down_i, layers=len(control), images=len(xa),
        primal=f"{min(primal):.2f}–{max(primal):.2f}",
        primal_init=f"{min(primal_init):.2f}–{max(primal_init):.2f}",
        closer=sum(t < i for t, i in zip(primal, primal_init)),
        threshold=f"{CONVERGED_BELOW:g}",
        unconverged=sum(p > CONVERGED_BELOW for p in primal),
        summed_t=f"{summed['t']:+.1f}", summed_i=f"{summed['i']:+.1f}")

# %% [markdown]
# With orthonormal bases, {eval}`control_read.trained` of {eval}`control_read.layers`
# trained layers lower their compression term, against {eval}`control_read.initial` of
# {eval}`control_read.layers` at initialisation. The primal residual ‖Z−V‖/‖Z‖ of the
# trained layers is {eval}`control_read.primal`, against
# {eval}`control_read.primal_init` at initialisation; training brought
# {eval}`control_read.closer` of {eval}`control_read.layers` layers closer to Z = V. An
# ADMM iteration run to consistency drives it to 0 (Z = V at a solution), and each
# layer here is one step of the iteration, not a solved subproblem. Reading a residual
# above {eval}`control_read.threshold` as a layer that has not reached Z = V,
# {eval}`control_read.unconverged` of the {eval}`control_read.layers` trained layers are
# ADMM-shaped steps rather than the iterates of a converged ADMM solver.

# %% [markdown]
# ## Exercises
#
# 1. **Where the coefficients start.** With `aot_lib.models.admm_coefficients`, compute
#    $(a, b, c)$ for the defaults and for $\eta=0.1$ and $0.4$ (the sweep's a1 and a2).
#    Which of the three does $\eta$ move most, and how far did training move each in
#    the audit?
# 2. **Why orthonormal bases.** Take one layer's $U$ of the trained encoder
#    (`block.mssa.subspaces()`) and compare $R^c(Z\mid U)$ computed with it and with
#    `aot_lib.training.monitors.orthonormal_bases(U)` on the same tokens. Explain the
#    difference from $U_k^\top U_k \neq I$.
# 3. **Ties.** With `aot_lib.evidence.stats.PAPER_LARGEST_GAP`, which runs of
#    {numref}`tbl-recipe-tuning-runs` are indistinguishable from the best, and would one
#    more seed per run change that?
# 4. **Another score for the search.** Rank the candidates of
#    {numref}`tbl-recipe-search-screening` by their final validation k-NN
#    (`evidence.search_rows(ROOT)`, keys `<family>_knn`) instead of the linear probe.
#    Do the same two candidates reach the finals? Which score would you have fixed
#    before the runs, and why?
# 5. **Your machine's half hour.** Time one step of the recipe on your machine
#    (`python scripts/recipe_search.py time --repeats 3 --out my_times.json` writes the
#    step times of every candidate). How many epochs of the recipe
#    fit in 30 minutes there, and how many PFLOP a second does your machine sustain on
#    this workload (`aot_lib.book.benchmarks.pretraining_flops`)? Redraw
#    {numref}`fig-time-to-accuracy` on your clock.
# 6. **What bf16 costs on your CPU.** Run `AOT_BENCH_DIR=runs/bench python
#    benchmarks/bench_precision.py` (it writes a record like those behind
#    {numref}`tbl-bf16-cpu` into `runs/bench/`, beside the recorded ones) and read it
#    with `aot_lib.book.round2.precision_table`. Does your CPU list `avx512_bf16` or
#    `amx_bf16` among its flags, and is bf16-mixed faster there for any family?

# %% [markdown]
# ## What we learned
#
# * {numref}`tbl-recipe-tuning-runs` says which knobs
#   moved the linear probe in 3 epochs; the learning rate of an 800-epoch schedule is
#   not the one of a 3-epoch schedule.
# * The normalisation of Appendix A is measured, not assumed; the default follows the
#   measurement and the paper's form is one switch away.
# * The audit reads the trained network as the optimiser it was derived from: whether
#   its layers still lower the compression term, how sparse $V$ is, and how far the
#   learned coefficients and thresholds moved from the ADMM values they started at.
# * The recipe search, scored on validation data only with one budget for every family,
#   picked {eval}`recipe_cost.candidate` at {eval}`recipe_cost.epochs` epochs: mean
#   validation linear top-1 {eval}`finalists.better_mean` % over the three families at
#   full length.
# * At that recipe AoT-ADMM scores {eval}`goal.mean` % CIFAR-10 linear on the test split
#   over {eval}`goal.n` seeds (the best {eval}`goal.best` %): the {eval}`goal.top1` %
#   goal is not reached.
# * Round 2 took wall time on the slower CPU as its clock and picked
#   {eval}`final2.better`. Its {eval}`goal_run.seeds` goal runs, each alone on the
#   machine, score {eval}`goal_run.mean` % ({eval}`goal_run.ci`): not the
#   {eval}`rule2.top1` % either. They took about half the half hour, because the clock
#   that set their length ran on a machine {eval}`why.factor` times slower under the
#   same CPU name.
# * bf16-mixed is slower than fp32 on these CPUs, and at equal steps it
#   {eval}`bf16_runs.verdict` fp32's accuracy within the seed spread.
# * With orthonormal bases, {eval}`control_read.trained` of {eval}`control_read.layers`
#   trained layers lower the compression term against {eval}`control_read.initial` at
#   initialisation, and summed over the layers it changes by
#   {eval}`control_read.summed_t` trained against {eval}`control_read.summed_i` (on
#   {eval}`control_read.images` images, not the monitor's batch).

# %% [markdown] tags=["remove-cell"]
# % aot-jupyterlab-key
# % Written after a build by `python book/_ext/aot_book_build jupyterlab-key`;
# % the book leaves this cell out (its tag remove-cell).
# ##### This chapter's references, as the book numbers them
#
# In the book these are links; in JupyterLab this cell gives them their numbers and
# titles, and the works the chapter cites their full references.
#
# (ch-training)=
# ###### Training AoT-ADMM with LeJEPA, at CPU scale
#
# (sec-equal-tuning)=
# ###### One tuning budget for every family
#
# :::{figure}
# :label: tbl-recipe-tuning-runs
# :kind: table
# :enumerator: 7.1
# CPU recipe sweep: AoT-ADMM, width 192, depth 6, CIFAR-10, 3 epochs
# :::
#
# (ch-tables-1-3)=
# ###### Tables 1 and 3 and Figure 3, at CPU scale
#
# :::{figure}
# :label: tbl-recipe-ten-epoch-run
# :kind: table
# :enumerator: 7.2
# AoT-ADMM, width 192, depth 6, CIFAR-10, 10 epochs, the tuned recipe
# :::
#
# :::{figure}
# :label: tbl-recipe-machines
# :kind: table
# :enumerator: 7.6
# The recipe's 4,290 steps (c1_local2) by each idle measurement, in minutes per family
# :::
#
# :::{figure}
# :label: tbl-recipe-search-screening
# :kind: table
# :enumerator: 7.3
# The recipe search's screening runs: validation linear top-1 per family
# :::
#
# :::{figure}
# :label: fig-search-curves
# :enumerator: 7.1
# The recipe search’s screening runs: validation k-NN accuracy after each epoch against
# modelled pretraining time (steps times the idle, interleaved step time), one panel per
# family, one line per candidate. Each run is its candidate’s schedule of 30 modelled
# minutes on the search’s clock, compressed to 30 % of the epochs.
# :::
#
# :::{figure}
# :label: tbl-recipe-search-finalists
# :kind: table
# :enumerator: 7.4
# The recipe search's finalists: validation linear top-1 at full length and in screening
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
# :label: tbl-recipe-time-to-accuracy
# :kind: table
# :enumerator: 7.5
# Each curve of the figure against its family's first recipe, in modelled minutes
# :::
#
# :::{figure}
# :label: tbl-bf16-cpu
# :kind: table
# :enumerator: 7.7
# bf16-mixed against fp32 on each CPU type measured: one pretraining step of
# cpu30_aot_admm_cifar10.yaml, per family
# :::
#
# :::{figure}
# :label: tbl-bf16-check
# :kind: table
# :enumerator: 7.8
# bf16-mixed against fp32 at equal steps: round 2's base screening run of AoT-ADMM,
# validation top-1 seed by seed
# :::
#
# :::{figure}
# :label: tbl-search2-cpu-types
# :kind: table
# :enumerator: 7.9
# One step of every round-2 candidate on two CPU types: the AMD EPYC AVX2 against the
# clock's AMD EPYC AVX512
# :::
#
# :::{figure}
# :label: tbl-recipe-search2-screening
# :kind: table
# :enumerator: 7.10
# Round 2 of the recipe search, screening: validation linear top-1 per family
# :::
#
# (sec-quick-probe)=
# ###### The quick probe protocol
#
# :::{figure}
# :label: tbl-recipe-search2-finalists
# :kind: table
# :enumerator: 7.11
# Round 2's finalists: validation linear top-1 at full length and in screening
# :::
#
# :::{figure}
# :label: tbl-round2-goal
# :kind: table
# :enumerator: 7.12
# The round-2 goal: AoT-ADMM on CIFAR-10, 60 % in 30 wall minutes on an idle 2-core AMD
# EPYC, seed by seed
# :::
#
# :::{figure}
# :label: fig-round2-goal
# :enumerator: 7.3
# The round-2 goal runs, one curve a seed: the online k-NN top-1 on validation images
# against its wall minutes, and a hollow marker at its final linear test top-1 where its
# pretraining ended; dotted, the goal of 60 % in 30 minutes.
# :::
#
# :::{figure}
# :label: tbl-recipe-admm-hyperparameters
# :kind: table
# :enumerator: 7.13
# ADMM hyper-parameters: AoT-ADMM, width 192, depth 6, CIFAR-10, 3 epochs
# :::
#
# :::{figure}
# :label: fig-monitors
# :enumerator: 7.4
# The monitors of the run named above, on its fixed batch. Left: SIGReg per sample and
# its covariance part (log scale) with the rate gap $R(I)-R(\hat\Sigma)$ (dashed, right
# axis). Middle: covariance part over rate gap, against Theorem 1’s limit at $\Sigma=I$
# (dotted). Right: RankMe of the encoder’s features and of the projector’s embeddings.
# :::
#
# (sec-cw)=
# ###### The constant $C_w$ in closed form
#
# (sec-rate-gap)=
# ###### The log-det expansion behind the rate gap
#
# (ch-admm)=
# ###### ADMM, unrolled step by step
#
# :::{figure}
# :label: tbl-recipe-layer-audit
# :kind: table
# :enumerator: 7.14
# White-box audit of cpu_aot_admm_cifar10 after 1950 steps
# :::
#
# :::{figure}
# :label: fig-cls-attention
# :enumerator: 7.5
# The class token’s attention to the patches (heads averaged; brighter: more attention),
# one row per image, one column per layer, beside the image as the encoder sees it; one
# logarithmic colour scale for all maps, its bar on the right.
# :::
#
# :::{figure}
# :label: fig-attention-panel
# :enumerator: 7.6
# The class token’s attention to the patches of the same four images, per layer and per
# head (or their mean), for the trained encoder and for its initialisation; one colour
# scale for both, its bar on the right. Computed for every setting when the page was
# built.
# :::
#
# :::{figure}
# :label: tbl-recipe-audit-control
# :kind: table
# :enumerator: 7.15
# The audit with orthonormalised bases, trained against untrained (10 images: CIFAR-10
# (official splits, JPEG q75 re-encoding), test images)
# :::
