"""Values of the run-folder bookkeeping (aot_lib/training/runs.py): what each function writes, returns and refuses.

Every refusal is matched in full (anchored), every record field against a value set up here (a fake clock,
a fake commit and hardware), every written file byte for byte. No model is trained here: the training
loop's use of these functions is tested in tests/test_loop_values.py.
"""
import csv
import json
import os
import pickle
import re
import shutil
import time as _time

import pytest
import torch
import yaml

from aot_lib.training import recording, runs
from aot_lib.training.config import ConfigError, dump_config, load_config
from helpers import pickled_code_checkpoint, raises_exactly

STAMP = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}$"  # time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _cfg(out, *extra):
    return load_config(None, [f"run.out_dir={out}", "run.name=r", "fabric.accelerator=cpu", "fabric.precision=32-true",
                              *extra])


class Clock:
    """``runs.time`` with a time() the test sets; strftime is the real one."""

    def __init__(self, now=1000.0):
        self.now = now

    def time(self):
        return self.now

    strftime = staticmethod(_time.strftime)


@pytest.fixture
def env(monkeypatch):
    for k in ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(k, raising=False)
    clock = Clock()
    monkeypatch.setattr(runs, "time", clock)
    monkeypatch.setattr(runs, "git_commit", lambda: "c0ffee")
    monkeypatch.setattr(runs, "hardware_summary", lambda: {"cpu": "toy"})
    # the machine's CPU accounting unmeasurable (not Linux): run.json holds no other_cpu_* keys, as there
    monkeypatch.setattr(runs, "machine_cpu_s", lambda: None)
    return clock


def _json(p):
    return json.loads(p.read_text())


# ----------------------------------------------------------------------------- folders and ranks

def test_run_folder_paths_and_initial_state(tmp_path, env):
    cfg = _cfg(tmp_path / "out")
    assert runs.run_dir(cfg) == tmp_path / "out" / "r"
    rf = runs.RunFolder(cfg, "finetune")
    assert rf.cfg is cfg and rf.kind == "finetune" and rf.path == tmp_path / "out" / "r"
    assert rf.ckpt == tmp_path / "out" / "r" / "last.ckpt"
    assert rf.record == {} and rf._lock is None and rf.t0 == 1000.0 and rf.main is True


@pytest.mark.parametrize("var", ["RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID"])
def test_rank_zero_is_read_from_every_launcher_variable(monkeypatch, var):
    for k in ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID"):
        monkeypatch.delenv(k, raising=False)
    assert runs._is_rank_zero() is True  # none set: a plain launch
    monkeypatch.setenv(var, "0")
    assert runs._is_rank_zero() is True
    monkeypatch.setenv(var, "1")
    assert runs._is_rank_zero() is False


