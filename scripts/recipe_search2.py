"""Round 2 of the 30-minute recipe search (issue 55): wall time on the slower CPU, and what round 1 held fixed.

    .venv/bin/python scripts/recipe_search2.py time        # step times of every candidate x family, interleaved, idle
    .venv/bin/python scripts/recipe_search2.py configs     # configs/cpu/search2/*.yaml from the recorded step times
    nice -n 10 scripts/evidence_runs.sh search2            # the screening runs, one at a time (resumable)
    .venv/bin/python scripts/recipe_search2.py widen       # a screening probe that picked an end: one step wider
    .venv/bin/python scripts/recipe_search2.py finalists   # rank the screening; configs/cpu/search2/final/ (top two)
    nice -n 10 scripts/evidence_runs.sh finalists2         # the two finalists at full length, every family
    .venv/bin/python scripts/recipe_search2.py recipe      # the better finalist: configs/cpu/cpu30b/ (commit them)

**The rule, fixed before any screening run (2026-11-28, committed before the first one).**

* *The clock is wall time on the slower CPU.* A recipe's full length is the number of whole epochs whose AoT-ADMM
  training steps fill ``STEP_BUDGET_S`` (27 minutes) at the candidate's step time measured by ``time`` on this
  project's slower CPU type, the 2-core AMD EPYC (Zen 4): round 1's 4,290 steps took 43.1 minutes there against
  26.0 on the Intel Xeon. The other 3 minutes of the 30 are the allowance for what a run does besides its steps
  (the online k-NN monitor, checkpoints); the final runs' recorded wall time says whether it was enough, and a run
  over 30 minutes does not count toward the goal.
* *Precision.* fp32. bf16-mixed was measured first (``benchmarks/bench_precision.py``,
  ``results/benchmarks/precision_amd.json``): on the AMD EPYC, which has AVX512-BF16, a whole step took 1.35-2.2x
  the fp32 time for every family, so bf16 is not adopted on this CPU type and needs no accuracy check here. A CPU
  with AMX (a recent Intel Xeon) may differ: measured when one is at hand, the rule being the same (faster on
  that CPU type, and accuracy at equal steps within the fp32 seed spread on 2 seeds, validation only).
* *Equal cost, equal length.* The candidates that change no computation (the learning rate, lambda) and the base
  share one step time, the median of their measured AoT-ADMM step times (five measurements of the same step: their
  spread, 0.62-0.69 s, is the machine's noise, and would otherwise give equal candidates unequal lengths); every other
  candidate's full length comes from its own measured step time. (Added after ``time`` ran and before any screening
  run or config was written.)
* *The candidates* change one thing at a time from round 1's recipe (``configs/cpu/cpu30/recipe.yaml``: c1_local2,
  width 192, depth 6, patch 8, 2 global 32 px + 2 local 16 px views, batch 256, lr 2e-3, LeJEPA lambda 0.05, 256
  SIGReg slices, projector 1024-1024-64), over what round 1 held fixed: the learning rate, the batch, lambda, the
  slices, the projector, the number of local views, and depth/width at the new step times. View *sizes* are not
  searched: with patch 8 on 32 px images the only other sizes are 8 px (one patch) and 24 px. Every candidate
  applies to the three families alike and leaves Algorithm 1, the heads and the pooling alone.
* *Screening.* Each candidate x family is one run at ``PROXY_FRACTION`` (0.3) of its full length (the whole
  warm-up + cosine schedule compressed), validation only (``probe.test=false``: the linear probe's 10 %
  validation split of the training set; the online k-NN on validation images). The probe's learning-rate grid is
  ``PROBE_LR`` (1e-3 .. 1e-1, one step wider than round 1's cells); a screening run whose pick sits at an edge of
  the grid is probed again with the grid extended by one step on that side (3e-4 or 3e-1; the probe's features are
  cached, so the encoder is the same), and ranked by that probe; if the pick is still at the edge, the run is
  ranked as it is and the edge is reported.
* *Ranking.* By the mean validation linear top-1 over the three families, equal weights; a tie (equal to 0.01
  points) goes to the candidate earlier in ``CANDIDATES`` (the base first). The top two are trained at full length
  on every family (finalists); the better of those by the same score is the recipe of the round-2 cells
  (results/cpu/plan.yaml, ``round2``).

How the commands carry the rule out (written 2026-11-29, after 11 of the 36 screening runs were recorded and before
any ranking; the rule above is unchanged). ``finalists`` refuses until every candidate is screened on every family
and no screening pick still sits at an edge it could be widened past (``widen`` first). "Equal to 0.01 points" is
read as equal when rounded to 0.01 points, the precision the book shows. A finalist is its screening config at its
full length (``full_epochs`` of its step time), validation only; its probe takes the widening step itself
(``probe.lr_below`` 3e-4, ``probe.lr_above`` 3e-1: tried only if the pick sits at that end), which is what ``widen``
does to a screening run. ``recipe`` writes ``configs/cpu/cpu30b/``: the picked finalist at full length with the
plan's round-2 probe (the same grid, extended one rate at a time while the pick sits at an end: the plan's seventh
addendum, written 2026-12-07 after 21 screening runs, whose first step is the widening step; the test split read
once), and the plan's cells
``cpu30b_<family>_<data>[_seed<k>]``, seeds 0-4 on CIFAR-10 and 0-2 on CIFAR-100.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


from aot_lib.evidence.search import (ROUND2_PROBE_LR, ROUND2_PROXY_FRACTION, ROUND2_SAME_STEP_AS_BASE,  # noqa: E402
                                    ROUND2_STEP_BUDGET_S, ROUND2_WIDER, round2_full_epochs, widened_grid)
from aot_lib.evidence.records import read_yaml  # noqa: E402
from aot_lib.files import loads_json  # noqa: E402
from recipe_search import FAMILIES, TRAIN_IMAGES, _merge, _write_config, record_step_times, write_cells  # noqa: E402
from recipe_search import time_steps as _time_steps  # noqa: E402

#: The lengths (aot_lib.evidence.search, so the book reads the values this script applies): AoT-ADMM's training
#: steps at full length, 3 of the 30 minutes left for monitors and checkpoints; a screening run's fraction of it.
STEP_BUDGET_S, PROXY_FRACTION = ROUND2_STEP_BUDGET_S, ROUND2_PROXY_FRACTION
#: The screening grid and the one step it is widened by on the side of an edge pick (the rule above); they and
#: widened_grid live in aot_lib.evidence.search, so the book reads the rule this script applies.
PROBE_LR, WIDER = ROUND2_PROBE_LR, ROUND2_WIDER
RESULTS = ROOT / "results" / "cpu" / "search2"
BASE = "../cpu30/recipe.yaml"  # relative to configs/cpu/search2/
OUT = ROOT / "configs" / "cpu" / "search2"
TIMES = ROOT / "results" / "cpu" / "search2" / "step_times_amd.json"

#: One change at a time from round 1's recipe (configs/cpu/cpu30/recipe.yaml); r0 is that recipe itself.
CANDIDATES = {
    "r0_base": {},
    "r1_lr1e-3": {"optim": {"lr": 1e-3}},
    "r2_lr4e-3": {"optim": {"lr": 4e-3}},
    "r3_batch128": {"optim": {"batch_size": 128}},
    "r4_lambda0.02": {"loss": {"lejepa_lambda": 0.02}},
    "r5_lambda0.15": {"loss": {"lejepa_lambda": 0.15}},
    "r6_slices1024": {"loss": {"num_slices": 1024}},
    "r7_proj2048": {"projector": {"hidden_dim": 2048, "out_dim": 128}},
    "r8_local0": {"views": {"n_local": 0}},
    "r9_local4": {"views": {"n_local": 4}},
    "r10_depth4": {"model": {"overrides": {"depth": 4}}},
    "r11_w256_d4": {"model": {"overrides": {"embed_dim": 256, "depth": 4, "num_heads": 8}}},
}


def candidate_config(cand: str, family: str) -> dict:
    from aot_lib.training.config import load_config

    overrides = [f"model.name={FAMILIES[family]}"]
    cfg = load_config(ROOT / "configs" / "cpu" / "cpu30" / "recipe.yaml", overrides)
    return _merge(cfg, CANDIDATES[cand])


def batch_of(cand: str) -> int:
    return _merge({"optim": {"batch_size": 256}}, CANDIDATES[cand])["optim"]["batch_size"]


def time_steps(repeats: int, warmup: int) -> dict:
    """Median seconds of one whole pretraining step (augmentation included) per candidate and family, interleaved
    repeat by repeat in a rotating order (round 1's timer, :func:`recipe_search.time_steps`), AdamW on the trainer's
    parameter groups."""
    from aot_lib.training.optim import param_groups

    return _time_steps(repeats, warmup, CANDIDATES, candidate_config,
                       params=lambda model, cfg: param_groups(model, cfg["optim"]["weight_decay"]))


#: The candidates whose step is the base's (they change no computation): one step time for them all.
SAME_COST_AS_BASE = ROUND2_SAME_STEP_AS_BASE


def step_time(times: dict, cand: str) -> float:
    """AoT-ADMM's step time a candidate's length is set by: the median over :data:`SAME_COST_AS_BASE` for those,
    else its own measured median."""
    steps = times["steps"]
    if cand in SAME_COST_AS_BASE:
        return statistics.median(steps[c]["aot_admm"]["median_s"] for c in SAME_COST_AS_BASE)
    return steps[cand]["aot_admm"]["median_s"]


def full_epochs(step_s: float, batch: int) -> int:
    """Whole epochs AoT-ADMM's steps fill :data:`STEP_BUDGET_S` with at ``step_s`` seconds a step (at least 1)."""
    return round2_full_epochs(step_s, batch, TRAIN_IMAGES)


def write_configs(times: dict) -> list[Path]:
    """The screening configs: each candidate on each family at ``PROXY_FRACTION`` of its full length, validation
    only, the k-NN monitor once an epoch, the probe's wider grid."""
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    for cand, over in CANDIDATES.items():
        batch = batch_of(cand)
        step_s = step_time(times, cand)
        epochs = full_epochs(step_s, batch)
        proxy = max(1, round(PROXY_FRACTION * epochs))
        for fam in FAMILIES:
            body = _merge(over, {
                "description": f"recipe search round 2, {cand}: {fam} screening run ({proxy} of {epochs} epochs)",
                "inherit": BASE, "model": {"name": FAMILIES[fam]}, "run": {"name": f"search2_{cand}_{fam}"},
                "optim": {"epochs": proxy, "warmup_epochs": round(proxy / 10, 2)},
                "probe": {"test": False, "lr": PROBE_LR},
                "monitor": {"every": TRAIN_IMAGES // batch, "knn": True}})
            head = (f"# Generated by scripts/recipe_search2.py from {TIMES.relative_to(ROOT)} (AoT-ADMM "
                    f"{step_s:.3f} s a step on the AMD EPYC -> {epochs} epochs in {STEP_BUDGET_S // 60} min of "
                    f"steps; this screening run: {proxy}). The rule: the script's docstring.\n")
            written.append(_write_config(OUT / f"{cand}_{fam}.yaml", head, body))
    return written


def widen(dry_run: bool = False) -> list[tuple[Path, list[float]]]:
    """Every recorded screening run whose pick sits at an edge, probed again on :func:`widened_grid`'s grid (the
    encoder and its cached features unchanged), the probe written as its next ``reprobes/<k>.json``: the one the
    ranking reads. Run it from a clean checkout, with AOT_DATA set; a run already widened is left as it is."""
    from aot_lib.evidence import validation_scores
    from reprobe import reprobe

    todo = []
    for folder in sorted(p for p in RESULTS.glob("search2_*") if p.is_dir()):
        scores = validation_scores(folder)
        grid = widened_grid(scores) if scores else None
        if grid:
            todo.append((folder, grid))
    for folder, grid in todo:
        print(f"{folder.relative_to(ROOT)}: pick {validation_scores(folder)['lr']:g} at the edge; probing on {grid}")
        if not dry_run:
            reprobe(folder.relative_to(ROOT), ROOT / "runs" / "reprobe",
                    settings=[f"probe.lr={json.dumps(grid)}", "probe.test=false"], ranked=True)
    return todo


FINAL = OUT / "final"
N_FINALISTS = 2
#: The finalists' and the recipe's probe: the screening grid, with the widening step taken by the probe itself.
EDGE_PROBE = {"lr": PROBE_LR, "lr_below": [WIDER["low"]], "lr_above": [WIDER["high"]]}
CPU30B = ROOT / "configs" / "cpu" / "cpu30b"


def cpu30b_probe(root: Path = ROOT) -> dict:
    """The plan's probe of the round-2 cells (results/cpu/plan.yaml, ``round2``: ``probe_lr`` extended one rate at a
    time by ``probe_lr_below`` / ``probe_lr_above`` while the pick sits at that end, the seventh addendum), the test
    split read once. Refuses a plan whose grid is not the screening's, or whose extension does not start with the
    search rule's one step (the addendum keeps that step first)."""
    plan = read_yaml(root / "results" / "cpu" / "plan.yaml")["round2"]
    below, above = list(plan.get("probe_lr_below") or ()), list(plan.get("probe_lr_above") or ())
    if list(plan["probe_lr"]) != PROBE_LR or below[:1] != [WIDER["low"]] or above[:1] != [WIDER["high"]]:
        raise SystemExit(f"recipe_search2: results/cpu/plan.yaml's round-2 probe ({plan['probe_lr']}, below {below}, "
                         f"above {above}) is not the screening grid {PROBE_LR} extended first by {WIDER['low']:g} / "
                         f"{WIDER['high']:g}: restore the plan (results/history holds each version)")
    return {"lr": PROBE_LR, "lr_below": below, "lr_above": above, "weight_decay": 0.0, "test": True}


def ranked(rows: list[dict]) -> list[dict]:
    """The screening rows (:func:`aot_lib.evidence.search_rows` of round 2) by the rule
    (:func:`aot_lib.evidence.round2_ranking`, where the book reads it too): the mean over the three families rounded to
    0.01 points, best first, a tie to the earlier candidate. Refuses a screening that is not complete, or has a pick
    at an edge ``widen`` would still probe, naming the first such run and the fix."""
    from aot_lib.evidence import round2_ranking

    try:
        return round2_ranking(rows)
    except ValueError as e:
        raise SystemExit(f"recipe_search2: {e}") from None


def write_finalists(rows: list[dict], out: Path = FINAL) -> list[Path]:
    """The top :data:`N_FINALISTS` of :func:`ranked` at their full length (the screening config's ``M`` of "(N of M
    epochs)"), every family, validation only, the probe of :data:`EDGE_PROBE`, the k-NN monitor once an epoch."""
    order = ranked(rows)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for place, row in enumerate(order[:N_FINALISTS], 1):
        cand, epochs = row["candidate"], row["full_epochs"]
        for fam in FAMILIES:
            body = _merge(CANDIDATES[cand], {
                "description": f"recipe search round 2 finalist {place} ({cand}): {fam} at full length ({epochs} "
                               "epochs)",
                "inherit": "../" + BASE, "model": {"name": FAMILIES[fam]}, "run": {"name": f"final2_{cand}_{fam}"},
                "optim": {"epochs": epochs, "warmup_epochs": round(epochs / 10, 2)},
                "probe": {"test": False, **EDGE_PROBE},
                "monitor": {"every": TRAIN_IMAGES // row["batch"], "knn": True}})
            head = (f"# Generated by scripts/recipe_search2.py finalists: place {place} of {len(order)} by mean "
                    f"validation linear {row['mean']:.2f} % over the three families' screening runs; {epochs} "
                    f"epochs, its full length on the AMD EPYC clock. The rule: the script's docstring.\n")
            written.append(_write_config(out / f"{cand}_{fam}.yaml", head, body))
    return written


def write_recipe(root: Path = ROOT, out: Path = CPU30B) -> list[Path]:
    """Round 2's recipe and the plan's round-2 cells (``recipe_search.write_cells``), once both finalists are
    recorded on every family."""
    return write_cells(root, out, 2, CANDIDATES, "cpu30b", cpu30b_probe(root), "../cpu30/recipe.yaml",
                       "recipe_search2.py", "the round-2 CPU recipe", "round-2", "finalists2")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["time", "configs", "widen", "finalists", "recipe"])
    p.add_argument("--dry-run", action="store_true", help="widen: list the runs and grids, probe nothing")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--out", type=Path, default=TIMES)
    a = p.parse_args()
    if a.what == "widen":
        widen(a.dry_run)
        return
    if a.what in ("finalists", "recipe"):
        from aot_lib.evidence import search_rows

        if a.what == "finalists":
            for r in ranked(search_rows(ROOT, round=2)):
                print(f"{r['candidate']:16s} mean {r['mean']:6.2f}  "
                      + "  ".join(f"{f} {r[f]:6.2f}" for f in FAMILIES))
        paths = write_finalists(search_rows(ROOT, round=2)) if a.what == "finalists" else write_recipe()
        for path in paths:
            print(path.relative_to(ROOT))
        return
    if a.what == "time":
        record_step_times(a.out, a.repeats, a.warmup, time_steps, "recipe_search2",
                          note="interleaved, rotating order, on an idle machine")
    else:
        if not TIMES.is_file():
            raise SystemExit(f"recipe_search2: no step times at {TIMES.relative_to(ROOT)}: run `recipe_search2.py "
                             "time` on the idle AMD EPYC first")
        for path in write_configs(loads_json(TIMES.read_text())):
            print(path.relative_to(ROOT))


if __name__ == "__main__":
    from aot_lib.cli import run_script  # a refusal is one line, no traceback (--debug shows it)

    sys.exit(run_script(main, "recipe_search2.py"))
