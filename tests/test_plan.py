"""The analysis plan (results/cpu/plan.yaml, issue 36): its margins against the paper's tables, its refusals, and
whether it was written before the runs it judges (git history)."""
import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from aot_lib import evidence
from aot_lib.evidence import paper
from aot_lib.evidence.plan import last_change, load_plan
from helpers import raises_exactly

ROOT = Path(__file__).resolve().parent.parent
PLAN = ROOT / "results" / "cpu" / "plan.yaml"


def test_each_margin_is_its_tables_largest_comparable_gap_rounded_up_to_a_half_point():
    """Table 1: AoT-ADMM − CRATE over every size and data set (largest 1.39, Tiny CIFAR-10) -> 1.5; Table 2: its two
    cells (0.76, 0.78) -> 1.0; Table 4: teacher − MLP-free student at ViT-T and ViT-S (0.82, -0.09) -> 1.0. Each
    margin lies strictly above every gap the paper calls comparable, so reproducing the paper exactly passes."""
    t1 = [abs(accs[m] - accs[m.replace("aot_admm", "crate")]) for accs in paper.LINEAR_PROBE_ACC.values()
          for m in accs if m.startswith("aot_admm")]
    t2 = [abs(accs["aot_admm_base"] - accs["crate_base"]) for accs in paper.FINETUNE_ACC.values()]
    kd = paper.KD_ACC_CIFAR10
    t4 = [abs(kd[m] - kd[f"{m}_relu"]) for m in ("vit_tiny", "vit_small")]
    margins = {c.table: c.margin.points for c in load_plan(PLAN).values() if c.margin}
    want = {t: math.ceil(2 * max(gaps) - 1e-9) / 2 for t, gaps in (("table1", t1), ("table2", t2), ("table4", t4))}
    assert want == {"table1": 1.5, "table2": 1.0, "table4": 1.0}  # 1.39, 0.78, 0.82 rounded up
    assert margins == want
    assert all(max(g) < want[t] for t, g in (("table1", t1), ("table2", t2), ("table4", t4)))


def test_every_claim_the_book_closes_with_is_judged_by_the_plan_with_its_own_rule():
    entries = evidence.planned(ROOT / "results" / "cpu")
    assert set(entries) == {c.key for c in evidence.CLAIMS}
    for c in evidence.CLAIMS:
        assert entries[c.key].rule == ("control" if c.paper_gap is None else c.claim), c.key
        assert (entries[c.key].margin is not None) == (c.claim == "parity"), c.key
    # the 30-minute recipe's claims (issue 37): planned with 5 seeds on CIFAR-10 and 3 on CIFAR-100, before any run
    plan = load_plan(PLAN)
    later = {k: (v.rule, v.seeds, v.post_hoc) for k, v in plan.items() if k.endswith("_30min")}
    assert later == {"t1_cifar10_30min": ("parity", 5, False), "t1_cifar100_30min": ("parity", 3, False),
                     "t3_cifar10_30min": ("better", 5, False), "t3_cifar100_30min": ("better", 3, False)}


def _write(tmp_path: Path, plan: dict) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return path


GOOD = {"margins": {"t": {"points": 1.0, "why": "the paper's"}},
        "claims": {"x": {"table": "t", "rule": "parity", "seeds": 3}}}


@pytest.mark.parametrize("change,message", [
    ({"claims": {"x": {"table": "t", "rule": "same", "seeds": 3}}},
     "claims.x.rule: 'same' is not one of ['parity', 'better', 'control']"),
    ({"claims": {"x": {"table": "t", "rule": "parity", "seeds": 1}}},
     "claims.x.seeds: 1 is not a whole number of at least 2 (one seed gives no interval to judge)"),
    ({"claims": {"x": {"table": "u", "rule": "parity", "seeds": 3}}},
     "claims.x.table: 'u' has no margin under margins (['t'])"),
    ({"claims": {"x": {"table": "t", "rule": "better", "seeds": 3, "secondary": ["noninferiority"]}}},
     "claims.x.secondary: ['noninferiority']: only a parity claim has a secondary reading (['noninferiority'])"),
    ({"claims": {"x": {"table": "t", "rule": "parity", "seeds": 3, "post_hoc": True}}},
     "claims.x.why: a post-hoc claim must say why (what was recorded before the plan)"),
    ({"margins": {"t": {"points": 0}}}, "margins.t.points: 0 is not a positive number of points"),
    ({"margins": {"t": {"points": 1.0}}}, "margins.t.why: a margin must say why it is what it is"),
])
def test_a_plan_that_cannot_judge_is_refused_naming_the_key(tmp_path, change, message):
    path = _write(tmp_path, {**GOOD, **change})
    with raises_exactly(ValueError, f"{path}: {message}; fix the plan (see its rules and margins)"):
        load_plan(path)


