"""Shared by the benchmark scripts: timing, the machine record and atomic JSON output."""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aot_lib.files import write_json  # noqa: E402
from aot_lib.runtime import git_commit, hardware_summary  # noqa: E402


def timeit(fn, repeats: int = 5, warmup: int = 2) -> dict:
    """Median and spread of ``repeats`` calls after ``warmup`` calls, in seconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times), "repeats": repeats}


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def record_path(name: str, out: Path | None = None) -> Path:
    """Where benchmark ``name`` is recorded (``out``, default ``results/benchmarks/<name>.json`` or
    ``$AOT_BENCH_DIR/<name>.json``). Refuses a file that exists, in one line naming the fixes: a recorded benchmark
    is never written over. A script calls it before it measures, so a refusal costs no minutes."""
    if out is None:
        out = Path(os.environ.get("AOT_BENCH_DIR", ROOT / "results" / "benchmarks")) / f"{name}.json"
    if out.exists():
        raise SystemExit(f"{out} exists: a benchmark record is never written over; give the run another name "
                         "(--name where the script has it), AOT_BENCH_DIR=<a folder of its own>, or move the old "
                         "record to results/history/<its commit>/ first")
    return out


def write(name: str, payload: dict, out: Path | None = None) -> Path:
    """``payload`` with the benchmark's name, commit, hardware and date, to :func:`record_path` (which refuses, before
    writing anything, a record that exists)."""
    out = record_path(name, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "commit": git_commit(), "hardware": hardware_summary(),
               "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **payload}
    write_json(out, payload)
    print(json.dumps(payload, indent=2))
    return out
