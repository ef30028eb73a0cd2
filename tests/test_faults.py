"""Fault injection: bad configs, bad data, bad checkpoints, signals, concurrent launches, API misuse.

Every case must end in one clear error that names the fix (or be handled correctly), never in a raw
traceback or a silently wrong result, and must never destroy a checkpoint or a result.
"""
import json
import os
import re
from pathlib import Path

import pytest
import torch

from aot_lib import train
from aot_lib.cli import main as cli
from aot_lib.training.config import ConfigError, load_config
from aot_lib.data.datasets import DataError
from helpers import make_imagefolder, pickled_code_checkpoint, raises_exactly, tiny_config


@pytest.fixture
def setup(tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    return make_imagefolder(tmp_path / "data"), tmp_path / "runs"


def _csv(run, key="loss"):
    import csv

    with open(run / "metrics.csv") as f:
        return {int(r["step"]): float(r[key]) for r in csv.DictReader(f)}


# ----------------------------------------------------------------------------- config (API)

FIX = "Fix it in the config file or override it"
# override -> the whole refusal, word for word
BAD_CONFIGS = [
    ("optim.max_steps=0", f"optim.max_steps must be an integer >= 1 (or null), got 0. {FIX} (e.g. optim.max_steps=1000)."),
    ("optim.lr=abc", f"optim.lr must be a number > 0, got 'abc'. {FIX} (e.g. optim.lr=5e-4)."),
    ("optim.lr=.nan", f"optim.lr must be a number > 0, got nan. {FIX} (e.g. optim.lr=5e-4)."),
    ("optim.lr=-1e-3", f"optim.lr must be a number > 0, got -0.001. {FIX} (e.g. optim.lr=5e-4)."),
    ("run.ckpt_every=0", f"run.ckpt_every must be an integer >= 1, got 0. {FIX} (e.g. run.ckpt_every=500)."),
    ("run.log_every=-2", f"run.log_every must be an integer >= 1, got -2. {FIX} (e.g. run.log_every=10)."),
    ("optim.batch_size=0", f"optim.batch_size must be an integer >= 1, got 0. {FIX} (e.g. optim.batch_size=256)."),
    ("optim.epochs=2.5", f"optim.epochs must be an integer >= 1, got 2.5. {FIX} (e.g. optim.epochs=800)."),
    ("run.seed=-1", f"run.seed must be an integer >= 0, got -1. {FIX} (e.g. run.seed=0)."),
    ("run.stop_after=0", f"run.stop_after must be an integer >= 1 (or null), got 0. {FIX} (e.g. run.stop_after=100)."),
    ("run.resume=maybe", f"run.resume must be true or false, got 'maybe'. {FIX}."),
    ("loss.lejepa_lambda=1", f"loss.lejepa_lambda must be a number >= 0 and < 1, got 1.0. {FIX} (e.g. loss.lejepa_lambda=0.05)."),
    ("loss.sigreg_sample=pool", f"loss.sigreg_sample must be one of per_view, pooled, got 'pool'. Did you mean 'pooled'? {FIX}."),
    ("data.name=cifar", f"data.name must be one of cifar10, cifar100, imagefolder, stream, got 'cifar'. Did you mean 'cifar10'? "
                        f"{FIX}."),
    ("views.global_scale=[0.9, 0.2]", "views.global_scale must be a pair [low, high] with 0 < low <= high <= 1, got [0.9, 0.2]. "
                                      f"{FIX}."),
    ("views.jitter_p=1.5", "views.jitter_p must be a probability in [0, 1], or a list [first global, other globals, locals] "
                           f"of them, got 1.5. {FIX}."),
    ("fabric.precision=bf17", "fabric.precision must be one of auto, 32-true, 32, bf16-mixed, bf16-true, 16-mixed, 64-true, "
                              f"got 'bf17'. {FIX}."),
    ("model.name=aot_admm_tinyy", "model aot_admm_tinyy with overrides {}: unknown model 'aot_admm_tinyy'. Did you mean "
                                  "aot_admm_tiny, aot_tiny, aot_admm_base? A family of your own: import its module first "
                                  "(--import MODULE, or model.imports). Known models: aot_admm_base, aot_admm_small, "
                                  "aot_admm_tiny, aot_base, aot_small, aot_tiny, crate_base, crate_small, crate_tiny, vit_small, "
                                  "vit_small_relu, vit_tiny, vit_tiny_relu."),
    ("model.overrides={depht: 2}", "model.overrides for aot_admm_tiny: AoTADMM.__init__() got an unexpected keyword argument "
                                   "'depht'. Remove it, or see `aot models` / the model's docstring for its arguments"),
    ("model.overrides={patch_size: 5}", "views.global_size=32 is not divisible by the model's patch_size=5; choose a multiple of 5"),
    ("model.overrides={embed_dim: 30, num_heads: 4}", "model aot_admm_tiny with overrides {'embed_dim': 30, 'num_heads': 4}: "
                                                      "embed_dim=30 is not divisible by num_heads=4; every head needs dim/heads "
                                                      "channels: choose num_heads among the divisors of 30 (e.g. 1, 2, 3, 5, 6, "
                                                      "10, 15)."),
    ("model.overrides=3", "config key 'model.overrides' must be a mapping, got 3"),
]


@pytest.mark.parametrize("override,message", BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_config_is_one_clear_error(override, message):
    with raises_exactly(ConfigError, message):
        load_config(None, [override])


def test_unknown_key_names_the_closest_three_and_the_command_that_lists_them_all():
    """One short line (issue 54: it listed every known key, 1,865 characters): the three closest keys and `aot keys`."""
    with raises_exactly(ConfigError, "unknown config key 'optim.lrr'. Did you mean 'optim.lr', 'optim.min_lr_ratio', "
                        "'optim.grad_clip'? `aot keys` lists every key (`aot keys optim` those of a section)."):
        load_config(None, ["optim.lrr=1"])
    with raises_exactly(ConfigError, "unknown config key 'zzz'. `aot keys` lists every key (`aot keys zzz` those of "
                        "a section)."):
        load_config(None, ["zzz=1"])


def test_aot_keys_lists_every_key_with_its_default_and_range(capsys):
    from aot_lib.training.config import SCHEMA

    assert cli(["keys"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert {line.split(" = ")[0] for line in lines} == set(SCHEMA) | {"model.overrides"}
    assert "optim.lr = 0.0005  # a number > 0" in lines
    assert cli(["keys", "nothing_like_this"]) == 2
    assert capsys.readouterr().err == ("aot keys: no config key contains 'nothing_like_this'; `aot keys` lists them "
                                       "all\n")


@pytest.mark.parametrize("command", ["pretrain", "finetune", "distill", "baseline init"])
def test_a_training_command_without_a_config_starts_nothing(command, tmp_path, monkeypatch, capsys):
    """Without -c the defaults are the paper's 800-epoch run (156,000 steps on CIFAR-10): refused in one line that
    lists the shipped configs, before any folder or data is touched."""
    from aot_lib.cli import shipped_configs

    monkeypatch.chdir(tmp_path)
    assert cli(command.split()) == 2
    err = capsys.readouterr().err
    assert err == (f"aot {command.split()[0]}: name a config with -c FILE; nothing was started (without one the "
                   "defaults are the paper's 800-epoch run); shipped: " + ", ".join(shipped_configs()) +
                   " (more under configs/); configs/cpu/smoke.yaml checks the set-up in a minute\n")
    assert "configs/cpu/smoke.yaml" in shipped_configs() and not any("_seed" in c for c in shipped_configs())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("override,message", [
    ("num_heads: 0", "num_heads must be an integer >= 1, got 0"),
    ("embed_dim: 0", "embed_dim must be an integer >= 1, got 0"),
    ("depth: 0", "depth must be an integer >= 1, got 0"),
    ("lambd: -0.1", "lambd must be > 0 (the V-step's threshold tau = lambd/rho is learned as softplus(tau_raw) > 0, a "
                    "shrinkage by construction), got -0.1; for the un-thresholded iteration use "
                    "aot_lib.theory.admm.admm_iterations(lambd=0)"),
    ("num_classes: -1", "num_classes must be an integer >= 0, got -1; num_classes=0 gives the encoder without a classifier"),
])
def test_impossible_model_sizes_are_refused(override, message):
    key, value = (p.strip() for p in override.split(":"))
    with raises_exactly(ConfigError, f"model aot_admm_tiny with overrides {{'{key}': {value}}}: {message}"):
        load_config(None, [f"model.overrides={{{override}}}"])


def test_every_default_has_a_type_and_range():
    from aot_lib.training.config import DEFAULTS, SCHEMA, flatten

    assert set(flatten(DEFAULTS)) - {"model.overrides"} == set(SCHEMA)
    load_config(None)  # the defaults pass their own checks


def test_api_validates_a_dict_edited_by_hand(setup):
    data, out = setup
    cfg = tiny_config(data, out)
    cfg["optim"]["max_steps"] = 0
    with raises_exactly(ConfigError, "optim.max_steps must be an integer >= 1 (or null), got 0. Fix it in the config file "
                        "or override it (e.g. optim.max_steps=1000)."):
        train.pretrain(cfg)
    assert not (out / "tiny").exists()  # refused before the run folder was touched


def test_batch_larger_than_the_data(setup):
    data, out = setup
    with pytest.raises(ValueError, match=r"batch size 64 is larger than the training set \(32 images\); lower it"):
        train.pretrain(tiny_config(data, out, "optim.batch_size=64"))


# ----------------------------------------------------------------------------- CLI

def test_cli_errors_are_one_line(setup, capsys):
    data, out = setup
    assert cli(["pretrain", "-c", str(Path(__file__).parent.parent / "configs" / "cpu" / "smoke.yaml"), "optim.lr=abc"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("aot pretrain: optim.lr must be a number") and "\n" not in err and "Traceback" not in err
    assert cli(["probe", "--checkpoint", str(out / "none.ckpt"), f"data.root={data}", "data.name=imagefolder"]) == 1
    assert capsys.readouterr().err == (f"aot probe: checkpoint {out / 'none.ckpt'} does not exist; pretrain first "
                                       "(aot pretrain ...) or fix the path\n")
    # one key twice on the command line (issue 57: only the last would count), before anything runs
    smoke = str(Path(__file__).parent.parent / "configs" / "cpu" / "smoke.yaml")
    assert cli(["pretrain", "-c", smoke, "optim.lr=1e-3", f"run.out_dir={out}", "optim.lr=4e-3"]) == 2
    assert capsys.readouterr().err == ("aot pretrain: optim.lr is given twice ('optim.lr=1e-3' and 'optim.lr=4e-3'): "
                                       "give it once\n")
    assert not (out / "smoke").exists()
    assert cli(["record", str(out / "nowhere"), str(out / "dest")]) == 1
    assert capsys.readouterr().err == (f"aot record: {out / 'nowhere'} is not a run folder (no run.json); give the folder "
                                       "aot pretrain wrote, e.g. runs/<run.name>\n")


def test_cli_internal_error_is_one_line_and_debug_shows_it(monkeypatch, capsys):
    import aot_lib.training.config

    def boom(*a, **k):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(aot_lib.training.config, "load_config", boom)
    assert cli(["show-config"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "aot show-config: internal error (ZeroDivisionError): boom (rerun with --debug for the traceback, and report it)"
    with pytest.raises(ZeroDivisionError):
        cli(["--debug", "show-config"])


def test_cli_ctrl_c_exits_130(monkeypatch, capsys):
    import aot_lib.training.config

    def interrupt(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(aot_lib.training.config, "load_config", interrupt)
    assert cli(["show-config"]) == 130
    assert "interrupted" in capsys.readouterr().err


# ----------------------------------------------------------------------------- data

def test_missing_data_root(setup):
    """Refused in one line, and the run folder this launch made is gone again (issue 54: it left config.yaml, a
    "failed" run.json and .lock behind), so the next launch starts clean."""
    _, out = setup
    with raises_exactly(DataError, f"imagefolder root {out / 'nowhere'} does not exist: give a folder with train/ and "
                        "test/ (or val/), or a zip of one"):
        train.pretrain(tiny_config(out / "nowhere", out))
    assert not (out / "tiny").exists()


def test_a_failure_before_training_keeps_a_folder_that_was_there(setup):
    """The folder is removed only when this launch made it: a run that exists (its checkpoint) is never touched."""
    data, out = setup
    train.pretrain(tiny_config(data, out, "optim.max_steps=2"))
    before = {p.name: p.read_bytes() for p in (out / "tiny").iterdir() if p.is_file()}
    with pytest.raises(DataError):
        train.pretrain(tiny_config(out / "nowhere", out, "optim.max_steps=2"))
    after = {p.name: p.read_bytes() for p in (out / "tiny").iterdir() if p.is_file()}
    assert after["last.ckpt"] == before["last.ckpt"] and after["config.yaml"] == before["config.yaml"]


def test_corrupt_image(setup, tmp_path):
    data, out = setup
    (data / "train" / "cat" / "0003.png").write_bytes(b"not a png")
    with pytest.raises(DataError, match="cannot decode image .*0003.png"):
        train.pretrain(tiny_config(data, out))


def test_class_in_one_split_only(setup):
    data, out = setup
    (data / "test" / "dog").rename(data / "test" / "wolf")
    train.pretrain(tiny_config(data, out, "optim.max_steps=1"))
    with raises_exactly(DataError, f"imagefolder at {data}: train and test have different classes. Only in train: dog. "
                        "Only in test: wolf. A label is the index of its class in the sorted class list, so a class "
                        "present in one split only shifts the label of every class after it and the test labels would "
                        "be wrong. Fix: give both splits the same class folders (add the missing ones, or remove the "
                        "extra ones), then run again."):
        train.probe(tiny_config(data, out))
    assert not (out / "tiny" / "probe.json").exists()  # refused before any result was written


# ----------------------------------------------------------------------------- checkpoints

def test_checkpoint_carrying_pickled_code_is_refused(setup, tmp_path):
    data, out = setup
    marker = tmp_path / "pwned"
    evil = pickled_code_checkpoint(tmp_path / "evil.ckpt", marker)
    with pytest.raises(train.CheckpointError, match="pickled Python objects"):
        train.load_checkpoint(evil)
    with pytest.raises(train.CheckpointError, match="pickled Python objects"):
        train.probe(tiny_config(data, out), checkpoint=evil)
    assert not marker.exists()  # the payload never ran


def test_truncated_checkpoint_is_refused_and_kept(setup):
    data, out = setup
    train.pretrain(tiny_config(data, out, "optim.max_steps=4", "run.stop_after=2"))
    ckpt = out / "tiny" / "last.ckpt"
    blob = ckpt.read_bytes()
    ckpt.write_bytes(blob[: len(blob) // 2])
    # the middle names the reader's own error (platform-dependent wording): any, in parentheses
    with pytest.raises(train.CheckpointError, match=f"^checkpoint {re.escape(str(ckpt))} is corrupt or not a torch checkpoint "
                       r"\([A-Za-z]+Error: .*\); delete it to start over, or point to another checkpoint$"):
        train.pretrain(tiny_config(data, out, "optim.max_steps=4"))
    assert ckpt.read_bytes() == blob[: len(blob) // 2]


def test_foreign_file_is_not_an_aot_checkpoint(tmp_path):
    path = tmp_path / "x.ckpt"
    torch.save({"weights": torch.zeros(2)}, path)
    with raises_exactly(train.CheckpointError, f"checkpoint {path} was not written by aot_lib (no 'model'/'config' entries)"):
        train.load_checkpoint(path)


def test_resume_with_another_lr_is_refused_and_config_kept(setup):
    data, out = setup
    train.pretrain(tiny_config(data, out, "optim.max_steps=4", "run.stop_after=2"))
    before = (out / "tiny" / "config.yaml").read_text()
    with pytest.raises(ConfigError, match=r"started with another config \(optim.lr: 0.0005 -> 0.001\)"):
        train.pretrain(tiny_config(data, out, "optim.max_steps=4", "optim.lr=1e-3"))
    assert (out / "tiny" / "config.yaml").read_text() == before


def test_resume_with_another_model_is_refused_before_anything_is_written(setup):
    data, out = setup
    train.pretrain(tiny_config(data, out, "optim.max_steps=4", "run.stop_after=2"))
    before = {p.name: p.read_bytes() for p in (out / "tiny").iterdir() if p.is_file()}
    with raises_exactly(ConfigError, f"run {out / 'tiny'} was started with another config (model.overrides: "
                        "{'embed_dim': 32, 'depth': 1, 'num_heads': 2, 'patch_size': 4} -> {'embed_dim': 16, 'depth': 1, "
                        "'num_heads': 2, 'patch_size': 4}); resume with the same settings, or start a new run (another "
                        "run.name, or run.resume=false run.overwrite=true)"):
        train.pretrain(tiny_config(data, out, "optim.max_steps=4",
                                   "model.overrides={embed_dim: 16, depth: 1, num_heads: 2, patch_size: 4}"))
    after = {p.name: p.read_bytes() for p in (out / "tiny").iterdir() if p.is_file() and p.name != "run.json"}
    assert after == {k: v for k, v in before.items() if k != "run.json"}


def test_resume_may_change_logging_and_devices(setup):
    data, out = setup
    train.pretrain(tiny_config(data, out, "optim.max_steps=4", "run.stop_after=2"))
    result = train.pretrain(tiny_config(data, out, "optim.max_steps=4", "run.log_every=2", "run.progress=false"))
    assert result["step"] == 4


def test_rerunning_a_finished_run_changes_nothing(setup):
    data, out = setup
    first = train.pretrain(tiny_config(data, out))
    saved = (out / "tiny" / "metrics.json").read_text()
    ckpt = (out / "tiny" / "last.ckpt").read_bytes()
    again = train.pretrain(tiny_config(data, out))
    assert again["loss"] == first["loss"]
    assert (out / "tiny" / "metrics.json").read_text() == saved and (out / "tiny" / "last.ckpt").read_bytes() == ckpt


def test_resume_false_on_an_existing_run(setup):
    data, out = setup
    train.pretrain(tiny_config(data, out, "optim.max_steps=4"))
    with pytest.raises(ConfigError, match=r"already holds a run .*replace it \(run.overwrite=true\)"):
        train.pretrain(tiny_config(data, out, "optim.max_steps=2", "run.resume=false"))
    assert sorted(_csv(out / "tiny")) == [1, 2, 3, 4]
    train.pretrain(tiny_config(data, out, "optim.max_steps=2", "run.resume=false", "run.overwrite=true"))
    assert sorted(_csv(out / "tiny")) == [1, 2]  # the old run's rows are gone, not mixed in


def test_checkpoint_of_another_kind_is_refused(setup):
    data, out = setup
    vit = "model.overrides={depth: 1, embed_dim: 24, num_heads: 2, patch_size: 4}"
    train.finetune(tiny_config(data, out, "run.name=ft", "model.name=vit_tiny", vit, "finetune.epochs=1"))
    cfg = tiny_config(data, out, "run.name=ft", "model.name=vit_tiny", vit, "finetune.epochs=1")
    ckpt = (out / "ft" / "last.ckpt").read_bytes()
    with raises_exactly(train.CheckpointError, f"{out / 'ft' / 'last.ckpt'} is a finetune checkpoint, not pretrain; "
                        "use another run.name"):
        train.pretrain(cfg)
    assert (out / "ft" / "last.ckpt").read_bytes() == ckpt  # the fine-tuning's checkpoint is kept


def test_finetune_from_a_checkpoint_of_another_width(setup):
    data, out = setup
    train.pretrain(tiny_config(data, out, "run.name=pre", "optim.max_steps=1"))
    ckpt = train.load_checkpoint(out / "pre" / "last.ckpt")
    ckpt["model"] = {k: v[..., :1] if k.endswith("proj.weight") else v for k, v in ckpt["model"].items()}
    torch.save(ckpt, out / "bad.ckpt")
    with raises_exactly(train.CheckpointError, f"finetune.checkpoint {out / 'bad.ckpt'} does not fit AoTADMM: missing [], "
                        "shape mismatch ['stem.proj.weight', 'blocks.0.mssa.proj.weight']; use a checkpoint of the same "
                        "model family and width"):
        train.finetune(tiny_config(data, out, "run.name=ft", f"finetune.checkpoint={out / 'bad.ckpt'}"))
    assert not (out / "ft").exists()  # refused before the run folder was made


def test_distill_teacher_of_another_model(setup):
    data, out = setup
    vit = "model.overrides={depth: 1, embed_dim: 24, num_heads: 2, patch_size: 4}"
    train.finetune(tiny_config(data, out, "run.name=teacher", "model.name=vit_tiny", vit))
    with pytest.raises(train.CheckpointError, match="does not fit aot_tiny"):
        train.distill(tiny_config(data, out, "run.name=s", "model.name=vit_tiny_relu", vit, "distill.teacher_model=aot_tiny",
                                  f"distill.teacher={out / 'teacher' / 'last.ckpt'}"))


# ----------------------------------------------------------------------------- non-finite values

def test_nan_loss_without_any_checkpoint_says_so(setup, monkeypatch):
    data, out = setup
    from aot_lib.objectives.lejepa import LeJEPALoss

    real = LeJEPALoss.forward
    monkeypatch.setattr(LeJEPALoss, "forward", lambda self, y: real(self, y)._replace(loss=torch.tensor(float("nan"))))
    with pytest.raises(train.NonFiniteLossError, match="no checkpoint had been written yet"):
        train.pretrain(tiny_config(data, out))
    assert not (out / "tiny" / "last.ckpt").exists()


def test_non_finite_gradient_is_skipped_and_weights_stay_finite(setup, monkeypatch):
    data, out = setup
    from aot_lib.training import loop

    calls = {"n": 0}
    real = loop.grad_norm

    def poisoned(module):
        calls["n"] += 1
        if calls["n"] == 2:  # step 2's gradient is NaN
            next(p for p in module.parameters() if p.grad is not None).grad.fill_(float("nan"))
        return real(module)

    monkeypatch.setattr(loop, "grad_norm", poisoned)
    result = train.pretrain(tiny_config(data, out))
    assert result["step"] == 4 and result["skipped_steps"] == 1
    ckpt = train.load_checkpoint(out / "tiny" / "last.ckpt")
    assert all(torch.isfinite(v).all() for v in ckpt["model"].values() if v.is_floating_point())


def test_gradient_never_finite_stops(setup, monkeypatch):
    data, out = setup
    from aot_lib.training import loop

    monkeypatch.setattr(loop, "grad_norm", lambda module: torch.tensor(float("inf")))
    with pytest.raises(train.NonFiniteLossError, match="gradient was not finite for 2 steps in a row"):
        train.pretrain(tiny_config(data, out, "optim.max_skipped_steps=1"))


def test_non_finite_weights_are_never_saved(setup, tmp_path):
    from lightning_fabric import Fabric

    from aot_lib.training.runs import save_checkpoint

    good = tmp_path / "last.ckpt"
    good.write_bytes(b"previous")
    model = torch.nn.Linear(2, 2)
    with torch.no_grad():
        model.weight[0, 0] = float("inf")
    with pytest.raises(train.CheckpointError, match="non-finite values in 'weight'.*previous checkpoint .* is kept"):
        save_checkpoint(Fabric(accelerator="cpu", devices=1), good, {"model": model})
    assert good.read_bytes() == b"previous"


# ----------------------------------------------------------------------------- signals, crashes, concurrency

@pytest.mark.parametrize("how", ["ctrl_c", "sigterm"])
def test_a_stop_saves_and_resumes_to_the_uninterrupted_trajectory(setup, monkeypatch, how):
    """Ctrl-C, or `kill` (SIGTERM), during step 4: a checkpoint at step 3, the status says which ("interrupted at step
    3", or "stopped at step 3 (SIGTERM)": issue 54, it stayed "running"), and the resumed run equals the
    uninterrupted one. The loop's SIGTERM handler is taken down again."""
    import os
    import signal

    data, out = setup
    common = ["optim.max_steps=6", "run.ckpt_every=100"]
    train.pretrain(tiny_config(data, out, "run.name=full", *common))
    from aot_lib.objectives.lejepa import LeJEPALoss

    calls = {"n": 0}
    real = LeJEPALoss.forward

    def stop(self, y):
        calls["n"] += 1
        if calls["n"] == 4:  # during step 4 (index 3): steps 1-3 are done
            if how == "ctrl_c":
                raise KeyboardInterrupt
            os.kill(os.getpid(), signal.SIGTERM)
        return real(self, y)

    monkeypatch.setattr(LeJEPALoss, "forward", stop)
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt if how == "ctrl_c" else train.RunStopped):
        train.pretrain(tiny_config(data, out, "run.name=part", *common))
    assert signal.getsignal(signal.SIGTERM) is previous
    assert train.load_checkpoint(out / "part" / "last.ckpt")["step"] == 3
    assert json.loads((out / "part" / "run.json").read_text())["status"] == (
        "interrupted at step 3" if how == "ctrl_c" else "stopped at step 3 (SIGTERM)")
    monkeypatch.setattr(LeJEPALoss, "forward", real)
    train.pretrain(tiny_config(data, out, "run.name=part", *common))
    a, b = _csv(out / "full"), _csv(out / "part")
    assert sorted(b) == list(range(1, 7))
    for step in a:  # same data, views and weights: equal up to float32 run-to-run determinism
        assert b[step] == pytest.approx(a[step], rel=1e-6, abs=1e-7), step


def test_cli_sigterm_exits_143_and_says_stopped(monkeypatch, capsys):
    import aot_lib.training.config
    from aot_lib.training.runs import RunStopped

    def stop(*a, **k):
        raise RunStopped("SIGTERM")

    monkeypatch.setattr(aot_lib.training.config, "load_config", stop)
    assert cli(["show-config"]) == 143
    assert capsys.readouterr().err == ("aot show-config: stopped by SIGTERM (a checkpoint was saved where possible; "
                                       "run the same command to resume)\n")


def test_a_long_run_says_how_long_before_it_goes_on():
    """Steps x the measured step time over an hour is one line; an hour or less says nothing."""
    from aot_lib.training.loop import LONG_RUN_SECONDS, long_run_notice

    assert long_run_notice("pretrain", "x", 3600, LONG_RUN_SECONDS / 3600) is None
    assert long_run_notice("pretrain", "tiny", 155_997, 13.0) == (
        "pretrain tiny: 155,997 steps left at 13.00 s each (measured here) is about 23.5 days on this machine; "
        "Ctrl-C or SIGTERM stops it with a checkpoint (run again to resume), optim.max_steps or a configs/cpu/ config "
        "is shorter")
    assert long_run_notice("finetune", "ft", 4000, 2.0).startswith(
        "finetune ft: 4,000 steps left at 2.00 s each (measured here) is about 2.2 hours on this machine;")


def test_the_loop_prints_the_notice_after_its_first_steps_when_the_run_is_long(setup, monkeypatch, capsys):
    """Timed on steps 2-4 (the first carries compilation), printed once, before step 5."""
    import aot_lib.training.loop as loop

    data, out = setup
    monkeypatch.setattr(loop, "LONG_RUN_SECONDS", 0.0)  # every run is "long": the line must appear
    train.pretrain(tiny_config(data, out, "optim.max_steps=6"))  # progress off: said all the same
    said = [ln for ln in capsys.readouterr().err.splitlines() if "steps left at" in ln]
    assert len(said) == 1 and said[0].startswith("pretrain tiny: 2 steps left at "), said


def test_crash_leaves_an_inspectable_run_json(setup, monkeypatch):
    data, out = setup
    from aot_lib.objectives.lejepa import LeJEPALoss

    calls = {"n": 0}
    real = LeJEPALoss.forward

    def crash(self, y):
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("out of memory (simulated)")
        return real(self, y)

    monkeypatch.setattr(LeJEPALoss, "forward", crash)
    with pytest.raises(RuntimeError, match="simulated"):
        train.pretrain(tiny_config(data, out, "optim.max_steps=6"))
    record = json.loads((out / "tiny" / "run.json").read_text())
    assert record["status"].startswith("failed: RuntimeError") and record["step"] == 2 and record["commit"]
    assert sorted(_csv(out / "tiny")) == [1, 2, 3]  # the rows logged before the crash are merged


def test_second_launch_of_a_running_run_is_refused(setup):
    from filelock import FileLock

    data, out = setup
    (out / "tiny").mkdir(parents=True)
    with FileLock(str(out / "tiny" / ".lock")):
        with pytest.raises(train.RunLockedError, match="in use by another launch"):
            train.pretrain(tiny_config(data, out))
    assert not (out / "tiny" / "config.yaml").exists()
    train.pretrain(tiny_config(data, out, "optim.max_steps=1"))  # free again once the other launch ends


def test_atomic_write_keeps_the_old_file_on_error(tmp_path):
    from aot_lib.training.runs import atomic_write

    target = tmp_path / "metrics.json"
    target.write_text("old")

    def fail(tmp):
        tmp.write_text("half")
        raise OSError("disk full (simulated)")

    # an OS error while writing is one line: what failed, where, that the previous file is intact, the fix
    with raises_exactly(OSError, f"writing the file {target} failed: disk full (simulated) (OSError); the previous "
                                 "metrics.json is intact. Fix that, or write it to another folder; then run the same "
                                 "command again"):
        atomic_write(target, fail)
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["metrics.json"]


# ----------------------------------------------------------------------------- caches and records

def test_probe_features_follow_the_checkpoint_and_the_data(setup, tmp_path):
    data, out = setup
    cfg = tiny_config(data, out, "optim.max_steps=2")
    train.pretrain(cfg)
    train.probe(cfg)
    assert len(list((out / "tiny").glob("features-*.pt"))) == 1
    other = make_imagefolder(tmp_path / "other", classes=("a", "b", "c"), seed=1)
    r = train.probe(tiny_config(other, out, "optim.max_steps=2"), checkpoint=out / "tiny" / "last.ckpt")
    assert r["test_images"] == 24  # the other data set's features, not the cached ones
    assert len(list((out / "tiny").glob("features-*.pt"))) == 2
    train.pretrain(tiny_config(data, out, "optim.max_steps=2", "run.resume=false", "run.overwrite=true", "run.seed=3"))
    train.probe(tiny_config(data, out, "optim.max_steps=2", "run.seed=3"))
    assert len(list((out / "tiny").glob("features-*.pt"))) == 1  # overwrite removed the old caches; a new key


def test_record_refuses_unfinished_and_dirty_runs(setup):
    data, out = setup
    train.pretrain(tiny_config(data, out, "optim.max_steps=4", "run.stop_after=2"))
    with raises_exactly(train.CheckpointError, f"run {out / 'tiny'} is 'paused at step 2', not finished; finish it (run it "
                        "again to resume) before recording it"):
        train.record_run(out / "tiny", out / "rec")
    train.pretrain(tiny_config(data, out, "optim.max_steps=4"))
    record = json.loads((out / "tiny" / "run.json").read_text())
    record["commit"] = "abc+dirty"
    (out / "tiny" / "run.json").write_text(json.dumps(record))
    with pytest.raises(train.CheckpointError, match="local changes"):
        train.record_run(out / "tiny", out / "rec")
    assert {p.name for p in train.record_run(out / "tiny", out / "rec", allow_dirty=True)} >= {"run.json", "metrics.json"}


def test_linear_probe_rejects_misaligned_labels():
    with raises_exactly(ValueError, "features and labels differ in length: train 4 vs 3, test 2 vs 2"):
        train.linear_probe(torch.zeros(4, 2), torch.zeros(3, dtype=torch.long), torch.zeros(2, 2),
                           torch.zeros(2, dtype=torch.long))
