"""Why round 2's clock measured a slower step than its goal runs took (issue 55).

The rule of ``scripts/recipe_search2.py`` set the recipe's length from the AoT-ADMM step time its ``time`` command
measured (``results/cpu/search2/step_times_amd.json``, at commit 20912d6: 0.358 s for r3_batch128); the goal runs
then took about 0.19 s a step, monitor and checkpoints included. Two things differ between the clock and a run:
the clock times 36 models (12 candidates x 3 families) interleaved, one step each in a rotating order, and it was
taken at an older commit. This benchmark separates them: the clock's own timer (``recipe_search2.time_steps``) for
r3_batch128's AoT-ADMM step, at this checkout and at ``--old-root`` (a checkout of the clock's commit), each

* ``alone``: that one model, step after step, as a training run takes them;
* ``interleaved``: among all 36 models, exactly as the clock measured it.

Each arm runs in its own process (so each checkout imports its own ``aot_lib``), the four arms in turn, ``--rounds``
times. Run it on an otherwise idle machine::

    git clone -q . /tmp/clock_old && git -C /tmp/clock_old checkout -q 20912d6
    .venv/bin/python benchmarks/bench_step_clock.py --old-root /tmp/clock_old

It writes ``results/benchmarks/step_clock_<cpu>.json``: per arm, every round's median step time of r3_batch128's
AoT-ADMM (and, for the interleaved arms, every candidate's and family's medians).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from _common import ROOT, record_path, write

from aot_lib.runtime import hardware_summary

CANDIDATE = "r3_batch128"

# Runs inside the checkout under test: its scripts/ and its aot_lib first on the path. ``alone`` narrows the
# clock's candidates and families to the one model (the timer reads both from the modules at call time).
ARM = r"""
import json, sys
root, how, repeats, warmup, cand = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
sys.path[:0] = [root + "/scripts", root]
import aot_lib, recipe_search, recipe_search2
assert aot_lib.__file__.startswith(root), f"imported {aot_lib.__file__}, not the checkout {root}"
if how == "alone":
    fam = {"aot_admm": recipe_search.FAMILIES["aot_admm"]}
    recipe_search.FAMILIES = recipe_search2.FAMILIES = fam
    recipe_search2.CANDIDATES = {cand: recipe_search2.CANDIDATES[cand]}
print("RESULT " + json.dumps(recipe_search2.time_steps(repeats, warmup)))
"""


def run_arm(root: Path, how: str, repeats: int, warmup: int) -> dict:
    """One arm in a fresh process: the timer's ``{candidate: {family: {median_s, min_s, max_s}}}``."""
    done = subprocess.run([sys.executable, "-c", ARM, str(root), how, str(repeats), str(warmup), CANDIDATE],
                          cwd=root, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"bench_step_clock: the {how} arm at {root} failed:\n{done.stderr[-2000:]}")
    return json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old-root", type=Path, required=True, help="a checkout of the clock's commit (20912d6)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--alone-repeats", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5, help="the interleaved arms' repeats (the clock's 5)")
    ap.add_argument("--warmup", type=int, default=2, help="steps before the timed ones (the clock's 2)")
    ap.add_argument("--name", default=None)
    a = ap.parse_args()
    old = a.old_root.resolve()
    old_commit = subprocess.run(["git", "-C", str(old), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    name = a.name or f"step_clock_{hardware_summary()['cpu_model'].split()[0].lower()}"
    record_path(name)  # refuses an existing record before anything is measured
    arms = {("this", "alone"): [], ("old", "alone"): [], ("this", "interleaved"): [], ("old", "interleaved"): []}
    full = {}
    for r in range(a.rounds):
        for (which, how), medians in arms.items():
            root = ROOT if which == "this" else old
            repeats = a.alone_repeats if how == "alone" else a.repeats
            steps = run_arm(root, how, repeats, a.warmup)
            medians.append(steps[CANDIDATE]["aot_admm"]["median_s"])
            if how == "interleaved":
                full.setdefault(which, []).append(steps)
            print(f"round {r + 1}/{a.rounds} {which:4s} {how:11s} {medians[-1]:.3f} s", flush=True)
    write(name, {
        "candidate": CANDIDATE, "family": "aot_admm", "old_commit": old_commit, "rounds": a.rounds,
        "alone_repeats": a.alone_repeats, "repeats": a.repeats, "warmup": a.warmup,
        "arms": {f"{which}_{how}": {"median_s": medians, "median_of_rounds_s": statistics.median(medians)}
                 for (which, how), medians in arms.items()},
        "interleaved_steps": full,
        "note": "each arm a fresh process, the four in turn each round, on an otherwise idle machine"})


if __name__ == "__main__":
    main()
