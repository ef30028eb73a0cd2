"""The learning-rate sweeps and the recipe searches, as their records say: each sweep's rows and pick, the
screening runs' validation scores (range-checked before anything ranks them), the finalists and the recipe picked.
"""
from __future__ import annotations

import builtins
import re
from pathlib import Path
from typing import Mapping

from ..probe_grid import lr_scores
from .cells import PRETRAIN_SUFFIX, SUPERSEDED_T2_CHAIN, cell
from .records import checked_accuracy, damaged, newest_result, read_json, read_test_set, read_yaml

__all__ = ["SWEEPS", "sweep_rows", "picked_lr", "table2_lr_sensitivity", "read_test_note", "validation_scores", "SEARCH_FAMILIES",
           "SEARCH_ROUNDS", "search_rows", "FINAL_PREFIX", "finalist_rows", "recipe_pick", "FIRST_RECIPE",
           "ROUND2_PROBE_LR", "ROUND2_WIDER", "ROUND2_STEP_BUDGET_S", "round2_full_epochs",
           "ROUND2_PROXY_FRACTION", "ROUND2_SAME_STEP_AS_BASE", "widened_grid", "round2_ranking", "BF16_CHECK", "bf16_check"]

#: Round 2's screening probe grid, and the one step it is widened by on the side of an edge pick (the rule of
#: scripts/recipe_search2.py, which uses these; here so that the book reads the rule the script applies).
ROUND2_PROBE_LR = [1e-3, 3e-3, 1e-2, 3e-2, 1e-1]
ROUND2_WIDER = {"low": 3e-4, "high": 3e-1}
#: Round 2's lengths: AoT-ADMM's training steps at full length fill this many seconds at the slower CPU's idle step
#: time (3 of the goal's 30 minutes are left for the monitor and the checkpoints); a screening run is this fraction
#: of its full length; the candidates that compute the base's step share one length, from the median of their timings.
ROUND2_STEP_BUDGET_S = 27 * 60
ROUND2_PROXY_FRACTION = 0.3
ROUND2_SAME_STEP_AS_BASE = ("r0_base", "r1_lr1e-3", "r2_lr4e-3", "r4_lambda0.02", "r5_lambda0.15")


