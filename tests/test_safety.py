"""Safety of what a run writes and records (issue 25): a run name cannot leave ``run.out_dir``, a recorded
run comes from known, committed code, and a failed write says what failed, where, and what to do, while
the previous checkpoint survives byte for byte.

Every refusal is matched in full (helpers.raises_exactly, or the CLI's one stderr line).
"""
import pytest
import yaml

from aot_lib import runs
from aot_lib.cli import main as cli
from aot_lib.config import ConfigError, load_config, validate_config
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
    import json

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
