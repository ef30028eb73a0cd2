"""Reading a recorded run's files (``results/cpu/<run>/``): its evaluations (the first result file and the later
re-probes, oldest first), JSON and YAML read strictly (a key twice, a file cut short, a value out of range: one
line naming the file and the fix), the accuracy a result states, checked before anything uses it.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping

import yaml

from ..files import DuplicateKeyError, load_yaml, loads_json

__all__ = ["RESULT_FILES", "REPROBES", "TOP1_KEY", "CLASSES", "TEST_VAL_LIMIT", "damaged", "read_json", "read_yaml",
           "evaluations", "current_result", "read_test_set", "next_reprobe", "superseded", "checked_accuracy",
           "newest_result", "probe_of", "probe_settings"]


def superseded(run: Mapping) -> str:
    """The notice a recorded run carries when the code changed under it (``superseded`` in
    its run.json); empty otherwise."""
    return (run.get("run") or {}).get("superseded") or ""


RESULT_FILES = {"pretrain": "probe.json", "finetune": "finetune.json", "distill": "distill.json",
                "baseline-init": "probe.json", "baseline-pixels": "probe.json"}  # aot baseline: the probes' floor

#: Where a recorded pretraining run's later probes go, beside its first ``probe.json`` and never over it:
#: ``<run>/reprobes/1.json``, ``2.json``, … in the order they were made (scripts/reprobe.py). A record is never
#: rewritten; the book reads the newest evaluation and can show every protocol a run was scored under.
REPROBES = "reprobes"


def damaged(path: Path, what: str) -> ValueError:
    """The one-line refusal of a damaged record: the file, what is wrong, the fix."""
    return ValueError(f"{path}: {what}; the record is damaged: restore it from git (git checkout -- {path}) or "
                      "record the run again")


def read_json(path: Path) -> dict:
    """A recorded JSON file, or one line naming it and the fix (missing, cut short, not an object, a key twice)."""
    try:
        data = loads_json(Path(path).read_text())
    except FileNotFoundError:
        raise damaged(path, "missing") from None
    except DuplicateKeyError as e:  # a file that says two things: neither is read
        raise damaged(path, str(e)) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise damaged(path, f"not valid JSON ({getattr(e, 'msg', e)})") from None
    if not isinstance(data, dict):
        raise damaged(path, f"holds a {type(data).__name__}, not a JSON object")
    return data


def evaluations(folder: str | Path, stage: str = "pretrain") -> list[Path]:
    """Every evaluation of a recorded run, oldest first: its result file (:data:`RESULT_FILES`), then, for a
    pretraining run, each later probe (:data:`REPROBES`). Refuses a re-probe numbered out of sequence (a gap says one
    was lost or renamed)."""
    folder = Path(folder)
    first = folder / RESULT_FILES[stage]
    found = [first] if first.exists() else []
    if stage == "pretrain" and (folder / REPROBES).is_dir():
        later = sorted((folder / REPROBES).glob("*.json"), key=lambda p: (not p.stem.isdigit(), p.stem.zfill(9)))
        if [p.stem for p in later] != [str(k) for k in range(1, len(later) + 1)]:
            raise ValueError(f"{folder / REPROBES} holds {[p.name for p in later]}, not 1.json, 2.json, … in "
                             "sequence: restore the missing probe from git (a record is never rewritten)")
        found += later
    return found


def current_result(folder: str | Path, stage: str = "pretrain") -> dict:
    """The newest evaluation of a recorded run (:func:`evaluations`): the numbers the book reads."""
    found = evaluations(folder, stage)
    if not found:
        raise FileNotFoundError(f"{Path(folder) / RESULT_FILES[stage]} is missing: the run is not recorded; record it "
                                "with aot record")
    return read_json(found[-1])


def read_test_set(folder: str | Path, stage: str = "pretrain") -> bool:
    """Whether any evaluation of a recorded run, over its whole history, read a test image (a fine-tuning or a
    distillation is always scored on the test split)."""
    if stage != "pretrain":
        return bool(evaluations(folder, stage))
    return any(read_json(p).get("test_images", 0) > 0 for p in evaluations(folder, stage))


def next_reprobe(folder: str | Path) -> Path:
    """Where the next probe of a recorded pretraining run goes: ``reprobes/<k>.json``, after the ones there."""
    found = evaluations(folder)
    if not found or found[0].name != RESULT_FILES["pretrain"]:
        raise FileNotFoundError(f"{Path(folder) / RESULT_FILES['pretrain']} is missing: a run is probed again only "
                                "after its first probe is recorded")
    return Path(folder) / REPROBES / f"{len(found)}.json"


#: The key of each stage's test accuracy in its result file (:data:`aot_lib.evidence.records.RESULT_FILES`).
TOP1_KEY = {"pretrain": "linear_top1", "finetune": "top1", "distill": "top1", "baseline-init": "linear_top1",
            "baseline-pixels": "linear_top1"}


def probe_settings(folder: str | Path) -> dict:
    """The settings of the probe that produced a recorded pretraining run's numbers (its newest probe,
    :func:`aot_lib.evidence.records.current_result`)."""
    path, result = newest_result(Path(folder), "pretrain")
    settings = result.get("probe", {})
    if not isinstance(settings, dict):
        raise damaged(path, f"its probe settings are {settings!r}, not a mapping")
    return settings


def read_yaml(path: Path) -> dict:
    try:
        data = load_yaml(Path(path).read_text())
    except FileNotFoundError:
        raise damaged(path, "missing") from None
    except DuplicateKeyError as e:
        raise damaged(path, str(e)) from None
    except yaml.YAMLError as e:
        raise damaged(path, f"not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise damaged(path, "not a mapping of config sections")
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
        raise damaged(path, f"has no {key!r}")
    v = result[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 100:
        raise damaged(path, f"{key} is {v!r}, not an accuracy in [0, 100] %")
    classes = CLASSES.get(_dataset(result))
    if classes and v < 50 / classes:
        raise damaged(path, f"{key} is {v:.2f} %, below half of chance ({100 / classes:g} % for {classes} classes)")
    val = result.get("linear_val_best")
    if key == "linear_top1" and isinstance(val, (int, float)) and abs(v - val) > TEST_VAL_LIMIT:
        raise damaged(path, f"{key} is {v:.2f} %, {abs(v - val):.1f} points from the same probe's validation "
                             f"accuracy {val:.2f} % (more than {TEST_VAL_LIMIT:g})")
    return float(v)


def newest_result(folder: Path, kind: str) -> tuple[Path, dict]:
    """The newest evaluation of a recorded run and its path, read as :func:`read_json` reads; a probe must be of
    this run's encoder (:func:`probe_of`)."""
    found = evaluations(folder, kind)
    if not found:
        raise damaged(folder / RESULT_FILES[kind], "missing (the run's result)")
    result = read_json(found[-1])
    if kind == "pretrain":
        probe_of(found[-1], result, folder.name)
    return found[-1], result


def probe_of(path: Path, probe: Mapping, run: str) -> None:
    """Refuses a probe whose own ``checkpoint`` names another run's encoder than ``run`` (``runs/<run>/last.ckpt`` or
    ``results/cpu/<run>/encoder``): a re-evaluation filed beside the wrong run would be read as that run's."""
    checkpoint = probe.get("checkpoint")
    if isinstance(checkpoint, str) and Path(checkpoint).parent.name != run:
        raise damaged(path, f"probes {checkpoint}, the encoder of run {Path(checkpoint).parent.name!r}, but sits with "
                             f"run {run!r}: move it to that run's folder")