def round2_full_epochs(step_s: float, batch: int, train_images: int = 50_000) -> int:
    """Round 2's full length: the whole epochs (of ``train_images`` at ``batch``) whose AoT-ADMM steps fill
    :data:`ROUND2_STEP_BUDGET_S` at ``step_s`` seconds a step, at least 1 (scripts/recipe_search2.py's rule)."""
    return max(1, int(ROUND2_STEP_BUDGET_S / (step_s * (train_images // batch))))


def widened_grid(scores: Mapping) -> list[float] | None:
    """The grid a round-2 screening run is probed again on (``scores``: :func:`validation_scores` of its newest probe,
    ``{"grid", "lr"}``): :data:`ROUND2_PROBE_LR` (or the grid it tried) with one step added on the side where the pick
    sits at the edge; None when the pick is inside, or the grid was widened on that side already (then the run is
    ranked as it is, and the edge reported)."""
    grid, pick = sorted(scores["grid"] or ROUND2_PROBE_LR), scores["lr"]
    if pick == grid[0] and ROUND2_WIDER["low"] < grid[0]:
        return [ROUND2_WIDER["low"], *grid]
    if pick == grid[-1] and grid[-1] < ROUND2_WIDER["high"]:
        return [*grid, ROUND2_WIDER["high"]]
    return None


def round2_ranking(rows: list[dict]) -> list[dict]:
    """Round 2's screening rows (:func:`search_rows` with ``round=2``) ranked by the rule of
    ``scripts/recipe_search2.py``: the mean over the three families rounded to 0.01 points, best first, a tie to the
    earlier candidate. Refuses a screening that is not complete, or has a pick at an edge the widening step would
    still probe (:func:`widened_grid`), naming the first such run and the fix."""
    missing = [f"{r['candidate']} on {f}" for r in rows for f in SEARCH_FAMILIES if r[f] is None]
    if missing:
        raise ValueError(f"{len(missing)} screening runs are not recorded (the first: {missing[0]}): run nice -n 10 "
                         "scripts/evidence_runs.sh search2, record them, then rank")
    edges = [f"{r['candidate']} on {f}" for r in rows for f in SEARCH_FAMILIES
             if widened_grid({"grid": r[f"{f}_grid"], "lr": r[f"{f}_lr"]})]
    if edges:
        raise ValueError(f"{len(edges)} screening picks sit at an edge not yet widened (the first: {edges[0]}): run "
                         "recipe_search2.py widen from a clean checkout, record it, then rank")
    order = {r["candidate"]: i for i, r in enumerate(rows)}
    return sorted(rows, key=lambda r: (-round(r["mean"], 2), order[r["candidate"]]))


#: The equal learning-rate sweep (issue 22): per table and family, the recorded folders (under ``results/cpu``) of
#: its points, each scored on validation data only. AoT-ADMM's 2e-3 and 4e-3 points on CIFAR-10 are the recipe
#: sweep's r2 and r4 (the same recipe); Table 2's 2e-3 points are the runs recorded at 2e-3 before the sweep.
SWEEPS = {
    ("Tables 1/3", "aot_admm"): ("sweep/sweep_lr_aot_admm_1e-3", "sweep/sweep_r2_lr2e-3_proj64", "sweep/sweep_r4_lr4e-3"),
    ("Tables 1/3", "crate"): ("sweep/sweep_lr_crate_1e-3", "sweep/sweep_lr_crate_2e-3", "sweep/sweep_lr_crate_4e-3"),
    ("Tables 1/3", "aot"): ("sweep/sweep_lr_aot_1e-3", "sweep/sweep_lr_aot_2e-3", "sweep/sweep_lr_aot_4e-3"),
    ("Table 2", "aot_admm"): ("sweep/sweep_aot_admm_imagenette_lr1e-3", "cpu_aot_admm_imagenette",
                              "sweep/sweep_aot_admm_imagenette_lr4e-3"),
    ("Table 2", "crate"): ("sweep/sweep_crate_imagenette_lr1e-3", "cpu_crate_imagenette",
                           "sweep/sweep_crate_imagenette_lr4e-3"),
}


def sweep_rows(root: str | Path, sweeps: Mapping = SWEEPS) -> list[dict]:
    """One row per sweep point: ``table``, ``family``, ``lr`` (from the run's own config), the validation linear
    probe (best over the probe's grid, ``val``) and k-NN (``knn_val``) of its newest probe, ``folder``, and
    ``read_test``: whether any probe in the run's history read the test split; a point not recorded yet has ``val``
    None. The newest probe must hold its validation score (it is what is compared)."""
    root, rows = Path(root), []
    for (table, family), folders in sweeps.items():
        for rel in folders:
            folder = root / rel
            row = {"table": table, "family": family, "folder": rel, "lr": None, "val": None, "knn_val": None,
                   "read_test": False}
            if (folder / "probe.json").exists():
                cfg = read_yaml(folder / "config.yaml")
                newest, probe = newest_result(folder, "pretrain")  # the newest probe (later ones are beside the first)
                if "linear_val_best" not in probe:
                    raise ValueError(f"{newest} has no validation score (linear_val_best): probe it again with "
                                     "scripts/reprobe.py")
                row.update(lr=float(cfg["optim"]["lr"]), val=checked_accuracy(newest, probe, "linear_val_best"),
                           knn_val=checked_accuracy(newest, probe, "knn_val_top1"), read_test=read_test_set(folder))
            rows.append(row)
    return rows


def picked_lr(rows: list[dict]) -> dict[tuple[str, str], float | None]:
    """Each (table, family)'s learning rate with the best validation linear probe; None while a point is missing
    (no pick is made on part of the grid)."""
    picks: dict = {}
    for key in dict.fromkeys((r["table"], r["family"]) for r in rows):
        points = [r for r in rows if (r["table"], r["family"]) == key]
        picks[key] = None if any(r["val"] is None for r in points) else max(points, key=lambda r: r["val"])["lr"]
    return picks


def table2_lr_sensitivity(root: str | Path) -> dict:
    """How much Table 2's verdicts rest on AoT-ADMM's learning rate: the superseded 2e-3 chain beside the picked
    4e-3 one at seed 0 (the only seed the 2e-3 chain has), per data set the fine-tuned top-1 of both and AoT-ADMM −
    CRATE with each (``rows``); and what the pick rested on, the sweep's validation scores of the two rates and
    their difference in validation images (``val``, ``val_images``, ``images_apart``)."""
    root = Path(root)
    sweep = {r["lr"]: r for r in sweep_rows(root) if (r["table"], r["family"]) == ("Table 2", "aot_admm")}
    low, high = sweep[0.002], sweep[0.004]
    _, probe = newest_result(root / low["folder"], "pretrain")
    val_images = round(probe["train_images"] * probe["linear_val_fraction"])
    rows = []
    for data, superseded_ft in SUPERSEDED_T2_CHAIN[1].items():
        old = checked_accuracy(*newest_result(root / superseded_ft, "finetune"), "top1")
        new = cell(root, f"cpu_aot_admm_imagenette{PRETRAIN_SUFFIX['aot_admm']}_ft_{data}")[0]
        crate = cell(root, f"cpu_crate_imagenette_ft_{data}")[0]
        rows.append(dict(data=data, superseded=old, picked=new, crate=crate, gap_superseded=old - crate,
                         gap_picked=new - crate))
    return {"rows": rows, "val": {0.002: low["val"], 0.004: high["val"]}, "val_images": val_images,
            "images_apart": round((high["val"] - low["val"]) / 100 * val_images)}


def read_test_note(rows: list[dict]) -> str:
    """What the sweep's points read, over their whole history (:func:`aot_lib.evidence.records.read_test_set`)."""
    seen = [f"{r['family']} at {r['lr']:g} ({r['folder'].rsplit('/', 1)[-1]})" for r in rows if r["read_test"]]
    scored = "Every point is scored by its newest probe, on validation data only."
    if not seen:
        return f"{scored} No probe of any point here ever read the test split."
    return (f"{scored} {len(seen)} of the {len(rows)} points were also probed with the test split earlier in their "
            f"history, before the sweep scored them on validation: {', '.join(seen)}; both probes stay in each "
            "record (probe.json, then reprobes/).")


def validation_scores(folder: str | Path) -> dict | None:
    """A validation-only run's scores, from its newest probe (``probe.json``, or the last of ``reprobes/``: a pick at
    the grid's edge probed again on a wider grid, round 2's rule; None: not recorded yet): ``linear`` (the linear
    probe's best validation top-1 over its learning-rate grid), ``lr`` (the pick), ``knn`` (the final validation
    k-NN), ``grid`` (the rates the probe tried) and ``val_images`` (its validation split); a score the record does not
    hold is None. Refuses a record without the linear score, and a probe of another run's encoder."""
    if not (Path(folder) / "probe.json").is_file():
        return None
    path, probe = newest_result(Path(folder), "pretrain")
    if "linear_val_best" in probe:
        linear = checked_accuracy(path, probe, "linear_val_best")
    elif isinstance(probe.get("linear_val_top1"), dict) and probe["linear_val_top1"]:
        # probes recorded before linear_val_best was written; every rate's score checked before the best is taken
        linear = max(checked_accuracy(path, probe["linear_val_top1"], k) for k in probe["linear_val_top1"])
    else:
        raise damaged(path, "holds no validation linear score (linear_val_best or linear_val_top1)")
    if probe.get("knn_val_top1") is not None:  # ranked and written from too: checked before anything uses it
        checked_accuracy(path, probe, "knn_val_top1")
    settings = probe.get("probe") or {}
    val_images = (round(probe["linear_val_fraction"] * probe["train_images"])
                  if "linear_val_fraction" in probe and "train_images" in probe else None)
    grid = tuple(settings["lr"]) if "lr" in settings else None
    if isinstance(probe.get("linear_val_top1"), Mapping) and probe["linear_val_top1"]:
        try:  # the rates it tried: probe.lr_below / lr_above may have added some to the configured grid
            grid = tuple(sorted(lr_scores(probe["linear_val_top1"])))
        except ValueError as e:
            raise damaged(path, str(e)) from None
    return {"linear": linear, "lr": probe.get("linear_lr"), "knn": probe.get("knn_val_top1"), "grid": grid,
            "val_images": val_images}


#: The families every candidate is screened on, in the order the search runs them.
SEARCH_FAMILIES = ("aot_admm", "crate", "aot")


_SEARCH_EPOCHS = re.compile(r"\((?P<proxy>\d+) of (?P<full>\d+) epochs\)")


#: The recipe searches: round -> its folder, under ``configs/cpu`` for its configs and ``results/cpu`` for its records,
#: whose runs are named ``<folder>_<candidate>_<family>``. Round 1 (issue 37) set the 30-minute recipe; round 2
#: (issue 55) searches what round 1 held fixed, on the slower CPU's wall time.
SEARCH_ROUNDS = {1: "search", 2: "search2"}


def _candidate_order(path: Path) -> tuple:
    """Candidates in the order their search lists them: ``c2`` before ``c10``, ``r2`` before ``r10``."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name))


def search_rows(root: str | Path, round: int = 1) -> list[dict]:
    """A recipe search's screening (:data:`SEARCH_ROUNDS`), a row per candidate of its configs in the search's order:
    its setting (width, depth, patch, local views, batch, lr, projector, SIGReg slices, LeJEPA lambda and the probe's
    configured lr grid ``probe_lr``, from the resolved config), its nominal full length and screening length (epochs),
    and per family ``<family>`` the recorded validation linear top-1 (None: not recorded yet), ``<family>_lr`` the
    probe's pick, ``<family>_grid`` its lr grid, ``<family>_val_images`` its validation split and ``<family>_knn``
    the final validation k-NN (each from the run's newest probe); ``mean`` over the three families (None until all
    three are recorded). ``root`` is the checkout."""
    from ..training.config import load_config

    root = Path(root)
    folder = SEARCH_ROUNDS[round]
    rows = []
    for first in sorted((root / "configs" / "cpu" / folder).glob(f"*_{SEARCH_FAMILIES[0]}.yaml"), key=_candidate_order):
        cand = first.name[: -len(f"_{SEARCH_FAMILIES[0]}.yaml")]
        cfg = load_config(first)
        lengths = _SEARCH_EPOCHS.search(cfg.get("description") or "")
        if not lengths:
            raise ValueError(f"{first}: its description names no '(N of M epochs)': write the search's configs "
                             f"again (python scripts/recipe_search{'' if round == 1 else round}.py configs)")
        ov, views = cfg["model"]["overrides"], cfg["views"]
        row = dict(candidate=cand, width=ov["embed_dim"], depth=ov["depth"], patch=ov.get("patch_size", 8),
                   local=views["n_local"], full_epochs=int(lengths["full"]), epochs=int(lengths["proxy"]),
                   batch=cfg["optim"]["batch_size"], lr=cfg["optim"]["lr"],
                   projector=(cfg["projector"]["hidden_dim"], cfg["projector"]["out_dim"]),
                   slices=cfg["loss"]["num_slices"], lejepa_lambda=cfg["loss"]["lejepa_lambda"],
                   probe_lr=tuple(cfg["probe"]["lr"]))
        for fam in SEARCH_FAMILIES:
            got = validation_scores(root / "results" / "cpu" / folder / f"{folder}_{cand}_{fam}")
            for key, value in (got or dict.fromkeys(("linear", "lr", "knn", "grid", "val_images"))).items():
                row[fam if key == "linear" else f"{fam}_{key}"] = value
        vals = [row[f] for f in SEARCH_FAMILIES]
        row["mean"] = sum(vals) / len(vals) if None not in vals else None
        rows.append(row)
    return rows


_FINALIST = re.compile(r"recipe search (?:round 2 )?finalist (?P<place>\d+) \((?P<cand>[\w.-]+)\): \w+ at full "
                       r"length \((?P<epochs>\d+) epochs\)")
#: The run names of a round's finalists: ``<prefix>_<candidate>_<family>``.
FINAL_PREFIX = {1: "final", 2: "final2"}


def finalist_rows(root: str | Path, round: int = 1) -> list[dict]:
    """A recipe search's finalists at full length (``configs/cpu/<round's folder>/final/``, written by the round's
    ``recipe_search*.py finalists``), in their place: per family ``<family>`` the full run's validation linear top-1
    and ``<family>_knn`` its validation k-NN (None: not recorded yet), ``<family>_screen`` the candidate's screening
    score; ``mean`` and ``mean_screen`` over the three families (None until all three are recorded). ``root`` is the
    checkout."""
    from ..training.config import load_config

    root, folder = Path(root), SEARCH_ROUNDS[round]
    screening = {r["candidate"]: r for r in search_rows(root, round)}
    rows = []
    for first in sorted((root / "configs" / "cpu" / folder / "final").glob(f"*_{SEARCH_FAMILIES[0]}.yaml")):
        m = _FINALIST.fullmatch(load_config(first).get("description") or "")
        if not m:
            raise ValueError(f"{first}: its description is not a finalist's: write the finalists' configs again "
                             f"(python scripts/recipe_search{'' if round == 1 else round}.py finalists)")
        cand = m["cand"]
        row = dict(candidate=cand, place=int(m["place"]), epochs=int(m["epochs"]))
        for fam in SEARCH_FAMILIES:
            got = validation_scores(root / "results" / "cpu" / folder / "final" / f"{FINAL_PREFIX[round]}_{cand}_{fam}")
            row[fam], row[f"{fam}_knn"] = (got["linear"], got["knn"]) if got else (None, None)
            row[f"{fam}_screen"] = screening[cand][fam] if cand in screening else None
        full = [row[f] for f in SEARCH_FAMILIES]
        row["mean"] = sum(full) / len(full) if None not in full else None
        row["mean_screen"] = screening[cand]["mean"] if cand in screening else None
        rows.append(row)
    return sorted(rows, key=lambda r: r["place"])


def recipe_pick(root: str | Path, round: int = 1) -> dict | None:
    """The finalist that becomes the round's recipe, by the search's rule (``scripts/recipe_search*.py``): the best
    mean validation linear top-1 over the three families at full length (a tie: the better screening place; round
    2's rule counts means equal to 0.01 points as tied). None until every finalist is recorded on every family.
    ``root`` is the checkout."""
    rows = finalist_rows(root, round)
    if not rows or any(r["mean"] is None for r in rows):
        return None
    score = (lambda r: builtins.round(r["mean"], 2)) if round == 2 else (lambda r: r["mean"])
    return max(rows, key=score)  # rows are in screening place order: max keeps the first of a tie


#: The candidate of the search that is the first recipe itself (configs/cpu/recipe.yaml, 10 epochs).
FIRST_RECIPE = "c0_base"


#: The plan's eighth addendum: round 2's base screening run of AoT-ADMM in fp32 and in bf16-mixed, seeds 0 and 1.
BF16_CHECK = {"dir": "bf16_check", "seeds": (0, 1), "precisions": {"fp32": "32-true", "bf16": "bf16-mixed"}}


def bf16_check(root: str | Path) -> dict | None:
    """The eighth addendum's reading (``results/cpu/bf16_check/bf16check_<fp32|bf16>_aot_admm_seed<k>``), or None
    before its first run is recorded: per seed with both precisions recorded (``pairs``) each one's validation linear
    top-1 and k-NN and ``diff`` (bf16 - fp32, points); with both seeds, ``spread`` (|fp32 seed 0 - fp32 seed 1|),
    ``mean_diff`` and ``matches`` (``|mean_diff| <= spread``), else None for all three. Refuses a record whose
    precision is not its name's, a run from an unrecorded or dirty commit, and runs from more than one commit (the
    addendum's four come from one)."""
    folder = Path(root) / "results" / "cpu" / BF16_CHECK["dir"]
    runs = {}
    for seed in BF16_CHECK["seeds"]:
        for name, precision in BF16_CHECK["precisions"].items():
            run = folder / f"bf16check_{name}_aot_admm_seed{seed}"
            scores = validation_scores(run)
            if scores is None:
                continue
            recorded = read_yaml(run / "config.yaml").get("fabric", {}).get("precision")
            if recorded != precision:
                raise damaged(run / "config.yaml", f"trained in {recorded}, not the {precision} its name says")
            runs[seed, name] = dict(scores, commit=read_json(run / "run.json").get("commit"))
    if not runs:
        return None
    commits = sorted({r["commit"] for r in runs.values()})
    if any(c is None or c.endswith("+dirty") for c in commits):
        raise ValueError(f"{folder}: a bf16 check run comes from {', '.join(map(str, commits))}, not a clean commit: "
                         "record it again from a clean checkout")
    if len(commits) > 1:
        raise ValueError(f"{folder}: the bf16 check's runs come from {len(commits)} commits ({', '.join(commits)}); the "
                         "plan's eighth addendum runs all four from one: record them again from one clean commit")
    pairs = {s: {"fp32": runs[s, "fp32"]["linear"], "bf16": runs[s, "bf16"]["linear"],
                 "knn_fp32": runs[s, "fp32"]["knn"], "knn_bf16": runs[s, "bf16"]["knn"],
                 "diff": runs[s, "bf16"]["linear"] - runs[s, "fp32"]["linear"]}
             for s in BF16_CHECK["seeds"] if (s, "fp32") in runs and (s, "bf16") in runs}
    whole = len(pairs) == len(BF16_CHECK["seeds"])
    first, second = BF16_CHECK["seeds"]
    spread = abs(pairs[first]["fp32"] - pairs[second]["fp32"]) if whole else None
    mean_diff = sum(p["diff"] for p in pairs.values()) / len(pairs) if whole else None
    return {"pairs": pairs, "commit": commits[0], "recorded": len(runs), "spread": spread, "mean_diff": mean_diff,
            "matches": abs(mean_diff) <= spread if whole else None}
