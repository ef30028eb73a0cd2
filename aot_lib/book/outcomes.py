"""What the book set out to do and what happened, from the records: the values the introduction and chapter 1 state
up front (issue 59), as :func:`aot_lib.book.inline.phrases` for their ``{eval}`` roles."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from .. import evidence
from ..evidence.records import read_json, read_yaml
from .inline import and_list, phrases

__all__ = ["outcomes"]


def _cpu_name(model: str) -> str:
    """"Intel(R) Xeon(R) Processor" -> "Intel Xeon": the CPU as the text names it."""
    return " ".join(w for w in model.replace("(R)", "").split() if w != "Processor")


def _range(values, fmt: str = "") -> str:
    """"32–68", or one value when all are equal."""
    low, high = format(min(values), fmt), format(max(values), fmt)
    return low if low == high else f"{low}–{high}"


def _unsettled_directions(group: list[dict]) -> str:
    """Where the not-settled verdicts of ``group`` (:func:`aot_lib.evidence.verdict_rows`) point: "the interval puts
    AoT-ADMM ahead in 1, neither side in 3" ("" when none is unsettled)."""
    ahead = Counter(r["ahead"] for r in group if r["verdict"].split(" (")[0] == "not settled")
    parts = [f"{'neither side' if who == 'neither' else who} in {n}" for who, n in ahead.most_common()]
    return f"the interval puts {', '.join(parts)}".replace(" in ", " ahead in ", 1) if parts else ""


def _tables(keys: list[str]) -> str:
    """["table2", "table1", "table4"] -> "Tables 1, 2 and 4"."""
    numbers = sorted({int(k.removeprefix("table")) for k in keys})
    return f"Table{'s' * (len(numbers) > 1)} {and_list([str(n) for n in numbers])}"


