"""Round 2 of the recipe search (issue 55) as chapter 7 shows it: the screening so far
(``configs/cpu/search2/``, ``results/cpu/search2/``) and the bf16 measurement behind its fp32
(``benchmarks/bench_precision.py``, ``results/benchmarks/precision_*.json``).

Every number comes from the records; the chapter keeps only what its sentences claim.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ..evidence import TABLE13_NAMES
from ..runtime import cpu_label
from .sweeps import _slashed
from .tables import Col, Table

__all__ = ["search2_table", "precision_table", "cpu_types_table", "goal_table", "goal_curves",
           "bf16_check_table"]


#: What a round-2 candidate may change from round 1's recipe (its first row), as the screening table names it.
_SEARCH2_SETTINGS = {"lr": "lr", "batch": "batch", "lejepa_lambda": "λ", "slices": "SIGReg slices",
                     "projector": "projector (hidden, out)", "local": "local views", "depth": "depth",
                     "width": "width"}


def _change(row: dict, base: dict) -> str:
    """What a candidate changes from the base candidate, in the table's words (``"batch 128"``; the base itself:
    ``"none (round 1's recipe at round 2's length)"``)."""
    def shown(v):
        return "–".join(str(x) for x in v) if isinstance(v, tuple) else f"{v:g}"
    changed = [f"{label} {shown(row[k])}" for k, label in _SEARCH2_SETTINGS.items() if row[k] != base[k]]
    return ", ".join(changed) or "none (round 1's recipe at round 2's length)"


def screening_edges(done: list[tuple[dict, str]]) -> tuple[list, list, list]:
    """Which recorded screening runs (``(row, family)`` of :func:`aot_lib.evidence.search_rows`) sit at an edge, by
    the rule ``recipe_search2.py widen`` applies (:func:`aot_lib.evidence.widened_grid`): ``to_widen``, the runs it
    would still probe one step wider, ``(candidate, family, lr)``; ``edges``, the runs at an end of the rates they
    tried that it would not (widened on that side once already: ranked as they stand), likewise; ``widened``, the
    runs probed on more rates than configured, ``(candidate, family)``."""
    from ..evidence import widened_grid

    to_widen, edges, widened = [], [], []
    for r, f in done:
        grid, lr = r[f + "_grid"], r[f + "_lr"]
        if len(grid) > len(r["probe_lr"]):
            widened.append((r["candidate"], f))
        if widened_grid({"grid": grid, "lr": lr}):
            to_widen.append((r["candidate"], f, lr))
        elif lr in (min(grid), max(grid)):
            edges.append((r["candidate"], f, lr))
    return edges, to_widen, widened


def search2_table(root: Path) -> tuple[Table, dict]:
    """Table ``tbl-recipe-search2-screening`` (:func:`aot_lib.evidence.search_rows` of round 2): per candidate what
    it changes from round 1's recipe, its length on the slower CPU's clock, each family's validation linear top-1
    from the run's newest probe and their mean; and the facts the chapter's sentences state: ``rows``, ``done``
    (row, family) pairs recorded, ``screened`` (rows with all three), ``edges`` (runs probed again one step wider
    whose pick still sits at an end: ``(candidate, family, lr)``), ``to_widen`` (runs at an end of the configured
    grid that ``recipe_search2.py widen`` has not probed yet, likewise), ``widened`` (runs probed again on a wider
    grid)."""
    from .. import evidence

    search = evidence.search_rows(root, round=2)
    base = search[0]
    for r in search:
        r["change"] = _change(r, base)
    done = [(r, f) for r in search for f in TABLE13_NAMES if r[f] is not None]
    edges, to_widen, widened = screening_edges(done)
    screened = [r for r in search if r["mean"] is not None]
    table = Table(
        search,
        [Col("candidate"), Col("change", "change from round 1's recipe"), Col("mean", "mean (%)", ".2f"),
         *[Col(f, f"{n}, val. linear (%)", ".2f") for f, n in TABLE13_NAMES.items()],
         Col("full_epochs", "epochs in 27 min"), Col("epochs", "screening epochs")],
        caption="Round 2 of the recipe search, screening: validation linear top-1 per family"
                + (", the runs recorded so far" if len(done) < len(search) * len(TABLE13_NAMES) else ""),
        name="tbl-recipe-search2-screening",
        notes=["One seed per candidate and family (seed 0), validation only. Epochs in 27 min: AoT-ADMM's steps on "
               "the AMD EPYC's idle step time (results/cpu/search2/step_times_amd.json); the screening run is 30 % of "
               "them. An empty cell: not recorded yet; the mean waits for all three families.",
               f"Each probe chose its learning rate on the validation split from "
               f"{', '.join(sorted({_slashed(r['probe_lr']) for r in search}))}; {len(widened)} of the {len(done)} "
               "runs picked an end and were probed again one step wider (the score shown is that probe's)"
               + ("; widening goes one step only, so " + ", ".join(f"{TABLE13_NAMES[f]} {c} (still at {lr:g})"
                                                                     for c, f, lr in edges)
                  + " are ranked as they stand, as the rule says" if edges else "")
               + ("; not yet probed one step wider (recipe_search2.py widen, before the ranking): "
                  + ", ".join(f"{TABLE13_NAMES[f]} {c} (at {lr:g})" for c, f, lr in to_widen) if to_widen else "")
               + "."])
    return table, dict(rows=search, done=done, screened=screened, edges=edges, widened=widened, to_widen=to_widen)


def precision_table(benches: Sequence[Mapping], name: str | None = None) -> Table:
    """``benchmarks/bench_precision.py``'s records (fp32 against bf16-mixed, the families interleaved on one CPU), one
    per CPU type, as one table: per CPU and family the median step in each precision, bf16's time over fp32's (median
    over the interleaved repeats, with their range), and how far the two precisions' losses drift apart over the
    timed steps. Refuses records of different configs (they would not time one step)."""
    configs = {b["config"] for b in benches}
    if len(configs) != 1:
        raise ValueError(f"precision records of {sorted(configs)}: time one config on every CPU type")
    rows = []
    for bench in benches:
        for fam, r in bench["results"].items():
            drift = max(abs(a - b) for a, b in zip(r["fp32"]["losses"], r["bf16"]["losses"]))
            ratio = r["bf16_over_fp32"]
            rows.append(dict(cpu=cpu_label(bench["hardware"]), model=TABLE13_NAMES.get(fam, fam),
                             fp32=r["fp32"]["median_s"], bf16=r["bf16"]["median_s"], ratio=ratio["median"],
                             spread=f"{ratio['min']:.2f}–{ratio['max']:.2f}", drift=drift,
                             steps=len(r["fp32"]["losses"])))
    return Table(rows, [Col("cpu", "CPU"), Col("model"), Col("ratio", "bf16 / fp32, step time", ".2f"),
                        Col("spread", "range of paired ratios"), Col("fp32", "fp32 step (s)", ".3f"),
                        Col("bf16", "bf16-mixed step (s)", ".3f"), Col("drift", "largest loss gap", ".3f"),
                        Col("steps", "steps compared")],
                 caption=f"bf16-mixed against fp32 on each CPU type measured: one pretraining step of "
                         f"{configs.pop().rsplit('/', 1)[-1]}, per family",
                 name=name,
                 notes=["bf16 / fp32: the median over the interleaved repeats of each repeat's ratio (not the ratio of "
                        "the median steps), after warm-up. " + "; ".join(
                            f"{cpu_label(b['hardware'])}: {b['repeats']} repeats, batch {b['batch']}, {b['threads']} "
                            f"threads, at commit {b['commit'][:7]} ({b['date'][:10]}), bf16 flags "
                            f"{', '.join(b['cpu_bf16_flags']) or 'none'}" for b in benches)
                        + ". Largest loss gap: the two precisions' losses step by step from the same start, a check "
                        "that bf16 trains the same thing, not an accuracy comparison."])


def _isa(record: Mapping) -> str:
    """A timing record's CPU by what tells two types of one model apart: its instruction set, else its label."""
    return record["hardware"].get("cpu_isa") or cpu_label(record["hardware"])


