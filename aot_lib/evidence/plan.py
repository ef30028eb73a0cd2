"""The analysis plan (``results/cpu/plan.yaml``): per claim, the rule that judges it, the margin of a parity claim
and why, the seeds it asks for, its secondary readings, and whether it was written after its runs (post hoc).

The plan is the one place a margin or a seed count lives; :mod:`aot_lib.evidence` judges with it. Reading it
refuses what cannot be judged (an unknown rule or table, a parity claim without a margin, a seed count below 2, a
post-hoc claim that does not say why), naming the file and the key.

A claim of one's own (a family of one's own against CRATE, say) is an entry with ``compare``: the two cells (run
names under the results folder, seeds ``<name>_seed<k>`` beside them) and, optionally, what the claim says and the
two sides' names::

    mine_vs_crate: {table: table1, rule: parity, seeds: 3,
                    compare: {a: cpu_mine_cifar10, b: cpu_crate_cifar10, what: "Mine − CRATE, CIFAR-10",
                              names: [Mine, CRATE]}}

``aot verdicts --plan my_plan.yaml`` judges it beside the book's claims, by the same rules. :func:`last_change` finds, in git, the commit
that last changed one claim's entry, so a test can tell a plan written before its runs from one edited after.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

__all__ = ["PLAN_FILE", "RULES", "Margin", "Comparison", "PlannedClaim", "load_plan", "last_change"]

#: The plan beside the recorded runs it judges (relative to the repository root).
PLAN_FILE = Path("results") / "cpu" / "plan.yaml"

#: The rules a claim may be judged by (the plan's ``rules`` says each in words).
RULES = ("parity", "better", "control")
SECONDARY = ("noninferiority",)


@dataclass(frozen=True)
class Margin:
    """A table's parity margin (points) and the plan's reason for it."""

    points: float
    why: str


@dataclass(frozen=True)
class Comparison:
    """The two cells a claim of the plan's own compares (A − B), what it says and the sides' names."""

    a: str
    b: str
    what: str
    names: tuple[str, str]


def _comparison(path: Path, where: str, c) -> Comparison:
    if not isinstance(c, dict) or set(c) - {"a", "b", "what", "names"}:
        raise _refuse(path, where, f"{c!r} is not a mapping of a, b (the two cells), what and names")
    cells = []
    for side in ("a", "b"):
        name = c.get(side)
        # a cell is a folder of the results folder, by name: a path could read records from anywhere
        if not isinstance(name, str) or not name or "/" in name or "\\" in name or name.startswith("."):
            raise _refuse(path, f"{where}.{side}", f"{name!r} is not a run name (a folder of the results folder, "
                                                   "without a path)")
        cells.append(name)
    names = c.get("names", cells)
    if not (isinstance(names, list) or isinstance(names, tuple)) or len(names) != 2:
        raise _refuse(path, f"{where}.names", f"{names!r} is not the two sides' names")
    return Comparison(cells[0], cells[1], str(c.get("what") or f"{cells[0]} − {cells[1]}"),
                      (str(names[0]), str(names[1])))


@dataclass(frozen=True)
class PlannedClaim:
    """One claim as the plan judges it."""

    key: str
    table: str
    rule: str
    seeds: int
    margin: Margin | None  # of a parity claim
    secondary: tuple[str, ...] = ()
    post_hoc: bool = False
    why: str = ""  # why it is post hoc
    compare: Comparison | None = None  # a claim the plan defines itself (one's own cells)


def _refuse(path: Path, where: str, what: str) -> ValueError:
    return ValueError(f"{path}: {where}: {what}; fix the plan (see its rules and margins)")


def load_plan(path: str | Path) -> dict[str, PlannedClaim]:
    """Every claim of the plan at ``path`` by key, checked (see the module docstring)."""
    path = Path(path)
    from ..files import DuplicateKeyError, load_yaml

    try:
        plan = load_yaml(path.read_text(), path)
    except DuplicateKeyError as e:
        raise ValueError(f"{e}: a plan that says two things judges by neither; fix the plan") from None
    except FileNotFoundError:
        raise FileNotFoundError(f"no analysis plan at {path}: the verdicts are judged by it (results/cpu/plan.yaml "
                                "in the repository)") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{path} is not valid YAML ({str(e).splitlines()[0]}): restore it from git") from None
    if not isinstance(plan, dict) or not isinstance(plan.get("claims"), dict):
        raise _refuse(path, "claims", "missing (a mapping of claim key to its rule, table and seeds)")
    margins = {}
    for table, m in (plan.get("margins") or {}).items():
        points = m.get("points") if isinstance(m, dict) else None
        if not isinstance(points, (int, float)) or isinstance(points, bool) or not points > 0:
            raise _refuse(path, f"margins.{table}.points", f"{points!r} is not a positive number of points")
        if not str(m.get("why", "")).strip():
            raise _refuse(path, f"margins.{table}.why", "a margin must say why it is what it is")
        margins[table] = Margin(float(points), " ".join(str(m["why"]).split()))
    claims = {}
    for key, c in plan["claims"].items():
        where = f"claims.{key}"
        if not isinstance(c, dict):
            raise _refuse(path, where, "not a mapping")
        rule = c.get("rule")
        if rule not in RULES:
            raise _refuse(path, f"{where}.rule", f"{rule!r} is not one of {list(RULES)}")
        seeds = c.get("seeds")
        if not isinstance(seeds, int) or isinstance(seeds, bool) or seeds < 2:
            raise _refuse(path, f"{where}.seeds", f"{seeds!r} is not a whole number of at least 2 (one seed gives "
                                                  "no interval to judge)")
        margin = None
        if rule == "parity":
            if c.get("table") not in margins:
                raise _refuse(path, f"{where}.table", f"{c.get('table')!r} has no margin under margins "
                                                      f"({sorted(margins)})")
            margin = margins[c["table"]]
        secondary = tuple(c.get("secondary") or ())
        unknown = [s for s in secondary if s not in SECONDARY]
        if unknown or (secondary and rule != "parity"):
            raise _refuse(path, f"{where}.secondary", f"{list(secondary)}: only a parity claim has a secondary "
                                                      f"reading ({list(SECONDARY)})")
        post_hoc = c.get("post_hoc", False)
        if not isinstance(post_hoc, bool):
            raise _refuse(path, f"{where}.post_hoc", f"{post_hoc!r} is not true or false")
        if post_hoc and not str(c.get("why", "")).strip():
            raise _refuse(path, f"{where}.why", "a post-hoc claim must say why (what was recorded before the plan)")
        compare = _comparison(path, f"{where}.compare", c["compare"]) if "compare" in c else None
        claims[key] = PlannedClaim(key, str(c.get("table", "")), rule, seeds, margin, secondary, post_hoc,
                                   " ".join(str(c.get("why", "")).split()), compare)
    return claims


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def last_change(repo: str | Path, key: str, plan: str | Path = PLAN_FILE) -> str:
    """The commit (full hash) that last changed how claim ``key`` is judged: its entry in the plan, the margin of its
    table (a parity claim's) or the words of its rules, as committed in ``repo``'s history (the working tree is not read)."""
    repo = Path(repo)
    history = _git(repo, "log", "--format=%H", "--", str(plan)).split()
    if not history:
        raise ValueError(f"{plan} has no commit in {repo}: commit the plan before the runs it judges")

    def judged(commit: str):
        text = _git(repo, "show", f"{commit}:{Path(plan).as_posix()}")
        doc = yaml.safe_load(text) or {}
        entry = (doc.get("claims") or {}).get(key)
        if not isinstance(entry, dict):
            return entry, None, None
        rules = doc.get("rules") or {}
        margin = (doc.get("margins") or {}).get(entry.get("table")) if entry.get("rule") == "parity" else None
        return entry, margin, {r: rules.get(r) for r in (entry.get("rule"), *(entry.get("secondary") or ()))}

    newest = judged(history[0])
    if newest[0] is None:
        raise ValueError(f"{plan} at {history[0][:7]} has no claim {key!r}: add how it is judged, and commit it")
    changed = history[0]
    for commit in history[1:]:  # newest first: walk back while the claim was judged the same way
        if judged(commit) != newest:
            break
        changed = commit
    return changed