def test_a_missing_or_unreadable_plan_is_refused_with_the_fix(tmp_path):
    with raises_exactly(FileNotFoundError, f"no analysis plan at {tmp_path / 'plan.yaml'}: the verdicts are judged "
                                           "by it (results/cpu/plan.yaml in the repository)"):
        load_plan(tmp_path / "plan.yaml")
    (tmp_path / "plan.yaml").write_text("claims: [unclosed\n")
    with pytest.raises(ValueError, match=r"plan\.yaml is not valid YAML \(.*\): restore it from git$"):
        load_plan(tmp_path / "plan.yaml")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def _descends(repo: Path, ancestor: str, commit: str) -> bool:
    return subprocess.run(["git", "merge-base", "--is-ancestor", ancestor, commit], cwd=repo,
                          capture_output=True).returncode == 0


def test_last_change_is_the_commit_that_last_changed_how_a_claim_is_judged(tmp_path):
    """A run recorded after the plan descends from it; editing that claim's entry (or its table's margin) after the
    run makes the run stop descending from the claim's last change, while another claim's edit does not."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the plan's history cannot be read (apt-get install git)")
    repo = tmp_path / "repo"
    plan = Path("results/cpu/plan.yaml")
    (repo / plan.parent).mkdir(parents=True)
    _git(repo, "init", "-q")
    doc = {"rules": {"parity": "inside", "better": "above"}, "margins": {"t": {"points": 1.0, "why": "w"}},
           "claims": {"x": {"table": "t", "rule": "parity", "seeds": 3}, "y": {"table": "t", "rule": "better",
                                                                              "seeds": 3}}}

    def commit(message: str) -> str:
        (repo / plan).write_text(yaml.safe_dump(doc))
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", message)
        return _git(repo, "rev-parse", "HEAD")

    planned = commit("plan")
    (repo / "run.txt").write_text("a run")
    run = commit("a run recorded")  # the plan is unchanged here
    assert last_change(repo, "x") == last_change(repo, "y") == planned and _descends(repo, planned, run)
    doc["claims"]["y"]["seeds"] = 5  # y changes: x is judged as before
    y_changed = commit("y asks for more seeds")
    assert last_change(repo, "x") == planned and last_change(repo, "y") == y_changed
    assert not _descends(repo, y_changed, run)  # y's run predates y's plan now
    doc["margins"]["t"]["points"] = 1.5  # the margin of x's table changes: x is judged anew, y (better) is not
    assert last_change(repo, "x") == planned  # the working tree is not read: not committed yet
    wider = commit("wider margin")
    assert last_change(repo, "x") == wider and last_change(repo, "y") == y_changed
    doc["rules"]["better"] = "above zero"  # y's rule reworded: y is judged anew, x (parity) is not
    reworded = commit("reworded")
    assert last_change(repo, "y") == reworded and last_change(repo, "x") == wider
    with raises_exactly(ValueError, f"{plan} at {_git(repo, 'rev-parse', '--short=7', 'HEAD')} has no claim 'z': "
                                    "add how it is judged, and commit it"):
        last_change(repo, "z")


def _run_commits(cell: str) -> list[tuple[str, str]]:
    root = ROOT / "results" / "cpu"
    folders = [root / cell] + [p for p in root.glob(f"{cell}_seed*") if re.fullmatch(rf"{re.escape(cell)}_seed\d+", p.name)]
    return [(f.name, json.loads((f / "run.json").read_text())["commit"].removesuffix("+dirty"))
            for f in folders if (f / "run.json").exists()]


def test_a_claim_judged_by_a_plan_written_after_its_runs_says_so():
    """For every claim of the plan: its runs (both cells, every seed recorded) were trained at commits that descend
    from the plan's last change to that claim, or the plan marks it post hoc. A plan edited after its data without
    saying so fails here; so does a claim marked post hoc whose runs all came after the plan."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (or no git): the plan's history cannot be read; CI runs on a clone")
    if _git(ROOT, "rev-parse", "--is-shallow-repository") == "true":
        pytest.skip("a shallow clone has no history to read the plan's against: git fetch --unshallow")
    if _git(ROOT, "log", "-1", "--format=%H", "--", "results/cpu/plan.yaml") == "":
        pytest.skip("the plan is not committed yet: commit it, then this test reads its history")
    cells = {c.key: (c.a, c.b) for c in evidence.CLAIMS}
    later = {c.key: (c.a, c.b) for c in evidence.CLAIMS_30MIN}
    plan = load_plan(PLAN)
    assert set(plan) == set(cells) | set(later)
    wrong = []
    for key, entry in plan.items():
        changed = last_change(ROOT, key)
        runs = [r for cell in {**cells, **later}[key] for r in _run_commits(cell)]
        before = [name for name, commit in runs if not _descends(ROOT, changed, commit)]
        if bool(before) != entry.post_hoc:
            wrong.append(f"{key}: post_hoc is {entry.post_hoc}, but {len(before)} of its {len(runs)} runs were "
                         f"trained before the plan's last change to it ({changed[:7]}): {before[:3]}")
    assert wrong == []
