"""The short tuning runs chapter 7 reads: the CPU recipe sweep (``configs/cpu/sweep/r*.yaml``), the ADMM
hyper-parameter runs (``a*.yaml``) and the recipe search's screening (``configs/cpu/search/``), as rows and tables.

Every number comes from the runs' records under ``results/cpu/``; the chapter keeps only what its sentences claim
(its ``assert`` lines) and the sentences themselves.
"""
from __future__ import annotations

import math
from pathlib import Path
from statistics import mean

from ..config_format import flatten
from ..evidence import TABLE13_NAMES
from ..evidence.stats import PAPER_LARGEST_GAP
from .pages import Admonition
from .recorded import is_recorded, load_recorded_run
from .tables import Col, Table

__all__ = ["FAMILY_NAMES", "load_sweep", "recipe_sweep_rows", "recipe_sweep_table", "admm_settings", "admm_rows",
           "admm_table", "one_seed_side", "config_changes", "search_table", "finalists_table", "run_scale", "SCORE_COLS", "UNREAD"]

#: The families of the recipe search, as the tables name them (the families of Tables 1 and 3).
FAMILY_NAMES = TABLE13_NAMES

SCORE_COLS = [Col("val", "linear top-1 (%), validation", ".2f"),
              Col("linear", "linear top-1 (%), test", ".2f"),  # first probe: UNREAD
              Col("knn", "k-NN top-1 (%), test", ".2f")]
UNREAD = ("Validation: the newest probe of the run; test: its first probe that read "
          "the test split (an empty cell: no probe of that run ever read it). A run "
          "probed again keeps every probe in its record (probe.json, then reprobes/).")


def load_sweep(root: Path, smoke_steps: int) -> tuple[dict, list[Admonition]]:
    """The sweep's recorded runs by config stem (``r*`` then ``a*``), and the notices the page shows about them.
    With none recorded, the first configuration is trained now for ``smoke_steps`` steps (notice: "Trained now");
    with neither records nor data, no run and a warning that names the fix."""
    from ..data.datasets import DataError
    from ..training.config import load_config

    sweep_dir = root / "configs" / "cpu" / "sweep"
    configs = sorted(sweep_dir.glob("r*.yaml")) + sorted(sweep_dir.glob("a*.yaml"))
    runs, notices = {}, []
    for f in configs:
        name = load_config(f)["run"]["name"]
        if is_recorded(root, f"sweep/{name}", f"sweep/{f.name}"):
            runs[f.stem] = load_recorded_run(root, f"sweep/{name}", f"sweep/{f.name}", smoke_steps=0)
    if not runs:
        try:  # nothing recorded: the first configuration, at smoke scale, now
            f = configs[0]
            runs[f.stem] = load_recorded_run(root, "sweep/" + load_config(f)["run"]["name"], f"sweep/{f.name}",
                                             smoke_steps=smoke_steps)
        except DataError:
            notices.append(Admonition(
                "No recorded runs and no data",
                "results/cpu/sweep/ holds no recorded run and CIFAR-10 is not configured: set AOT_DATA to a folder "
                "holding CIFAR-10 (see the README) and build again.", kind="warning"))
    notices += [Admonition("Trained now", f"{r['dir'].name}: {r['source']}.", kind="note")
                for r in runs.values() if not r["recorded"]]
    return runs, notices


def run_scale(cfg: dict) -> str:
    """'width 192, depth 6, CIFAR-10, 3 epochs', from a run's own config."""
    ov = cfg["model"]["overrides"]
    data = cfg["data"]["name"].upper().replace("CIFAR", "CIFAR-")
    return f"width {ov['embed_dim']}, depth {ov['depth']}, {data}, {cfg['optim']['epochs']} epochs"


def _first_test(r: dict) -> dict:
    """The run's first probe that read the test split ({} if none ever did)."""
    return next((e for e in r["evaluations"] if e.get("test_images")), {})


def _slashed(values) -> str:
    """A probe grid's values as the tables write them: ``0.001/0.003/0.01`` (one value alone as it is)."""
    return "/".join(f"{x:g}" for x in (values if isinstance(values, (list, tuple)) else [values]))


def _grid(probe: dict) -> str:
    """The probe's grid of learning rates and weight decays (probe.json)."""
    return f"lr {_slashed(probe['lr'])} × weight decay {_slashed(probe['weight_decay'])}"


def _scores(stem: str, r: dict, cfg: dict) -> dict:
    """What every row of the sweep's tables shows of a run: its newest probe's best validation score, the grid it
    searched, its first test-reading probe's scores (None: never read), how many probes, its scale."""
    p, t = r["probe"], _first_test(r)
    return dict(run=stem, val=max(p["linear_val_top1"].values()), grid=_grid(p["probe"]),
                linear=t.get("linear_top1"), knn=t.get("knn_top1"), probes=len(r["evaluations"]),
                scale=run_scale(cfg))


