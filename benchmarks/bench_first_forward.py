"""The first forward of a new process, in environments that take turns (issue 54).

A user with two environments (a lab venv and the book's, or a Jupyter kernel in another env than the CLI) starts
processes in both. Each new process's first AoT-ADMM forward on the CPU loads the compiled state-update kernel
(:mod:`aot_lib.cpu_kernels`), or builds it when no build fits this environment. This script starts
``--rounds`` new processes per environment, alternating between them, and records each one's first-forward time,
whether it built the kernel, and every line it printed on stderr.

    python benchmarks/bench_first_forward.py --python .venv/bin/python --python /tmp/venv2/bin/python \\
        --label after --clear-cache
    # the code before the fix: a worktree of the older commit, imported by both environments
    python benchmarks/bench_first_forward.py ... --checkout /tmp/before --label before --clear-cache

``--clear-cache`` removes both the old (torch's, one folder per kernel name) and the new (aot_lib's, one per
environment key) build folders first, so the first process of each environment shows a build.
Writes ``results/benchmarks/first_forward_<label>_<cpu>.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, write

CHILD = r"""
import json, os, sys, time
checkout = os.environ.get("AOT_BENCH_CHECKOUT")
if checkout:  # that checkout's aot_lib, not the environment's editable install (its finder comes before sys.path)
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")
                        and "__editable__" not in getattr(type(f), "__module__", "")]
    sys.path.insert(0, checkout)
t0 = time.perf_counter()
import torch, aot_lib
t1 = time.perf_counter()
model = aot_lib.create_model("aot_admm_tiny").eval()
x = torch.randn(2, 3, 32, 32)
t2 = time.perf_counter()
with torch.no_grad():
    model.forward_features(x)
t3 = time.perf_counter()
from aot_lib.cpu_kernels import kernel
print(json.dumps({"import_s": t1 - t0, "first_forward_s": t3 - t2, "aot_lib": aot_lib.__file__,
                  "torch": torch.__version__, "kernel": kernel(torch.device("cpu"))}))
"""


def build_folders() -> list[Path]:
    """Every place a build of the state-update kernel may sit: torch's default (one folder per name, shared by
    every environment) and aot_lib's (one per environment key)."""
    root = Path(os.environ.get("TORCH_EXTENSIONS_DIR") or Path.home() / ".cache" / "torch_extensions")
    return sorted([*root.glob("py*/aot_admm_cpu*"), *root.glob("aot_lib/aot_admm_cpu*")])


def one_process(python: str, checkout: str | None) -> dict:
    env = dict(os.environ)
    if checkout:
        env["AOT_BENCH_CHECKOUT"] = checkout
    t = time.perf_counter()
    proc = subprocess.run([python, "-c", CHILD], capture_output=True, text=True, env=env, cwd="/tmp")
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"{python} failed: {proc.stderr.strip().splitlines()[-1:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    stderr = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    return {**out, "python": python, "process_s": wall, "stderr": stderr,
            "built": any("building the AoT-ADMM CPU kernel" in ln for ln in stderr) or out["first_forward_s"] > 10,
            "cuda_line": any("No CUDA runtime" in ln for ln in stderr)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", action="append", required=True, help="an environment's python (give two or more)")
    ap.add_argument("--rounds", type=int, default=3, help="new processes per environment")
    ap.add_argument("--checkout", help="run this checkout's aot_lib instead of the installed one")
    ap.add_argument("--label", required=True, help="before / after: goes into the file name")
    ap.add_argument("--clear-cache", action="store_true", help="remove every build of the kernel first")
    args = ap.parse_args()
    if args.clear_cache:
        for folder in build_folders():
            shutil.rmtree(folder)
    calls = []
    for r in range(args.rounds):
        for python in args.python:
            call = {"round": r, **one_process(python, args.checkout)}
            print(f"round {r} {python}: first forward {call['first_forward_s']:.2f} s, process {call['process_s']:.1f} s"
                  f"{', built' if call['built'] else ''}{', CUDA line' if call['cuda_line'] else ''}", file=sys.stderr)
            calls.append(call)
    after_first = [c["first_forward_s"] for c in calls
                   if any(d["python"] == c["python"] and d["round"] < c["round"] for d in calls)]
    checkout_commit = None
    if args.checkout:
        checkout_commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=args.checkout, capture_output=True,
                                         text=True).stdout.strip()
    cpu = "amd" if "AMD" in open("/proc/cpuinfo").read() else "intel"
    write(f"first_forward_{args.label}_{cpu}", {
        "label": args.label, "checkout": checkout_commit or "this checkout", "rounds": args.rounds,
        "environments": args.python, "calls": calls,
        "max_first_forward_after_each_envs_first_s": max(after_first) if after_first else None,
        "builds": sum(c["built"] for c in calls), "cuda_lines": sum(c["cuda_line"] for c in calls),
        "target_s": 3.0, "note": "each process is new; environments alternate; the machine otherwise idle"},
        ROOT / "results" / "benchmarks" / f"first_forward_{args.label}_{cpu}.json")


if __name__ == "__main__":
    main()