def cpu_types_table(clock: Mapping, other: Mapping, name: str | None = None) -> tuple[Table, list[float]]:
    """Two ``recipe_search2.py time`` records of one commit on two CPU types (``clock``: the one round 2's lengths
    were set on) as a table: per candidate each family's median step on the other CPU over the clock's. Returns the
    table and every ratio (candidates x families). Refuses records of different commits or candidates."""
    if clock["commit"] != other["commit"] or set(clock["steps"]) != set(other["steps"]):
        raise ValueError(f"step times at {clock['commit'][:7]} and {other['commit'][:7]} (or of other candidates) "
                         "are not one measurement on two CPUs: time both at one commit")
    rows, ratios = [], []
    for cand, per in clock["steps"].items():
        row = {"candidate": cand, "clock": per["aot_admm"]["median_s"], "other": other["steps"][cand]["aot_admm"]["median_s"]}
        for fam in TABLE13_NAMES:
            row[fam] = other["steps"][cand][fam]["median_s"] / per[fam]["median_s"]
            ratios.append(row[fam])
        rows.append(row)
    return Table(rows, [Col("candidate"), Col("clock", f"AoT-ADMM step, {cpu_label(clock['hardware'])} (s)", ".3f"),
                        Col("other", f"AoT-ADMM step, {cpu_label(other['hardware'])} (s)", ".3f"),
                        *[Col(f, f"{n}: {_isa(other)} / {_isa(clock)} step", ".2f") for f, n in TABLE13_NAMES.items()]],
                 caption=f"One step of every round-2 candidate on two CPU types: the {cpu_label(other['hardware'])} "
                         f"against the clock's {cpu_label(clock['hardware'])}",
                 name=name,
                 notes=[f"Each record: the median of {clock['repeats']} and {other['repeats']} interleaved repeats in a "
                        f"rotating order on an idle machine, both at commit {clock['commit'][:7]} "
                        f"({clock['date'][:10]} and {other['date'][:10]}); a ratio under 1: faster than the clock's "
                        "CPU."]), ratios


