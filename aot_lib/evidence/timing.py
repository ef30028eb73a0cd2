"""Time to accuracy: the online k-NN curves of recorded runs, the step clock (measured seconds per step) that
turns steps into modelled minutes, wall time as recorded, and the 30-minute goal's reading.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Mapping, Sequence

from ..config_format import flatten
from . import stats
from .cells import cpu_of, seed_free, cell_runs
from .records import damaged, read_json, read_yaml
from .search import FIRST_RECIPE, SEARCH_FAMILIES, finalist_rows, recipe_pick, search_rows, validation_scores

__all__ = ["NoKnnMonitor", "knn_curve", "knn_wall_curve", "first_reaching", "gain_between", "modelled_minutes", "seconds_per_step",
           "TRAIN_IMAGES", "step_clock", "step_time_measurements", "time_to_accuracy", "GOAL_30MIN", "goal_30min", "goal_round2",
           "recipe_rerun", "search_curves"]


class NoKnnMonitor(ValueError):
    """A recorded run made without the online k-NN monitor (``monitor.knn: false``): it has no learning curve."""


def _knn_rows(folder: Path, column: str, wall: bool = False) -> list[tuple]:
    """``(step, accuracy)`` of the online k-NN monitor in ``folder/metrics.csv``, each checked (see
    :func:`knn_curve`); with ``wall``, ``(step, wall seconds, accuracy)``."""
    path = folder / "metrics.csv"
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if column not in (reader.fieldnames or ()):
            raise NoKnnMonitor(f"{path} has no {column} column: the run was made with monitor.knn=false")
        if wall and "wall_s" not in (reader.fieldnames or ()):
            raise ValueError(f"{path} has no wall_s column: the run was recorded before the trainer logged its wall "
                             "clock, so only run.json's total wall time is known")
        rows = []
        for line, r in enumerate(reader, 2):
            if not r.get(column):
                continue
            try:
                step, acc = int(float(r["step"])), float(r[column])
                seconds = float(r["wall_s"]) if wall else 0.0
            except (TypeError, ValueError):
                raise damaged(path, f"line {line}: step {r.get('step')!r}, {column} {r.get(column)!r}"
                                    + (f", wall_s {r.get('wall_s')!r}" if wall else "") + " are not numbers") from None
            if not (math.isfinite(acc) and 0 <= acc <= 100):
                raise damaged(path, f"line {line}: {column} is {acc!r}, not an accuracy in [0, 100] %")
            if not (math.isfinite(seconds) and seconds >= 0):
                raise damaged(path, f"line {line}: wall_s is {seconds!r}, not a time in seconds")
            rows.append((step, seconds, acc) if wall else (step, acc))
    return rows


def knn_wall_curve(folder: str | Path, column: str = "knn/val_top1") -> list[tuple[int, float, float]]:
    """The online k-NN monitor's values against the run's own wall clock: ``(step, wall minutes, accuracy)`` rows in
    order, the minutes the ``wall_s`` the trainer logged beside each value (every launch's, monitors and checkpoints
    included). A wall clock is a measurement only on an idle machine: ``run.json``'s ``other_cores`` says whether it
    was. Refuses a run recorded before ``wall_s`` was logged, and a clock that runs back."""
    rows = _knn_rows(Path(folder), column, wall=True)
    if any(b[1] < a[1] for a, b in zip(rows, rows[1:])):
        raise damaged(Path(folder) / "metrics.csv", "its wall_s runs back between two k-NN rows")
    return [(step, seconds / 60, acc) for step, seconds, acc in rows]


def knn_curve(folder: str | Path, column: str = "knn/val_top1") -> list[tuple[int, float, float]]:
    """The online k-NN monitor's values in a recorded ``metrics.csv``: ``(step, epochs done, accuracy)`` rows in
    order. The monitor logs on a row of its own at the end of an epoch, without the ``epoch`` column the
    training rows carry, so the epochs done are the step over ``steps_per_epoch`` of the run's ``run.json``.
    Refuses a run without the monitor (``monitor.knn: false``)."""
    folder = Path(folder)
    rows = _knn_rows(folder, column)
    per_epoch = read_json(folder / "run.json").get("metrics", {}).get("steps_per_epoch")
    if not per_epoch:
        raise ValueError(f"{folder / 'run.json'} records no steps_per_epoch: record the run again with aot record")
    return [(step, step / per_epoch, acc) for step, acc in rows]


def first_reaching(xs: list[float], accs: list[float], target: float) -> float | None:
    """The first ``x`` (epoch, or modelled time) at which a learning curve reaches ``target`` accuracy, or None
    if it never does (no interpolation between logged points: the first logged point at or above it)."""
    if len(xs) != len(accs):
        raise ValueError(f"{len(xs)} x values for {len(accs)} accuracies")
    return next((x for x, a in zip(xs, accs) if a >= target), None)


def gain_between(xs: list[float], accs: list[float], start: float, end: float) -> float:
    """How many points a learning curve gained from ``start`` to ``end`` (epochs or modelled minutes): its value at
    the last logged point at or before ``end`` minus its value at the last logged point at or before ``start`` (no
    interpolation, as :func:`first_reaching`). Refused when ``start`` comes before the first logged point."""
    if len(xs) != len(accs):
        raise ValueError(f"{len(xs)} x values for {len(accs)} accuracies")
    if not xs or start < xs[0] or end < start:
        raise ValueError(f"no gain from {start:g} to {end:g} on a curve logged from "
                         f"{xs[0] if xs else float('nan'):g}: start at or after its first point, end after start")

    def at(x: float) -> float:
        return [a for t, a in zip(xs, accs) if t <= x][-1]

    return at(end) - at(start)


def modelled_minutes(steps: int | Sequence[int], step_s: float) -> float | list[float]:
    """Minutes of pretraining at an idle clock: ``steps`` (one count or a curve's steps) times ``step_s``, the
    median seconds of one step measured interleaved on an otherwise idle machine (:func:`seconds_per_step`,
    :func:`step_clock`). The time axis of every curve and goal in the book: the runs' own wall times were taken
    on a shared machine."""
    if isinstance(steps, int):
        return steps * step_s / 60
    return [s * step_s / 60 for s in steps]


def seconds_per_step(benchmark: Mapping, setting: str = "w192", mode: str = "eager") -> dict[str, float]:
    """Median seconds of one training step per family, from an interleaved ``bench_families.py`` JSON: the
    time axis of a learning curve (wall times of runs that shared a machine are not comparable)."""
    for run in benchmark["runs"]:
        if run["setting"]["name"] == setting and run["mode"] == mode:
            return {family: r["step"]["median_s"] for family, r in run["results"].items()}
    found = sorted({(r["setting"]["name"], r["mode"]) for r in benchmark["runs"]})
    raise ValueError(f"benchmark {benchmark.get('benchmark')!r} has no {setting}/{mode} run (it has {found}); "
                     f"run benchmarks/bench_families.py --settings {setting} --modes {mode}")


#: Training images of this project's offline copies (the data README): CIFAR-100's held-out split leaves 400 of
#: each class's 500 official training images for training.
TRAIN_IMAGES = {"cifar10": 50_000, "cifar100": 40_000}


def _mean_curve(curves: list[list[tuple[int, float]]]) -> list[tuple[int, float]]:
    """The seeds' k-NN curves averaged step by step, over the steps every seed logged."""
    common = set.intersection(*(set(step for step, _ in c) for c in curves))
    per = [dict(c) for c in curves]
    return [(step, sum(p[step] for p in per) / len(per)) for step in sorted(common)]


def step_clock(root: str | Path) -> dict:
    """The newest idle, interleaved measurement of every search candidate's step time, the clock of
    :func:`time_to_accuracy`: ``results/cpu/search/step_times*.json`` (``recipe_search.py time --out``; a new
    measurement goes beside the old ones, which stay as recorded) with the latest ``date``, as the file's own
    fields plus ``path`` (relative to ``root``, the checkout). Its ``commit`` says which code was timed: the modelled
    minutes are what each run's steps cost at that commit, on that machine."""
    root = Path(root)
    found = sorted((root / "results" / "cpu" / "search").glob("step_times*.json"))
    if not found:
        raise FileNotFoundError("no step times under results/cpu/search: measure them on an idle machine "
                                "(python scripts/recipe_search.py time --out results/cpu/search/step_times.json)")
    clocks = [{**read_json(f), "path": f.relative_to(root).as_posix()} for f in found]
    return max(clocks, key=_measured_at)


def step_time_measurements(root: str | Path, candidate: str, steps: int) -> list[dict]:
    """What ``steps`` steps of search ``candidate`` cost by each idle measurement of the step times, in minutes per
    family: the clock (:func:`step_clock`) first, then every ``results/benchmarks/recipe_step_times_*.json``
    (``recipe_search.py time --out``: the same script at another commit or on another kind of CPU) by date. Each
    row: ``path``, ``commit``, ``date``, ``cpu`` (:func:`aot_lib.runtime.cpu_label`), ``role`` ("the clock", or
    how it differs from it: "other commit", "other CPU", "other CPU and commit", or "a repeat" on the clock's CPU
    and commit) and ``minutes`` (family ->
    minutes, :func:`modelled_minutes` of the file's median step)."""
    from ..runtime import cpu_label

    root = Path(root)
    clock = step_clock(root)
    others = sorted(({**read_json(f), "path": f.relative_to(root).as_posix()}
                     for f in (root / "results" / "benchmarks").glob("recipe_step_times_*.json")), key=_measured_at)
    rows = []
    for c in [clock, *others]:
        cpu = cpu_label(c.get("hardware"))
        differs = [what for what, same in (("CPU", cpu == cpu_label(clock.get("hardware"))),
                                           ("commit", c["commit"] == clock["commit"])) if not same]
        role = "the clock" if c is clock else ("other " + " and ".join(differs) if differs else "a repeat")
        rows.append({"path": c["path"], "commit": c["commit"], "date": c["date"], "cpu": cpu, "role": role,
                     "minutes": {f: modelled_minutes(steps, t["median_s"]) for f, t in c["steps"][candidate].items()}})
    return rows


def _measured_at(measurement: Mapping):
    # a measurement's ``date`` (recipe_search.py time writes %Y-%m-%dT%H:%M:%S%z) as a time to sort by
    from datetime import datetime

    return datetime.strptime(measurement["date"], "%Y-%m-%dT%H:%M:%S%z")


def time_to_accuracy(root: str | Path) -> list[dict]:
    """Validation k-NN against modelled pretraining minutes, per family, for the first recipe (the CIFAR-10 seeds
    of Tables 1/3 that ran with the online k-NN monitor, averaged step by step), every finalist of the recipe
    search, and the 30-minute cells (``cpu30_<family>_cifar10``, averaged) once recorded. Minutes are steps times
    the candidate's and family's idle step time, measured interleaved for every candidate at once (the newest
    measurement, :func:`step_clock`; the first recipe is its candidate ``c0_base``), so the old and the new recipe
    share one clock; the runs' own wall times were taken on a shared machine. Each curve:
    ``{"recipe", "candidate", "family", "runs", "minutes", "knn", "linear"}``, ``linear`` the mean final
    validation linear probe of its runs (each run's own probe; None when one lacks it). ``root`` is the checkout."""
    root = Path(root)
    results = root / "results" / "cpu"
    times = step_clock(root)["steps"]
    pick = recipe_pick(root)

    def curve(recipe: str, cand: str, fam: str, folders: list[Path]) -> dict | None:
        knn = []
        for folder in folders:
            try:
                knn.append((folder, _knn_rows(folder, "knn/val_top1")))
            except NoKnnMonitor:
                continue  # a seed trained without the monitor has no curve; its seeds with one stand for the cell
        if not knn:
            return None
        step_s = times[cand][fam]["median_s"]
        steps, accs = zip(*_mean_curve([rows for _, rows in knn]))
        scores = [validation_scores(folder) for folder, _ in knn]
        linear = (sum(s["linear"] for s in scores) / len(scores)) if None not in scores else None
        return {"recipe": recipe, "candidate": cand, "family": fam, "runs": [f.name for f, _ in knn],
                "minutes": modelled_minutes(steps, step_s), "knn": list(accs), "linear": linear}

    out = []
    for fam in SEARCH_FAMILIES:
        first = [r.folder for r in cell_runs(results, f"cpu_{fam}_cifar10")]
        out.append(curve("first recipe (10 epochs)", FIRST_RECIPE, fam, first))
        for row in finalist_rows(root):
            folder = results / "search" / "final" / f"final_{row['candidate']}_{fam}"
            if (folder / "probe.json").exists():  # recorded (finalist_rows reads the same file)
                out.append(curve(f"finalist {row['candidate']} ({row['epochs']} epochs)", row["candidate"], fam,
                                 [folder]))
        if pick is not None and (results / f"cpu30_{fam}_cifar10").exists():
            cells = [r.folder for r in cell_runs(results, f"cpu30_{fam}_cifar10")]
            out.append(curve(f"30-minute recipe ({pick['epochs']} epochs)", pick["candidate"], fam, cells))
    return [c for c in out if c is not None]


#: The 30-minute recipe's goal (issue 37): AoT-ADMM's CIFAR-10 linear probe top-1 on the test split, % (and the
#: issue's moonshot), in at most this many minutes of pretraining on two CPU cores.
GOAL_30MIN = {"top1": 60.0, "moonshot": 65.0, "minutes": 30.0}


def goal_30min(root: str | Path) -> dict | None:
    """How the 30-minute recipe's AoT-ADMM CIFAR-10 seeds (``cpu30_aot_admm_cifar10[_seed<k>]``) stand against
    :data:`GOAL_30MIN`, or None before the first is recorded: ``runs`` (:class:`SeedRun`, test linear top-1 and the
    recorded wall time of pretraining, the machine possibly shared), ``summary`` of their top-1, ``best`` (the best
    seed), ``minutes`` (each run's steps at the idle clock, :func:`step_clock`), ``reached`` (seeds at or above the
    goal's top-1 within its minutes: the issue counts the goal reached when one recorded seed is), ``moonshot`` (the
    same count for the moonshot's top-1) and ``flops`` (:func:`pretraining_flops` of the cell's config). ``root`` is
    the checkout."""
    root = Path(root)
    results = root / "results" / "cpu"
    if not (results / "cpu30_aot_admm_cifar10").exists():
        return None
    runs = cell_runs(results, "cpu30_aot_admm_cifar10")
    pick = recipe_pick(root)
    if pick is None:
        raise ValueError("cpu30_aot_admm_cifar10 is recorded but the recipe search's finalists are not: record "
                         "them (results/cpu/search/final) before the cells they chose")
    step_s = step_clock(root)["steps"][pick["candidate"]]["aot_admm"]["median_s"]
    minutes = {r.seed: modelled_minutes(read_json(r.folder / "run.json")["step"], step_s) for r in runs}
    def reaching(top1: float) -> int:  # seeds at or above top1 within the goal's minutes
        return sum(r.top1 >= top1 and minutes[r.seed] <= GOAL_30MIN["minutes"] for r in runs)

    return {"runs": runs, "summary": stats.summarize([r.top1 for r in runs]),
            "best": max(runs, key=lambda r: r.top1), "minutes": minutes,
            "reached": reaching(GOAL_30MIN["top1"]), "moonshot": reaching(GOAL_30MIN["moonshot"]),
            "config": read_yaml(runs[0].folder / "config.yaml")}


def goal_round2(root: str | Path) -> dict | None:
    """How the round-2 recipe's AoT-ADMM CIFAR-10 seeds (``cpu30b_aot_admm_cifar10[_seed<k>]``) stand against the
    plan's round-2 goal (``results/cpu/plan.yaml``: ``round2.goal`` and ``round2_idle``), or None before the first is
    recorded. Per run (``rows``): its seed, test linear top-1, pretraining wall time (``wall_s``) and steps, the other work on
    the machine meanwhile (``other_cores``; None: not measured), its ``cpu`` (model and instruction set, as recorded)
    and ``counts``, with the ``reason`` it does not (over the wall limit, another CPU model than the plan's
    ``goal.cpu`` or none recorded, not idle, not measured). Over the runs that count: ``summary`` (mean and 95 % interval of their
    top-1), ``reached`` (the primary reading: that mean at or above the goal's top-1), ``at_goal`` and ``at_moonshot``
    (seeds at or above each), and ``goal`` / ``idle_max`` as the plan states them."""
    root = Path(root)
    results = root / "results" / "cpu"
    if not (results / "cpu30b_aot_admm_cifar10").exists():
        return None
    plan = read_yaml(results / "plan.yaml")
    goal, idle_max = plan["round2"]["goal"], float(plan["round2_idle"]["other_cores_max"])
    rows = []
    for run in cell_runs(results, "cpu30b_aot_admm_cifar10"):
        record = read_json(run.folder / "run.json")
        other, hardware = record.get("other_cores"), dict(run.hardware)
        model = hardware.get("cpu_model")
        reason = ("its wall time is over the limit" if run.wall_time_s > goal["wall_s"] else
                  "its CPU was not recorded" if model is None else
                  f"it ran on {model}, not the plan's {goal['cpu']}" if model != goal["cpu"] else
                  "the machine's other work was not measured" if other is None else
                  f"the machine was shared ({other:.2f} cores of other work)" if other > idle_max else None)
        rows.append({"seed": run.seed, "top1": run.top1, "wall_s": run.wall_time_s, "other_cores": other,
                     "steps": record.get("total_steps"),
                     "cpu": cpu_of(run),
                     "counts": reason is None, "reason": reason, "run": run})
    counted = [r["top1"] for r in rows if r["counts"]]
    summary = stats.summarize(counted) if counted else None
    return {"rows": rows, "summary": summary, "goal": goal, "idle_max": idle_max,
            "reached": summary is not None and summary.mean >= goal["top1"],
            "at_goal": sum(t >= goal["top1"] for t in counted), "at_moonshot": sum(t >= goal["moonshot"] for t in counted)}


def recipe_rerun(root: str | Path) -> dict | None:
    """The picked finalist's AoT-ADMM run and the 30-minute recipe's seed 0 on CIFAR-10 are one config and one seed
    (the cell adds only the test probe and its wider grid): when they were trained at different commits, the pair
    shows how far the code's floating-point rounding alone moves one run. None until both are recorded; refuses a
    pair whose configs differ outside :data:`SEED_FREE_KEYS` or whose seeds differ. ``{"commits": (finalist's,
    cell's), "linear": {lr: (finalist's, cell's)}`` (validation top-1 at the learning rates both probes tried),
    ``"knn": (finalist's, cell's)`` (final validation k-NN of the probe) and ``"monitor": (finalist's, cell's)``
    (the online k-NN monitor's last value, of these two runs alone: the figure's cell curve averages every seed)."""
    root = Path(root)
    pick = recipe_pick(root)
    cell = root / "results" / "cpu" / "cpu30_aot_admm_cifar10"
    if pick is None or not (cell / "probe.json").exists():
        return None
    final = root / "results" / "cpu" / "search" / "final" / f"final_{pick['candidate']}_aot_admm"
    a, b = (flatten(read_yaml(f / "config.yaml")) for f in (final, cell))
    differ = sorted(k for k in set(a) | set(b) if not seed_free(k) and a.get(k) != b.get(k))
    if differ or a.get("run.seed") != b.get("run.seed"):
        raise ValueError(f"{cell.name} is not {final.name} again: {', '.join(differ) or 'run.seed'} differ; "
                         "the recipe's configs must be written from the picked finalist (recipe_search.py recipe)")
    pa, pb = (read_json(f / "probe.json") for f in (final, cell))
    ra, rb = (read_json(f / "run.json") for f in (final, cell))
    va, vb = pa.get("linear_val_top1") or {}, pb.get("linear_val_top1") or {}
    return {"commits": (ra["commit"], rb["commit"]),
            "linear": {k: (va[k], vb[k]) for k in va if k in vb},
            "knn": (pa.get("knn_val_top1"), pb.get("knn_val_top1")),
            "monitor": tuple(_knn_rows(f, "knn/val_top1")[-1][1] for f in (final, cell))}


def search_curves(root: str | Path) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """``(candidate, family) -> [(modelled minutes, validation k-NN top-1), ...]`` of every recorded screening run:
    the online monitor's curve (:func:`knn_curve`) against steps times the candidate's and family's idle step time,
    measured interleaved (``results/cpu/search/step_times.json``; the runs' own wall times were taken on a shared
    machine). ``root`` is the checkout."""
    root = Path(root)
    times = read_json(root / "results" / "cpu" / "search" / "step_times.json")["steps"]
    out = {}
    for row in search_rows(root):
        for fam in SEARCH_FAMILIES:
            folder = root / "results" / "cpu" / "search" / f"search_{row['candidate']}_{fam}"
            if row[fam] is not None:
                step_s = times[row["candidate"]][fam]["median_s"]
                # steps only: search_c2_w128_crate's run.json lost its metrics (and steps_per_epoch) to the
                # relaunch bug fixed in d62e535, and minutes need no epochs
                out[row["candidate"], fam] = [(modelled_minutes(s, step_s), acc)
                                              for s, acc in _knn_rows(folder, "knn/val_top1")]
    return out
