"""Run configuration: one nested schema with the paper's defaults, YAML files, ``key=value`` overrides.

A YAML file may start from another with ``inherit: other.yaml`` (relative to the file). Every key
must exist in :data:`DEFAULTS`; an unknown key is an error that suggests the closest known one.
``model.overrides`` is free-form: it is passed to :func:`aot_lib.create_model` as keyword
arguments (``embed_dim``, ``depth``, ``num_heads``, ``eta`` ...).
"""
from __future__ import annotations

import copy
import difflib
import os
from pathlib import Path
from typing import Any

import yaml

__all__ = ["DEFAULTS", "load_config", "apply_overrides", "ConfigError", "flatten", "dump_config"]


class ConfigError(ValueError):
    pass


# The paper's CIFAR pretraining setting (Sec. Experimental Setup) unless noted.
DEFAULTS: dict[str, Any] = {
    "description": "",
    "run": {
        "name": None,  # default: <model>_<dataset>
        "out_dir": "runs",
        "seed": 0,
        "ckpt_every": 500,  # steps
        "log_every": 10,  # steps
        "resume": True,  # continue from <run dir>/last.ckpt when it exists
        "stop_after": None,  # stop (with a checkpoint) after this many steps in this launch: time-sliced jobs
        "progress": True,
    },
    "model": {"name": "aot_admm_tiny", "overrides": {}},
    "data": {
        "name": "cifar10",  # cifar10 | cifar100 | imagefolder
        "root": None,  # default: $AOT_DATA, else ~/.cache/aot_lib/data
        "download": False,  # torchvision download of CIFAR (online machines only)
        "image_size": None,  # stored resolution; default: native for CIFAR, 160 for imagefolder
        "train_subset": None,  # use only the first n training images (per class-balanced order)
        "test_subset": None,
    },
    "views": {
        "n_global": 2, "n_local": 6, "global_size": 32, "local_size": 16,
        "global_scale": [0.3, 1.0], "local_scale": [0.05, 0.3],
        "flip_p": 0.5, "jitter_p": 0.8, "brightness": 0.4, "contrast": 0.4, "saturation": 0.2, "hue": 0.1,
        "grayscale_p": 0.2, "solarize_p": 0.2, "blur_p": 0.0,
    },
    "projector": {"hidden_dim": 2048, "out_dim": 128, "num_layers": 3},
    "loss": {"lejepa_lambda": 0.05, "num_slices": 1024, "t_max": 3.0, "n_points": 17},
    "optim": {
        "batch_size": 256, "epochs": 800, "max_steps": None, "lr": 5e-4, "weight_decay": 5e-2,
        "warmup_epochs": 10, "min_lr_ratio": 0.0, "grad_clip": None,
    },
    "fabric": {"accelerator": "auto", "devices": 1, "num_nodes": 1, "strategy": "auto", "precision": "auto"},
    "probe": {"epochs": 100, "lr": 1e-3, "weight_decay": 0.0, "batch_size": 1024, "knn_k": 20, "knn_t": 0.07},
    "finetune": {"checkpoint": None, "image_size": None, "epochs": 100, "lr": 1e-4, "weight_decay": 5e-2, "batch_size": 256,
                 "warmup_epochs": 5, "label_smoothing": 0.1},
    "distill": {"teacher": None, "teacher_model": "vit_tiny", "epochs": 100, "lr": 5e-4, "weight_decay": 5e-2,
                "batch_size": 256, "warmup_epochs": 5},
}


def flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and key != "model.overrides":
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _unknown(key: str) -> ConfigError:
    known = list(flatten(DEFAULTS))
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"unknown config key {key!r}.{hint} Known keys: {', '.join(known)}.")


def _coerce(v: Any) -> Any:
    """YAML 1.1 reads ``5e-4`` as a string; read numbers as numbers."""
    if isinstance(v, str):
        for cast in (int, float):
            try:
                return cast(v)
            except ValueError:
                pass
    if isinstance(v, list):
        return [_coerce(x) for x in v]
    return v


def _merge(base: dict, update: dict, prefix: str = "") -> dict:
    for k, v in update.items():
        key = f"{prefix}{k}"
        if key == "model.overrides":  # free-form keyword arguments of create_model
            if not isinstance(v, dict):
                raise ConfigError(f"config key {key!r} must be a mapping, got {v!r}")
            base[k].update({kk: _coerce(vv) for kk, vv in v.items()})
        elif k not in base:
            raise _unknown(key)
        elif isinstance(base[k], dict):
            if not isinstance(v, dict):
                raise ConfigError(f"config key {key!r} is a section; set its keys ({', '.join(base[k])})")
            _merge(base[k], v, key + ".")
        else:
            base[k] = _coerce(v)
    return base


def _read_yaml(path: Path, seen: tuple = ()) -> dict:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file {str(path)!r} not found; configs/ lists the shipped ones")
    if path.resolve() in seen:
        raise ConfigError(f"config inheritance loops through {path}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"config file {path} is not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping")
    parent = data.pop("inherit", None)
    if parent is None:
        return data
    merged = _read_yaml(path.parent / parent, seen + (path.resolve(),))
    return _deep_update(merged, data)


def _deep_update(a: dict, b: dict) -> dict:
    for k, v in b.items():
        a[k] = _deep_update(a.get(k, {}), v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
    return a


def apply_overrides(cfg: dict, overrides: list[str]) -> dict:
    """Apply ``section.key=value`` strings (values parsed as YAML: ``optim.lr=1e-3``, ``model.overrides.depth=6``)."""
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like section.key=value")
        key, raw = item.split("=", 1)
        value = yaml.safe_load(raw) if raw != "" else None
        node: dict = {}
        cursor = node
        parts = key.strip().split(".")
        for p in parts[:-1]:
            cursor[p] = {}
            cursor = cursor[p]
        cursor[parts[-1]] = value
        _merge(cfg, node)
    return cfg


def load_config(path: str | os.PathLike | None = None, overrides: list[str] | None = None) -> dict:
    """Defaults, updated by the YAML file (and what it inherits), then by the overrides."""
    cfg = copy.deepcopy(DEFAULTS)
    if path is not None:
        _merge(cfg, _read_yaml(Path(path)))
    apply_overrides(cfg, list(overrides or []))
    if cfg["run"]["name"] is None:
        cfg["run"]["name"] = f"{cfg['model']['name']}_{cfg['data']['name']}"
    return cfg


def dump_config(cfg: dict) -> str:
    return yaml.safe_dump(cfg, sort_keys=False)
