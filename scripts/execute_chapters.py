"""Execute the book's chapters the way the book build does, and time every cell; report a hang by chapter and cell.

    AOT_BOOK_PROFILE=fast PYTHONPATH=. python scripts/execute_chapters.py                  # every chapter once
    AOT_BOOK_PROFILE=fast PYTHONPATH=. python scripts/execute_chapters.py 03 --repeat 20 --timeout 120
    AOT_BOOK_PROFILE=fast PYTHONPATH=. python scripts/execute_chapters.py 03 --include-skipped --repeat 30 --timeout 60

Each chapter (a jupytext percent ``.py`` under ``notebooks/``, named by its number or file name) runs in a fresh
``python3`` kernel through nbclient, in the folder myst-nb executes it in (``book/notebooks``), with a per-cell
``--timeout``. ``--include-skipped`` also runs the cells tagged ``skip-execution`` (chapter 3's widget panel), which
the build leaves out. Per chapter it prints the longest cell and its time, and at the end the longest cell of each
chapter over all runs: the number ``execute.timeout`` in ``_config.yml`` is sized from. A cell that times out, one
that answers only when its timeout runs out (nbclient missed the reply and found it at its last poll) and a kernel
that dies are reported with their chapter and cell, and the script exits 1. It also prints where the kernel
imported ``aot_lib`` from, so a run can be checked to use this checkout (set PYTHONPATH to it).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
KERNEL_CWD = ROOT / "book" / "notebooks"  # where myst-nb runs a chapter: the folder of its path in the toc
WHERE_IS_AOT_LIB = "import aot_lib; print(aot_lib.__file__)"


def chapter_paths(names: list[str]) -> list[Path]:
    chapters = sorted(NOTEBOOKS.glob("[0-9][0-9]*_*.py"))
    if not names:
        return chapters
    picked = []
    for name in names:
        hits = [p for p in chapters if p.stem == name or p.name == name or p.stem.split("_")[0] == name]
        if len(hits) != 1:
            sys.exit(f"no single chapter named {name!r} under notebooks/: give its number (03) or file name")
        picked += hits
    return picked


def first_line(cell) -> str:
    return next((line for line in cell.source.splitlines() if line.strip()), "")[:70]


def run_chapter(path: Path, timeout: int, include_skipped: bool) -> dict:
    """One execution of one chapter: per-cell seconds, and the cell that failed (if one did)."""
    nb = jupytext.read(path, fmt="py:percent")
    nb.cells.append(nbformat.v4.new_code_cell(WHERE_IS_AOT_LIB))
    seconds: dict[int, float] = {}
    started: dict[int, float] = {}
    current: list[int] = [-1]

    def on_cell_execute(cell, cell_index):
        current[0] = cell_index
        started[cell_index] = time.monotonic()

    def on_cell_executed(cell, cell_index, execute_reply):
        seconds[cell_index] = time.monotonic() - started[cell_index]

    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(KERNEL_CWD)}},
        # a tag no cell carries: nbclient then runs every cell, the skipped panel included
        skip_cells_with_tag="no-such-tag" if include_skipped else "skip-execution",
        on_cell_execute=on_cell_execute, on_cell_executed=on_cell_executed)
    t0 = time.monotonic()
    failure = None
    try:
        client.execute()
    except CellTimeoutError:
        failure = f"TIMEOUT: no reply within {timeout} s"
    except DeadKernelError:
        failure = "KERNEL DIED"
    except CellExecutionError as err:
        failure = f"ERROR: {str(err).strip().splitlines()[-1]}"
    where = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", [])).strip() or "?"
    bad = nb.cells[current[0]] if failure else None
    return dict(total=time.monotonic() - t0, seconds=seconds, failure=failure, failed_cell=current[0],
                failed_source=first_line(bad) if bad is not None else None, aot_lib=where, nb=nb)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter numbers (03) or file names; default: all")
    parser.add_argument("--repeat", type=int, default=1, help="executions of each chapter (default 1)")
    parser.add_argument("--timeout", type=int, default=300, help="seconds a cell may take (default 300)")
    parser.add_argument("--include-skipped", action="store_true", help="also run cells tagged skip-execution")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.timeout < 1:
        sys.exit("--repeat and --timeout must be at least 1")

    summary = []
    for path in chapter_paths(args.chapters):
        longest, longest_cell, worst_total, failures = 0.0, "", 0.0, []
        for run in range(1, args.repeat + 1):
            r = run_chapter(path, args.timeout, args.include_skipped)
            worst_total = max(worst_total, r["total"])
            idx, sec = max(r["seconds"].items(), key=lambda kv: kv[1], default=(-1, 0.0))
            if sec > longest:
                longest, longest_cell = sec, f"cell {idx}: {first_line(r['nb'].cells[idx])}"
            line = (f"{path.stem} run {run}/{args.repeat}: {r['total']:.1f} s, longest cell {idx} ({sec:.1f} s); "
                    f"kernel's aot_lib: {r['aot_lib']}")
            if not r["failure"] and sec >= args.timeout - 1:
                # the reply was waiting in the client's socket unnoticed until nbclient's last poll at the timeout
                r["failure"], r["failed_cell"], r["failed_source"] = (
                    f"STALLED: answered only when its {args.timeout} s timeout ran out", idx,
                    first_line(r["nb"].cells[idx]))
            if r["failure"]:
                failures.append(r["failure"])
                line += f"\n  {r['failure']} in {path.stem}, cell {r['failed_cell']}: {r['failed_source']}"
            print(line, flush=True)
        summary.append((path.stem, args.repeat, len(failures), longest, longest_cell, worst_total))

    print("\nchapter | runs | failed | longest cell (s) | that cell | chapter (s), worst run")
    for stem, runs, failed, longest, cell, total in summary:
        print(f"{stem} | {runs} | {failed} | {longest:.1f} | {cell} | {total:.1f}")
    return 1 if any(s[2] for s in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
