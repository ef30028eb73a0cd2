"""Verdicts a damaged record cannot move (issue 35): on a copy of the recorded runs behind Table 1 (CIFAR-10, three
seeds a cell), each kind of damage either is refused in one line naming the file and the fix, or leaves every
verdict exactly as on the undamaged copy; a chapter executed on a damaged copy fails with the file named."""
import json
import math
import shutil
from pathlib import Path

import pytest

from aot_lib.book import evidence
from helpers import raises_exactly

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results" / "cpu"
CLAIM = [c for c in evidence.CLAIMS if c.key == "t1_cifar10"]
CELLS = ("cpu_aot_admm_cifar10", "cpu_crate_cifar10")


@pytest.fixture
def copy(tmp_path):
    """The plan and both cells of Table 1 on CIFAR-10 (seeds 0-2), without the encoders (not read here)."""
    root = tmp_path / "cpu"
    root.mkdir()
    shutil.copy(RESULTS / "plan.yaml", root / "plan.yaml")
    for cell in CELLS:
        for folder in [RESULTS / cell, *sorted(RESULTS.glob(f"{cell}_seed[0-9]"))]:
            shutil.copytree(folder, root / folder.name, ignore=shutil.ignore_patterns("encoder"))
    return root


def _verdicts(root: Path) -> list[tuple]:
    return [(r["diff"].n, round(r["diff"].mean, 9), r["verdict"], r["noninferiority"], r["sentence"])
            for r in evidence.claim_rows(root, CLAIM)]


def _fix(path: Path) -> str:
    return f"the record is damaged: restore it from git (git checkout -- {path}) or record the run again"


def test_the_undamaged_copy_gives_the_recorded_verdict(copy):
    assert _verdicts(copy) == _verdicts(RESULTS)
    assert _verdicts(copy)[0][0] == 3


def test_a_seed_folder_without_its_run_record_is_refused_not_left_out(copy):
    (copy / "cpu_crate_cifar10_seed2" / "run.json").unlink()
    with raises_exactly(ValueError, f"{copy / 'cpu_crate_cifar10_seed2'} looks like a seed of cell cpu_crate_cifar10 "
                                    f"but has no run.json: restore it from git, or move the folder out of {copy}"):
        evidence.claim_rows(copy, CLAIM)
    (copy / "cpu_crate_cifar10" / "run.json").unlink()  # seed 0's: not "pending", refused as well
    with pytest.raises(ValueError, match="looks like a seed of cell cpu_crate_cifar10 but has no run.json"):
        evidence.claim_rows(copy, CLAIM)


def test_a_missing_seed_is_named_in_the_verdict(copy):
    """A whole seed's folder gone (a partial copy): the verdict is read on the seeds there and says which of the
    seeds the plan asks for are missing, never judged as if complete."""
    shutil.rmtree(copy / "cpu_aot_admm_cifar10_seed2")
    (row,) = evidence.claim_rows(copy, CLAIM)
    assert row["diff"].n == 2 and row["missing_seeds"] == [2]
    assert row["sentence"].endswith("(2 of the 3 seeds the plan asks for; missing: seed 2).")


