"""Safety of what a run writes and records (issue 25): a run name cannot leave ``run.out_dir``, a recorded
run comes from known, committed code, and a failed write says what failed, where, and what to do, while
the previous checkpoint survives byte for byte.

Every refusal is matched in full (helpers.raises_exactly, or the CLI's one stderr line).
"""
import errno
import json
import os
from pathlib import Path

import pytest
import torch
import yaml

from aot_lib.training import recording, runs
from aot_lib.cli import main as cli
from aot_lib.training.config import ConfigError, load_config, validate_config
from helpers import raises_exactly

# ----------------------------------------------------------------------------- run names

NAME_RULE = ("run.name must be one folder name (not empty, '.' or '..'; no '/', '\\' or control character), got {!r}. "
             "The run's folder is <run.out_dir>/<run.name>: to write it elsewhere, set run.out_dir. "
             "Fix it in the config file or override it (e.g. run.name=my_run).")
ESCAPING_NAMES = ["..", ".", "../escaped", "a/b", "/abs/run", "a\\b", "..\\escaped", "C:\\runs\\x", "a\x00b", "a\nb",
                  "a\x7fb"]


@pytest.mark.parametrize("name", ESCAPING_NAMES, ids=ascii)
def test_a_run_name_that_is_not_one_folder_name_is_refused(name, tmp_path):
    cfg = load_config(None, [f"run.out_dir={tmp_path / 'out'}"])
    cfg["run"]["name"] = name  # NUL and newline cannot be written as an override: the dict is edited by hand
    with raises_exactly(ConfigError, NAME_RULE.format(name)):
        validate_config(cfg)
    with raises_exactly(ConfigError, NAME_RULE.format(name)):  # a dict that skipped validate_config
        runs.run_dir(cfg)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["..", "../escaped", "/abs/run", "a\\b"])
def test_an_escaping_override_is_refused_by_load_config_and_the_cli(name, capsys):
    with raises_exactly(ConfigError, NAME_RULE.format(name)):
        load_config(None, [f"run.name={name}"])
    assert cli(["show-config", f"run.name={name}"]) == 2
    assert capsys.readouterr().err == f"aot show-config: {NAME_RULE.format(name)}\n"


def test_an_empty_run_name_in_a_config_file_is_refused(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text(yaml.safe_dump({"run": {"name": ""}}))
    with raises_exactly(ConfigError, NAME_RULE.format("")):
        load_config(path)


def test_pretrain_with_an_escaping_name_writes_nothing(tmp_path):
    from aot_lib import train

    cfg = load_config(None, [f"run.out_dir={tmp_path / 'out'}"])
    cfg["run"]["name"] = "../escaped"
    with raises_exactly(ConfigError, NAME_RULE.format("../escaped")):
        train.pretrain(cfg)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["my_run", "run.v2", ".hidden", "..x", "a b", "résumé-1"])
def test_a_plain_name_is_a_folder_inside_out_dir(name, tmp_path):
    cfg = load_config(None, [f"run.out_dir={tmp_path / 'out'}", f"run.name={name}", "fabric.accelerator=cpu"])
    assert cfg["run"]["name"] == name
    assert runs.run_dir(cfg) == tmp_path / "out" / name
    assert runs.run_dir(cfg).resolve().parent == (tmp_path / "out").resolve()


# ----------------------------------------------------------------------------- +dirty

