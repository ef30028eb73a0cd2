"""The recorded seeds of each table cell, read from ``results/``: accuracies by seed, learning curves, verdicts.

A *cell* is a run name (``cpu_aot_admm_cifar10``) and its seed variants (``cpu_aot_admm_cifar10_seed1``, …): the
recorded folders whose configs differ only in what a seed variant may change (:data:`SEED_FREE_KEYS`). Reading a
cell checks that, so a table never averages runs that were trained differently; a run marked superseded or not
finished is refused by name. The comparisons and verdicts are :mod:`aot_lib.book.stats`'s.
"""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from ..files import DuplicateKeyError, load_yaml
from ..training.config import DEFAULTS, flatten
from ..training.runs import built_model
from . import paper, plan, stats
from .recorded import RESULT_FILES, damaged as _damaged, evaluations, read_json as _read_json, read_test_set

__all__ = ["SeedRun", "SEED_FREE_KEYS", "CHAIN_KEYS", "seed_variant_path", "TOP1_KEY", "cell_runs", "cell",
           "probe_settings", "probe_lr_picks", "wide_probe", "compare", "knn_curve", "NoKnnMonitor",
           "seconds_per_step", "initial_encoder", "NUMERICS", "numerics_label", "mixed_numerics", "MARGINS_SHOWN", "margin_sensitivity", "Claim", "CLAIMS", "planned", "claim_rows", "one_sided_tally",
           "one_sided_sentence", "SWEEPS", "sweep_rows",
           "picked_lr", "sweep_table", "first_reaching", "BASELINES_DIR", "floor_cells", "floor_rows",
           "TABLE13_NAMES", "TABLE13_DATA", "TABLE13_CELLS",
           "SUPERSEDED_T2_CHAIN", "table2_lr_sensitivity", "SEARCH_FAMILIES", "search_rows", "search_curves", "pretraining_flops", "finalist_rows",
           "validation_scores", "TRAIN_IMAGES", "recipe_pick", "FIRST_RECIPE", "step_clock", "step_time_measurements", "time_to_accuracy", "GOAL_30MIN", "goal_30min", "recipe_rerun",
           "CLAIMS_30MIN", "verdicts", "verdict_rows", "all_claim_rows", "CHAPTER_OF"]

#: The key of each stage's test accuracy in its result file (:data:`aot_lib.book.recorded.RESULT_FILES`).
TOP1_KEY = {"pretrain": "linear_top1", "finetune": "top1", "distill": "top1", "baseline-init": "linear_top1",
            "baseline-pixels": "linear_top1"}

#: Config keys in which the seeds of one cell may differ: the seed itself, the name, the prose, the online k-NN
#: monitor (which leaves the trajectory bitwise unchanged) and the probe section (a recorded run may have been
#: probed again with today's protocol, scripts/reprobe.py; the probe that produced the number is in its
#: ``probe.json``). Anything else differing means the runs are not seeds of one recipe. A key only one of the
#: configs has (added to the package between their commits) is not compared: it took its default, the old behaviour.
SEED_FREE_KEYS = ("run.name", "run.seed", "description", "monitor.knn", "monitor.knn_bank", "monitor.knn_val",
                  "probe.", "distill.teacher", "distill.student_init", "finetune.checkpoint")

#: The keys naming the run a chained stage starts from. They may differ between seeds, but only as the chain does:
#: seed k of a cell starts from seed k of the stage before (``runs/<name>_seed<k>/…``; seed 0 is the plain name).
CHAIN_KEYS = ("finetune.checkpoint", "distill.teacher", "distill.student_init")


def seed_variant_path(path: str, seed: int) -> str:
    """``runs/<name>[_seed<j>]/<file>`` as seed ``seed`` of the same chain names it: ``runs/<name>_seed<seed>/<file>``,
    or ``runs/<name>/<file>`` for seed 0."""
    parent, _, file = path.rpartition("/")
    head, _, run = parent.rpartition("/")
    run = re.sub(r"_seed\d+$", "", run) + (f"_seed{seed}" if seed else "")
    return "/".join(x for x in (head, run, file) if x)


PROBE_DEFAULTS = DEFAULTS["probe"]


def _with_probe_defaults(settings: dict, other: dict) -> dict:
    """``settings`` with each probe setting only ``other`` records filled in at the package's default."""
    return {**{k: PROBE_DEFAULTS[k] for k in other.keys() - settings.keys() if k in PROBE_DEFAULTS}, **settings}


def probe_settings(folder: str | Path) -> dict:
    """The settings of the probe that produced a recorded pretraining run's numbers (its newest probe,
    :func:`aot_lib.book.recorded.current_result`)."""
    path, result = _result(Path(folder), "pretrain")
    settings = result.get("probe", {})
    if not isinstance(settings, dict):
        raise _damaged(path, f"its probe settings are {settings!r}, not a mapping")
    return settings


@dataclass(frozen=True)
class SeedRun:
    """One recorded run of a cell: its seed, test accuracy (%), the commit that trained it and its wall time
    (seconds, as recorded; the machine may have been shared)."""

    name: str
    seed: int
    top1: float
    commit: str
    wall_time_s: float
    folder: Path
    hardware: tuple = ()  # (field, value) pairs of what changes float results: NUMERICS recorded in run.json


#: What a run's float results depend on besides its config, commit and seed, as run.json records it: torch's
#: version, the CPU model and the instruction set torch's kernels use (the last two recorded since bca2c65).
NUMERICS = ("torch", "cpu_model", "cpu_isa")


def numerics_label(run: SeedRun) -> str:
    """What a run's float results were computed with, as its ``run.json`` records it: ``"torch 2.14.1+cu130,
    Intel(R) Xeon(R) Processor, AVX512"``; a field not recorded then (the CPU, before bca2c65) says so."""
    hw = dict(run.hardware)
    parts = [f"torch {hw['torch']}" if "torch" in hw else "torch not recorded"]
    parts.append(", ".join(hw[k] for k in ("cpu_model", "cpu_isa") if k in hw) or "CPU not recorded")
    return ", ".join(parts)


def mixed_numerics(runs_a: list[SeedRun], runs_b: list[SeedRun]) -> list[str]:
    """For each seed the two cells share, what their runs' recorded numerics differ in (``"seed 1: torch
    2.15.0+cu132 vs 2.14.1+cu130"``); a field only one run records is not compared (it was not recorded then)."""
    b_of = {r.seed: dict(r.hardware) for r in runs_b}
    out = []
    for r in runs_a:
        if r.seed not in b_of:
            continue
        a, b = dict(r.hardware), b_of[r.seed]
        diff = [f"{k} {a[k]} vs {b[k]}" for k in NUMERICS if k in a and k in b and a[k] != b[k]]
        if diff:
            out.append(f"seed {r.seed}: {', '.join(diff)}")
    return out


def _seed_free(key: str) -> bool:
    return any(key == k or (k.endswith(".") and key.startswith(k)) for k in SEED_FREE_KEYS)