def recipe_sweep_rows(runs: dict) -> list[dict]:
    """One row per recipe-sweep run (``r*``): what it changed and its scores."""
    from ..training.config import load_config

    rows = []
    for stem, r in runs.items():
        if stem.startswith("r"):
            cfg = load_config(r["dir"] / "config.yaml")
            rows.append(dict(_scores(stem, r, cfg), change=(cfg.get("description") or "").split(": ", 1)[-1],
                             lr=cfg["optim"]["lr"], proj=cfg["projector"]["out_dim"],
                             slices=cfg["loss"]["num_slices"], norm="yes" if cfg["loss"]["sigreg_normalize"] else "no",
                             steps=r["metrics"]["step"], wall=r["run"]["wall_time_s"] / 60,
                             commit=str(r["run"].get("commit"))[:8]))
    return rows


def _grid_notes(rows: list[dict]) -> list[str]:
    """A note when the rows' probes searched different grids."""
    found = {}
    for r in rows:
        found.setdefault(r["grid"], []).append(r["run"].split("_")[0])
    if len(found) < 2:
        return []
    return ["The probes searched different grids: " + "; ".join(
        f"{g} ({', '.join(runs)})" for g, runs in found.items()) + "."]


def _scales(rows: list[dict]) -> str:
    return "; ".join(sorted({r["scale"] for r in rows}))


def validation_noise(rows: list[dict], runs: dict) -> float:
    """One binomial standard error (points) of the difference of two independent accuracies near the rows' mean
    validation accuracy, on the smallest validation split the sweep's probes held out (probe.json)."""
    n = min(round(r["probe"]["linear_val_fraction"] * r["probe"]["train_images"]) for r in runs.values())
    p = mean(r["val"] for r in rows if r["val"] is not None) / 100
    return 100 * math.sqrt(2 * p * (1 - p) / n)


def one_seed_side(diff: float) -> str:
    """One seed gives no interval: a gap under PAPER_LARGEST_GAP (the largest the paper calls comparable) is read
    as a tie, a larger one as a difference."""
    return "tie" if abs(diff) < PAPER_LARGEST_GAP else "better" if diff > 0 else "worse"


def recipe_sweep_table(rows: list[dict], runs: dict) -> Table:
    """Table ``tbl-recipe-tuning-runs``: the recipe sweep, a row per run."""
    return Table(
        rows,
        [Col("run"), Col("change", "configuration"), Col("lr", "lr", ".0e"), Col("proj", "projector out"),
         Col("slices", "SIGReg slices"), Col("norm", "App. A norm."), Col("steps"),
         Col("wall", "pretraining (min)", ".1f"), *SCORE_COLS, Col("commit")],
        caption=f"CPU recipe sweep: AoT-ADMM, {_scales(rows)}",
        name="tbl-recipe-tuning-runs",
        notes=["One seed per configuration: a difference under "
               f"{PAPER_LARGEST_GAP:.2f} points (the largest gap the paper itself "
               "calls comparable) is read as no difference. The validation split alone "
               "blurs a difference by about "
               f"{validation_noise(rows, runs):.1f} points (one binomial standard error of the "
               "difference of two accuracies on it), seed noise aside.",
               "Linear probe: the quick protocol of the training chapter (features of "
               "un-augmented images; the lr, and the weight decay where its grid has "
               "two values, chosen on the validation split, whose best score is the "
               "validation column).", UNREAD, *_grid_notes(rows)])


def config_changes(run_config: Path, recipe_config: Path) -> list[tuple[str, object, object]]:
    """``(key, run's value, recipe's value)`` for every setting a run's config changes against a recipe's, leaving
    out what names or watches a run rather than trains it (description, run, monitor, model.compile)."""
    from ..training.config import load_config

    run, recipe = flatten(load_config(run_config)), flatten(load_config(recipe_config))
    same_run = ("description", "run.", "monitor.", "model.compile")
    return [(k, run[k], recipe.get(k)) for k in sorted(run) if run[k] != recipe.get(k) and not k.startswith(same_run)]


def admm_settings(cfg: dict) -> dict:
    """η, γ, ρ, λ of the AoT-ADMM a config builds (its overrides over the model's defaults), read from the built
    model's first layer."""
    from ..models.registry import create_model

    layer = create_model(cfg["model"]["name"], num_classes=0, **cfg["model"]["overrides"]).blocks[0]
    return dict(eta=layer.eta, gamma=layer.gamma, rho=layer.rho, lambd=layer.lambd)


def admm_rows(runs: dict, baseline: str) -> list[dict]:
    """One row per ADMM hyper-parameter run (``a*``) and the ``baseline`` they move from: the settings as built,
    the branch coefficients they start at, the scores."""
    from ..models import admm_coefficients
    from ..training.config import load_config

    rows = []
    for stem, r in runs.items():
        if stem.startswith("a") or stem == baseline:
            cfg = load_config(r["dir"] / "config.yaml")
            hp = admm_settings(cfg)
            a, b, c = admm_coefficients(hp["eta"], hp["gamma"], hp["rho"])
            rows.append(dict(_scores(stem, r, cfg), eta=hp["eta"], lambd=hp["lambd"],
                             gamma_rho=f"{hp['gamma']:g}, {hp['rho']:g}", abc=f"{a:.2f}, {b:.2f}, {c:.2f}"))
    return rows