def _git(repo, *args):
    import subprocess

    # no user or signing configuration of this machine is needed or used
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
                          cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A committed checkout shaped like this one: aot_lib/, configs/, notebooks/, a .gitignore, a README."""
    repo = tmp_path / "repo"
    for rel, text in {"aot_lib/core.py": "x = 1\n", "configs/a.yaml": "run: {name: a}\n", "notebooks/01.py": "# book\n",
                      ".gitignore": "__pycache__/\nruns/\n", "README.md": "readme\n"}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "first")
    return repo


@pytest.mark.parametrize("new_file", ["aot_lib/new.py", "aot_lib/models/new.py", "configs/new.yaml", "notebooks/new.py"])
def test_an_untracked_source_file_makes_the_commit_dirty(repo, new_file):
    from aot_lib.runtime import git_commit

    head = _git(repo, "rev-parse", "HEAD")
    assert len(head) == 40 and git_commit(repo) == head
    (repo / new_file).parent.mkdir(parents=True, exist_ok=True)
    (repo / new_file).write_text("y = 2\n")
    assert git_commit(repo) == head + "+dirty"
    (repo / new_file).unlink()
    assert git_commit(repo) == head


def test_what_does_not_make_the_commit_dirty_and_what_does(repo):
    from aot_lib.runtime import git_commit

    head = _git(repo, "rev-parse", "HEAD")
    for ignored_or_outside in ("aot_lib/__pycache__/core.cpython-311.pyc", "runs/r/run.json", "notes.txt",
                               "scripts/try.sh"):
        (repo / ignored_or_outside).parent.mkdir(parents=True, exist_ok=True)
        (repo / ignored_or_outside).write_text("z")
    assert git_commit(repo) == head  # git-ignored, or untracked outside aot_lib/, configs/, notebooks/
    (repo / "README.md").write_text("changed\n")  # a tracked change anywhere
    assert git_commit(repo) == head + "+dirty"
    _git(repo, "checkout", "README.md")
    (repo / "configs" / "b.yaml").write_text("run: {name: b}\n")
    _git(repo, "add", "configs/b.yaml")  # staged, not committed
    assert git_commit(repo) == head + "+dirty"
    _git(repo, "commit", "-q", "-m", "second")
    assert git_commit(repo) == _git(repo, "rev-parse", "HEAD") != head


def test_without_git_the_commit_is_unknown(tmp_path, monkeypatch):
    from aot_lib.runtime import git_commit

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # even if the temporary folder is in one
    assert git_commit(tmp_path) == "unknown"  # not a repository
    monkeypatch.setenv("PATH", str(tmp_path))  # no git program at all
    assert git_commit(tmp_path) == "unknown"


# ----------------------------------------------------------------------------- recording a run made without git

def test_record_of_a_run_without_a_known_commit_is_refused_by_the_cli(tmp_path, capsys):
    src, dest = tmp_path / "runs" / "r", tmp_path / "results" / "r"
    src.mkdir(parents=True)
    (src / "run.json").write_text(json.dumps({"status": "finished", "commit": "unknown"}))
    assert cli(["record", str(src), str(dest)]) == 1
    assert capsys.readouterr().err == (
        f"aot record: run {src} was made without a known git commit (commit: 'unknown'); run it again from a git "
        "checkout of a clean commit, so the recorded result can be reproduced (or pass --allow-dirty for a result "
        "you will not publish)\n")
    assert not dest.exists()
    assert cli(["record", "--allow-dirty", str(src), str(dest)]) == 0
    assert capsys.readouterr().out == f"{dest / 'run.json'}\n"
    assert (dest / "run.json").read_bytes() == (src / "run.json").read_bytes()


# ----------------------------------------------------------------------------- failed writes

FULL, DENIED, BROKEN = errno.ENOSPC, errno.EACCES, errno.EIO  # a full disk, no permission, a failing disk


def _failing(code, partial=b"half a file"):
    """A writer that leaves part of its file, as a write cut short does, then fails as the operating system
    does with ``code`` (a new exception each time: a raised one carries its context along)."""
    def write(tmp):
        Path(tmp).write_bytes(partial)
        raise OSError(code, os.strerror(code))
    return write


@pytest.mark.parametrize("number,code,remedy", [(FULL, "ENOSPC", "Free space on that disk"),
                                               (DENIED, "EACCES", "Make {folder} writable"),
                                               (BROKEN, "EIO", "Fix that")], ids=["ENOSPC", "EACCES", "EIO"])
def test_a_failed_write_keeps_the_previous_file_and_says_so(tmp_path, number, code, remedy):
    from aot_lib.files import WriteError, atomic_write

    target = tmp_path / "metrics.json"
    target.write_bytes(b'{"old": 1}')
    fix = remedy.format(folder=tmp_path)
    with raises_exactly(WriteError, f"writing the result file {target} failed: {os.strerror(number)} ({code}); the previous "
                                    f"metrics.json is intact. {fix}, or write it to another folder; then run the same "
                                    "command again") as caught:
        atomic_write(target, _failing(number), "result file")
    assert caught.value.errno == number and isinstance(caught.value, OSError)  # still an OSError to callers
    assert target.read_bytes() == b'{"old": 1}' and os.listdir(tmp_path) == ["metrics.json"]
    fresh = tmp_path / "new" / "probe.json"
    with raises_exactly(WriteError, f"writing the file {fresh} failed: {os.strerror(number)} ({code}); no partial probe.json "
                                    f"was left. {remedy.format(folder=fresh.parent)}, or write it to another folder; "
                                    "then run the same command again"):
        atomic_write(fresh, _failing(number))
    assert os.listdir(fresh.parent) == []


def test_an_error_that_is_not_the_operating_systems_is_not_a_write_error(tmp_path):
    from aot_lib.files import atomic_write

    def write(tmp):
        tmp.write_text("half")
        raise TypeError("not a write failure")

    with raises_exactly(TypeError, "not a write failure"):
        atomic_write(tmp_path / "x.json", write)
    assert os.listdir(tmp_path) == []


@pytest.fixture
def paused_run(tmp_path, monkeypatch, capsys):
    """A tiny pretraining paused after its checkpoint at step 2 of 4, through the CLI; its config file and folder."""
    from aot_lib.training.config import dump_config
    from helpers import make_imagefolder, tiny_config

    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    config = tmp_path / "tiny.yaml"
    config.write_text(dump_config(tiny_config(make_imagefolder(tmp_path / "data"), tmp_path / "runs")))
    assert cli(["pretrain", "--config", str(config), "run.stop_after=2"]) == 0
    capsys.readouterr()
    run = tmp_path / "runs" / "tiny"
    assert json.loads((run / "run.json").read_text())["status"] == "paused at step 2"
    return config, run


def _fill_disk_at_the_checkpoint(monkeypatch, number):
    """Fabric's checkpoint write fails part way with error ``number``; every file written after it fails the same way,
    as on a disk that just filled (the CLI must report the first failure, not the last)."""
    import lightning_fabric

    from aot_lib import files

    full = []

    def save(fabric, path, state):
        full.append(path)
        _failing(number, b"half a checkpoint")(path)

    real = files.atomic_write

    def atomic_write(path, write, *args):
        return real(path, _failing(number) if full else write, *args)

    monkeypatch.setattr(lightning_fabric.Fabric, "save", save)
    monkeypatch.setattr(files, "atomic_write", atomic_write)  # run.json, results
    monkeypatch.setattr(runs, "atomic_write", atomic_write)  # metrics.csv
    return full


@pytest.mark.parametrize("number,code,remedy", [(FULL, "ENOSPC", "Free space on that disk"),
                                               (DENIED, "EACCES", "Make {run} writable")], ids=["ENOSPC", "EACCES"])
def test_a_failed_checkpoint_write_is_one_line_from_the_cli_and_the_last_checkpoint_is_kept(
        paused_run, monkeypatch, capsys, number, code, remedy):
    config, run = paused_run
    before = (run / "last.ckpt").read_bytes()
    files_before = sorted(os.listdir(run))
    full = _fill_disk_at_the_checkpoint(monkeypatch, number)
    assert cli(["pretrain", "--config", str(config)]) == 1
    assert full == [run / f".last.ckpt.tmp{os.getpid()}"]  # the step-4 checkpoint, written beside the last one
    assert capsys.readouterr().err == (  # the one line on stderr: the first failed write, not the ones after it
        f"aot pretrain: writing the checkpoint {run / 'last.ckpt'} failed: {os.strerror(number)} ({code}); the last "
        f"checkpoint is intact. {remedy.format(run=run)}, or move the run folder elsewhere and set run.out_dir to "
        "match; then run the same command again\n")
    assert (run / "last.ckpt").read_bytes() == before  # byte for byte
    assert sorted(os.listdir(run)) == files_before  # no temporary file left behind
    monkeypatch.undo()
    assert cli(["pretrain", "--config", str(config)]) == 0  # space freed: the same command resumes and finishes
    assert json.loads((run / "run.json").read_text())["status"] == "finished"
    assert torch.load(run / "last.ckpt", weights_only=True)["step"] == 4


def test_a_first_checkpoint_that_cannot_be_written_says_none_was(tmp_path, monkeypatch, capsys):
    from aot_lib.training.config import dump_config
    from helpers import make_imagefolder, tiny_config

    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    config = tmp_path / "tiny.yaml"
    config.write_text(dump_config(tiny_config(make_imagefolder(tmp_path / "data"), tmp_path / "runs")))
    _fill_disk_at_the_checkpoint(monkeypatch, FULL)
    run = tmp_path / "runs" / "tiny"
    assert cli(["pretrain", "--config", str(config)]) == 1
    assert capsys.readouterr().err == (
        f"aot pretrain: writing the checkpoint {run / 'last.ckpt'} failed: No space left on device (ENOSPC); no "
        "checkpoint had been written yet. Free space on that disk, or move the run folder elsewhere and set "
        "run.out_dir to match; then run the same command again\n")
    assert not (run / "last.ckpt").exists() and not list(run.glob(".last.ckpt*"))


def test_a_failed_result_write_from_the_cli(tmp_path, monkeypatch, capsys):
    """`aot record` into a folder where writing fails: the recorded files there before are kept byte for byte."""
    from aot_lib import files

    src, dest = tmp_path / "runs" / "r", tmp_path / "results" / "r"
    src.mkdir(parents=True)
    (src / "run.json").write_text(json.dumps({"status": "finished", "commit": "c0ffee"}))
    dest.mkdir(parents=True)
    (dest / "run.json").write_bytes(b"recorded before")
    real = files.atomic_write
    monkeypatch.setattr(recording, "atomic_write", lambda path, write, *a: real(path, _failing(FULL), *a))
    assert cli(["record", str(src), str(dest)]) == 1
    assert capsys.readouterr().err == (
        f"aot record: writing the recorded file {dest / 'run.json'} failed: No space left on device (ENOSPC); the "
        "previous run.json is intact. Free space on that disk, or write it to another folder; then run the same "
        "command again\n")
    assert (dest / "run.json").read_bytes() == b"recorded before" and os.listdir(dest) == ["run.json"]


def test_a_status_that_cannot_be_written_does_not_hide_the_error_that_ended_the_run(tmp_path, monkeypatch):
    from aot_lib import files

    cfg = load_config(None, [f"run.out_dir={tmp_path}", "run.name=r", "fabric.accelerator=cpu", "fabric.precision=32-true"])
    monkeypatch.setattr(runs, "git_commit", lambda: "c0ffee")
    with raises_exactly(RuntimeError, "the run's own error"):
        with runs.RunFolder(cfg, "pretrain") as rf:
            rf.update(total_steps=5)  # training had begun: the folder is kept and its status matters
            monkeypatch.setattr(runs, "write_json", lambda path, obj, *a: files.atomic_write(path, _failing(FULL), *a))
            raise RuntimeError("the run's own error")
    assert json.loads((tmp_path / "r" / "run.json").read_text())["status"] == "running"  # the last write that worked
    monkeypatch.undo()
    with runs.RunFolder(cfg, "pretrain"):  # the lock was released all the same
        pass


@pytest.mark.parametrize("override, problem", [
    ("optim.lr=[1,", "expected the node content, but found '<stream end>'"),
    ("model.overrides={a: 1", "expected ',' or '}', but got '<stream end>'"),
    ("run.name=a\x00b", "unacceptable character #x0000: special characters are not allowed"),
])
def test_an_override_that_is_not_yaml_is_a_config_error(override, problem):
    from aot_lib.training.config import ConfigError, load_config

    with raises_exactly(ConfigError, f"override {override!r}: the value is not valid YAML ({problem}); give a number, "
                                     "a word, a list [a, b] or a mapping {k: v}"):
        load_config(None, [override])