def outcomes(root: str | Path) -> SimpleNamespace:
    """The book's goals against the records under the checkout ``root``:

    * the paper's claims (:func:`aot_lib.evidence.all_claim_rows`): how many, how many the plan judged before their
      runs (``planned``) and after (``post_hoc``), each group's verdict counts and seeds;
    * the tables the post-hoc claims come from (``post_hoc_tables``);
    * the 30-minute goal (:func:`aot_lib.evidence.goal_30min`): its target, outcome, the seeds' mean and interval,
      the best seed, the modelled minutes and whose clock they are, the recorded wall times and the CPU types they
      were taken on (``goal_cpus``), CRATE's side's minutes;
    * where each group's not-settled verdicts point (``planned_unsettled_ahead``, ``post_hoc_unsettled_ahead``);
    * the second search round (issue 55): screening runs recorded of those configured, the recipe it picked
      (``round2_recipe``), and its goal's seeds recorded of the plan's (``round2_goal_seeds``,
      ``round2_goal_planned``); over the seeds that count (``round2_goal_counted``, the plan's idle, CPU and wall-time
      conditions) their mean test top-1 with its 95 % interval and the best seed (``—`` before the first), how many
      reach the goal's top-1 (``round2_goal_at``), and ``round2_goal_outcome``: ``pending`` until all the plan's
      seeds are recorded, then ``reached`` or ``not reached`` by the plan's primary reading (the mean).
    """
    root = Path(root)
    results = root / "results" / "cpu"
    claim_rows = evidence.all_claim_rows(results)
    rows = evidence.verdict_rows(claim_rows)
    planned = [r for r in rows if not r["post_hoc"]]
    post_hoc = [r for r in rows if r["post_hoc"]]

    def count(group, *words):
        return sum(r["verdict"].split(" (")[0] in words for r in group)

    # seeds recorded (the difference's n) against the plan's, for the claims judged by the plan
    planned_seeds = [(0 if r["diff"] is None else r["diff"].n, r["plan"].seeds)
                     for r in claim_rows if not r["plan"].post_hoc]
    complete = all(n == asked for n, asked in planned_seeds)
    plan_seeds = sorted({asked for _, asked in planned_seeds})
    goal = evidence.goal_30min(root)
    target = evidence.GOAL_30MIN
    clock = evidence.step_clock(root)
    pick = evidence.recipe_pick(root)
    crate = evidence.cell_runs(results, "cpu30_crate_cifar10")
    crate_minutes = evidence.modelled_minutes(read_json(crate[0].folder / "run.json")["step"],
                                              clock["steps"][pick["candidate"]]["crate"]["median_s"])
    s = goal["summary"]
    search2 = root / "configs" / "cpu" / "search2"
    pick2, goal2 = evidence.recipe_pick(root, round=2), evidence.goal_round2(root)
    recorded2 = len(goal2["rows"]) if goal2 else 0
    s2 = goal2["summary"] if goal2 else None
    planned2 = read_yaml(results / "plan.yaml")["round2"]["goal"]["seeds"]
    return phrases(
        claims=len(rows), planned=len(planned), post_hoc=len(post_hoc),
        planned_reproduced=count(planned, "reproduced", "confirmed"),
        planned_unsettled=count(planned, "not settled"), planned_contradicted=count(planned, "contradicted"),
        planned_seeds=("all the seeds the plan asks for" if complete else "not yet all the seeds the plan asks for")
        + f" ({' or '.join(map(str, plan_seeds))} per claim)",
        post_hoc_reproduced=count(post_hoc, "reproduced", "confirmed"),
        post_hoc_unsettled=count(post_hoc, "not settled"), post_hoc_contradicted=count(post_hoc, "contradicted"),
        post_hoc_tables=_tables([r["plan"].table for r in claim_rows if r["plan"].post_hoc]),
        post_hoc_seeds=_range([r["diff"].n for r in claim_rows if r["plan"].post_hoc and r["diff"] is not None]),
        planned_unsettled_ahead=_unsettled_directions(planned),
        post_hoc_unsettled_ahead=_unsettled_directions(post_hoc),
        goal_top1=f"{target['top1']:.0f}", goal_minutes=f"{target['minutes']:.0f}",
        goal_moonshot=f"{target['moonshot']:.0f}",
        goal_outcome="reached" if goal["reached"] else "not reached",
        goal_reached=goal["reached"], goal_seeds=s.n, goal_mean=f"{s.mean:.2f}",
        goal_ci=f"[{s.low:.2f}, {s.high:.2f}]", goal_best=f"{goal['best'].top1:.2f}",
        goal_short=f"{target['top1'] - goal['best'].top1:.2f}",
        goal_modelled=_range(goal["minutes"].values(), ".1f"),
        clock_cpu=_cpu_name(clock["hardware"]["cpu_model"]),
        goal_wall=_range([round(r.wall_time_s / 60) for r in goal["runs"]]),
        goal_cpus=" and ".join(dict.fromkeys(_cpu_name(dict(r.hardware).get("cpu_model", "unrecorded CPU"))
                                             for r in goal["runs"])),
        crate_modelled=f"{crate_minutes:.1f}",
        round2_done=sum((results / "search2" / f"search2_{p.stem}" / "probe.json").exists()
                        for p in search2.glob("*.yaml")),
        round2_total=len(list(search2.glob("*.yaml"))),
        round2_recipe=pick2["candidate"] if pick2 else "not picked yet",
        round2_goal_seeds=recorded2, round2_goal_planned=planned2,
        round2_goal_counted=s2.n if s2 else 0, round2_goal_at=goal2["at_goal"] if goal2 else 0,
        round2_goal_outcome=("pending" if recorded2 < planned2 else
                             "reached" if goal2["reached"] else "not reached"),
        round2_goal_mean=f"{s2.mean:.2f}" if s2 else "—",
        round2_goal_ci=f"[{s2.low:.2f}, {s2.high:.2f}]" if s2 and s2.n > 1 else "—",
        round2_goal_best=f"{max(r['top1'] for r in goal2['rows'] if r['counts']):.2f}" if s2 else "—")