def admm_table(rows: list[dict]) -> Table:
    """Table ``tbl-recipe-admm-hyperparameters``."""
    return Table(
        rows,
        [Col("run"), Col("eta", "η"), Col("gamma_rho", "γ, ρ"), Col("lambd", "λ (= ρτ at start)"),
         Col("abc", "(a, b, c) at start"), *SCORE_COLS],
        caption=f"ADMM hyper-parameters: AoT-ADMM, {_scales(rows)}",
        name="tbl-recipe-admm-hyperparameters",
        notes=["One seed per row; scores as in the sweep table above.", UNREAD, *_grid_notes(rows),
               "Every row has the same model size and FLOPs, so no wall time is shown "
               "(each run's is in its run.json; a4's ran beside other work)."])


def search_table(root: Path, first_recipe_epochs: int) -> tuple[Table, dict]:
    """Table ``tbl-recipe-search-screening`` (:func:`aot_lib.evidence.search_rows`, with AoT-ADMM's pretraining
    PFLOP at full length), and the facts its notes state, for the chapter to check its sentences against:
    ``rows``, ``done`` (row, family) pairs recorded, ``screened`` (rows with all three), ``se_diff`` (one binomial
    standard error of a difference on the 5,000-image validation split near the mean score)."""
    from .. import evidence
    from ..training.config import load_config
    from .benchmarks import pretraining_flops

    search = evidence.search_rows(root)
    for r in search:  # AoT-ADMM's pretraining FLOPs at full length: what 30 minutes buy
        cost = pretraining_flops(load_config(root / "configs" / "cpu" / "search" / f"{r['candidate']}_aot_admm.yaml"))
        r["pflops"] = cost["total"] * r["full_epochs"] / r["epochs"] / 1e15
    done = [(r, f) for r in search for f in FAMILY_NAMES if r[f] is not None]
    lr_grids = {r[f + "_grid"] for r, f in done}
    grid_text = ", ".join(_slashed(g) for g in sorted(lr_grids))
    top_picks = sum(r[f + "_lr"] == max(r[f + "_grid"]) for r, f in done)
    near = mean(r[f] for r, f in done) / 100 if done else 0.45
    se_diff = 100 * math.sqrt(2 * near * (1 - near) / 5000)
    table = Table(
        search,
        # the scores first: on a phone they are what shows before the table scrolls
        [Col("candidate"), Col("mean", "mean (%)", ".2f"),
         *[Col(f, f"{n}, val. linear (%)", ".2f") for f, n in FAMILY_NAMES.items()],
         Col("width"), Col("depth"), Col("patch"), Col("local", "local views"),
         Col("full_epochs", "epochs in 30 min"), Col("epochs", "screening epochs"),
         Col("pflops", "AoT-ADMM PFLOP in 30 min", ".2f")],
        caption="The recipe search's screening runs: validation linear top-1 per family",
        name="tbl-recipe-search-screening",
        notes=["One seed per candidate and family (seed 0). Every candidate keeps the "
               "first recipe's batch 256, lr 2e-3, projector 1024-1024-64 and 256 SIGReg "
               "slices; c0 is that recipe's model and views, given the epochs that fit "
               f"30 minutes on the search's clock (the first recipe ran {first_recipe_epochs}"
               "). An empty cell: not recorded yet.",
               "Each run's probe chose its own learning rate on the validation split (lr "
               f"grid {grid_text}). It took the grid's top value in {top_picks} of "
               f"{len(done)} runs.",
               "AoT-ADMM PFLOP in 30 min: its pretraining at full length, counted as three "
               "times the forward FLOPs of every view, projector and loss (a multiply-add "
               "is 2 FLOPs; matrix products and attention only), so a reader can scale the "
               "30 minutes to another machine.",
               "The validation split holds 5,000 images: one binomial standard error of "
               f"the difference of two accuracies near {100 * near:.0f} % is "
               f"{se_diff:.1f} points, so candidates closer than that are not told apart "
               "by one run each."])
    return table, dict(rows=search, done=done, screened=[r for r in search if r["mean"] is not None], se_diff=se_diff)


def finalists_table(root: Path, round: int, caption: str, name: str, notes: list[str] = ()) -> tuple[Table, list]:
    """A recipe search's finalists at full length beside their screening scores (validation linear top-1, per
    family and the mean; :func:`aot_lib.evidence.finalist_rows`), and the rows, for the chapter to check its
    sentences against. An empty cell: that run is not recorded yet."""
    from .. import evidence

    rows = evidence.finalist_rows(root, round=round)
    table = Table(
        rows,
        [Col("candidate"), Col("place", "place in screening"), Col("epochs"),
         Col("mean", "mean, full (%)", ".2f"), Col("mean_screen", "mean, screening (%)", ".2f"),
         *[c for f, n in FAMILY_NAMES.items()
           for c in (Col(f, f"{n}, full (%)", ".2f"), Col(f + "_screen", f"{n}, screening (%)", ".2f"))]],
        caption=caption, name=name,
        notes=["One seed (seed 0) per finalist and family, validation split only.", *notes])
    return table, rows
