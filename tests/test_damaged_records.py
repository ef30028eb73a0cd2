"""Verdicts a damaged record cannot move (issue 35): on a copy of the recorded runs behind Table 1 (CIFAR-10, three
seeds a cell), each kind of damage either is refused in one line naming the file and the fix, or leaves every
verdict exactly as on the undamaged copy; a chapter executed on a damaged copy fails with the file named."""
import json
import math
import shutil
from pathlib import Path

import pytest

from aot_lib import evidence
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
    name = "sweep_lr_crate_2e-3"  # the folder keeps its run's name: a probe is read with its own run only
    shutil.copytree(RESULTS / "sweep" / name, sweep / name, ignore=shutil.ignore_patterns("encoder"))
    probe = sweep / name / "probe.json"
    _edit(probe, knn_val_top1=float("nan"))
    with raises_exactly(ValueError, f"{probe}: knn_val_top1 is nan, not an accuracy in [0, 100] %; {_fix(probe)}"):
        evidence.sweep_rows(sweep, {("T", "crate"): (name,)})


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


# ----------------------------------------------------------------------------- issue 57: the classes that failed

def test_a_result_file_that_says_two_things_is_refused_not_read_as_its_last(copy):
    """JSON keeps the last of two equal keys: a probe with two linear_top1 would give a verdict on the one the
    reader did not mean. Refused, naming the file and the key."""
    from aot_lib.evidence.records import evaluations

    path = evaluations(copy / "cpu_crate_cifar10")[-1]  # the evaluation the verdict reads
    text = path.read_text().rstrip()
    assert text.endswith("}")
    path.write_text(text[:-1].rstrip() + ',\n  "linear_top1": 99.0\n}\n')
    with raises_exactly(ValueError, f"{path}: key 'linear_top1' appears twice in one object; {_fix(path)}"):
        evidence.claim_rows(copy, CLAIM)


def test_a_plan_that_says_two_things_is_refused(copy):
    path = copy / "plan.yaml"
    lines = path.read_text().splitlines()
    at = lines.index("claims:") + 1  # a second entry for t1_cifar10, first in the claims (another rule)
    lines.insert(at, "  t1_cifar10: {table: table1, rule: better, seeds: 3}")
    path.write_text("\n".join(lines) + "\n")
    first, second = at + 1, next(i for i, ln in enumerate(lines, 1) if ln.startswith("  t1_cifar10: {table: table1, "
                                                                                        "rule: parity"))
    with raises_exactly(ValueError, f"{path}: key 't1_cifar10' appears twice in one mapping (lines {first} and "
                                    f"{second}); keep one: a plan that says two things judges by neither; fix "
                                    "the plan"):
        evidence.claim_rows(copy, CLAIM)


def test_a_run_config_that_says_two_things_is_refused(copy):
    path = copy / "cpu_crate_cifar10_seed1" / "config.yaml"
    path.write_text(path.read_text() + "seed_note: a\nseed_note: b\n")
    n = len(path.read_text().splitlines())
    with raises_exactly(ValueError, f"{path}: key 'seed_note' appears twice in one mapping (lines {n - 1} and {n}); "
                                    f"keep one; {_fix(path)}"):
        evidence.claim_rows(copy, CLAIM)


def test_a_training_config_that_says_two_things_is_refused(tmp_path):
    from aot_lib.training.config import ConfigError, load_config

    path = tmp_path / "c.yaml"
    path.write_text("optim:\n  lr: 1.0e-3\n  batch_size: 64\n  lr: 4.0e-3\n")
    with raises_exactly(ConfigError, f"config file {path}: key 'lr' appears twice in one mapping (lines 2 and 4); "
                                     "keep one: one value per key"):
        load_config(path)


