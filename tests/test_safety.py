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