def _read_yaml(path: Path) -> dict:
    try:
        data = load_yaml(Path(path).read_text())
    except FileNotFoundError:
        raise _damaged(path, "missing") from None
    except DuplicateKeyError as e:
        raise _damaged(path, str(e)) from None
    except yaml.YAMLError as e:
        raise _damaged(path, f"not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise _damaged(path, "not a mapping of config sections")
    return data


#: Classes of the data sets the records name (their provenance's ``dataset``): the floor of a plausible accuracy.
CLASSES = {"cifar10": 10, "cifar100": 100, "imagenette160_subset": 10}

#: How far a probe's test accuracy may lie from its own validation accuracy (points) before the file is taken as
#: damaged: the recorded probes differ by -6.2 to +0.8 (Imagenette's 300 validation images: one binomial standard
#: error is 2.9 points there); a digit lost or swapped moves a number by tens of points.
TEST_VAL_LIMIT = 15.0


def _dataset(result: Mapping) -> str | None:
    data = result.get("data") or {}
    side = data.get("test") or data.get("train") or {}
    return result.get("dataset") or (side.get("dataset") if isinstance(side, Mapping) else None)


def checked_accuracy(path: Path, result: Mapping, key: str) -> float:
    """``result[key]`` as an accuracy (%), or one line naming the file and the fix: the key missing, a value that is
    not a finite number in [0, 100], one below half of chance for the data set's number of classes (:data:`CLASSES`),
    or a test accuracy further than :data:`TEST_VAL_LIMIT` from the same probe's validation accuracy."""
    if key not in result:
        raise _damaged(path, f"has no {key!r}")
    v = result[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 100:
        raise _damaged(path, f"{key} is {v!r}, not an accuracy in [0, 100] %")
    classes = CLASSES.get(_dataset(result))
    if classes and v < 50 / classes:
        raise _damaged(path, f"{key} is {v:.2f} %, below half of chance ({100 / classes:g} % for {classes} classes)")
    val = result.get("linear_val_best")
    if key == "linear_top1" and isinstance(val, (int, float)) and abs(v - val) > TEST_VAL_LIMIT:
        raise _damaged(path, f"{key} is {v:.2f} %, {abs(v - val):.1f} points from the same probe's validation "
                             f"accuracy {val:.2f} % (more than {TEST_VAL_LIMIT:g})")
    return float(v)


def _result(folder: Path, kind: str) -> tuple[Path, dict]:
    """The newest evaluation of a recorded run and its path, read as :func:`_read_json` reads; a probe must be of
    this run's encoder (:func:`_probe_of`)."""
    found = evaluations(folder, kind)
    if not found:
        raise _damaged(folder / RESULT_FILES[kind], "missing (the run's result)")
    result = _read_json(found[-1])
    if kind == "pretrain":
        _probe_of(found[-1], result, folder.name)
    return found[-1], result


def _probe_of(path: Path, probe: Mapping, run: str) -> None:
    """Refuses a probe whose own ``checkpoint`` names another run's encoder than ``run`` (``runs/<run>/last.ckpt`` or
    ``results/cpu/<run>/encoder``): a re-evaluation filed beside the wrong run would be read as that run's."""
    checkpoint = probe.get("checkpoint")
    if isinstance(checkpoint, str) and Path(checkpoint).parent.name != run:
        raise _damaged(path, f"probes {checkpoint}, the encoder of run {Path(checkpoint).parent.name!r}, but sits with "
                             f"run {run!r}: move it to that run's folder")


def cell_runs(root: str | Path, name: str) -> list[SeedRun]:
    """The recorded runs of cell ``name`` under ``root`` (``results/cpu``), by seed. Refuses a cell with no
    recorded run, a run not finished or marked superseded, two runs with one seed, seed variants whose
    configs differ outside :data:`SEED_FREE_KEYS` (naming the key), a chained seed that starts from another seed's
    run (:data:`CHAIN_KEYS`), and pretraining seeds whose numbers come from probes with different settings."""
    root = Path(root)
    folders = [root / name] + sorted(p for p in root.glob(f"{name}_seed*") if re.fullmatch(rf"{re.escape(name)}_seed\d+", p.name))
    folders = [f for f in folders if f.exists()]
    for f in folders:  # a seed's folder without its record is refused, never left out: the cell would shrink
        if not (f / "run.json").exists():
            raise ValueError(f"{f} looks like a seed of cell {name} but has no run.json: restore it from git, or move "
                             f"the folder out of {root}")
    if not folders:
        raise FileNotFoundError(f"no recorded run named {name} or {name}_seed<k> under {root}; "
                                "run scripts/evidence_runs.sh and record it")
    runs, reference = [], None
    for folder in folders:
        record = _read_json(folder / "run.json")
        if record.get("status") != "finished":
            raise ValueError(f"{folder}: status {record.get('status')!r}, not finished; resume it before tabulating")
        if (record.get("run") or {}).get("superseded") or record.get("superseded"):
            raise ValueError(f"{folder} is marked superseded; leave it out of the cell or record it again")
        nested = _read_yaml(folder / "config.yaml")
        config = flatten(nested)
        # compared: the network each config builds, its image size stated (fine-tunings recorded since 77d5b35 write
        # the checkpoint's img_size out; earlier ones left it to views.global_size, the same size)
        written = config["model.overrides"]
        config["model.overrides"] = built_model(nested)["overrides"]
        kind = record.get("kind")
        if kind not in TOP1_KEY:
            raise ValueError(f"{folder}: run kind {kind!r} has no test accuracy file ({sorted(TOP1_KEY)})")
        if reference is None:
            reference = (folder, config, written)
        else:
            ref_folder, ref, ref_written = reference
            for key in sorted(set(ref) & set(config)):  # a key added to the package since is at its default
                if key == "model.overrides" and kind != "pretrain" and {} in (ref_written, written):
                    continue  # fine-tunings recorded before 450bbd7 wrote {}: the model was the checkpoint's
                if not _seed_free(key) and ref[key] != config[key]:
                    raise ValueError(f"{folder.name} is not a seed of {ref_folder.name}: {key} is "
                                     f"{config.get(key)!r} there and {ref.get(key)!r} here")
            seed = int(record["seed"])
            for key in CHAIN_KEYS:  # seed k starts from seed k of the stage before, never from another seed's run
                if isinstance(ref.get(key), str) and config.get(key) != seed_variant_path(ref[key], seed):
                    raise ValueError(f"{folder.name} (seed {seed}) starts from {config.get(key)!r} ({key}); seed "
                                     f"{seed} of this chain starts from {seed_variant_path(ref[key], seed)!r}: fix "
                                     "its config and run it again")
            # the probe section may differ in config.yaml (a run probed again), but the probe that produced each
            # seed's number must be one protocol, or the cell averages two. A setting only one probe.json records
            # (added to the package between their commits, e.g. "test") ran at its default there
            a, b = (probe_settings(ref_folder), probe_settings(folder)) if kind == "pretrain" else ({}, {})
            a, b = _with_probe_defaults(a, b), _with_probe_defaults(b, a)
            differing = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
            if differing:
                key = differing[0]
                raise ValueError(f"{folder.name} was probed with probe.{key}={b.get(key)!r} and {ref_folder.name} "
                                 f"with {a.get(key)!r}: probe them alike (scripts/reprobe.py {folder} "
                                 f"{ref_folder})")
        top1 = checked_accuracy(*_result(folder, kind), TOP1_KEY[kind])
        if not isinstance(record.get("seed"), int) or isinstance(record.get("seed"), bool):
            raise _damaged(folder / "run.json", f"seed is {record.get('seed')!r}, not a whole number")
        hardware = record.get("hardware") if isinstance(record.get("hardware"), dict) else {}
        runs.append(SeedRun(folder.name, int(record["seed"]), top1, str(record.get("commit", "")),
                            float(record.get("wall_time_s", math.nan)), folder,
                            tuple((k, str(hardware[k])) for k in NUMERICS if k in hardware)))
    seeds = [r.seed for r in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"cell {name} has two runs with one seed: {[(r.name, r.seed) for r in runs]}")
    return sorted(runs, key=lambda r: r.seed)


def probe_lr_picks(runs: list[SeedRun]) -> list[dict]:
    """Each pretraining run's linear-probe learning rate as picked on validation, beside the grid it was picked from
    (its ``probe.json``): ``{"run", "lr", "grid", "at_top"}``. A pick at the top of the grid says the grid may stop
    short of that encoder's best rate."""
    picks = []
    for r in runs:
        probe = _result(r.folder, "pretrain")[1]
        grid = [float(x) for x in probe["probe"]["lr"]]
        lr = float(probe["linear_lr"])
        picks.append({"run": r.name, "lr": lr, "grid": grid, "at_top": lr == max(grid)})
    return picks


def wide_probe(runs: list[SeedRun], wide_root: str | Path) -> dict[int, dict]:
    """Each run of a cell probed again with a wider learning-rate grid (``scripts/reprobe.py --set``, its
    ``probe.json`` under ``wide_root/<run>/``), by seed: ``{"grid", "lr", "val", "top1"}`` of the wide probe beside
    ``{"grid0", "lr0", "val0", "top1_0"}`` of the recorded one, the commits each ran at (``commit``, ``commit0``)
    and ``shared_same``: whether the wide probe gives the recorded validation accuracy at every rate both grids
    share, to the last digit (the same features and the same probe give the same numbers). Refuses a wide probe
    of another encoder (its ``pretrain_step`` differs) or one that did not widen the grid."""
    out = {}
    for r in runs:
        (rec_path, rec), wide_path = _result(r.folder, "pretrain"), Path(wide_root) / r.name / "probe.json"
        wide = _read_json(wide_path)
        _probe_of(wide_path, wide, r.name)
        checked_accuracy(wide_path, wide, "linear_top1")
        for path, result in ((rec_path, rec), (wide_path, wide)):
            if not isinstance(result.get("linear_val_top1"), Mapping):
                raise _damaged(path, "has no 'linear_val_top1' (the validation accuracy of each rate)")
        if wide["pretrain_step"] != rec["pretrain_step"]:
            raise ValueError(f"{wide_root}/{r.name}: probed the encoder of step {wide['pretrain_step']}, the record "
                             f"is of step {rec['pretrain_step']}: probe the recorded encoder again")
        if not set(rec["probe"]["lr"]) < set(wide["probe"]["lr"]):
            raise ValueError(f"{wide_root}/{r.name}: grid {wide['probe']['lr']} does not extend the recorded "
                             f"{rec['probe']['lr']}")
        out[r.seed] = {"grid": wide["probe"]["lr"], "lr": float(wide["linear_lr"]),
                       "val": float(wide["linear_val_best"]), "top1": float(wide["linear_top1"]),
                       "grid0": rec["probe"]["lr"], "lr0": float(rec["linear_lr"]),
                       "val0": float(rec["linear_val_best"]), "top1_0": float(rec["linear_top1"]),
                       "commit": wide.get("commit", "?"), "commit0": rec.get("commit", "?"),
                       "shared_same": all(wide["linear_val_top1"].get(k) == v
                                          for k, v in rec["linear_val_top1"].items())}
    return out


def wide_claims(root: str | Path, rows: list[dict], wide_root: str | Path) -> list[dict]:
    """Each recorded claim among ``rows`` (:func:`claim_rows` of ``root``) judged again on the wider learning-rate
    grid's probes (:func:`wide_probe`, under ``wide_root``): a check beside the verdict, never the verdict (the plan
    fixed the recorded grid). One row per claim with runs: ``{"claim", "verdict0"`` (the recorded verdict),
    ``"diff"`` and ``"verdict"`` (paired on the wider grid's test top-1, judged by the plan's rule and margin),
    ``"same"``, ``"missing"`` (runs not yet probed on the wider grid: then ``diff`` and ``same`` are None and
    ``verdict`` is "pending")}``."""
    out = []
    for r in rows:
        if r["verdict"] == "pending":
            continue
        c = r["claim"]
        runs = {side: cell_runs(root, name) for side, name in (("a", c.a), ("b", c.b))}
        missing = [x.name for side in runs.values() for x in side
                   if not (Path(wide_root) / x.name / "probe.json").exists()]
        row = {"claim": c, "verdict0": r["verdict"], "missing": missing, "diff": None, "verdict": "pending",
               "same": None}
        if not missing:
            a, b = ({k: w["top1"] for k, w in wide_probe(runs[side], wide_root).items()} for side in "ab")
            row["diff"] = stats.paired_difference(a, b)
            row["verdict"] = stats.verdict(row["diff"], r["plan"].rule, r["margin"])
            row["same"] = row["verdict"] == r["verdict"]
        out.append(row)
    return out


def cell(root: str | Path, name: str) -> dict[int, float]:
    """``{seed: test accuracy}`` of cell ``name`` (see :func:`cell_runs`)."""
    return {r.seed: r.top1 for r in cell_runs(root, name)}


def compare(root: str | Path, a: str, b: str, what: str, claim: str, paper_value: float | None,
            margin: float | None = None, smaller: str | None = None, smaller_name: str | None = None,
            post_hoc: bool = False, names: tuple[str, str] | None = None) -> dict:
    """A − B paired by seed (cells ``a`` and ``b``), with the verdict on the paper's ``claim`` and the sentence
    that states it: ``{"a", "b", "diff", "verdict", "noninferiority", "sentence"}``. Without a ``paper_value`` the
    comparison is one of our controls, and the sentence says what the control expects instead of what the paper
    claims. A parity claim (judged against ``margin``, the plan's) that names its ``smaller`` side is read one-sided
    too (``noninferiority``, else None). ``ahead``: the side (``"a"``, ``"b"``) the interval puts ahead, or None;
    with ``names`` the sentence says it."""
    ra, rb = cell_runs(root, a), cell_runs(root, b)
    ca, cb = {r.seed: r.top1 for r in ra}, {r.seed: r.top1 for r in rb}
    diff = stats.paired_difference(ca, cb)
    claimant = "the paper claims" if paper_value is not None else "a control expects"
    one_sided = stats.noninferiority(diff, smaller, margin) if claim == "parity" and smaller else None
    sentence = stats.claim_sentence(what, diff, claim, paper_value, margin, claimant=claimant, smaller=smaller,
                                    smaller_name=smaller_name, post_hoc=post_hoc, names=names)
    mixed = mixed_numerics(ra, rb)
    if mixed:  # float results differ between torch versions and CPU kinds: a pair that mixes them is flagged
        sentence = sentence[:-1] + f"; flagged: paired runs trained with different numerics ({'; '.join(mixed)})."
    return {"a": stats.summarize(list(ca.values())), "b": stats.summarize(list(cb.values())), "diff": diff,
            "verdict": stats.verdict(diff, claim, margin), "noninferiority": one_sided, "ahead": stats.ahead(diff),
            "mixed_numerics": mixed, "sentence": sentence}


#: The pretrained cells of Tables 1 and 3 at CPU scale, ``(family, data set) -> run name``, with the names the book
#: gives them; AoT was not trained on CIFAR-100 with the first recipe (chapter 7 says so).
TABLE13_NAMES = {"aot_admm": "AoT-ADMM", "crate": "CRATE", "aot": "AoT"}
TABLE13_DATA = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}
TABLE13_CELLS = {(fam, data): f"cpu_{fam}_{data}" for fam in TABLE13_NAMES for data in TABLE13_DATA
                 if (fam, data) != ("aot", "cifar100")}

#: Where the probes' floor is recorded under ``results/cpu`` (``aot baseline``; scripts/evidence_runs.sh baselines):
#: ``baseline_init_<cell>[_seed<k>]``, a pretrained cell's encoders at initialisation, and
#: ``baseline_pixels_<data set>_seed<k>``, raw pixels, each probed as the cell's runs are.
BASELINES_DIR = "baselines"


def floor_cells(root: str | Path, name: str, dataset: str) -> dict[str, list[SeedRun] | None]:
    """The floor under pretrained cell ``name`` (on ``dataset``): ``{"untrained": its encoders at initialisation,
    "pixels": raw pixels}``, each its seeds' runs, or None while not recorded."""
    base = Path(root) / BASELINES_DIR
    out: dict[str, list[SeedRun] | None] = {}
    for what, cell_name in (("untrained", f"baseline_init_{name}"), ("pixels", f"baseline_pixels_{dataset}")):
        try:
            out[what] = cell_runs(base, cell_name)
        except FileNotFoundError:
            out[what] = None
    return out


def floor_rows(root: str | Path, cells: Mapping[tuple[str, str], str], names: Mapping[str, str],
               datasets: Mapping[str, str]) -> list[dict]:
    """For each pretrained cell ``cells[(family, data set)]``: what pretraining adds over its floor, paired by seed
    (pretrained − untrained encoder of the same seed; pretrained − raw pixels probed with the same seed's split):
    ``{"label", "family", "data", "floor", "diff"}``, a row per floor recorded. Descriptive: no claim is judged."""
    rows = []
    for (fam, data), name in cells.items():
        if not (Path(root) / name).exists():
            continue
        trained = cell(root, name)
        for floor, runs in floor_cells(root, name, data).items():
            if runs:
                what = "untrained encoder" if floor == "untrained" else "raw pixels"
                rows.append(dict(label=f"{names[fam]} {datasets[data]}: pretrained − {what}", family=fam, data=data,
                                 floor=floor, diff=stats.paired_difference(trained, {r.seed: r.top1 for r in runs})))
    return rows


class NoKnnMonitor(ValueError):
    """A recorded run made without the online k-NN monitor (``monitor.knn: false``): it has no learning curve."""


def _knn_rows(folder: Path, column: str) -> list[tuple[int, float]]:
    """``(step, accuracy)`` of the online k-NN monitor in ``folder/metrics.csv``, each checked (see
    :func:`knn_curve`)."""
    path = folder / "metrics.csv"
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if column not in (reader.fieldnames or ()):
            raise NoKnnMonitor(f"{path} has no {column} column: the run was made with monitor.knn=false")
        rows = []
        for line, r in enumerate(reader, 2):
            if not r.get(column):
                continue
            try:
                step, acc = int(float(r["step"])), float(r[column])
            except (TypeError, ValueError):
                raise _damaged(path, f"line {line}: step {r.get('step')!r}, {column} {r.get(column)!r} are not "
                                     "numbers") from None
            if not (math.isfinite(acc) and 0 <= acc <= 100):
                raise _damaged(path, f"line {line}: {column} is {acc!r}, not an accuracy in [0, 100] %")
            rows.append((step, acc))
    return rows


def knn_curve(folder: str | Path, column: str = "knn/val_top1") -> list[tuple[int, float, float]]:
    """The online k-NN monitor's values in a recorded ``metrics.csv``: ``(step, epochs done, accuracy)`` rows in
    order. The monitor logs on a row of its own at the end of an epoch, without the ``epoch`` column the
    training rows carry, so the epochs done are the step over ``steps_per_epoch`` of the run's ``run.json``.
    Refuses a run without the monitor (``monitor.knn: false``)."""
    folder = Path(folder)
    rows = _knn_rows(folder, column)
    per_epoch = _read_json(folder / "run.json").get("metrics", {}).get("steps_per_epoch")
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



def initial_encoder(cfg: Mapping):
    """The encoder a pretraining run of ``cfg`` starts from (the white-box audit's untrained control, the probes'
    floor): :func:`aot_lib.training.baselines.initial_encoder`, the caller's random state left as it was."""
    import torch

    from ..training.baselines import initial_encoder as _initial

    with torch.random.fork_rng(devices=[]):
        return _initial(dict(cfg))


@dataclass(frozen=True)
class Claim:
    """One claim of the paper (or one control of ours) as a comparison of two cells: A − B should be ``claim``
    (``better`` or ``parity``, :func:`aot_lib.book.stats.verdict`). ``paper_gap`` is the paper's own A − B
    (``None`` for a control the paper does not report). How it is judged (margin, seeds, post hoc) is the analysis
    plan's entry of the same ``key`` (:mod:`aot_lib.book.plan`)."""

    key: str
    what: str
    a: str
    b: str
    claim: str
    paper_gap: float | None
    where: str
    smaller: str | None = None  # of a parity claim: the side ("a" or "b") with fewer parameters, read one-sided too
    smaller_name: str | None = None  # and that model's name, for the sentence
    names: tuple[str, str] | None = None  # A's and B's names, for the sentence that says who is ahead
    paper_b: float | None = None  # the paper's accuracy of the B side (the accuracy-relative margin's scale)


def _gap(table: Mapping, data: str, a: str, b: str) -> float:
    return round(table[data][a] - table[data][b], 2)


#: Table 2's pretraining run names carry the learning rate when it is not the recipe's 2e-3 (the equal sweep picked
#: 4e-3 for AoT-ADMM; the run at 2e-3 is recorded under the plain name, superseded for Table 2).
PRETRAIN_SUFFIX = {"aot_admm": "_lr4e-3", "crate": ""}

#: Every comparison the evidence chapters close with, in book order. The paper's gaps are from
#: :mod:`aot_lib.book.paper` (Tiny for Tables 1/3: our CPU-scale width 192 is closest to it; Base for Table 2).
CLAIMS = (
    Claim("t1_cifar10", "AoT-ADMM − CRATE, linear probe on CIFAR-10 (Table 1)", "cpu_aot_admm_cifar10",
          "cpu_crate_cifar10", "parity", _gap(paper.LINEAR_PROBE_ACC, "cifar10", "aot_admm_tiny", "crate_tiny"),
          "ch-tables-1-3", smaller="a", smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"),
          paper_b=paper.LINEAR_PROBE_ACC["cifar10"]["crate_tiny"]),
    Claim("t1_cifar100", "AoT-ADMM − CRATE, linear probe on CIFAR-100 (Table 1)", "cpu_aot_admm_cifar100",
          "cpu_crate_cifar100", "parity", _gap(paper.LINEAR_PROBE_ACC, "cifar100", "aot_admm_tiny", "crate_tiny"),
          "ch-tables-1-3", smaller="a", smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"),
          paper_b=paper.LINEAR_PROBE_ACC["cifar100"]["crate_tiny"]),
    Claim("t3_cifar10", "AoT-ADMM − AoT, linear probe on CIFAR-10 (Table 3)", "cpu_aot_admm_cifar10",
          "cpu_aot_cifar10", "better", _gap(paper.LINEAR_PROBE_ACC, "cifar10", "aot_admm_tiny", "aot_tiny"),
          "ch-tables-1-3", names=("AoT-ADMM", "AoT")),
    Claim("t2_cifar10", "AoT-ADMM − CRATE, fine-tuned on CIFAR-10 after Imagenette pretraining (Table 2)",
          "cpu_aot_admm_imagenette_lr4e-3_ft_cifar10", "cpu_crate_imagenette_ft_cifar10", "parity",
          _gap(paper.FINETUNE_ACC, "cifar10", "aot_admm_base", "crate_base"), "ch-transfer", smaller="a",
          smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"), paper_b=paper.FINETUNE_ACC["cifar10"]["crate_base"]),
    Claim("t2_cifar100", "AoT-ADMM − CRATE, fine-tuned on CIFAR-100 after Imagenette pretraining (Table 2)",
          "cpu_aot_admm_imagenette_lr4e-3_ft_cifar100", "cpu_crate_imagenette_ft_cifar100", "parity",
          _gap(paper.FINETUNE_ACC, "cifar100", "aot_admm_base", "crate_base"), "ch-transfer", smaller="a",
          smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"), paper_b=paper.FINETUNE_ACC["cifar100"]["crate_base"]),
    *(Claim(f"t2_control_{fam}_{data}", f"{label} pretrained on Imagenette − from scratch, fine-tuned on "
            f"{data.upper().replace('CIFAR', 'CIFAR-')} (our control)", f"cpu_{fam}_imagenette{PRETRAIN_SUFFIX[fam]}_ft_{data}",
            f"cpu_{fam}_scratch_{data}", "better", None, "ch-transfer", names=("pretraining", "training from scratch"))
      for fam, label in (("aot_admm", "AoT-ADMM"), ("crate", "CRATE")) for data in ("cifar10", "cifar100")),
    Claim("t4_teacher", "ViT-T teacher − its distilled MLP-free (ReLU) student, CIFAR-10 (Table 4)",
          "cpu_vit_tiny_teacher", "cpu_vit_tiny_relu_kd", "parity",
          round(paper.KD_ACC_CIFAR10["vit_tiny"] - paper.KD_ACC_CIFAR10["vit_tiny_relu"], 2), "ch-table4",
          smaller="b", smaller_name="the student", names=("the teacher", "the student"),
          paper_b=paper.KD_ACC_CIFAR10["vit_tiny_relu"]),
    Claim("t4_kd", "ReLU ViT-T student distilled − trained on labels only, CIFAR-10 (our control)",
          "cpu_vit_tiny_relu_kd", "cpu_vit_tiny_relu_nokd", "better", None, "ch-table4",
          names=("distillation", "labels only")),
)


def planned(root: str | Path, claims=CLAIMS) -> dict[str, "plan.PlannedClaim"]:
    """The analysis plan's entry for each of ``claims`` (``<root>/plan.yaml``); refuses a claim the plan does not
    judge, or judges by another rule, naming the key."""
    path = Path(root) / "plan.yaml"
    entries = plan.load_plan(path)
    out = {}
    for c in claims:
        entry = entries.get(c.key)
        if entry is None:
            raise ValueError(f"{path} has no entry for claim {c.key!r}: add how it is judged (rule, table, seeds) "
                             "before its runs")
        expected = "control" if c.paper_gap is None else c.claim
        if entry.rule != expected:
            raise ValueError(f"{path}: claims.{c.key}.rule is {entry.rule!r}, but {c.key} is a {expected} claim: "
                             "fix the plan")
        out[c.key] = entry
    return out


def claim_rows(root: str | Path, claims=CLAIMS) -> list[dict]:
    """One row per claim: the paper's gap, ours (mean over paired seeds with its interval), the verdict and its
    sentence, judged as the analysis plan (``<root>/plan.yaml``) says (``plan``: its entry), and B's cell summarised
    (``b``); a claim whose cells are not all recorded yet says which (``verdict`` "pending"), never a number."""
    rows, entries = [], planned(root, claims)
    for c in claims:
        entry = entries[c.key]
        margin = entry.margin.points if entry.margin else None
        missing = [name for name in (c.a, c.b) if not (Path(root) / name).exists()]  # a damaged one is refused
        if missing:
            rows.append({"claim": c, "plan": entry, "margin": margin, "diff": None, "verdict": "pending",
                         "noninferiority": None, "ahead": None, "b": None, "missing_seeds": list(range(entry.seeds)),
                         "sentence": f"{c.what}: pending ({' and '.join(missing)} not recorded yet)."})
            continue
        got = compare(root, c.a, c.b, c.what, entry.rule, c.paper_gap, margin,
                      c.smaller if "noninferiority" in entry.secondary else None, c.smaller_name, entry.post_hoc,
                      c.names)
        extra = [k for k in got["diff"].seeds if not 0 <= k < entry.seeds]
        if extra:  # records the plan never asked for would move the interval without a word: refused
            raise ValueError(f"{c.key}: seed{'s' if len(extra) > 1 else ''} {', '.join(map(str, extra))} of "
                             f"{c.a}/{c.b} {'are' if len(extra) > 1 else 'is'} outside the plan's seeds 0-"
                             f"{entry.seeds - 1} (claims.{c.key}.seeds: {entry.seeds}): move the extra runs out of "
                             f"{root}, or plan them (claims.{c.key}.seeds), which makes the claim post hoc")
        absent = [k for k in range(entry.seeds) if k not in got["diff"].seeds]
        if absent:  # the plan's seeds not (yet) paired: said, never silently judged on fewer
            got["sentence"] = (got["sentence"][:-1] + f" ({got['diff'].n} of the {entry.seeds} seeds the plan asks "
                               f"for; missing: seed{'s' if len(absent) > 1 else ''} "
                               f"{', '.join(map(str, absent))}).")
        rows.append({"claim": c, "plan": entry, "margin": margin, "missing_seeds": absent,
                     **{k: got[k] for k in ("diff", "verdict", "noninferiority", "ahead", "b", "sentence")}})
    return rows


def verdict_label(row: Mapping, key: str = "verdict") -> str | None:
    """A :func:`claim_rows` row's verdict (or its one-sided reading, ``key="noninferiority"``) as a table shows it:
    marked post hoc when the plan was written after the claim's runs, and interim while some of the seeds the plan
    asks for are not paired yet (a verdict on fewer seeds than planned is never shown as final). None when the row
    has no such reading."""
    verdict = row[key]
    if verdict is None:
        return None
    marks = ["post hoc"] if row["plan"].post_hoc else []
    if row["missing_seeds"] and verdict != "pending":
        have = row["plan"].seeds - len(row["missing_seeds"])
        marks.append(f"interim, {have} of {row['plan'].seeds} seeds")
    return verdict + "".join(f" ({m})" for m in marks)


#: The margins the sensitivity table reads each parity claim against (points), beside the plan's own.
MARGINS_SHOWN = (0.5, 1.0, 1.5, 2.0)


def margin_sensitivity(rows: list[dict], margins=MARGINS_SHOWN) -> list[dict]:
    """How each parity claim's verdict moves with the margin: one row per parity claim with an interval, its
    verdict at each of ``margins`` (points), at the plan's margin, and at the accuracy-relative margin (the plan's
    margin scaled by our B side's mean accuracy over the paper's B accuracy: ``relative`` and its verdict). A reading,
    not a verdict: the plan's margin is the one that judges."""
    out = []
    for r in rows:
        c, d = r["claim"], r["diff"]
        if c.claim != "parity" or d is None or d.n < 2:
            continue
        row = {"claim": c.what, "key": c.key, "plan": r["margin"],
               **{f"m{m:g}": stats.verdict(d, "parity", m) for m in margins}}
        ours_b, theirs_b = r["b"].mean, c.paper_b  # B's summary as claim_rows read it: no second read
        relative = r["margin"] * ours_b / theirs_b if theirs_b else None
        row.update(relative=relative, relative_verdict=stats.verdict(d, "parity", relative) if relative else None)
        out.append(row)
    return out


def one_sided_tally(rows: list[dict]) -> dict:
    """The secondary, one-sided reading of the parity claims among ``rows`` (:func:`claim_rows`) that have an
    interval (two seeds or more): ``{"judged", "held", "spare"}``, ``spare`` being the least
    :func:`aot_lib.book.stats.noninferiority_spare` of those that hold (points; None when none does)."""
    judged = [r for r in rows if r["claim"].claim == "parity" and r["claim"].smaller and r["diff"] is not None
              and r["diff"].n >= 2]
    held = [r for r in judged if r["noninferiority"] == stats.VERDICTS[0]]
    spares = [stats.noninferiority_spare(r["diff"], r["claim"].smaller, r["margin"]) for r in held]
    return {"judged": len(judged), "held": len(held), "spare": min(spares) if spares else None}


def one_sided_sentence(rows: list[dict]) -> str:
    """The sentence a chapter's summary gives the one-sided reading of its parity claims (:func:`one_sided_tally`)."""
    t = one_sided_tally(rows)
    if not t["judged"]:
        return "No parity claim here has two seeds yet, so none is read one-sided."
    closest = f", the closest with {t['spare']:.2f} points to spare" if t["held"] else ""
    return (f"Read one-sided (non-inferiority, a secondary reading), {t['held']} of the {t['judged']} parity claims "
            f"with an interval hold{closest}.")


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
                cfg = _read_yaml(folder / "config.yaml")
                newest, probe = _result(folder, "pretrain")  # the newest probe (later ones are beside the first)
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


def sweep_table(root: str | Path, table: str, names: Mapping[str, str], caption: str, name: str | None = None):
    """One table's equal sweep as a book table (every point's validation linear probe and k-NN, each family's pick
    marked; a family with a point not recorded yet has no pick) and the picks: ``(Table, picked_lr(rows))``."""
    from .tables import Col, Table

    rows = [r for r in sweep_rows(root) if r["table"] == table]
    picks = picked_lr(rows)
    missing = any(r["val"] is None for r in rows)
    shown = Table(
        [dict(model=names[r["family"]], lr=r["lr"], val=r["val"], knn=r["knn_val"],
              picked="◀ picked" if r["val"] is not None and r["lr"] == picks[table, r["family"]] else "")
         for r in rows],
        [Col("model"), Col("lr", "learning rate", ".0e"), Col("val", "linear probe, val. (%)", ".2f"),
         Col("knn", "k-NN, val. (%)", ".2f"), Col("picked", "")],
        caption=caption,
        notes=[*(["— : the point is not recorded yet (no pick is made on part of the grid)."] if missing else []),
               _read_test_note(rows)],
        name=name)
    return shown, picks


#: Table 2's AoT-ADMM chain at the learning rate it first ran with (2e-3, the recipe's), recorded for seed 0 and marked
#: superseded when the equal sweep picked 4e-3: pretraining, then its fine-tunings by data set.
SUPERSEDED_T2_CHAIN = ("cpu_aot_admm_imagenette", {"cifar10": "cpu_aot_admm_imagenette_ft_cifar10",
                                                   "cifar100": "cpu_aot_admm_imagenette_ft_cifar100"})


def table2_lr_sensitivity(root: str | Path) -> dict:
    """How much Table 2's verdicts rest on AoT-ADMM's learning rate: the superseded 2e-3 chain beside the picked
    4e-3 one at seed 0 (the only seed the 2e-3 chain has), per data set the fine-tuned top-1 of both and AoT-ADMM −
    CRATE with each (``rows``); and what the pick rested on, the sweep's validation scores of the two rates and
    their difference in validation images (``val``, ``val_images``, ``images_apart``)."""
    root = Path(root)
    sweep = {r["lr"]: r for r in sweep_rows(root) if (r["table"], r["family"]) == ("Table 2", "aot_admm")}
    low, high = sweep[0.002], sweep[0.004]
    _, probe = _result(root / low["folder"], "pretrain")
    val_images = round(probe["train_images"] * probe["linear_val_fraction"])
    rows = []
    for data, superseded_ft in SUPERSEDED_T2_CHAIN[1].items():
        old = checked_accuracy(*_result(root / superseded_ft, "finetune"), "top1")
        new = cell(root, f"cpu_aot_admm_imagenette{PRETRAIN_SUFFIX['aot_admm']}_ft_{data}")[0]
        crate = cell(root, f"cpu_crate_imagenette_ft_{data}")[0]
        rows.append(dict(data=data, superseded=old, picked=new, crate=crate, gap_superseded=old - crate,
                         gap_picked=new - crate))
    return {"rows": rows, "val": {0.002: low["val"], 0.004: high["val"]}, "val_images": val_images,
            "images_apart": round((high["val"] - low["val"]) / 100 * val_images)}


def _read_test_note(rows: list[dict]) -> str:
    """What the sweep's points read, over their whole history (:func:`aot_lib.book.recorded.read_test_set`)."""
    seen = [f"{r['family']} at {r['lr']:g} ({r['folder'].rsplit('/', 1)[-1]})" for r in rows if r["read_test"]]
    scored = "Every point is scored by its newest probe, on validation data only."
    if not seen:
        return f"{scored} No probe of any point here ever read the test split."
    return (f"{scored} {len(seen)} of the {len(rows)} points were also probed with the test split earlier in their "
            f"history, before the sweep scored them on validation: {', '.join(seen)}; both probes stay in each "
            "record (probe.json, then reprobes/).")


# --- the 30-minute recipe search (issue 37; scripts/recipe_search.py says the rule) ---

def validation_scores(folder: str | Path) -> dict | None:
    """A validation-only run's scores, from its ``probe.json`` (None: not recorded yet): ``linear`` (the linear
    probe's best validation top-1 over its learning-rate grid), ``lr`` (the pick), ``knn`` (the final validation
    k-NN), ``grid`` (the probe's lr grid) and ``val_images`` (its validation split); a score the record does not
    hold is None. Refuses a record without the linear score."""
    path = Path(folder) / "probe.json"
    if not path.is_file():
        return None
    probe = _read_json(path)
    if "linear_val_best" in probe:
        linear = checked_accuracy(path, probe, "linear_val_best")
    elif isinstance(probe.get("linear_val_top1"), dict) and probe["linear_val_top1"]:
        # probes recorded before linear_val_best was written; every rate's score checked before the best is taken
        linear = max(checked_accuracy(path, probe["linear_val_top1"], k) for k in probe["linear_val_top1"])
    else:
        raise _damaged(path, "holds no validation linear score (linear_val_best or linear_val_top1)")
    if probe.get("knn_val_top1") is not None:  # ranked and written from too: checked before anything uses it
        checked_accuracy(path, probe, "knn_val_top1")
    settings = probe.get("probe") or {}
    val_images = (round(probe["linear_val_fraction"] * probe["train_images"])
                  if "linear_val_fraction" in probe and "train_images" in probe else None)
    return {"linear": linear, "lr": probe.get("linear_lr"), "knn": probe.get("knn_val_top1"),
            "grid": tuple(settings["lr"]) if "lr" in settings else None, "val_images": val_images}


#: The families every candidate is screened on, in the order the search runs them.
SEARCH_FAMILIES = ("aot_admm", "crate", "aot")
_SEARCH_EPOCHS = re.compile(r"\((?P<proxy>\d+) of (?P<full>\d+) epochs\)")


def search_rows(root: str | Path) -> list[dict]:
    """The recipe search's screening, a row per candidate of ``configs/cpu/search/`` in order: its setting (width,
    depth, patch, local views, from the resolved config; batch, lr, projector and SIGReg slices, which no candidate
    changes), its nominal full length and screening length (epochs),
    and per family ``<family>`` the recorded validation linear top-1 (None: not recorded yet), ``<family>_lr`` the
    probe's pick, ``<family>_grid`` its lr grid, ``<family>_val_images`` its validation split and ``<family>_knn``
    the final validation k-NN; ``mean`` over the three families (None until all three are recorded). ``root`` is
    the checkout."""
    from ..training.config import load_config

    root = Path(root)
    rows = []
    for first in sorted((root / "configs" / "cpu" / "search").glob(f"*_{SEARCH_FAMILIES[0]}.yaml")):
        cand = first.name[: -len(f"_{SEARCH_FAMILIES[0]}.yaml")]
        cfg = load_config(first)
        lengths = _SEARCH_EPOCHS.search(cfg.get("description") or "")
        if not lengths:
            raise ValueError(f"{first}: its description names no '(N of M epochs)': write the search's configs "
                             "again (python scripts/recipe_search.py configs)")
        ov, views = cfg["model"]["overrides"], cfg["views"]
        row = dict(candidate=cand, width=ov["embed_dim"], depth=ov["depth"], patch=ov.get("patch_size", 8),
                   local=views["n_local"], full_epochs=int(lengths["full"]), epochs=int(lengths["proxy"]),
                   batch=cfg["optim"]["batch_size"], lr=cfg["optim"]["lr"],
                   projector=(cfg["projector"]["hidden_dim"], cfg["projector"]["out_dim"]),
                   slices=cfg["loss"]["num_slices"])
        for fam in SEARCH_FAMILIES:
            got = validation_scores(root / "results" / "cpu" / "search" / f"search_{cand}_{fam}")
            for key, value in (got or dict.fromkeys(("linear", "lr", "knn", "grid", "val_images"))).items():
                row[fam if key == "linear" else f"{fam}_{key}"] = value
        vals = [row[f] for f in SEARCH_FAMILIES]
        row["mean"] = sum(vals) / len(vals) if None not in vals else None
        rows.append(row)
    return rows


def search_curves(root: str | Path) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """``(candidate, family) -> [(modelled minutes, validation k-NN top-1), ...]`` of every recorded screening run:
    the online monitor's curve (:func:`knn_curve`) against steps times the candidate's and family's idle step time,
    measured interleaved (``results/cpu/search/step_times.json``; the runs' own wall times were taken on a shared
    machine). ``root`` is the checkout."""
    root = Path(root)
    times = _read_json(root / "results" / "cpu" / "search" / "step_times.json")["steps"]
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


#: Training images of this project's offline copies (the data README): CIFAR-100's held-out split leaves 400 of
#: each class's 500 official training images for training.
TRAIN_IMAGES = {"cifar10": 50_000, "cifar100": 40_000}


def pretraining_flops(cfg: Mapping) -> dict:
    """What a LeJEPA pretraining run of ``cfg`` costs in FLOPs, so a reader on another machine can scale its
    minutes: ``forward_per_image`` (encoder on every view, projector and loss, counted by
    ``torch.utils.flop_counter`` over one whole batch of the config's size, per image; a multiply-add is 2 FLOPs,
    and only matrix products and attention count, as in :func:`aot_lib.count_flops`), ``steps`` (the config's
    epochs over its training images) and ``total``: 3 x forward per image x images seen, the usual estimate of a
    training step as a forward and a backward twice its cost."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from ..data.augment import BatchedMultiCrop, MultiCropConfig
    from ..models.flops import _CPU_ATTENTION
    from ..training.builders import normalization_for
    from ..training.pretrain import build_lejepa_model

    batch = cfg["optim"]["batch_size"]
    model = build_lejepa_model(dict(cfg))
    aug = BatchedMultiCrop(MultiCropConfig.from_config(cfg["views"], *normalization_for(cfg)))
    size = cfg["data"].get("image_size") or 32
    images = torch.zeros(batch, 3, size, size, dtype=torch.uint8)
    with torch.no_grad(), FlopCounterMode(display=False, custom_mapping=_CPU_ATTENTION) as counter:
        model(aug(images, torch.Generator().manual_seed(0)))
    per_image = counter.get_total_flops() / batch
    train_images = TRAIN_IMAGES[cfg["data"]["name"]]
    steps = cfg["optim"]["epochs"] * (train_images // batch)
    return {"forward_per_image": per_image, "steps": steps, "total": 3 * per_image * steps * batch}


_FINALIST = re.compile(r"recipe search finalist (?P<place>\d+) \((?P<cand>[\w-]+)\): \w+ at full length "
                       r"\((?P<epochs>\d+) epochs\)")


def finalist_rows(root: str | Path) -> list[dict]:
    """The search's finalists at full length (``configs/cpu/search/final/``, written by ``recipe_search.py
    finalists``), in their place: per family ``<family>`` the full run's validation linear top-1 and ``<family>_knn``
    its validation k-NN (None: not recorded yet), ``<family>_screen`` the candidate's screening score; ``mean`` and
    ``mean_screen`` over the three families (None until all three are recorded). ``root`` is the checkout."""
    from ..training.config import load_config

    root = Path(root)
    screening = {r["candidate"]: r for r in search_rows(root)}
    rows = []
    for first in sorted((root / "configs" / "cpu" / "search" / "final").glob(f"*_{SEARCH_FAMILIES[0]}.yaml")):
        m = _FINALIST.fullmatch(load_config(first).get("description") or "")
        if not m:
            raise ValueError(f"{first}: its description is not a finalist's: write the finalists' configs again "
                             "(python scripts/recipe_search.py finalists)")
        cand = m["cand"]
        row = dict(candidate=cand, place=int(m["place"]), epochs=int(m["epochs"]))
        for fam in SEARCH_FAMILIES:
            got = validation_scores(root / "results" / "cpu" / "search" / "final" / f"final_{cand}_{fam}")
            row[fam], row[f"{fam}_knn"] = (got["linear"], got["knn"]) if got else (None, None)
            row[f"{fam}_screen"] = screening[cand][fam] if cand in screening else None
        full = [row[f] for f in SEARCH_FAMILIES]
        row["mean"] = sum(full) / len(full) if None not in full else None
        row["mean_screen"] = screening[cand]["mean"] if cand in screening else None
        rows.append(row)
    return sorted(rows, key=lambda r: r["place"])


def recipe_pick(root: str | Path) -> dict | None:
    """The finalist that becomes the 30-minute recipe, by the search's rule (``scripts/recipe_search.py``): the
    best mean validation linear top-1 over the three families at full length (a tie: the better screening
    place). None until every finalist is recorded on every family. ``root`` is the checkout."""
    rows = finalist_rows(root)
    if not rows or any(r["mean"] is None for r in rows):
        return None
    return max(rows, key=lambda r: r["mean"])  # rows are in screening place order: max keeps the first of a tie


#: The candidate of the search that is the first recipe itself (configs/cpu/recipe.yaml, 10 epochs).
FIRST_RECIPE = "c0_base"


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
    clocks = [{**_read_json(f), "path": f.relative_to(root).as_posix()} for f in found]
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
    others = sorted(({**_read_json(f), "path": f.relative_to(root).as_posix()}
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
    minutes = {r.seed: modelled_minutes(_read_json(r.folder / "run.json")["step"], step_s) for r in runs}
    def reaching(top1: float) -> int:  # seeds at or above top1 within the goal's minutes
        return sum(r.top1 >= top1 and minutes[r.seed] <= GOAL_30MIN["minutes"] for r in runs)

    return {"runs": runs, "summary": stats.summarize([r.top1 for r in runs]),
            "best": max(runs, key=lambda r: r.top1), "minutes": minutes,
            "reached": reaching(GOAL_30MIN["top1"]), "moonshot": reaching(GOAL_30MIN["moonshot"]),
            "flops": pretraining_flops(_read_yaml(runs[0].folder / "config.yaml"))}


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
    a, b = (flatten(_read_yaml(f / "config.yaml")) for f in (final, cell))
    differ = sorted(k for k in set(a) | set(b) if not _seed_free(k) and a.get(k) != b.get(k))
    if differ or a.get("run.seed") != b.get("run.seed"):
        raise ValueError(f"{cell.name} is not {final.name} again: {', '.join(differ) or 'run.seed'} differ; "
                         "the recipe's configs must be written from the picked finalist (recipe_search.py recipe)")
    pa, pb = (_read_json(f / "probe.json") for f in (final, cell))
    ra, rb = (_read_json(f / "run.json") for f in (final, cell))
    va, vb = pa.get("linear_val_top1") or {}, pb.get("linear_val_top1") or {}
    return {"commits": (ra["commit"], rb["commit"]),
            "linear": {k: (va[k], vb[k]) for k in va if k in vb},
            "knn": (pa.get("knn_val_top1"), pb.get("knn_val_top1")),
            "monitor": tuple(_knn_rows(f, "knn/val_top1")[-1][1] for f in (final, cell))}


#: Tables 1 and 3 at the 30-minute recipe (issue 37): the plan's cpu30 claims, judged as the first recipe's are.
CLAIMS_30MIN = (
    Claim("t1_cifar10_30min", "AoT-ADMM − CRATE, linear probe on CIFAR-10 (Table 1, 30-minute recipe)",
          "cpu30_aot_admm_cifar10", "cpu30_crate_cifar10", "parity", CLAIMS[0].paper_gap, "ch-tables-1-3",
          smaller="a", smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"), paper_b=CLAIMS[0].paper_b),
    Claim("t1_cifar100_30min", "AoT-ADMM − CRATE, linear probe on CIFAR-100 (Table 1, 30-minute recipe)",
          "cpu30_aot_admm_cifar100", "cpu30_crate_cifar100", "parity", CLAIMS[1].paper_gap, "ch-tables-1-3",
          smaller="a", smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"), paper_b=CLAIMS[1].paper_b),
    Claim("t3_cifar10_30min", "AoT-ADMM − AoT, linear probe on CIFAR-10 (Table 3, 30-minute recipe)",
          "cpu30_aot_admm_cifar10", "cpu30_aot_cifar10", "better", CLAIMS[2].paper_gap, "ch-tables-1-3",
          names=("AoT-ADMM", "AoT")),
    Claim("t3_cifar100_30min", "AoT-ADMM − AoT, linear probe on CIFAR-100 (Table 3, 30-minute recipe)",
          "cpu30_aot_admm_cifar100", "cpu30_aot_cifar100", "better",
          _gap(paper.LINEAR_PROBE_ACC, "cifar100", "aot_admm_tiny", "aot_tiny"), "ch-tables-1-3",
          names=("AoT-ADMM", "AoT")),
)


#: The chapter that tells each table's claims (a claim's ``where``), as the results table names it.
CHAPTER_OF = {"ch-tables-1-3": "Tables 1 and 3", "ch-transfer": "Table 2", "ch-table4": "Table 4"}


def all_claim_rows(root: str | Path) -> list[dict]:
    """:func:`claim_rows` of every claim the book judges: the first recipe's, then the 30-minute recipe's."""
    return claim_rows(root) + claim_rows(root, CLAIMS_30MIN)


def verdicts(root: str | Path) -> list[dict]:
    """Every claim of the book at a glance (:func:`verdict_rows` of :func:`all_claim_rows`): what chapter 1's
    results table and ``aot verdicts`` show. ``root``: the results folder holding ``plan.yaml`` (``results/cpu``)."""
    return verdict_rows(all_claim_rows(root))


def verdict_rows(rows: list[dict]) -> list[dict]:
    """One row per claim of ``rows`` (:func:`claim_rows`), as the results table shows it: ``claim`` (what is
    compared), ``verdict`` (:func:`verdict_label`), ``ahead`` (who the interval puts ahead, "neither", or None while
    pending), ``ours`` and ``interval`` (A − B, points), ``paper`` (the paper's gap), ``seeds`` ("k of n", n the
    plan's), ``one_sided`` (a parity claim's non-inferiority reading), ``rule``, ``table``, ``margin``, ``post_hoc``,
    ``chapter`` and ``key`` (the plan's)."""
    out = []
    for r in rows:
        c, d = r["claim"], r["diff"]
        out.append(dict(
            claim=c.what, verdict=verdict_label(r),
            ahead=None if d is None else stats.ahead_name(d, c.names) or "neither",
            ours=None if d is None else f"{d.mean:+.2f}",
            interval=None if d is None or d.n < 2 else f"[{d.low:+.2f}, {d.high:+.2f}]",
            paper=c.paper_gap, seeds=f"{0 if d is None else d.n} of {r['plan'].seeds}",
            one_sided=verdict_label(r, "noninferiority"), rule=r["plan"].rule, table=r["plan"].table,
            margin=r["margin"], post_hoc=r["plan"].post_hoc, chapter=CHAPTER_OF[c.where], key=c.key))
    return out