@pytest.mark.parametrize("one_side", [False, True], ids=["both cells", "one cell"])
def test_a_seed_the_plan_never_asked_for_is_refused_not_averaged_in(copy, one_side):
    """A fourth seed of both cells (a copy of seed 2 renamed seed 3) would move the interval of a claim the plan
    judges on seeds 0-2: refused, naming the seed, the claim and both ways out. So is a fourth seed of one side only
    (it would enter that side's summary, which scales the accuracy-relative margin)."""
    for cell in CELLS[1:] if one_side else CELLS:
        src, dst = copy / f"{cell}_seed2", copy / f"{cell}_seed3"
        shutil.copytree(src, dst)
        record = json.loads((dst / "run.json").read_text())
        record["seed"] = 3
        (dst / "run.json").write_text(json.dumps(record))
        cfg = (dst / "config.yaml").read_text()
        (dst / "config.yaml").write_text(cfg.replace("seed: 2", "seed: 3").replace(f"name: {cell}_seed2",
                                                                                   f"name: {cell}_seed3"))
        for probe in [dst / "probe.json", *sorted((dst / "reprobes").glob("*.json"))]:
            if probe.exists():
                probe.write_text(probe.read_text().replace(f"{cell}_seed2", f"{cell}_seed3"))
    with raises_exactly(ValueError, f"t1_cifar10: seed 3 of cpu_aot_admm_cifar10/cpu_crate_cifar10 is outside the "
                                    f"plan's seeds 0-2 (claims.t1_cifar10.seeds: 3): move the extra runs out of {copy}, "
                                    "or plan them (claims.t1_cifar10.seeds), which makes the claim post hoc"):
        evidence.claim_rows(copy, CLAIM)


def test_a_probe_of_another_run_s_encoder_filed_beside_this_run_is_refused(copy):
    """A re-evaluation whose own checkpoint names another run (here seed 1's newest probe, copied over seed 2's) is
    not read as this run's."""
    a, b = copy / "cpu_aot_admm_cifar10_seed1", copy / "cpu_aot_admm_cifar10_seed2"
    newest = lambda f: (sorted((f / "reprobes").glob("*.json"), key=lambda p: int(p.stem)) or [f / "probe.json"])[-1]  # noqa: E731
    target = newest(b)
    shutil.copy(newest(a), target)
    checkpoint = json.loads(target.read_text())["checkpoint"]
    with raises_exactly(ValueError, f"{target}: probes {checkpoint}, the encoder of run 'cpu_aot_admm_cifar10_seed1', "
                                    f"but sits with run 'cpu_aot_admm_cifar10_seed2': move it to that run's folder; "
                                    f"{_fix(target)}"):
        evidence.claim_rows(copy, CLAIM)


@pytest.mark.parametrize("value", [140.0, -3.0, float("nan")])
def test_an_impossible_search_score_is_refused_before_it_is_ranked(tmp_path, value):
    """A screening run's validation score outside [0, 100] (a digit slipped) must not be ranked and written into the
    finalists' configs: validation_scores refuses it, naming the file."""
    folder = tmp_path / "search_c0_base_aot_admm"
    folder.mkdir()
    probe = {"linear_val_best": value, "linear_val_top1": {"0.01": 50.0}, "dataset": "cifar10"}
    (folder / "probe.json").write_text(json.dumps(probe))
    shown = "nan" if value != value else repr(value)
    with raises_exactly(ValueError, f"{folder / 'probe.json'}: linear_val_best is {shown}, not an accuracy in "
                                    f"[0, 100] %; {_fix(folder / 'probe.json')}"):
        evidence.validation_scores(folder)
    probe = {"linear_val_best": 50.0, "knn_val_top1": value, "dataset": "cifar10"}
    (folder / "probe.json").write_text(json.dumps(probe))
    with raises_exactly(ValueError, f"{folder / 'probe.json'}: knn_val_top1 is {shown}, not an accuracy in "
                                    f"[0, 100] %; {_fix(folder / 'probe.json')}"):
        evidence.validation_scores(folder)


# ----------------------------------------------------------------------------- three behaviours no test pinned

def test_re_evaluations_beyond_the_ninth_are_read_in_number_order(tmp_path):
    """reprobes/10.json is newer than 9.json (a text sort puts it after 1.json): the newest is the tenth."""
    from aot_lib.evidence.records import evaluations

    run = tmp_path / "run"
    (run / "reprobes").mkdir(parents=True)
    (run / "probe.json").write_text("{}")
    for k in range(1, 12):
        (run / "reprobes" / f"{k}.json").write_text("{}")
    assert [p.name for p in evaluations(run)] == ["probe.json", *[f"{k}.json" for k in range(1, 12)]]
    (run / "reprobes" / "10.json").unlink()  # a gap: refused, not skipped
    with pytest.raises(ValueError, match=r"not 1\.json, 2\.json, … in sequence"):
        evaluations(run)