def test_a_process_other_than_rank_zero_touches_nothing(tmp_path, env, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    rf = runs.RunFolder(_cfg(tmp_path), "pretrain")
    assert rf.main is False
    with pytest.raises(ValueError, match="^boom$"):
        with rf as entered:
            assert entered is rf
            rf.update(step=3)
            rf.finish()
            assert rf.write_result("metrics.json", {"a": 1}) is None
            raise ValueError("boom")
    assert not (tmp_path / "r").exists() and rf._lock is None and rf.record == {}


def test_getstate_leaves_the_lock_with_the_launcher(tmp_path, env):
    with runs.RunFolder(_cfg(tmp_path), "pretrain") as rf:
        lock = rf._lock
        state = rf.__getstate__()
        assert state == {**rf.__dict__, "_lock": None} and state["_lock"] is None and rf._lock is lock
        clone = pickle.loads(pickle.dumps(rf))
        assert clone._lock is None and clone.path == rf.path and clone.record == rf.record


# ----------------------------------------------------------------------------- lock

def test_second_launch_is_refused_at_once_and_the_lock_is_released_on_exit(tmp_path, env, monkeypatch):
    import filelock

    timeouts = []

    class Recording(filelock.FileLock):
        def acquire(self, timeout=None, *args, **kwargs):
            timeouts.append(timeout)
            return super().acquire(timeout, *args, **kwargs)

    monkeypatch.setattr(filelock, "FileLock", Recording)
    cfg = _cfg(tmp_path / "a" / "b")  # parents created
    first = runs.RunFolder(cfg, "pretrain").__enter__()
    assert (tmp_path / "a" / "b" / "r" / ".lock").exists()
    second = runs.RunFolder(cfg, "pretrain")
    with raises_exactly(runs.RunLockedError,
            f"run folder {tmp_path / 'a' / 'b' / 'r'} is in use by another launch; wait for it to finish, "
            "or choose another run.name"):
        second.__enter__()
    assert timeouts == [0, 0]  # one try, no waiting for the other launch
    assert second._lock is None
    first.__exit__(None, None, None)
    assert first._lock is None
    first._release()  # twice is harmless
    with runs.RunFolder(cfg, "pretrain") as third:  # free again, in the existing folder
        assert third._lock is not None


# ----------------------------------------------------------------------------- record

def test_run_json_of_a_first_and_a_second_launch(tmp_path, env, monkeypatch):
    cfg = _cfg(tmp_path, "run.seed=7")
    with runs.RunFolder(cfg, "distill") as rf:
        path = rf.path
        assert (path / "config.yaml").read_text() == dump_config(cfg)
        first = _json(path / "run.json")
        assert re.match(STAMP, first.pop("started")) and re.match(STAMP, first.pop("updated"))
        assert first == {"kind": "distill", "commit": "c0ffee", "launch_commits": ["c0ffee"], "seed": 7, "hardware": {"cpu": "toy"},
                         "fabric": {"accelerator": "cpu", "devices": 1, "num_nodes": 1, "strategy": "auto",
                                    "precision": "32-true"},
                         "launches": 1, "wall_time_s_before": 0.0, "status": "running", "wall_time_s": 0.0}
        env.now = 1001.234
        rf.update(step=5)
        assert _json(path / "run.json")["wall_time_s"] == 1.23 and _json(path / "run.json")["step"] == 5
        env.now = 1002.5
        rf.finish(metrics={"x": 1})
        done = _json(path / "run.json")
        assert done["status"] == "finished" and re.match(STAMP, done["finished"]) and done["metrics"] == {"x": 1}
        assert done["wall_time_s"] == 2.5
        rf.finish("stopped")
        assert _json(path / "run.json")["status"] == "stopped"
        assert rf.write_result("probe.json", {"top1": 50.0}) == path / "probe.json"
        assert _json(path / "probe.json") == {"top1": 50.0}
    record = _json(path / "run.json")
    record["started"] = "2000-01-01T00:00:00+0000"
    (path / "run.json").write_text(json.dumps(record))
    (path / "last.ckpt").write_bytes(b"x")  # a run to resume
    env.now = 2000.0
    monkeypatch.setattr(runs, "git_commit", lambda: "beef")  # resumed from a later commit
    with runs.RunFolder(cfg, "distill") as rf:
        second = _json(path / "run.json")
        assert second["started"] == "2000-01-01T00:00:00+0000" and second["launches"] == 2
        assert second["launch_commits"] == ["c0ffee", "beef"] and second["commit"] == "beef"
        assert second["wall_time_s_before"] == 2.5 and second["wall_time_s"] == 2.5 and second["status"] == "running"
        env.now = 2001.0
        rf.update()
        assert _json(path / "run.json")["wall_time_s"] == 3.5  # this launch's second on top of the last one's 2.5


def test_run_json_says_how_busy_the_rest_of_the_machine_was_over_every_measured_launch(tmp_path, env, monkeypatch):
    """other_cpu_s: the machine's busy CPU seconds minus the run's own process tree's, summed over launches;
    other_cores: that over the wall seconds measured. Worked by hand below (fake clock and CPU counters)."""
    cpu = {"machine": 500.0, "own": 20.0}
    monkeypatch.setattr(runs, "machine_cpu_s", lambda: cpu["machine"])
    monkeypatch.setattr(runs, "process_tree_cpu_s", lambda pid: cpu["own"])
    cfg = _cfg(tmp_path)
    with runs.RunFolder(cfg, "pretrain") as rf:
        env.now, cpu["machine"], cpu["own"] = 1010.0, 530.0, 38.0  # 10 s: 30 busy, 18 of them the run's
        rf.update(step=1)
        got = _json(rf.path / "run.json")
        assert (got["other_cpu_s"], got["other_cpu_wall_s"], got["other_cores"]) == (12.0, 10.0, 1.2)
    (rf.path / "last.ckpt").write_bytes(b"x")  # a second launch, 5 s on an idle machine: the totals carry on
    env.now, cpu["machine"], cpu["own"] = 2000.0, 900.0, 100.0
    with runs.RunFolder(cfg, "pretrain") as rf:
        env.now, cpu["machine"], cpu["own"] = 2005.0, 910.0, 110.0
        rf.update()
        got = _json(rf.path / "run.json")
        assert (got["other_cpu_s"], got["other_cpu_wall_s"], got["other_cores"]) == (12.0, 15.0, 0.8)
    # a run with an earlier launch that was not measured: no share is claimed for the whole run
    record = _json(rf.path / "run.json")
    for key in ("other_cpu_s", "other_cpu_wall_s", "other_cores"):
        del record[key]
    (rf.path / "run.json").write_text(json.dumps(record))
    with runs.RunFolder(cfg, "pretrain") as rf:
        env.now = 3000.0
        rf.update()
        assert "other_cores" not in _json(rf.path / "run.json")


def _spawned_copy(rf, monkeypatch, pid=4242):
    """What ddp_spawn hands a worker: the launcher's RunFolder, pickled, in a process with another pid."""
    copy = pickle.loads(pickle.dumps(rf))
    monkeypatch.setattr(runs.os, "getpid", lambda: pid)
    return copy


def test_a_spawned_workers_cpu_counts_the_launchers_whole_tree_as_the_runs_own(tmp_path, env, monkeypatch):
    """Under ddp_spawn rank 0 is a child of the launcher and rank 1 its sibling: measured from rank 0's own tree,
    rank 1's CPU would count as other work. Fake counters: the launcher's tree (both ranks) burns 18 of the 20 busy
    CPU seconds of 10 s; the worker's own tree alone only 9."""
    launcher = os.getpid()
    cpu = {"machine": 500.0, launcher: 20.0, 4242: 0.0}
    monkeypatch.setattr(runs, "machine_cpu_s", lambda: cpu["machine"])
    # like the real one: this process's tree unless told which
    monkeypatch.setattr(runs, "process_tree_cpu_s", lambda pid=None: cpu[pid or runs.os.getpid()])
    with runs.RunFolder(_cfg(tmp_path), "pretrain") as rf:
        worker = _spawned_copy(rf, monkeypatch)
        env.now, cpu["machine"], cpu[launcher], cpu[4242] = 1010.0, 520.0, 38.0, 9.0
        worker.update(step=1)
        got = _json(rf.path / "run.json")
        assert (got["other_cpu_s"], got["other_cpu_wall_s"], got["other_cores"]) == (2.0, 10.0, 0.2)


def test_a_spawned_workers_record_survives_the_failure_the_launcher_writes(tmp_path, env, monkeypatch):
    """The launcher's own copy of the record is stale once a worker has written run.json (no step, no totals):
    the failure is written on top of the worker's record, not over it. A status the worker set stays."""
    with pytest.raises(RuntimeError, match="^rank 1 died$"):
        with runs.RunFolder(_cfg(tmp_path), "pretrain") as rf:
            worker = _spawned_copy(rf, monkeypatch)
            env.now = 1007.0
            worker.update(total_steps=10, step=4, last_metrics={"loss": 0.5})
            raise RuntimeError("rank 1 died")
    got = _json(tmp_path / "r" / "run.json")
    assert (got["status"], got["total_steps"], got["step"], got["last_metrics"], got["wall_time_s"]) == (
        "failed: RuntimeError: rank 1 died", 10, 4, {"loss": 0.5}, 7.0)
    (tmp_path / "r" / "last.ckpt").write_bytes(b"x")  # resumable: the next launch keeps the folder
    with pytest.raises(KeyboardInterrupt):
        with runs.RunFolder(_cfg(tmp_path), "pretrain") as rf:
            _spawned_copy(rf, monkeypatch).update(status="stopped (SIGTERM)", step=6)
            raise KeyboardInterrupt
    got = _json(tmp_path / "r" / "run.json")
    assert (got["status"], got["step"], got["launches"]) == ("stopped (SIGTERM)", 6, 2)


def test_the_machines_cpu_accounting_reads_proc(tmp_path):
    """A made-up /proc: the machine's busy jiffies (user, nice, system, irq, softirq; not idle, iowait, steal), and a
    process tree (pid 100, its child 101 and grandchild 102; 200 is not of it): the tree's utime + stime, plus the
    reaped children's cutime + cstime of the process itself. A command name with spaces and ')' is read past."""
    from aot_lib.runtime import machine_cpu_s, process_tree_cpu_s

    tck = os.sysconf("SC_CLK_TCK")
    (tmp_path / "stat").write_text("cpu  100 20 30 9999 7 4 6 50 0 0\ncpu0 1 2 3\n")
    assert machine_cpu_s(tmp_path) == (100 + 20 + 30 + 4 + 6) / tck
    for pid, ppid, ut, st, cut, cst in ((100, 1, 10, 5, 7, 3), (101, 100, 20, 2, 99, 99), (102, 101, 4, 1, 0, 0),
                                        (200, 1, 1000, 1000, 0, 0)):
        (tmp_path / str(pid)).mkdir()
        fields = ["S", str(ppid)] + ["0"] * 9 + [str(ut), str(st), str(cut), str(cst)] + ["0"] * 5
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (a b) c) " + " ".join(fields) + "\n")
    assert process_tree_cpu_s(100, tmp_path) == (10 + 5 + 7 + 3 + 20 + 2 + 4 + 1) / tck
    assert process_tree_cpu_s(101, tmp_path) == (20 + 2 + 99 + 99 + 4 + 1) / tck
    assert process_tree_cpu_s(999, tmp_path) is None and machine_cpu_s(tmp_path / "none") is None


