import os
import re

import pytest
import torch

# Skips CI accepts (tests/conftest.py fails a CI session on any other): a test that needs a CUDA device on a machine
# without one, and the other chapters' kernel runs, which CI's book build (README command 1) executes anyway.
CI_ACCEPTED_SKIPS = re.compile(r"\b(CUDA|GPU)\b|AOT_TEST_ALL_CHAPTERS=1")
_skips: list[tuple[str, str]] = []


def _import_test_plugins() -> None:
    """``AOT_TEST_IMPORT=mypkg.models[,other]``: modules that register models, imported before any test module is
    collected, so every test parametrized over the registry runs on their models too (tests/test_plugin_family.py)."""
    from aot_lib.models.registry import import_model_modules

    import_model_modules([m for m in os.environ.get("AOT_TEST_IMPORT", "").split(",") if m])


def pytest_configure(config):
    _import_test_plugins()
    if not hasattr(config, "workerinput"):  # the controller, once, as the workers start (issue 54)
        _start_kernel_build(config)
    """Under pytest-xdist (``-n``), each worker gets an equal share of the cores for torch's intra-op threads:
    two workers with two threads each on two cores run slower than one worker with two (measured: 279 s against
    166 s), because every matrix product then waits for a core the other worker holds."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(workers)))


def _start_kernel_build(config) -> None:
    """AoT-ADMM's CPU kernel built (or loaded) in a process of its own, beside the tests rather than before them: on
    a fresh environment the one build (25-45 s, one core) overlaps the tests that do not need it, and a test that
    does waits for it on the build folder's lock (aot_lib.cpu_kernels) instead of building it a second time."""
    import subprocess
    import sys

    config._aot_kernel_build = subprocess.Popen(
        [sys.executable, "-c", "from aot_lib.cpu_kernels import prebuild; prebuild()"])


def pytest_unconfigure(config):
    build = getattr(config, "_aot_kernel_build", None)
    if build is not None:
        build.wait()


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Decoded data sets go to this run's own cache (``AOT_CACHE``), never the user's ``~/.cache/aot_lib``: a test
    never reads a tensor another run (or another xdist worker's test of the same name) wrote. A test that needs a
    cache of its own still sets ``AOT_CACHE`` itself."""
    mp = pytest.MonkeyPatch()
    mp.setenv("AOT_CACHE", str(tmp_path_factory.mktemp("aot_cache")))
    yield
    mp.undo()


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


def _record_skip(report) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skips.append((report.nodeid, reason.removeprefix("Skipped: ")))


def pytest_runtest_logreport(report):
    _record_skip(report)


def pytest_collectreport(report):  # a module-level importorskip skips the whole file at collection
    _record_skip(report)


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def pytest_sessionfinish(session, exitstatus):
    """With CI set (.ci/run sets it), a skip for any reason but a missing CUDA device fails the session: README
    command 2 installs everything the tests import, so such a skip means a test silently did not run."""
    refused = [(node, reason) for node, reason in _skips if not CI_ACCEPTED_SKIPS.search(reason)]
    if not (_in_ci() and refused):
        return
    lines = [f"CI: {len(refused)} test(s) skipped for a reason other than a missing CUDA device; each reason says "
             "what is missing: supply it, or fix the skip"] + [f"  {node}: {reason}" for node, reason in refused]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.line("")
        reporter.write_sep("=", "skips refused in CI", red=True, bold=True)
        for line in lines:
            reporter.write_line(line)
    else:
        print("\n".join(lines))
    if session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