@pytest.mark.parametrize("kind", ["one_step_wider", "the_same_grid", "shifted"])
def test_a_wider_grid_must_hold_every_recorded_rate_and_more(copy, tmp_path, kind):
    """evidence.wide_probe accepts a re-probe only on a strict superset of the recorded grid: the recorded grid plus
    a rate; not the same grid, not one that drops a recorded rate while adding another."""
    runs = evidence.cell_runs(copy, "cpu_aot_admm_cifar10")[:1]
    rec = json.loads(evidence.newest_result(runs[0].folder, "pretrain")[0].read_text())
    rec_grid = [float(x) for x in rec["probe"]["lr"]]
    wide_grid = {"one_step_wider": rec_grid + [max(rec_grid) * 3], "the_same_grid": list(rec_grid),
                 "shifted": rec_grid[1:] + [max(rec_grid) * 3]}[kind]
    wide_root = tmp_path / "wide"
    (wide_root / runs[0].name).mkdir(parents=True)
    from aot_lib.probe_grid import grid_key
    rates = {grid_key(x, 0): rec["linear_val_top1"].get(grid_key(x, 0), 40.0) for x in wide_grid}
    wide = {**rec, "probe": {**rec["probe"], "lr": wide_grid}, "linear_val_top1": rates}
    (wide_root / runs[0].name / "probe.json").write_text(json.dumps(wide))
    if kind == "one_step_wider":
        assert evidence.wide_probe(runs, wide_root)[runs[0].seed]["grid"] == wide_grid
    else:
        with raises_exactly(ValueError, f"{wide_root}/{runs[0].name}: grid {wide_grid} does not extend the recorded "
                                        f"{rec['probe']['lr']}"):
            evidence.wide_probe(runs, wide_root)


def test_a_tie_in_the_search_ranking_goes_to_the_earlier_candidate():
    """The rule (scripts/recipe_search.py): equal means keep the candidates' order; the best mean first."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    from recipe_search import rank

    scores = {"c0_base": {"a": 50.0, "b": 40.0}, "c1": {"a": 40.0, "b": 50.0}, "c2": {"a": 46.0, "b": 46.0},
              "c3": {"a": 45.0, "b": 45.0}}
    assert rank(scores) == [("c2", 46.0), ("c0_base", 45.0), ("c1", 45.0), ("c3", 45.0)]
    reordered = {k: scores[k] for k in ("c3", "c1", "c2", "c0_base")}
    assert [c for c, _ in rank(reordered)] == ["c2", "c3", "c1", "c0_base"]


def test_the_evidence_scripts_refuse_in_one_line_without_a_traceback(tmp_path):
    """Issue 57: scripts/reprobe.py (and recipe_search.py, recipe_search2.py, export_encoders.py, which run through
    the same aot_lib.cli.run_script) print a refusal as one line naming the script, exit 1, no traceback; --debug
    shows the traceback."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    missing = tmp_path / "no_such_run"
    got = subprocess.run([sys.executable, "scripts/reprobe.py", str(missing)], cwd=root, capture_output=True, text=True)
    assert got.returncode == 1 and "Traceback" not in got.stderr
    assert got.stderr == (f"reprobe.py: {missing} is not a recorded run (it needs config.yaml and encoder/): give a "
                          "folder under results/cpu that aot record wrote\n")
    debug = subprocess.run([sys.executable, "scripts/reprobe.py", str(missing), "--debug"], cwd=root,
                           capture_output=True, text=True)
    assert debug.returncode == 1 and "Traceback" in debug.stderr
    for script in ("recipe_search.py", "recipe_search2.py", "export_encoders.py"):
        assert f'sys.exit(run_script(main, "{script}"))' in (root / "scripts" / script).read_text()