def test_a_busy_process_outside_the_runs_tree_counts_as_other_work(tmp_path):
    """The real /proc (Linux only): a process that is not the run's descendant (started by a shell that exits, so it
    is adopted by init) spends 1.5 s of its own CPU time; the machine's busy time beyond this process tree grows by
    at least 1 s (1.5 s less the clock's 10 ms ticks and what this test's own sleeping loop is charged)."""
    import subprocess
    import sys

    from aot_lib.runtime import machine_cpu_s, process_tree_cpu_s

    if machine_cpu_s() is None:
        pytest.skip("LOUD SKIP: no /proc/stat (not Linux): the run records no CPU share here")
    machine0, own0 = machine_cpu_s(), process_tree_cpu_s()
    done = tmp_path / "done"
    burn = f"import time, pathlib; t = time.process_time(); exec('while time.process_time() - t < 1.5: pass'); pathlib.Path({str(done)!r}).touch()"
    subprocess.run(["sh", "-c", f"{sys.executable} -c \"{burn}\" >/dev/null 2>&1 &"], check=True)
    deadline = _time.time() + 60
    while not done.exists() and _time.time() < deadline:
        _time.sleep(0.05)
    assert done.exists(), "the background process did not finish its 1.5 s of CPU within 60 s"
    _time.sleep(0.05)
    other = (machine_cpu_s() - machine0) - (process_tree_cpu_s() - own0)
    assert other >= 1.0


def test_corrupt_run_json_starts_a_fresh_record(tmp_path, env):
    path = tmp_path / "r"
    path.mkdir()
    (path / "run.json").write_text("{not json")
    with runs.RunFolder(_cfg(tmp_path), "pretrain"):
        record = _json(path / "run.json")
    assert record["launches"] == 1 and record["wall_time_s_before"] == 0.0 and re.match(STAMP, record["started"])


@pytest.mark.parametrize("exc, status", [(ValueError("bad value"), "failed: ValueError: bad value"),
                                         (KeyboardInterrupt(), "interrupted"),
                                         (runs.RunStopped("SIGTERM"), "stopped (SIGTERM)")])
def test_exit_records_how_a_running_launch_ended(tmp_path, env, exc, status):
    with pytest.raises(type(exc)):
        with runs.RunFolder(_cfg(tmp_path), "pretrain") as rf:
            rf.update(total_steps=5)  # what the loop writes first: training had begun
            raise exc
    assert _json(tmp_path / "r" / "run.json")["status"] == status


@pytest.mark.parametrize("exc", [ValueError("bad value"), KeyboardInterrupt()])
def test_a_launch_that_ends_before_training_removes_the_folder_it_made(tmp_path, env, exc):
    """Nothing to resume or read (issue 54: a missing data folder left config.yaml, run.json "failed" and .lock):
    the folder goes; one that was there before the launch stays, with its files."""
    with pytest.raises(type(exc)):
        with runs.RunFolder(_cfg(tmp_path), "pretrain"):
            raise exc
    assert not (tmp_path / "r").exists()
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "notes.txt").write_text("mine")
    with pytest.raises(type(exc)):
        with runs.RunFolder(_cfg(tmp_path), "pretrain"):
            raise exc
    assert (tmp_path / "r" / "notes.txt").read_text() == "mine" and (tmp_path / "r" / "run.json").exists()


def test_exit_keeps_a_status_already_set_and_a_clean_exit_changes_nothing(tmp_path, env):
    with pytest.raises(KeyboardInterrupt):
        with runs.RunFolder(_cfg(tmp_path), "pretrain") as rf:
            rf.update(total_steps=5, status="interrupted at step 3")
            raise KeyboardInterrupt
    assert _json(tmp_path / "r" / "run.json")["status"] == "interrupted at step 3"
    (tmp_path / "r" / "last.ckpt").write_bytes(b"x")
    with runs.RunFolder(_cfg(tmp_path), "pretrain"):
        pass
    assert _json(tmp_path / "r" / "run.json")["status"] == "running"  # the command, not __exit__, finishes a run


# ----------------------------------------------------------------------------- an existing run

@pytest.mark.parametrize("present", [("last.ckpt",), ("metrics.csv",), ("logs",), ("last.ckpt", "metrics.csv", "logs")])
def test_an_existing_run_is_refused_without_resume(tmp_path, env, present):
    path = tmp_path / "r"
    path.mkdir()
    for name in present:
        (path / name).mkdir() if name == "logs" else (path / name).write_bytes(b"old")
    before = sorted(os.listdir(path))
    with raises_exactly(ConfigError,
            f"run folder {path} already holds a run ({', '.join(present)}) and run.resume=false; choose another "
            "run.name, resume it (run.resume=true), or replace it (run.overwrite=true)"):
        with runs.RunFolder(_cfg(tmp_path, "run.resume=false"), "pretrain"):
            pass
    assert sorted(os.listdir(path)) == sorted([*before, ".lock"])
    with runs.RunFolder(_cfg(tmp_path / "x", "run.resume=false"), "pretrain"):  # an empty folder is no run
        pass
    with runs.RunFolder(_cfg(tmp_path), "pretrain"):  # resume=true: the same folder is taken up again
        pass


@pytest.mark.parametrize("absent", [None, "distill.json", "finetune.json"])  # removing what is not there is fine
def test_overwrite_removes_exactly_the_old_results(tmp_path, env, absent):
    path = tmp_path / "r"
    (path / "logs" / "version_0").mkdir(parents=True)
    (path / "logs" / "version_0" / "metrics.csv").write_text("step\n1\n")
    (path / "tensorboard").mkdir()
    for name in ("last.ckpt", "metrics.csv", "metrics.json", "finetune.json", "distill.json", "probe.json",
                 "features-1.pt", "features-abc.pt", "notes.txt", "encoder.pt"):
        if name != absent:
            (path / name).write_text("old")
    old_record = {"kind": "pretrain", "started": "2000-01-01T00:00:00+0000", "launches": 3, "wall_time_s": 5000.0,
                  "status": "finished"}
    (path / "run.json").write_text(json.dumps(old_record))
    (path / "config.yaml").write_text(dump_config(_cfg(tmp_path, "optim.lr=0.25")))
    cfg = _cfg(tmp_path, "run.resume=false", "run.overwrite=true")
    with runs.RunFolder(cfg, "pretrain"):
        pass
    assert sorted(os.listdir(path)) == [".lock", "config.yaml", "encoder.pt", "notes.txt", "run.json"]
    assert (path / "notes.txt").read_text() == "old" and (path / "config.yaml").read_text() == dump_config(cfg)
    # the old record went with the old run: nothing of it is carried into the new one
    record = _json(path / "run.json")
    assert record["launches"] == 1 and record["wall_time_s_before"] == 0.0 and record["wall_time_s"] < 60
    assert record["started"] != old_record["started"] and record["status"] == "running"