def goal_table(goal: Mapping, name: str | None = None) -> Table:
    """:func:`aot_lib.evidence.goal_round2`'s reading as a table: per seed its test linear top-1, pretraining wall
    minutes, the other work on the machine meanwhile, the CPU it ran on and whether it counts toward the goal (and
    why not)."""
    g = goal["goal"]
    rows = [dict(seed=r["seed"], top1=r["top1"], minutes=r["wall_s"] / 60, other=r["other_cores"], cpu=r["cpu"],
                 counts="yes" if r["counts"] else f"no: {r['reason']}") for r in goal["rows"]]
    summary = goal["summary"]
    spread = ("one seed: no interval" if summary is None or summary.n < 2 else
              f"[{summary.low:.2f}, {summary.high:.2f}], 95 % t interval")
    reading = ("no run counts yet" if summary is None else
               f"over the {summary.n} that count: {summary.mean:.2f} % ({spread}), {goal['at_goal']} at or above "
               f"{g['top1']:g} %, {goal['at_moonshot']} at or above {g['moonshot']:g} %")
    return Table(rows, [Col("seed"), Col("top1", "linear test top-1 (%)", ".2f"),
                        Col("minutes", "pretraining wall (min)", ".1f"), Col("other", "other work (cores)", ".3f"),
                        Col("cpu", "CPU"), Col("counts", "counts toward the goal")],
                 caption=f"The round-2 goal: AoT-ADMM on CIFAR-10, {g['top1']:g} % in {g['wall_s'] / 60:g} wall "
                         f"minutes on an idle 2-core {g['cpu']}, seed by seed",
                 name=name,
                 notes=[f"A run counts when its pretraining wall time is at most {g['wall_s']:,} s on the plan's CPU model ({g['cpu']}) and "
                        f"the machine's other work while it ran was at most {goal['idle_max']:g} cores "
                        f"(results/cpu/plan.yaml: round2_idle, and the addendum on the goal's CPU); — : not measured. {reading[0].upper() + reading[1:]}."])


def goal_curves(goal: Mapping) -> dict[str, dict]:
    """The goal's runs as :func:`aot_lib.book.plotting.plot_wall_curves` draws them: per seed its online k-NN
    against its own wall minutes (:func:`aot_lib.evidence.knn_wall_curve`), whether it counts, and its final test
    linear top-1 at its pretraining wall minutes."""
    from .. import evidence

    curves = {}
    for r in goal["rows"]:
        rows = evidence.knn_wall_curve(r["run"].folder)
        curves[f"seed {r['seed']}" + ("" if r["counts"] else " (does not count)")] = dict(
            minutes=[m for _, m, _ in rows], acc=[a for _, _, a in rows], counts=r["counts"],
            final=(r["wall_s"] / 60, r["top1"]))
    return curves


def bf16_check_table(check: Mapping, name: str | None = None) -> Table:
    """:func:`aot_lib.evidence.bf16_check`'s reading as a table: per seed the validation linear top-1 and k-NN in
    fp32 and in bf16-mixed and the linear difference; the note gives the plan's reading (the eighth addendum)."""
    rows = [dict(seed=seed, fp32=p["fp32"], bf16=p["bf16"], diff=p["diff"], knn_fp32=p["knn_fp32"],
                 knn_bf16=p["knn_bf16"]) for seed, p in check["pairs"].items()]
    reading = ("not all seeds have both precisions yet" if check["matches"] is None else
               f"the mean difference {check['mean_diff']:+.2f} points against the fp32 seed spread "
               f"{check['spread']:.2f}: bf16 {'matches' if check['matches'] else 'does not match'} fp32 within the "
               "seed spread")
    return Table(rows, [Col("seed"), Col("fp32", "fp32 linear (%)", ".2f"), Col("bf16", "bf16 linear (%)", ".2f"),
                        Col("diff", "bf16 − fp32 (points)", "+.2f"), Col("knn_fp32", "fp32 k-NN (%)", ".2f"),
                        Col("knn_bf16", "bf16 k-NN (%)", ".2f")],
                 caption="bf16-mixed against fp32 at equal steps: round 2's base screening run of AoT-ADMM, "
                         "validation top-1 seed by seed",
                 name=name,
                 notes=[f"All runs from commit {check['commit'][:7]}, on the CPU; the plan's reading (its eighth "
                        f"addendum, written before the runs): {reading}."])
