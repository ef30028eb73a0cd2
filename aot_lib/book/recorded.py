"""Recorded training runs the chapters show (``results/cpu``, or a smoke run trained now). Reading a record's
files is :mod:`aot_lib.evidence.records`'s.

A page reads a run with :func:`load_recorded_run`, says how far its rows can be trusted with
:func:`run_status` and :func:`run_notices`. Recorded benchmarks are :mod:`aot_lib.book.benchmarks`'s.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..evidence.records import RESULT_FILES, current_result, evaluations, read_json, superseded
from .pages import Admonition
from .tables import Col, Table

__all__ = ["is_recorded", "load_recorded_run", "read_curve", "run_status", "run_notices", "seed_runs_table"]


def is_recorded(root: Path, name: str, config: str) -> bool:
    """Whether ``results/cpu/<name>`` holds the result of ``configs/cpu/<config>``'s stage."""
    from ..training.config import config_stage

    stage = config_stage(root / "configs" / "cpu" / config)
    return (root / "results" / "cpu" / name / RESULT_FILES[stage]).exists()


def load_recorded_run(root: Path, name: str, config: str, smoke_steps: int,
                      start_from: Path | Mapping[str, Path] | None = None) -> dict:
    """``results/cpu/<name>`` if recorded; otherwise a smoke-sized run of ``configs/cpu/<config>`` trained
    now (which needs the data: :class:`aot_lib.data.datasets.DataError` otherwise).

    The config's stage (:func:`aot_lib.training.config.config_stage`) says what a run is: pretraining (then probed),
    fine-tuning or distillation. A smoke fine-tuning or distillation starts from ``start_from`` (the
    checkpoint or recorded ``encoder/`` of the run it builds on: ``finetune.checkpoint`` or
    ``distill.teacher``; or a mapping of config keys to such files, e.g. a distillation's
    ``{"distill.teacher": ..., "distill.student_init": ...}``) and trains one epoch of 2,000 images.

    Returns ``source`` (a sentence), ``dir``, ``recorded`` (bool), ``stage``, the ``curve`` (``step``,
    ``loss`` and, for pretraining, ``pred`` and ``sigreg``), ``run``, ``metrics`` (empty but for
    pretraining) and ``result`` (the
    stage's result file: the probe's, the fine-tuning's or the distillation's; for pretraining also as
    ``probe``) and ``config_text``.
    """
    import json

    from ..training.config import config_stage, load_config

    path = root / "configs" / "cpu" / config
    stage = config_stage(path)
    rec = root / "results" / "cpu" / name
    if is_recorded(root, name, config):
        run: dict = {"source": f"recorded in results/cpu/{name}", "dir": rec, "recorded": True}
    else:
        from .. import train

        out = root / "runs" / "book"
        overrides = [f"run.out_dir={out}", "run.progress=false", "data.train_subset=2000", "data.test_subset=1000"]
        if stage == "pretrain":
            overrides += [f"optim.max_steps={smoke_steps}", "optim.batch_size=64", "probe.epochs=30"]
        else:
            if start_from is None:
                raise ValueError(f"{config} is a {stage} config: give start_from, the checkpoint it starts from")
            if not isinstance(start_from, Mapping):
                start_from = {f"{stage}.{'checkpoint' if stage == 'finetune' else 'teacher'}": start_from}
            overrides += [f"{k}={v}" for k, v in start_from.items()]
            overrides += [f"{stage}.epochs=1", f"{stage}.warmup_epochs=0", f"{stage}.batch_size=64"]
        cfg = load_config(path, overrides)
        if stage == "pretrain":
            train.pretrain(cfg)
            train.probe(cfg)
        else:
            getattr(train, stage)(cfg)
        what = (f"{smoke_steps} steps" if stage == "pretrain" else "one epoch") + " on 2,000 images"
        run = {"source": f"trained now at smoke scale ({what}): no recorded run",
               "dir": out / cfg["run"]["name"], "recorded": False}
    run["stage"] = stage
    run["curve"] = read_curve(run["dir"], stage)
    run["run"] = json.loads((run["dir"] / "run.json").read_text())
    metrics = run["dir"] / "metrics.json"  # the last logged values: pretraining runs write it
    run["metrics"] = json.loads(metrics.read_text()) if metrics.exists() else {}
    run["result"] = current_result(run["dir"], stage)
    run["evaluations"] = [read_json(p) for p in evaluations(run["dir"], stage)]
    if stage == "pretrain":
        run["probe"] = run["result"]
    run["config_text"] = (run["dir"] / "config.yaml").read_text()
    return run