def test_resume_checks_the_config_it_was_started_with(tmp_path, env):
    first = _cfg(tmp_path, "optim.lr=0.0005")
    with runs.RunFolder(first, "pretrain"):
        pass
    path = tmp_path / "r"
    # no checkpoint yet (the first launch died before one): the new config replaces the old one
    other = _cfg(tmp_path, "optim.lr=0.001")
    with runs.RunFolder(other, "pretrain"):
        pass
    assert (path / "config.yaml").read_text() == dump_config(other)
    (path / "last.ckpt").write_bytes(b"x")
    with raises_exactly(ConfigError,
            f"run {path} was started with another config (optim.lr: 0.001 -> 0.002); resume with the same settings, "
            "or start a new run (another run.name, or run.resume=false run.overwrite=true)"):
        with runs.RunFolder(_cfg(tmp_path, "optim.lr=0.002", "run.log_every=3"), "pretrain"):
            pass
    six = ["optim.lr=0.002", "optim.epochs=7", "optim.batch_size=3", "optim.weight_decay=0.5", "run.seed=4",
           "views.n_local=3"]
    o = other
    want = "; ".join(f"{k}: {a!r} -> {b!r}" for k, a, b in sorted([
        ("optim.lr", 0.001, 0.002), ("optim.epochs", o["optim"]["epochs"], 7),
        ("optim.batch_size", o["optim"]["batch_size"], 3), ("optim.weight_decay", o["optim"]["weight_decay"], 0.5),
        ("run.seed", o["run"]["seed"], 4), ("views.n_local", o["views"]["n_local"], 3)])[:5])  # the first five
    with pytest.raises(ConfigError, match="^" + re.escape(f"run {path} was started with another config ({want}); ")):
        with runs.RunFolder(_cfg(tmp_path, *six), "pretrain"):
            pass
    # what may change on resume passes, and the recorded config stays the one the run was started with
    with runs.RunFolder(_cfg(tmp_path, "optim.lr=0.001", "run.log_every=3", "fabric.devices=2"), "pretrain"):
        pass
    assert (path / "config.yaml").read_text() == dump_config(other)


def test_config_differences_lists_what_may_not_change():
    old = {"a": {"x": 1, "y": 2}, "description": "d", "fabric": {"devices": 1}, "fabricx": {"n": 1},
           "run": {"ckpt_every": 5, "ckpt_everyx": 1, "name": "r"}, "same": 3}
    new = {"a": {"x": 3, "z": 4}, "description": "e", "fabric": {"devices": 2}, "fabricx": {"n": 2},
           "run": {"ckpt_every": 6, "ckpt_everyx": 2, "name": "r"}, "same": 3}
    assert runs.config_differences(old, new) == [("a.x", 1, 3), ("a.y", 2, "<absent>"), ("a.z", "<absent>", 4),
                                                 ("fabricx.n", 1, 2), ("run.ckpt_everyx", 1, 2)]
    assert runs.config_differences(new, new) == []


def test_a_key_added_to_the_package_since_is_no_difference_at_its_default():
    """A run started before model.imports existed (its config.yaml lacks the key) resumes under today's config,
    which holds the default []; the same key set to something else is still a difference, as is one removed."""
    old = {"model": {"name": "crate_tiny"}}
    assert runs.config_differences(old, {"model": {"name": "crate_tiny", "imports": []}}) == []
    assert runs.config_differences(old, {"model": {"name": "crate_tiny", "imports": ["mypkg"]}}) == [
        ("model.imports", "<absent>", ["mypkg"])]
    assert runs.config_differences({"model": {"name": "crate_tiny", "imports": []}}, old) == [
        ("model.imports", [], "<absent>")]


# ----------------------------------------------------------------------------- checkpoints

class FakeFabric:
    """Records what save_checkpoint asks of Fabric, and what the target file holds at each barrier."""

    def __init__(self, world_size=1, zero=True, sharded=False):
        self.world_size, self.is_global_zero, self.sharded = world_size, zero, sharded
        self.events = []

    def save(self, tmp, state):
        self.events.append(("save", tmp))
        if self.sharded:
            tmp.mkdir()
            (tmp / "shard0").write_text(state["tag"])
        else:
            tmp.write_text(state["tag"])

    def barrier(self):
        self.events.append(("barrier", self.target_content()))

    def target_content(self):
        t = self.target
        return (t / "shard0").read_text() if t.is_dir() else t.read_text() if t.exists() else None


def test_save_checkpoint_writes_a_temporary_file_and_renames_it(tmp_path):
    target = tmp_path / "last.ckpt"
    target.write_text("old")
    fab = FakeFabric()
    fab.target = target
    runs.save_checkpoint(fab, str(target), {"model": {"w": torch.ones(2)}, "tag": "new"})
    tmp = tmp_path / f".last.ckpt.tmp{os.getpid()}"
    assert fab.events == [("save", tmp), ("barrier", "old"), ("barrier", "new")]  # renamed between the barriers
    assert target.read_text() == "new" and os.listdir(tmp_path) == ["last.ckpt"]
    # several processes share one temporary name; only rank 0 renames
    fab = FakeFabric(world_size=2, zero=False)
    fab.target = target
    runs.save_checkpoint(fab, target, {"model": {}, "tag": "rank1"})
    assert fab.events == [("save", tmp_path / ".last.ckpt.tmpddp"), ("barrier", "new"), ("barrier", "new")]
    assert target.read_text() == "new"


@pytest.mark.parametrize("existing", [False, True])
def test_save_checkpoint_swaps_sharded_folders(tmp_path, existing):
    target = tmp_path / "last.ckpt"
    if existing:
        target.mkdir()
        (target / "shard0").write_text("old")
    fab = FakeFabric(world_size=2, sharded=True)
    fab.target = target
    runs.save_checkpoint(fab, target, {"model": {}, "tag": "new"})
    assert fab.events == [("save", tmp_path / ".last.ckpt.tmpddp"), ("barrier", "old" if existing else None),
                          ("barrier", "new")]
    assert os.listdir(tmp_path) == ["last.ckpt"] and (target / "shard0").read_text() == "new"