@pytest.mark.parametrize("damage,what", [
    (lambda p: p.write_text(p.read_text()[: len(p.read_text()) // 2]), "not valid JSON"),  # cut short by a full disk
    (lambda p: p.write_text(""), "not valid JSON"),
    (lambda p: p.write_text("[1, 2]"), "holds a list, not a JSON object"),
])
def test_a_result_file_that_cannot_be_read_is_refused_naming_it(copy, damage, what):
    path = copy / "cpu_crate_cifar10_seed1" / "reprobes" / "1.json"  # the probe the cell reads (the newest)
    damage(path)
    with pytest.raises(ValueError) as e:
        evidence.claim_rows(copy, CLAIM)
    assert str(e.value).startswith(f"{path}: {what}") and str(e.value).endswith(_fix(path))


def _edit(path: Path, **values) -> None:
    data = json.loads(path.read_text())
    for k, v in values.items():
        if v is KeyError:
            del data[k]
        else:
            data[k] = v
    path.write_text(json.dumps(data, allow_nan=True))


@pytest.mark.parametrize("value,what", [
    (KeyError, "has no 'linear_top1'"),
    (math.nan, "linear_top1 is nan, not an accuracy in [0, 100] %"),
    (math.inf, "linear_top1 is inf, not an accuracy in [0, 100] %"),
    (150.0, "linear_top1 is 150.0, not an accuracy in [0, 100] %"),
    (-1.0, "linear_top1 is -1.0, not an accuracy in [0, 100] %"),
    ("51.2", "linear_top1 is '51.2', not an accuracy in [0, 100] %"),
    (4.9, "linear_top1 is 4.90 %, below half of chance (10 % for 10 classes)"),
    (15.13, None),  # a hand edit that swapped digits: far from the same probe's validation accuracy
])
def test_a_number_that_cannot_be_an_accuracy_is_refused_naming_the_file(copy, value, what):
    path = copy / "cpu_aot_admm_cifar10_seed1" / "reprobes" / "1.json"
    val = json.loads(path.read_text())["linear_val_best"]
    _edit(path, linear_top1=value)
    if what is None:
        what = (f"linear_top1 is 15.13 %, {abs(15.13 - val):.1f} points from the same probe's validation accuracy "
                f"{val:.2f} % (more than 15)")
    with raises_exactly(ValueError, f"{path}: {what}; {_fix(path)}"):
        evidence.claim_rows(copy, CLAIM)


def test_a_damaged_run_record_or_config_is_refused_naming_it(copy):
    run = copy / "cpu_crate_cifar10" / "run.json"
    _edit(run, seed="0")
    with raises_exactly(ValueError, f"{run}: seed is '0', not a whole number; {_fix(run)}"):
        evidence.claim_rows(copy, CLAIM)
    run.write_text('{"kind": "pretrain", "status": "fini')
    with pytest.raises(ValueError, match=r"run\.json: not valid JSON \(Unterminated string"):
        evidence.claim_rows(copy, CLAIM)
    cfg = copy / "cpu_aot_admm_cifar10_seed2" / "config.yaml"
    cfg.write_text("model: {name: [unclosed\n")
    with pytest.raises(ValueError, match=r"config\.yaml: not valid YAML \("):
        evidence.claim_rows(copy, CLAIM)


def test_the_probe_settings_and_the_sweep_tables_are_checked_alike(copy, tmp_path):
    path = copy / "cpu_crate_cifar10" / "reprobes" / "1.json"
    path.write_text("{")
    with pytest.raises(ValueError, match=r"reprobes/1\.json: not valid JSON"):
        evidence.probe_settings(copy / "cpu_crate_cifar10")
    sweep = tmp_path / "sweeps"
    shutil.copytree(RESULTS / "sweep" / "sweep_lr_crate_2e-3", sweep / "p", ignore=shutil.ignore_patterns("encoder"))
    probe = sweep / "p" / "probe.json"
    _edit(probe, knn_val_top1=float("nan"))
    with raises_exactly(ValueError, f"{probe}: knn_val_top1 is nan, not an accuracy in [0, 100] %; {_fix(probe)}"):
        evidence.sweep_rows(sweep, {("T", "crate"): ("p",)})


def test_a_knn_curve_with_a_damaged_value_is_refused_naming_the_line(copy):
    folder = copy / "cpu_aot_admm_cifar10_seed2"
    csv = folder / "metrics.csv"
    lines = csv.read_text().splitlines()
    header = lines[0].split(",")
    col = header.index("knn/val_top1")
    k = next(i for i, line in enumerate(lines[1:], 1) if line.split(",")[col])
    cells = lines[k].split(",")
    cells[col] = "512.0"
    lines[k] = ",".join(cells)
    csv.write_text("\n".join(lines) + "\n")
    with raises_exactly(ValueError, f"{csv}: line {k + 1}: knn/val_top1 is 512.0, not an accuracy in [0, 100] %; "
                                    f"{_fix(csv)}"):
        evidence.knn_curve(folder)


def test_a_chapter_executed_on_a_damaged_copy_fails_naming_the_file(tmp_path, monkeypatch):
    """The introduction's results table reads every claim: on a checkout whose results/ holds one cut-short probe,
    executing the chapter stops with that file named, instead of printing a verdict (the book build, which executes
    every chapter, fails the same way)."""
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[dev]')")
    import jupytext

    tree = tmp_path / "checkout"
    tree.mkdir()
    for entry in ROOT.iterdir():  # the checkout, with results/ a copy (encoders left out) and the rest linked
        if entry.name not in ("results", "notebooks", ".git", ".venv"):
            (tree / entry.name).symlink_to(entry)
    shutil.copytree(ROOT / "notebooks", tree / "notebooks")  # a real folder: the kernel's cwd is not resolved away
    shutil.copytree(ROOT / "results", tree / "results", ignore=shutil.ignore_patterns("encoder"))
    damaged = tree / "results" / "cpu" / "cpu_crate_cifar10_seed1" / "reprobes" / "1.json"
    damaged.write_text(damaged.read_text()[:100])
    monkeypatch.setenv("AOT_BOOK_PROFILE", "fast")
    nb = jupytext.read(ROOT / "notebooks" / "01_introduction.py")
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tree / "notebooks")}})
    with pytest.raises(nbclient.exceptions.CellExecutionError) as e:
        client.execute()
    assert f"{damaged}: not valid JSON" in str(e.value) and _fix(damaged) in str(e.value)