def read_curve(folder: Path, stage: str = "pretrain") -> dict:
    """A run's logged training curve from its ``metrics.csv``: ``step``, ``loss`` and, for pretraining, ``pred``
    and ``sigreg`` lists (the training rows only, not the monitors' own rows)."""
    import csv

    with open(Path(folder) / "metrics.csv") as f:
        rows = [r for r in csv.DictReader(f) if r.get("loss")]
    # runs recorded before the LeJEPAOutput rename logged "pred"/"sigreg"; newer ones "*_loss"
    keys = ("step", "loss", "pred", "sigreg") if stage == "pretrain" else ("step", "loss")
    return {k: [float(r[k] if k in r else r[f"{k}_loss"]) for r in rows] for k in keys}


def run_status(run: Mapping) -> str:
    """How far a table row read from :func:`load_recorded_run` can be trusted, in one word: ``smoke``
    (trained while the page was built), ``superseded`` or ``recorded``."""
    if not run["recorded"]:
        return "smoke"
    return "superseded" if superseded(run) else "recorded"


def run_notices(runs: Iterable[Mapping], missing: Iterable[str] = ()) -> list:
    """The notices a page shows above tables of :func:`load_recorded_run` runs: runs that could not be
    trained for want of data (``missing``: their names), runs trained now at smoke scale, superseded runs."""
    runs, missing = list(runs), list(missing)
    notes = []
    if missing:
        notes.append(Admonition(
            "Not recorded yet",
            f"{', '.join(missing)}: not recorded yet, and its data set is not on this machine, so it could not "
            "be trained while the page was built: set AOT_DATA to the data folder (see the README) to train it "
            "at smoke scale here.", kind="warning"))
    live = [r["dir"].name for r in runs if not r["recorded"]]
    if live:
        notes.append(Admonition(
            "Trained now, at smoke scale",
            f"{', '.join(live)}: no recorded run, so a few steps on 2,000 images were trained while this page "
            "was built; their rows are marked 'smoke' and are not results.", kind="note"))
    notes += [Admonition("Superseded", f"{r['dir'].name}: {superseded(r)}") for r in runs if superseded(r)]
    return notes


def seed_runs_table(groups: Mapping[object, Sequence], score: str, wall: str, group: str | None = None) -> Table:
    """A chapter's "recorded runs" table: each run (:class:`aot_lib.evidence.SeedRun`) of ``groups`` (a label, e.g.
    a stage, -> its runs) with its seed, top-1 (column title ``score``), commit, numerics
    (:func:`aot_lib.evidence.numerics_label`) and wall minutes (``wall``); the label in a first column titled
    ``group``, or no such column when None."""
    from ..evidence import numerics_label

    rows = [dict(group=label, run=r.name, seed=r.seed, top1=r.top1, commit=r.commit[:10], numerics=numerics_label(r),
                 wall=r.wall_time_s / 60) for label, runs in groups.items() for r in runs]
    return Table(rows, [*([Col("group", group)] if group else []), Col("run"), Col("seed"), Col("top1", score, ".2f"),
                        Col("commit"), Col("numerics", "torch, CPU, instruction set"), Col("wall", wall, ".1f")])