def test_non_finite_weights_are_refused_before_anything_is_written(tmp_path):
    target = tmp_path / "last.ckpt"
    target.write_text("old")
    fab = FakeFabric()
    fab.target = target
    state = {"step": 3, "ok": torch.ones(2), "count": torch.tensor([1, 2]), "w": torch.tensor([1.0, float("inf")]),
             "v": torch.tensor([float("nan")])}
    with raises_exactly(runs.CheckpointError,
            f"refusing to save a checkpoint with non-finite values in 'w'; the previous checkpoint {target} is kept"):
        runs.save_checkpoint(fab, target, {"model": state})
    assert fab.events == [] and target.read_text() == "old"
    module = torch.nn.Linear(2, 2)
    with torch.no_grad():
        module.bias[1] = float("nan")
    assert runs._all_finite(module) == "bias"
    assert runs._all_finite(torch.nn.Linear(2, 2)) is None and runs._all_finite({"step": 3, "w": torch.ones(1)}) is None


def test_load_checkpoint_reads_ours_on_the_cpu(tmp_path):
    p = tmp_path / "a.ckpt"
    torch.save({"model": {"w": torch.arange(3.0)}, "config": {"k": 1}}, p)
    got = runs.load_checkpoint(str(p))
    assert got["config"] == {"k": 1} and torch.equal(got["model"]["w"], torch.arange(3.0))
    assert got["model"]["w"].device.type == "cpu"
    torch.save({"model": {}, "config": {}, "format": 1}, p)
    assert runs.load_checkpoint(p)["format"] == 1


def _refused(message):
    return raises_exactly(runs.CheckpointError, message)


def _raiser(error):
    def load(*args, **kwargs):
        raise error
    return load


def test_load_checkpoint_refusals(tmp_path):
    p = tmp_path / "x.ckpt"
    with _refused(f"checkpoint {p} does not exist; pretrain first (aot pretrain ...) or fix the path"):
        runs.load_checkpoint(p)
    p.mkdir()
    with _refused(f"checkpoint {p} is a sharded (FSDP) folder; load it through the trainer (resume) or "
                     "consolidate it with lightning's consolidate_checkpoint first"):
        runs.load_checkpoint(p)
    p.rmdir()
    for obj in ([1, 2], {"model": {}}, {"config": {}}, {"weights": torch.zeros(1)}):
        torch.save(obj, p)
        with _refused(f"checkpoint {p} was not written by aot_lib (no 'model'/'config' entries)"):
            runs.load_checkpoint(p)
    torch.save({"model": {}, "config": {}, "format": 2}, p)
    with _refused(f"checkpoint {p} has format 2, newer than this aot_lib understands (1); update aot_lib"):
        runs.load_checkpoint(p)


def test_corrupt_checkpoint_names_the_error_and_its_first_line(tmp_path, monkeypatch):
    p = tmp_path / "x.ckpt"
    p.write_bytes(b"\x00not a checkpoint")
    try:  # the reader's own error, to quote
        torch.load(p, weights_only=True)
    except Exception as e:  # noqa: BLE001
        kind, first = type(e).__name__, str(e).strip().splitlines()[0][:80]
    tail = "); delete it to start over, or point to another checkpoint"
    with _refused(f"checkpoint {p} is corrupt or not a torch checkpoint ({kind}: {first}{tail}"):
        runs.load_checkpoint(p)
    for error, quoted in ((EOFError(), "EOFError: "), (ValueError("  \n"), "ValueError: "),
                          (ValueError("x" * 90 + "\nsecond line"), "ValueError: " + "x" * 80),
                          (OSError("\nfirst\nsecond"), "OSError: first")):
        monkeypatch.setattr(torch, "load", _raiser(error))
        with _refused(f"checkpoint {p} is corrupt or not a torch checkpoint ({quoted}{tail}"):
            runs.load_checkpoint(p)


