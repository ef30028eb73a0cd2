"""scripts/book_build_guard.sh, run on fake book builds: a build that hangs in a chapter is stopped at the limit and
named, with a non-zero exit; one that succeeds passes through untouched; a failure outside execution says so.

The fake builds print what jupyter-book prints (Sphinx's coloured "reading sources" lines ended by a carriage
return, myst-nb's "Executing notebook" / "Executed notebook" lines), then hang, fail or finish."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

GUARD = Path(__file__).resolve().parent.parent / "scripts" / "book_build_guard.sh"
pytestmark = pytest.mark.skipif(shutil.which("timeout") is None or shutil.which("bash") is None,
                                reason="the guard needs bash and coreutils' timeout (Linux, macOS with coreutils)")

READ = "printf '\\033[01mreading sources... \\033[39;49;00m[ %s%%] {}\\r\\n' {}; "
EXECUTING = "echo 'Executing notebook using local CWD [mystnb]: /repo/notebooks/{}.py'; "
EXECUTED = "echo 'Executed notebook in 1.2 seconds [mystnb]'; "


def fake_build(*steps: str) -> list[str]:
    return ["bash", "-c", "".join(steps)]


def guard(tmp_path: Path, limit: int, command: list[str]) -> tuple[subprocess.CompletedProcess, Path, float]:
    log = tmp_path / "build" / "build.log"
    start = time.monotonic()
    done = subprocess.run(["bash", str(GUARD), str(limit), str(log), *command], capture_output=True, text=True,
                          timeout=120)
    return done, log, time.monotonic() - start


def test_a_hung_chapter_is_stopped_at_the_limit_and_named(tmp_path):
    pid_file = tmp_path / "kernel.pid"
    build = fake_build(READ.format("01_introduction", 10), EXECUTING.format("01_introduction"), EXECUTED,
                       READ.format("03_admm_unrolled", 30), EXECUTING.format("03_admm_unrolled"),
                       f"sleep 300 & echo $! > {pid_file}; wait")  # the 'kernel' of the hung chapter
    done, log, took = guard(tmp_path, 2, build)
    assert done.returncode == 124
    assert done.stderr == (f"== book build ran out of its 2 s limit (exit 124) while executing chapter "
                           f"03_admm_unrolled; log: {log}\n")
    assert "Executing notebook using local CWD [mystnb]: /repo/notebooks/03_admm_unrolled.py" in log.read_text()
    assert took < 30  # the limit, not the 300 s hang
    kernel = Path(f"/proc/{pid_file.read_text().strip()}/stat")
    # timeout signals the whole process group: the kernel is gone too (or a zombie waiting for init to reap it)
    assert not kernel.exists() or kernel.read_text().split(") ")[1].startswith("Z")


def test_a_successful_build_passes_through(tmp_path):
    build = fake_build(READ.format("01_introduction", 50), EXECUTING.format("01_introduction"), EXECUTED,
                       "echo 'build succeeded.'")
    done, log, _ = guard(tmp_path, 60, build)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.endswith("build succeeded.\n") and log.read_text() == done.stdout


def test_a_failure_after_execution_names_the_last_chapter_read(tmp_path):
    build = fake_build(READ.format("12_gpu_path", 100), EXECUTING.format("12_gpu_path"), EXECUTED,
                       "echo 'WARNING: undefined label' >&2; exit 1")
    done, log, _ = guard(tmp_path, 60, build)
    assert done.returncode == 1
    assert done.stderr == (f"== book build failed (exit 1); no chapter was executing, the last one read was "
                           f"12_gpu_path; log: {log}\n")
    assert "WARNING: undefined label" in log.read_text()  # the build's stderr is in the log too


def test_a_failure_before_any_chapter(tmp_path):
    done, log, _ = guard(tmp_path, 60, fake_build("exit 3"))
    assert done.returncode == 3
    assert done.stderr == f"== book build failed (exit 3) before reading any chapter; log: {log}\n"


@pytest.mark.parametrize("args", [[], ["0", "log", "true"], ["ten", "log", "true"], ["10", "log"]])
def test_usage(args, tmp_path):
    done = subprocess.run(["bash", str(GUARD), *args], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (f"usage: {GUARD} LIMIT_SECONDS LOG_FILE COMMAND... (LIMIT_SECONDS a whole number of "
                           "seconds, at least 1)\n")
    assert not os.listdir(tmp_path)
