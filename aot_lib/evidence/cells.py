"""A table *cell*: a run name (``cpu_aot_admm_cifar10``) and its seed variants (``…_seed1``, …), read as one list of
seeds. Reading a cell checks that its runs are seeds of one recipe (configs differing only in what a seed may
change, chained stages starting from their own seed, one probe protocol), so a table never averages runs trained
differently; a run marked superseded or not finished is refused by name. Also the wider-grid probes and the floors.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..config_format import built_model, flatten
from ..probe_grid import grid_pick
from .records import (TOP1_KEY, checked_accuracy, damaged, newest_result, probe_of, probe_settings, read_json,
                      read_yaml)

__all__ = ["SEED_FREE_KEYS", "CHAIN_KEYS", "UNRECORDED_PROBE_SETTINGS", "seed_variant_path", "SeedRun", "NUMERICS", "cpu_of",
           "numerics_label", "mixed_numerics", "cell_runs", "cell", "probe_lr_picks", "wide_probe_file", "wide_probe", "BASELINES_DIR",
           "floor_cells", "same_probe", "BASELINES_30MIN_EDGE", "seed_free", "PRETRAIN_SUFFIX", "SUPERSEDED_T2_CHAIN"]


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


#: Probe settings a ``probe.json`` did not record in its day, and what every probe did then: before ``probe.test``
#: existed each probe read the test split. A setting only one of two probes records is compared at this value; one
#: not listed here is compared as missing, so the two probes are refused as different protocols, never guessed alike.
UNRECORDED_PROBE_SETTINGS = {"test": True}


def _with_unrecorded(settings: dict, other: dict) -> dict:
    """``settings`` with each probe setting only ``other`` records filled in as probes ran before it was recorded."""
    missing = other.keys() - settings.keys()
    return {**{k: UNRECORDED_PROBE_SETTINGS[k] for k in missing if k in UNRECORDED_PROBE_SETTINGS}, **settings}


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
    kind: str = "pretrain"  # run.json's kind: which result file holds its probe (TOP1_KEY)


#: What a run's float results depend on besides its config, commit and seed, as run.json records it: torch's
#: version, the CPU model and the instruction set torch's kernels use (the last two recorded since bca2c65).
NUMERICS = ("torch", "cpu_model", "cpu_isa")


def cpu_of(run: SeedRun | Mapping) -> str | None:
    """The CPU a run (or a result file's dict) recorded: ``"AMD EPYC, AVX2"`` (model, then instruction set, what it
    has of them), or None."""
    hw = dict(run.hardware if isinstance(run, SeedRun) else run.get("hardware") or {})
    return ", ".join(hw[k] for k in ("cpu_model", "cpu_isa") if k in hw) or None


def numerics_label(run: SeedRun | Mapping) -> str:
    """What a run's float results were computed with, as its ``run.json`` (or a result file, e.g. a re-probe's
    ``probe.json``) records it: ``"torch 2.14.1+cu130, Intel(R) Xeon(R) Processor, AVX512"``; a field not recorded
    then (the CPU, before bca2c65) says so."""
    hw = dict(run.hardware if isinstance(run, SeedRun) else run.get("hardware") or {})
    return ", ".join([f"torch {hw['torch']}" if "torch" in hw else "torch not recorded",
                      cpu_of(run) or "CPU not recorded"])


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


def seed_free(key: str) -> bool:
    return any(key == k or (k.endswith(".") and key.startswith(k)) for k in SEED_FREE_KEYS)


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
        record = read_json(folder / "run.json")
        if record.get("status") != "finished":
            raise ValueError(f"{folder}: status {record.get('status')!r}, not finished; resume it before tabulating")
        if (record.get("run") or {}).get("superseded") or record.get("superseded"):
            raise ValueError(f"{folder} is marked superseded; leave it out of the cell or record it again")
        nested = read_yaml(folder / "config.yaml")
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
                if not seed_free(key) and ref[key] != config[key]:
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
            a, b = _with_unrecorded(a, b), _with_unrecorded(b, a)
            differing = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
            if differing:
                key = differing[0]
                raise ValueError(f"{folder.name} was probed with probe.{key}={b.get(key)!r} and {ref_folder.name} "
                                 f"with {a.get(key)!r}: probe them alike (scripts/reprobe.py {folder} "
                                 f"{ref_folder})")
        top1 = checked_accuracy(*newest_result(folder, kind), TOP1_KEY[kind])
        if not isinstance(record.get("seed"), int) or isinstance(record.get("seed"), bool):
            raise damaged(folder / "run.json", f"seed is {record.get('seed')!r}, not a whole number")
        hardware = record.get("hardware") if isinstance(record.get("hardware"), dict) else {}
        runs.append(SeedRun(folder.name, int(record["seed"]), top1, str(record.get("commit", "")),
                            float(record.get("wall_time_s", math.nan)), folder,
                            tuple((k, str(hardware[k])) for k in NUMERICS if k in hardware), kind))
    seeds = [r.seed for r in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"cell {name} has two runs with one seed: {[(r.name, r.seed) for r in runs]}")
    return sorted(runs, key=lambda r: r.seed)


def probe_lr_picks(runs: Iterable[SeedRun | Path]) -> list[dict]:
    """Each run's linear-probe learning rate as picked on validation, beside the grid it was picked from (its newest
    probe; a pretraining run's or a floor's): ``{"run"}`` and :func:`aot_lib.probe_grid.grid_pick`'s ``"lr", "grid"``
    (the rates it tried), ``"at_top", "at_bottom", "edge_gain"``. A pick at either end of the grid says the grid may
    stop short of that encoder's best rate. A run is a :class:`SeedRun` or a pretraining run's folder (a sweep
    point, not a cell's seed)."""
    picks = []
    for r in runs:
        name, folder, kind = (r.name, r, "pretrain") if isinstance(r, Path) else (r.name, r.folder, r.kind)
        path, probe = newest_result(folder, kind)
        try:
            picks.append({"run": name, **grid_pick(probe)})
        except ValueError as e:
            raise damaged(path, str(e)) from None
    return picks


def wide_probe_file(name: str, wide_root: str | Path | Sequence[str | Path]) -> Path | None:
    """The wider-grid ``probe.json`` of run ``name``: under the first of ``wide_root``'s folders that has one (an
    extension's folder before the grid it extends, so the newest probe of each run wins), or None."""
    roots = [wide_root] if isinstance(wide_root, (str, Path)) else list(wide_root)
    return next((f for f in (Path(r) / name / "probe.json" for r in roots) if f.exists()), None)


def wide_probe(runs: list[SeedRun], wide_root: str | Path | Sequence[str | Path]) -> dict[int, dict]:
    """Each run of a cell probed again with a wider learning-rate grid (``scripts/reprobe.py --set``, its
    ``probe.json`` under ``wide_root/<run>/``; with several folders, the first that has it: :func:`wide_probe_file`),
    by seed: ``{"grid", "lr", "val", "top1"}`` of the wide probe (``grid``: the rates it tried, an extension's
    included) beside ``{"grid0", "lr0", "val0", "top1_0"}`` of the recorded one, ``root`` (the folder it was read
    from), the commits each ran at (``commit``, ``commit0``), the CPU it ran on (``cpu``) and ``shared_same``:
    whether the wide probe gives the recorded validation accuracy at every rate both grids share, to the last digit
    (the same features and the same probe on the same CPU give the same numbers). Refuses a missing wide probe, a
    wide probe of another encoder (its ``pretrain_step`` differs) or one that did not widen the grid."""
    out = {}
    for r in runs:
        (rec_path, rec), wide_path = newest_result(r.folder, "pretrain"), wide_probe_file(r.name, wide_root)
        if wide_path is None:
            where = ", ".join(map(str, [wide_root] if isinstance(wide_root, (str, Path)) else wide_root))
            raise FileNotFoundError(f"{r.name} has no wider-grid probe under {where}: run scripts/reprobe.py "
                                    "--dest with the wider grid and copy its probe.json there")
        wide = read_json(wide_path)
        probe_of(wide_path, wide, r.name)
        checked_accuracy(wide_path, wide, "linear_top1")
        for path, result in ((rec_path, rec), (wide_path, wide)):
            if not isinstance(result.get("linear_val_top1"), Mapping):
                raise damaged(path, "has no 'linear_val_top1' (the validation accuracy of each rate)")
        if wide["pretrain_step"] != rec["pretrain_step"]:
            raise ValueError(f"{wide_path.parent}: probed the encoder of step {wide['pretrain_step']}, the record "
                             f"is of step {rec['pretrain_step']}: probe the recorded encoder again")
        if not set(rec["probe"]["lr"]) < set(wide["probe"]["lr"]):
            raise ValueError(f"{wide_path.parent}: grid {wide['probe']['lr']} does not extend the recorded "
                             f"{rec['probe']['lr']}")
        out[r.seed] = {"grid": grid_pick(wide)["grid"], "lr": float(wide["linear_lr"]),
                       "val": float(wide["linear_val_best"]), "top1": float(wide["linear_top1"]),
                       "grid0": rec["probe"]["lr"], "lr0": float(rec["linear_lr"]),
                       "val0": float(rec["linear_val_best"]), "top1_0": float(rec["linear_top1"]),
                       "root": wide_path.parent.parent, "commit": wide.get("commit", "?"),
                       "commit0": rec.get("commit", "?"), "cpu": cpu_of(wide),
                       "shared_same": all(wide["linear_val_top1"].get(k) == v
                                          for k, v in rec["linear_val_top1"].items())}
    return out


def cell(root: str | Path, name: str) -> dict[int, float]:
    """``{seed: test accuracy}`` of cell ``name`` (see :func:`cell_runs`)."""
    return {r.seed: r.top1 for r in cell_runs(root, name)}


#: Where the probes' floor is recorded under ``results/cpu`` (``aot baseline``; scripts/evidence_runs.sh baselines):
#: ``baseline_init_<cell>[_seed<k>]``, a pretrained cell's encoders at initialisation, and
#: ``baseline_pixels_<data set>_seed<k>``, raw pixels, each probed as the cell's runs are. A recipe whose floors are
#: probed otherwise keeps them in a folder of its own (the 30-minute cells': ``baselines_cpu30``), since raw pixels'
#: names carry no recipe.
BASELINES_DIR = "baselines"
#: The 30-minute cells' floors with those that sat at an edge of the wide grid probed again, the grid extended
#: outward (the plan's second addendum, post hoc): the edge records first, the first records under them. The book does
#: not read floors this way: the addendum's control came back with one validation score changed (another CPU's
#: rounding), so the edge records are shown apart (:func:`aot_lib.book.paper_tables.floor_reprobes`).
BASELINES_30MIN_EDGE = ("baselines_cpu30_edge", "baselines_cpu30")


def floor_cells(root: str | Path, name: str, dataset: str,
                baselines: str | tuple[str, ...] = BASELINES_DIR) -> dict[str, list[SeedRun] | None]:
    """The floor under pretrained cell ``name`` (on ``dataset``): ``{"untrained": its encoders at initialisation,
    "pixels": raw pixels}``, each its seeds' runs from ``root/baselines``, or None while not recorded.
    ``baselines`` may be folders, newest first, the last holding every seed: a seed's run is read from the first
    that records it (a floor probed again, e.g. with its grid extended at an edge, stands in for its first record)."""
    *newer, base = (baselines,) if isinstance(baselines, str) else tuple(baselines)
    out: dict[str, list[SeedRun] | None] = {}
    for what, cell_name in (("untrained", f"baseline_init_{name}"), ("pixels", f"baseline_pixels_{dataset}")):
        try:
            runs = {r.name: r for r in cell_runs(Path(root) / base, cell_name)}
        except FileNotFoundError:
            out[what] = None
            continue
        for folder in reversed(newer):  # the newest last, so it wins
            try:
                runs.update({r.name: r for r in cell_runs(Path(root) / folder, cell_name) if r.name in runs})
            except FileNotFoundError:
                pass
        out[what] = sorted(runs.values(), key=lambda r: r.seed)
    return out


def same_probe(first: Mapping, again: Mapping) -> bool:
    """Whether a floor probed again gave its first record's numbers (two probes as recorded, each its run's newest,
    as every reader of a floor takes it): the same validation score at every rate both tried, the same pick, and the
    same test scores, to the last digit."""
    shared = set(first.get("linear_val_top1") or {}) & set(again.get("linear_val_top1") or {})
    return bool(shared) and all(first["linear_val_top1"][k] == again["linear_val_top1"][k] for k in shared) and all(
        first.get(k) == again.get(k) for k in ("linear_lr", "linear_top1", "knn_top1", "knn_val_top1"))


#: Table 2's pretraining run names carry the learning rate when it is not the recipe's 2e-3 (the equal sweep picked
#: 4e-3 for AoT-ADMM; the run at 2e-3 is recorded under the plain name, superseded for Table 2).
PRETRAIN_SUFFIX = {"aot_admm": "_lr4e-3", "crate": ""}


#: Table 2's AoT-ADMM chain at the learning rate it first ran with (2e-3, the recipe's), recorded for seed 0 and marked
#: superseded when the equal sweep picked 4e-3: pretraining, then its fine-tunings by data set.
SUPERSEDED_T2_CHAIN = ("cpu_aot_admm_imagenette", {"cifar10": "cpu_aot_admm_imagenette_ft_cifar10",
                                                   "cifar100": "cpu_aot_admm_imagenette_ft_cifar100"})