def test_checkpoint_carrying_pickled_code_is_refused_and_never_run(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    p = pickled_code_checkpoint(tmp_path / "evil.ckpt", marker)
    message = (f"checkpoint {p} holds pickled Python objects, which are not loaded (they could run code); "
               "use a checkpoint written by aot_lib, or re-save its tensors only")
    with _refused(message):
        runs.load_checkpoint(p)
    assert not marker.exists()
    # weights_only=True is passed, not left to torch's default, which this variable turns off
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", raising=False)  # torch refuses both variables at once
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with _refused(message):
        runs.load_checkpoint(p)
    assert not marker.exists()
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    # either phrase of torch's refusal is enough (their wording has changed between versions)
    for text in ("Unsupported global: GLOBAL x.Payload", "This file can still be loaded, with care"):
        monkeypatch.setattr(torch, "load", _raiser(pickle.UnpicklingError(text)))
        with _refused(message):
            runs.load_checkpoint(p)


def test_encoder_state_dict_of_each_kind():
    w, h, p = torch.ones(1), torch.zeros(1), torch.full((1,), 2.0)
    pre = {"encoder.blocks.w": w, "encoder.head.fc": h, "projector.p": p}
    assert runs.encoder_state_dict({"kind": "pretrain", "model": pre}) == {"blocks.w": w}
    assert runs.encoder_state_dict({"model": pre}, True) == {"blocks.w": w, "head.fc": h}
    sup = {"blocks.w": w, "head.fc": h}
    assert runs.encoder_state_dict({"kind": "finetune", "model": sup}) == {"blocks.w": w}
    assert runs.encoder_state_dict({"kind": "encoder", "model": sup}, with_head=True) == sup


# ----------------------------------------------------------------------------- logs

def _write(root, version, text):
    d = root / "logs" / f"version_{version}"
    d.mkdir(parents=True)
    (d / "metrics.csv").write_text(text)


def test_merge_csv_logs_orders_launches_by_number_and_merges_rows_of_a_step(tmp_path):
    assert runs.merge_csv_logs(tmp_path) is None and not (tmp_path / "metrics.csv").exists()
    _write(tmp_path, 2, "loss,step\n9.0,1.0\n")  # launch 2 of 11 (version_10 sorts before version_2 as text)
    _write(tmp_path, 10, "loss,rankme,step\n0.4,,1\n0.5,,2\n,3.0,2\n")
    _write(tmp_path, 0, "loss,step\n1.0,1\n1.1,2\n")
    _write(tmp_path, 1, "rankme,step,loss\n7.0,1,\n")  # another column order, a row with only a monitor value
    assert runs.merge_csv_logs(str(tmp_path)) == tmp_path / "metrics.csv"
    text = (tmp_path / "metrics.csv").read_text()
    assert text.splitlines()[0] == "loss,step,rankme"  # columns in the order they were first seen
    with open(tmp_path / "metrics.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    # the last launch (10) wins steps 1 and 2, whole rows; its two rows of step 2 are merged
    assert rows == [{"loss": "0.4", "step": "1", "rankme": ""}, {"loss": "0.5", "step": "2", "rankme": "3.0"}]
    (tmp_path / "logs" / "version_10" / "metrics.csv").write_text("loss,rankme,step\n0.5,,2\n")
    runs.merge_csv_logs(tmp_path)
    with open(tmp_path / "metrics.csv", newline="") as f:  # launch 2 (its step written "1.0") now wins step 1
        assert list(csv.DictReader(f))[0] == {"loss": "9.0", "step": "1.0", "rankme": ""}
    assert sorted(os.listdir(tmp_path)) == ["logs", "metrics.csv"]


def test_merge_keeps_an_earlier_value_of_a_launch_when_a_later_row_leaves_it_empty(tmp_path):
    _write(tmp_path, 0, "a,b,step\n1,,4\n,2,4\n,,4\n3,,5\n")
    runs.merge_csv_logs(tmp_path)
    with open(tmp_path / "metrics.csv", newline="") as f:
        assert list(csv.DictReader(f)) == [{"a": "1", "b": "2", "step": "4"}, {"a": "3", "b": "", "step": "5"}]


def test_merge_keeps_the_last_value_a_launch_logged_for_a_step(tmp_path):
    # a metric logged twice for one step in one launch: the later value is the one that stands
    _write(tmp_path, 0, "a,b,step\n1,,4\n2,7,4\n9,,4\n")
    runs.merge_csv_logs(tmp_path)
    with open(tmp_path / "metrics.csv", newline="") as f:
        assert list(csv.DictReader(f)) == [{"a": "9", "b": "7", "step": "4"}]


# ----------------------------------------------------------------------------- recording a run

TINY = {"img_size": 16, "patch_size": 4, "embed_dim": 8, "depth": 1, "num_heads": 2}


def _tiny_cfg(tmp_path, name="r"):
    return load_config(None, [f"run.out_dir={tmp_path}", f"run.name={name}", "model.name=aot_admm_tiny",
                              "model.overrides={patch_size: 4, embed_dim: 8, depth: 1, num_heads: 2}",
                              "views.global_size=16", "views.local_size=8"])


def _tiny_encoder(num_classes=0, seed=0):
    """A real encoder's weights (random, drawn from ``seed``): what recording and loading must keep bit for bit."""
    from aot_lib import create_model

    torch.manual_seed(seed)
    return {k: v.clone() for k, v in create_model("aot_admm_tiny", num_classes=num_classes, **TINY).state_dict().items()}


def _finished_run(tmp_path, status="finished", commit="c0ffee", kind="pretrain"):
    """A run folder as the trainer leaves it; ``last.ckpt`` holds the weights of :func:`_tiny_encoder`."""
    src = tmp_path / "run"
    src.mkdir()
    (src / "run.json").write_text(json.dumps({"status": status, "commit": commit, "wall_time_s": 123.4}))
    (src / "config.yaml").write_text(dump_config(_tiny_cfg(tmp_path)))
    for name in ("metrics.csv", "probe.json"):
        (src / name).write_bytes(f"{name}\x00bytes".encode())
    (src / "features-1.pt").write_bytes(b"cache")
    (src / "logs").mkdir()
    if kind == "pretrain":
        model = {**{f"encoder.{k}": v for k, v in _tiny_encoder().items()}, "projector.p": torch.zeros(4)}
    else:
        model = _tiny_encoder(num_classes=3)
    torch.save({"kind": kind, "step": 12, "config": _tiny_cfg(tmp_path), "model": model, "optimizer": {}},
               src / "last.ckpt")
    return src


def _sha256(path):
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _assert_same_weights(got, want):
    assert got.keys() == want.keys()
    for k in want:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape and torch.equal(got[k], want[k]), k


def test_record_run_copies_the_small_files_and_the_encoder_folder(tmp_path):
    from safetensors.torch import load_file

    src = _finished_run(tmp_path)
    dest = tmp_path / "results" / "cpu" / "r"
    copied = recording.record_run(str(src), str(dest))
    assert copied == [dest / "config.yaml", dest / "run.json", dest / "metrics.csv", dest / "probe.json",
                      dest / "encoder"]
    assert sorted(os.listdir(dest)) == ["config.yaml", "encoder", "metrics.csv", "probe.json", "run.json"]
    assert sorted(os.listdir(dest / "encoder")) == ["config.json", "model.safetensors"]  # no temporary folder left
    for name in ("config.yaml", "run.json", "metrics.csv", "probe.json"):
        assert (dest / name).read_bytes() == (src / name).read_bytes()
    # the weights: the encoder of last.ckpt (its projector left out), bit for bit, read by safetensors itself
    _assert_same_weights(load_file(dest / "encoder" / "model.safetensors"), _tiny_encoder())
    assert _json(dest / "encoder" / "config.json") == {
        "format": 1, "architecture": "aot_admm_tiny", "model_args": {**TINY, "num_classes": 0},
        "sha256": _sha256(dest / "encoder" / "model.safetensors"), "trained_as": "pretrain", "step": 12, "seed": 0,
        "run": "r", "source": str(src / "last.ckpt"),
        # what aot_lib.encoder_inputs feeds it: the data set, the size the network was built at, CIFAR-10's statistics
        "inputs": {"data": "cifar10", "image_size": 16, "mean": [0.4914, 0.4822, 0.4465],
                   "std": [0.247, 0.2435, 0.2616]},
        "commit": "c0ffee", "wall_time_s": 123.4, "recorded": str(dest)}
    # a checkpoint the readers accept: the record's dict, the config the run's config.yaml
    ckpt = runs.load_checkpoint(dest / "encoder")
    assert {k: ckpt[k] for k in ("format", "kind", "trained_as", "step")} == \
        {"format": 1, "kind": "encoder", "trained_as": "pretrain", "step": 12}
    assert ckpt["config"] == _tiny_cfg(tmp_path)
    _assert_same_weights(ckpt["model"], _tiny_encoder())


def test_record_run_replaces_an_earlier_record_and_its_encoder_pt(tmp_path):
    src = _finished_run(tmp_path, kind="finetune")
    dest = tmp_path / "rec"
    (dest / "encoder").mkdir(parents=True)
    (dest / "encoder" / "stale.bin").write_bytes(b"old")
    (dest / "encoder.pt").write_bytes(b"recorded before encoder/ was kept")
    recording.record_run(src, dest)
    assert sorted(os.listdir(dest)) == ["config.yaml", "encoder", "metrics.csv", "probe.json", "run.json"]
    assert sorted(os.listdir(dest / "encoder")) == ["config.json", "model.safetensors"]
    _assert_same_weights(runs.load_checkpoint(dest / "encoder")["model"], _tiny_encoder(num_classes=3))
    assert _json(dest / "encoder" / "config.json")["model_args"] == {**TINY, "num_classes": 3}


def test_record_run_keeps_no_encoder_that_does_not_load_back(tmp_path, monkeypatch):
    """The folder is written under a temporary name and loaded back before it replaces the recorded one: a
    mismatch leaves the earlier folder as it was, and no temporary folder."""
    import aot_lib.models.registry as registry

    src = _finished_run(tmp_path)
    dest = tmp_path / "rec"
    recording.record_run(src, dest)
    before = {p: (dest / "encoder" / p).read_bytes() for p in os.listdir(dest / "encoder")}
    load = registry.from_pretrained

    def changed(folder):
        model = load(folder)
        with torch.no_grad():
            next(iter(model.parameters())).add_(1.0)
        return model

    monkeypatch.setattr(registry, "from_pretrained", changed)
    with _refused(f"the pretrained folder written for {dest / 'encoder'} does not load back to the weights of "
                  f"{src / 'last.ckpt'}; nothing was kept: report it, with the checkpoint"):
        recording.record_run(src, dest)
    assert sorted(os.listdir(dest)) == ["config.yaml", "encoder", "metrics.csv", "probe.json", "run.json"]
    assert {p: (dest / "encoder" / p).read_bytes() for p in os.listdir(dest / "encoder")} == before


def test_record_run_keeps_the_encoder_up_to_the_size_limit(tmp_path, monkeypatch):
    src = _finished_run(tmp_path, kind="finetune")
    size = sum(v.numel() * v.element_size() for v in _tiny_encoder(num_classes=3).values())  # head included
    monkeypatch.setattr(recording, "ENCODER_RECORD_LIMIT", size)
    assert recording.record_run(src, tmp_path / "at")[-1] == tmp_path / "at" / "encoder"
    assert _json(tmp_path / "at" / "encoder" / "config.json")["trained_as"] == "finetune"
    monkeypatch.setattr(recording, "ENCODER_RECORD_LIMIT", size - 1)
    assert [p.name for p in recording.record_run(src, tmp_path / "over")] == ["config.yaml", "run.json", "metrics.csv",
                                                                          "probe.json"]
    assert not (tmp_path / "over" / "encoder").exists()
    (src / "last.ckpt").unlink()
    assert "encoder" not in [p.name for p in recording.record_run(src, tmp_path / "none")]


# ----------------------------------------------------------------------------- a recorded encoder folder as a checkpoint

def _old_record(tmp_path, name="r", trained_as="finetune", num_classes=3):
    """A recorded folder as ``aot record`` left it before it kept ``encoder/``: ``encoder.pt`` beside config.yaml."""
    rec = tmp_path / "records" / name
    rec.mkdir(parents=True)
    cfg = _tiny_cfg(tmp_path, name)
    (rec / "config.yaml").write_text(dump_config(cfg))
    (rec / "run.json").write_text(json.dumps({"status": "finished", "commit": "abc", "wall_time_s": 9.5}))
    torch.save({"format": 1, "kind": "encoder", "trained_as": trained_as, "step": 7, "config": cfg,
                "model": _tiny_encoder(num_classes)}, rec / "encoder.pt")
    return rec


def test_a_recorded_encoder_folder_reads_as_the_encoder_pt_it_was_converted_from(tmp_path):
    rec = _old_record(tmp_path)
    old = torch.load(rec / "encoder.pt", weights_only=True)
    recording.export_checkpoint(rec / "encoder.pt", rec / "encoder")
    new = runs.load_checkpoint(rec / "encoder")
    assert new.keys() == old.keys()
    assert {k: new[k] for k in ("format", "kind", "trained_as", "step")} == \
        {k: old[k] for k in ("format", "kind", "trained_as", "step")} == \
        {"format": 1, "kind": "encoder", "trained_as": "finetune", "step": 7}
    assert new["config"] == old["config"]
    _assert_same_weights(new["model"], old["model"])
    _assert_same_weights(new["model"], _tiny_encoder(num_classes=3))
    # and it is read the way a checkpoint file is: the same model, the same encoder weights
    assert runs.checkpoint_model(new, rec / "encoder") == runs.checkpoint_model(old, rec / "encoder.pt")
    _assert_same_weights(runs.encoder_state_dict(new), runs.encoder_state_dict(old))


def test_a_recorded_encoder_folder_refusals(tmp_path):
    from aot_lib.models.pretrained import save_pretrained

    rec = _old_record(tmp_path)
    folder = recording.export_checkpoint(rec / "encoder.pt", rec / "encoder")
    alone = tmp_path / "alone" / "encoder"  # a pretrained folder away from its run's config.yaml
    alone.parent.mkdir()
    shutil.copytree(folder, alone)
    with _refused(f"checkpoint {alone} is a pretrained folder with no config.yaml of its run beside it "
                  f"({alone.parent / 'config.yaml'}); load it with aot_lib.from_pretrained('{alone}'), or keep it "
                  "inside its recorded run folder"):
        runs.load_checkpoint(alone)
    # a folder of another run's config.yaml
    (alone.parent / "config.yaml").write_text(dump_config(_tiny_cfg(tmp_path, "other")))
    with _refused(f"checkpoint {alone} holds the encoder of run 'r' but sits in the folder of run 'other' "
                  f"({alone.parent / 'config.yaml'}); keep it inside its own recorded run folder"):
        runs.load_checkpoint(alone)
    # changed weights: the sha256 check of aot_lib.models.pretrained refuses them before they are read
    weights = folder / "model.safetensors"
    recorded = _json(folder / "config.json")["sha256"]
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    digest = _sha256(weights)
    with _refused(f"{weights} does not match the sha256 in config.json ({digest[:12]}... vs {recorded[:12]}...): "
                  "the file was changed or damaged; copy or export it again"):
        runs.load_checkpoint(folder)
    weights.unlink()
    with _refused(f"{folder} has config.json but no model.safetensors; copy the weights beside it"):
        runs.load_checkpoint(folder)
    # a pretrained folder that is no recorded encoder (no trained_as, no step in its config.json)
    save_pretrained(_tiny_encoder(), folder, "aot_admm_tiny", {**TINY, "num_classes": 0})
    with _refused(f"{folder / 'config.json'} lacks trained_as, step, so it is no recorded encoder; load it with "
                  "aot_lib.from_pretrained, or write it with aot record or aot_lib.training.recording.export_checkpoint"):
        runs.load_checkpoint(folder)


def test_an_old_fine_tuning_record_reads_the_pretraining_record_beside_it(tmp_path):
    """A fine-tuning recorded before its config stated its model (``model.overrides: {}``, a config building
    another network) takes the model of the pretraining record beside it: ``encoder/``, or in a clone from before,
    ``encoder.pt``."""
    pre = _old_record(tmp_path, "pre", trained_as="pretrain", num_classes=0)
    ft = tmp_path / "records" / "ft"
    ft.mkdir()
    cfg = load_config(None, [f"run.out_dir={tmp_path}", "run.name=ft", "model.name=aot_admm_tiny", "views.global_size=16",
                             "views.local_size=8", "finetune.checkpoint=runs/pre/last.ckpt"])
    assert cfg["model"]["overrides"] == {}
    (ft / "config.yaml").write_text(dump_config(cfg))
    ckpt = {"format": 1, "kind": "encoder", "trained_as": "finetune", "step": 3, "config": cfg,
            "model": _tiny_encoder(num_classes=3)}
    torch.save(ckpt, ft / "encoder.pt")
    stated = {"name": "aot_admm_tiny", "overrides": TINY, "imports": [], "compile": cfg["model"]["compile"]}
    assert runs.checkpoint_model(ckpt, ft / "encoder.pt") == stated  # from pre/encoder.pt
    recording.export_checkpoint(pre / "encoder.pt", pre / "encoder")
    (pre / "encoder.pt").unlink()
    assert runs.checkpoint_model(ckpt, ft / "encoder.pt") == stated  # from pre/encoder/
    recording.export_checkpoint(ft / "encoder.pt", ft / "encoder")
    assert runs.checkpoint_model(runs.load_checkpoint(ft / "encoder"), ft / "encoder") == stated
    shutil.rmtree(pre / "encoder")  # without the pretraining's record, the config's own model: not this network
    assert runs.checkpoint_model(ckpt, ft / "encoder.pt")["overrides"] == {"img_size": 16}


def test_record_run_refusals(tmp_path):
    nowhere = tmp_path / "nowhere"
    with raises_exactly(FileNotFoundError,
            f"{nowhere} is not a run folder (no run.json); give the folder aot pretrain wrote, e.g. runs/<run.name>"):
        recording.record_run(nowhere, tmp_path / "d")
    src = _finished_run(tmp_path)
    (src / "run.json").write_text("{oops")
    with _refused(f"{src / 'run.json'} is corrupt; the run cannot be recorded"):
        recording.record_run(src, tmp_path / "d")
    for record, shown in (({"status": "running"}, "'running'"), ({}, "None")):
        (src / "run.json").write_text(json.dumps(record))
        with _refused(f"run {src} is {shown}, not finished; finish it (run it again to resume) before recording it"):
            recording.record_run(src, tmp_path / "d")
    (src / "run.json").write_text(json.dumps({"status": "finished", "commit": "abc+dirty"}))
    with _refused(f"run {src} was made from a commit with local changes (abc+dirty); commit first and run it "
                        "again, so the recorded result can be reproduced (or pass --allow-dirty for a result you "
                        "will not publish)"):
        recording.record_run(src, tmp_path / "d")
    assert not (tmp_path / "d").exists()
    assert recording.record_run(src, tmp_path / "d", allow_dirty=True)[1] == tmp_path / "d" / "run.json"
    for i, (record, shown) in enumerate((({"commit": "unknown"}, "'unknown'"), ({}, "None"), ({"commit": ""}, "''"))):
        (src / "run.json").write_text(json.dumps({"status": "finished", **record}))  # git missing, or no commit kept
        with _refused(f"run {src} was made without a known git commit (commit: {shown}); run it again from a git "
                      "checkout of a clean commit, so the recorded result can be reproduced (or pass --allow-dirty "
                      "for a result you will not publish)"):
            recording.record_run(src, tmp_path / f"unknown{i}")
        assert not (tmp_path / f"unknown{i}").exists()
        assert recording.record_run(src, tmp_path / f"unknown{i}", allow_dirty=True)[1] == tmp_path / f"unknown{i}" / "run.json"
    (src / "run.json").write_text(json.dumps({"status": "finished", "commit": "c0ffee"}))
    dest = tmp_path / "file"
    dest.write_text("x")
    with raises_exactly(FileExistsError, f"{dest} exists and is not a folder; choose another destination"):
        recording.record_run(src, dest)
    (tmp_path / "existing").mkdir()
    assert recording.record_run(src, tmp_path / "existing")[0] == tmp_path / "existing" / "config.yaml"


def test_resumable_keys_are_those_that_do_not_change_the_trajectory(tmp_path):
    """The loader's view: a resume that only moves the run, changes logging or devices, passes; yaml round trip."""
    cfg = _cfg(tmp_path)
    moved = _cfg(tmp_path / "elsewhere", "run.ckpt_every=7", "run.log_every=3", "run.stop_after=2", "run.progress=false",
                 "data.root=/else", "data.download=false", "fabric.devices=2", "probe.epochs=9", "monitor.every=4",
                 "model.compile=true", "description=moved")
    assert runs.config_differences(yaml.safe_load(dump_config(cfg)), moved) == []


def test_wide_probe_reads_the_commits_and_compares_the_shared_rates(tmp_path):
    """Hand-made records: a wide probe that gives the recorded validation accuracy at every shared rate is
    shared_same; one that differs at one shared rate by a single image's worth (0.02 points) is not, and each
    side's commit is read from its own probe.json."""
    import json
    from aot_lib.evidence import SeedRun, wide_probe
    rec = {"pretrain_step": 10, "probe": {"lr": [0.01, 0.03]}, "linear_lr": 0.03, "linear_val_best": 50.0,
           "linear_top1": 49.0, "linear_val_top1": {"lr=0.01,wd=0": 48.0, "lr=0.03,wd=0": 50.0}, "commit": "a" * 40}
    wide = {**rec, "probe": {"lr": [0.01, 0.03, 0.1]}, "linear_val_top1": {**rec["linear_val_top1"], "lr=0.1,wd=0": 51.0},
            "linear_lr": 0.1, "linear_val_best": 51.0, "commit": "b" * 40}
    for name, w in (("same", wide), ("moved", {**wide, "linear_val_top1": {**wide["linear_val_top1"],
                                                                               "lr=0.01,wd=0": 48.02}})):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "probe.json").write_text(json.dumps(rec))
        (tmp_path / "wide" / name).mkdir(parents=True)
        (tmp_path / "wide" / name / "probe.json").write_text(json.dumps(w))
    got = {n: wide_probe([SeedRun(n, 0, 49.0, "a" * 40, 1.0, tmp_path / "runs" / n)], tmp_path / "wide")[0]
           for n in ("same", "moved")}
    assert (got["same"]["shared_same"], got["moved"]["shared_same"]) == (True, False)
    assert (got["same"]["commit0"], got["same"]["commit"]) == ("a" * 40, "b" * 40)
