"""The goals and outcomes the introduction and chapter 1 state up front (aot_lib.book.outcomes), against the plan
and the run records read here on their own."""
import json
import re
import statistics
from pathlib import Path

import yaml

from aot_lib.book.outcomes import outcomes

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results" / "cpu"


def test_the_claims_counted_up_front_are_the_plans():
    plan = yaml.safe_load((RESULTS / "plan.yaml").read_text())["claims"]
    o = outcomes(ROOT)
    post_hoc = [k for k, c in plan.items() if c.get("post_hoc")]
    assert (int(o.claims), int(o.post_hoc), int(o.planned)) == (len(plan), len(post_hoc), len(plan) - len(post_hoc))
    assert int(o.planned_reproduced) + int(o.planned_unsettled) + int(o.planned_contradicted) == int(o.planned)
    assert int(o.post_hoc_reproduced) + int(o.post_hoc_unsettled) + int(o.post_hoc_contradicted) == int(o.post_hoc)
    for ahead, unsettled in ((o.planned_unsettled_ahead, o.planned_unsettled),
                             (o.post_hoc_unsettled_ahead, o.post_hoc_unsettled)):  # every unsettled one has a side
        assert sum(int(n) for n in re.findall(r" in (\d+)", str(ahead))) == int(unsettled), ahead
    # the post-hoc claims' tables, from the plan's own table keys (table1 .. table4 today)
    tables = sorted({int(c["table"].removeprefix("table")) for c in plan.values() if c.get("post_hoc")})
    assert o.post_hoc_tables == "Tables " + ", ".join(map(str, tables[:-1])) + f" and {tables[-1]}"
    asked = sorted({c["seeds"] for k, c in plan.items() if not c.get("post_hoc")})
    assert o.planned_seeds.endswith(f"({' or '.join(map(str, asked))} per claim)")


def test_the_30_minute_goal_is_read_from_the_seeds_probes():
    """Mean, best and the count at the goal recomputed from each seed's probe.json (test top-1) and run.json."""
    folders = sorted(p for p in RESULTS.iterdir() if p.name == "cpu30_aot_admm_cifar10"
                     or p.name.startswith("cpu30_aot_admm_cifar10_seed"))
    top1 = [json.loads((f / "probe.json").read_text())["linear_top1"] for f in folders]
    wall = [json.loads((f / "run.json").read_text())["wall_time_s"] / 60 for f in folders]
    o = outcomes(ROOT)
    assert int(o.goal_seeds) == len(top1) == 5
    assert o.goal_mean == f"{statistics.mean(top1):.2f}" and o.goal_best == f"{max(top1):.2f}"
    assert int(o.goal_reached) == sum(t >= float(o.goal_top1) for t in top1) == 0
    assert o.goal_outcome == "not reached"
    assert o.goal_wall == f"{round(min(wall))}–{round(max(wall))}"
    # the CPU types the seeds ran on, in seed order, as run.json names them ("Intel(R) Xeon(R) Processor")
    cpus = [json.loads((f / "run.json").read_text())["hardware"]["cpu_model"] for f in folders]
    named = [" ".join(w for w in c.replace("(R)", "").split() if w != "Processor") for c in cpus]
    assert o.goal_cpus == " and ".join(dict.fromkeys(named)) == "Intel Xeon and AMD EPYC"
    assert f"{float(o.goal_top1) - max(top1):.2f}" == o.goal_short


def test_the_round_2_goal_row_reads_the_recipe_and_the_goal_seeds_recorded():
    """The recipe named in configs/cpu/cpu30b/recipe.yaml's description, and the goal's seeds from each
    cpu30b_aot_admm_cifar10[_seed<k>] probe.json (test top-1), against the plan's seed count."""
    plan = yaml.safe_load((RESULTS / "plan.yaml").read_text())["round2"]["goal"]
    recipe = yaml.safe_load((ROOT / "configs" / "cpu" / "cpu30b" / "recipe.yaml").read_text())["description"]
    folders = sorted(p for p in RESULTS.iterdir() if re.fullmatch(r"cpu30b_aot_admm_cifar10(_seed\d)?", p.name))
    top1 = [json.loads((f / "probe.json").read_text())["linear_top1"] for f in folders]
    o = outcomes(ROOT)
    assert re.fullmatch(r"the round-2 CPU recipe: search candidate (\S+) at full length \(\d+ epochs\)",
                        recipe)[1] == o.round2_recipe == "r3_batch128"
    assert int(o.round2_goal_planned) == plan["seeds"] == 5
    assert int(o.round2_goal_seeds) == len(top1) >= 1
    # every recorded seed ran alone on the AMD EPYC within 1,800 s (their run.json), so every one counts
    records = [json.loads((f / "run.json").read_text()) for f in folders]
    assert all(r["other_cores"] <= 0.05 and r["wall_time_s"] <= plan["wall_s"] for r in records)
    assert int(o.round2_goal_counted) == len(top1)
    assert o.round2_goal_mean == f"{statistics.mean(top1):.2f}" and o.round2_goal_best == f"{max(top1):.2f}"
    assert int(o.round2_goal_at) == sum(t >= plan["top1"] for t in top1)
    if len(top1) < plan["seeds"]:
        assert o.round2_goal_outcome == "pending"
    else:  # the plan's primary reading: the mean of the seeds against the goal's top-1
        assert o.round2_goal_outcome == ("reached" if statistics.mean(top1) >= plan["top1"] else "not reached")
