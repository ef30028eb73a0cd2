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

from ..data.augment import MultiCropConfig

__all__ = ["DEFAULTS", "SCHEMA", "load_config", "config_stage", "apply_overrides", "validate_config", "ConfigError", "flatten",
           "dump_config"]


class ConfigError(ValueError):
    """A config value that cannot be right; the message names the key and the fix."""


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
        "overwrite": False,  # with resume=false: replace an existing run folder's results (never implied)
        "stop_after": None,  # stop (with a checkpoint) after this many steps in this launch: time-sliced jobs
        "progress": True,
    },
    "model": {"name": "aot_admm_tiny", "overrides": {},
              # regional torch.compile of the encoder's layers (aot_lib.models.compile) for pretraining and fine-tuning:
              # true | false | auto. auto = on a GPU, off on the CPU, where it is not reliably faster than eager
              # (AoT-ADMM, median step of 3 runs: 1.23 vs 1.00 s at Tiny, 0.96 vs 0.99 s at width 192:
              # results/benchmarks/families_run*.json) and compiling costs 6-25 s per family
              "compile": "auto"},
    "data": {
        "name": "cifar10",  # cifar10 | cifar100 | imagefolder | stream (litdata chunks from `aot convert`)
        "root": None,  # default: $AOT_DATA, else ~/.cache/aot_lib/data
        "download": False,  # torchvision download of CIFAR (online machines only)
        "image_size": None,  # stored resolution; default: native for CIFAR, 160 for imagefolder
        "train_subset": None,  # use only the first n training images (per class-balanced order)
        "test_subset": None,
        # data.name=stream only (aot_lib.data.streaming): loader workers per process (null: this machine's cores),
        # working-image side (null: no global view upsampled), crop|squash, decode device (null: in the workers)
        "stream_workers": None, "stream_working_size": None, "stream_fit": "crop", "stream_decode_device": None,
    },
    "views": {k: v for k, v in MultiCropConfig.defaults_dict().items() if k not in ("ratio", "blur_sigma")},
    "projector": {"hidden_dim": 2048, "out_dim": 128, "num_layers": 3},
    "loss": {"lejepa_lambda": 0.05, "num_slices": 1024, "t_max": 3.0, "n_points": 17, "sigreg_sample": "per_view",
             "sigreg_normalize": False},  # Appendix A's centring + tr(Sigma) = d before SIGReg
    "optim": {
        "batch_size": 256, "epochs": 800, "max_steps": None, "lr": 5e-4, "weight_decay": 5e-2,
        "warmup_epochs": 10, "min_lr_ratio": 0.0, "grad_clip": None,
        "max_skipped_steps": 10,  # consecutive steps with a non-finite gradient that are skipped before stopping
    },
    "fabric": {"accelerator": "auto", "devices": 1, "num_nodes": 1, "strategy": "auto", "precision": "auto"},
    "probe": {"protocol": "quick", "epochs": 100,
              # quick protocol: a number, or a list (a grid chosen on a validation split of the training set).
              # The grid brackets the best lr of the recorded encoders (3e-3 was the old grid's top edge in 17
              # of 19); weight decay 0: the probe underfits (train ~ val accuracy), and 5e-4 changed no score
              "lr": [1e-3, 3e-3, 1e-2], "weight_decay": 0.0, "val_fraction": 0.1, "batch_size": 1024,
              "test": True,  # false: read no test image; report validation scores only (sweeps)
              "standard_lr": 0.1, "standard_batch_size": 256,  # standard protocol (SGD on augmented images)
              "knn_k": 20, "knn_t": 0.07},
    "finetune": {"checkpoint": None, "image_size": None, "epochs": 100, "lr": 1e-4, "weight_decay": 5e-2, "batch_size": 256,
                 "warmup_epochs": 5, "label_smoothing": 0.1,
                 # the usual fine-tuning regularisers, off by default (see aot_lib.training.supervised)
                 "mixup": 0.0, "cutmix": 0.0, "layer_decay": 1.0, "randaugment": False},
    # training-time monitors (aot_lib.training.monitors), logged every `every` steps (0: off) beside the loss;
    # theorem1 and audit use a fixed batch of the first `images` training images at the global view size;
    # knn (off unless asked: it reads labels) is a k-NN learning curve on the probe's validation split
    # (knn_val images of it, voted on by knn_bank labelled images of the rest; probe.knn_k, probe.knn_t)
    "monitor": {"every": 0, "images": 256, "rankme": True, "theorem1": True, "audit": True, "eps": 0.5,
                "knn": False, "knn_bank": 10000, "knn_val": 5000},
    "distill": {"teacher": None, "teacher_model": "vit_tiny",
                "alpha": 0.5,  # weight of the teacher's label (the paper: equal weights); 0: labels alone, no teacher
                "student_init": None,  # checkpoint the student starts from (its head excluded); null: from scratch
                "epochs": 100, "lr": 5e-4, "weight_decay": 5e-2,
                "batch_size": 256, "warmup_epochs": 5},
}



# ----------------------------------------------------------------------------- types and ranges

class _Spec:
    """What one config value may be: a type, a range or a set of choices, and whether null is allowed."""

    def __init__(self, kind: str, lo=None, hi=None, *, lo_open: bool = False, hi_open: bool = False,
                 choices: tuple = (), nullable: bool = False, example: str = ""):
        self.kind, self.lo, self.hi, self.lo_open, self.hi_open = kind, lo, hi, lo_open, hi_open
        self.choices, self.nullable, self.example = choices, nullable, example

    def describe(self) -> str:
        if self.choices:
            what = "one of " + ", ".join(map(str, self.choices))
        else:
            what = {"int": "an integer", "float": "a number", "bool": "true or false", "switch": "true, false or auto", "str": "a non-empty string", "text": "a string",
                    "name": "one folder name (not empty, '.' or '..'; no '/', '\\' or control character)",
                    "prob": "a probability in [0, 1], or a list [first global, other globals, locals] of them",
                    "range": "a pair [low, high] with 0 < low <= high <= 1",
                    "grid": "a number or a list of numbers"}[self.kind]
            bounds = []
            if self.lo is not None:
                bounds.append(f"{'>' if self.lo_open else '>='} {self.lo}")
            if self.hi is not None:
                bounds.append(f"{'<' if self.hi_open else '<='} {self.hi}")
            if bounds:
                what += " " + " and ".join(bounds)
        return what + (" (or null)" if self.nullable else "")

    def check(self, key: str, v: Any) -> Any:
        if v is None:
            if self.nullable:
                return v
            raise self._error(key, v)
        if self.choices:
            if v not in self.choices:
                close = difflib.get_close_matches(str(v), [str(c) for c in self.choices], n=1)
                raise self._error(key, v, f" Did you mean {close[0]!r}?" if close else "")
            return v
        if self.kind == "bool":
            if not isinstance(v, bool):
                raise self._error(key, v)
            return v
        if self.kind == "switch":
            if not (isinstance(v, bool) or v == "auto"):
                raise self._error(key, v)
            return v
        if self.kind == "name":  # one path component, so <out_dir>/<name> stays inside out_dir
            if (not isinstance(v, str) or v in ("", ".", "..") or "/" in v or "\\" in v
                    or any(ord(c) < 32 or ord(c) == 127 for c in v)):
                raise self._error(key, v, " The run's folder is <run.out_dir>/<run.name>: to write it elsewhere, set "
                                          "run.out_dir.")
            return v
        if self.kind in ("str", "text"):  # "text" may be empty
            if not isinstance(v, str) or (self.kind == "str" and not v):
                raise self._error(key, v)
            return v
        if self.kind == "prob":
            items = v if isinstance(v, list) else [v]
            if isinstance(v, list) and len(v) != 3:
                raise self._error(key, v)
            for x in items:
                if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x <= 1:
                    raise self._error(key, v)
            return v
        if self.kind == "range":
            ok = (isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                                       for x in v) and 0 < v[0] <= v[1] <= 1)
            if not ok:
                raise self._error(key, v)
            return [float(x) for x in v]
        if self.kind == "grid":  # a number or a non-empty list of numbers, each in range
            items = v if isinstance(v, list) else [v]
            if not items:
                raise self._error(key, v)
            checked = [_Spec("float", self.lo, self.hi, lo_open=self.lo_open, hi_open=self.hi_open).check(key, x)
                       for x in items]
            return checked if isinstance(v, list) else checked[0]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self._error(key, v)
        if self.kind == "int":
            if isinstance(v, float) and not v.is_integer():
                raise self._error(key, v)
            v = int(v)
        else:
            v = float(v)
        if v != v or v in (float("inf"), float("-inf")):
            raise self._error(key, v)
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            raise self._error(key, v)
        if self.hi is not None and (v > self.hi or (self.hi_open and v == self.hi)):
            raise self._error(key, v)
        return v

    def _error(self, key: str, v: Any, hint: str = "") -> "ConfigError":
        example = f" (e.g. {key}={self.example})" if self.example else ""
        return ConfigError(f"{key} must be {self.describe()}, got {v!r}.{hint} Fix it in the config file or "
                           f"override it{example}.")


def _int(lo=None, hi=None, **kw):
    return _Spec("int", lo, hi, **kw)


def _num(lo=None, hi=None, **kw):
    return _Spec("float", lo, hi, **kw)


_BOOL, _STR = _Spec("bool"), _Spec("str")
_PROB = _Spec("prob")

# Every leaf of DEFAULTS has a spec; tests check that the two agree key by key.
SCHEMA: dict[str, _Spec] = {
    "description": _Spec("text", nullable=True),
    "run.name": _Spec("name", example="my_run"), "run.out_dir": _Spec("str", example="runs"),
    "run.seed": _int(0, example="0"), "run.ckpt_every": _int(1, example="500"), "run.log_every": _int(1, example="10"),
    "run.resume": _BOOL, "run.overwrite": _BOOL, "run.stop_after": _int(1, nullable=True, example="100"),
    "run.progress": _BOOL,
    "model.name": _STR, "model.compile": _Spec("switch"),  # checked against the registry, with the overrides, in validate_config
    "data.name": _Spec("str", choices=("cifar10", "cifar100", "imagefolder", "stream")),
    "data.stream_workers": _int(0, nullable=True), "data.stream_working_size": _int(8, nullable=True),
    "data.stream_fit": _Spec("str", choices=("crop", "squash")), "data.stream_decode_device": _Spec("str", nullable=True),
    "data.root": _Spec("str", nullable=True), "data.download": _BOOL,
    "data.image_size": _int(1, nullable=True), "data.train_subset": _int(1, nullable=True),
    "data.test_subset": _int(1, nullable=True),
    "views.n_global": _int(1), "views.n_local": _int(0), "views.global_size": _int(1), "views.local_size": _int(1),
    "views.global_scale": _Spec("range"), "views.local_scale": _Spec("range"),
    "views.flip_p": _PROB, "views.jitter_p": _PROB, "views.grayscale_p": _PROB, "views.solarize_p": _PROB,
    "views.blur_p": _PROB, "views.brightness": _num(0), "views.contrast": _num(0), "views.saturation": _num(0),
    "views.hue": _num(0, 0.5),
    "projector.hidden_dim": _int(1), "projector.out_dim": _int(1), "projector.num_layers": _int(1),
    "loss.lejepa_lambda": _num(0, 1, hi_open=True, example="0.05"), "loss.num_slices": _int(1, example="1024"),
    "loss.t_max": _num(0, lo_open=True), "loss.n_points": _int(2),
    "loss.sigreg_sample": _Spec("str", choices=("per_view", "pooled")), "loss.sigreg_normalize": _BOOL,
    "optim.batch_size": _int(1, example="256"), "optim.epochs": _int(1, example="800"),
    "optim.max_steps": _int(1, nullable=True, example="1000"), "optim.lr": _num(0, lo_open=True, example="5e-4"),
    "optim.weight_decay": _num(0), "optim.warmup_epochs": _num(0), "optim.min_lr_ratio": _num(0, 1),
    "optim.grad_clip": _num(0, lo_open=True, nullable=True), "optim.max_skipped_steps": _int(0),
    "fabric.accelerator": _Spec("str", choices=("auto", "cpu", "cuda", "gpu", "mps")),
    "fabric.devices": _int(1), "fabric.num_nodes": _int(1), "fabric.strategy": _STR,
    "fabric.precision": _Spec("str", choices=("auto", "32-true", "32", "bf16-mixed", "bf16-true", "16-mixed", "64-true")),
    "probe.protocol": _Spec("str", choices=("quick", "standard")), "probe.epochs": _int(1),
    "probe.lr": _Spec("grid", 0, lo_open=True), "probe.weight_decay": _Spec("grid", 0),
    "probe.val_fraction": _num(0, 1, lo_open=True, hi_open=True), "probe.standard_lr": _num(0, lo_open=True),
    "probe.standard_batch_size": _int(1), "probe.batch_size": _int(1), "probe.knn_k": _int(1), "probe.knn_t": _num(0, lo_open=True),
    "probe.test": _BOOL,
    "finetune.checkpoint": _Spec("str", nullable=True), "finetune.image_size": _int(1, nullable=True),
    "finetune.epochs": _int(1), "finetune.lr": _num(0, lo_open=True), "finetune.weight_decay": _num(0),
    "finetune.batch_size": _int(1), "finetune.warmup_epochs": _num(0), "finetune.label_smoothing": _num(0, 1, hi_open=True),
    "finetune.mixup": _num(0), "finetune.cutmix": _num(0), "finetune.layer_decay": _num(0, 1, lo_open=True),
    "finetune.randaugment": _BOOL,
    "monitor.every": _int(0, example="100"), "monitor.images": _int(2, example="256"), "monitor.rankme": _BOOL,
    "monitor.theorem1": _BOOL, "monitor.audit": _BOOL, "monitor.eps": _num(0, lo_open=True, example="0.5"),
    "monitor.knn": _BOOL, "monitor.knn_bank": _int(1, example="10000"), "monitor.knn_val": _int(1, example="5000"),
    "distill.teacher": _Spec("str", nullable=True), "distill.student_init": _Spec("str", nullable=True),
    "distill.teacher_model": _STR, "distill.alpha": _num(0, 1), "distill.epochs": _int(1),
    "distill.lr": _num(0, lo_open=True), "distill.weight_decay": _num(0), "distill.batch_size": _int(1),
    "distill.warmup_epochs": _num(0),
}


def validate_config(cfg: dict, check_model: bool = True) -> dict:
    """Check every value against :data:`SCHEMA` (types, ranges, choices) and the model name and
    overrides against the registry; raise one :class:`ConfigError` that names the key and the fix.
    Numbers are normalised in place (``3.0`` -> ``3`` for integer keys)."""
    flat = flatten(cfg)
    for key, value in flat.items():
        if key == "model.overrides":
            continue
        spec = SCHEMA.get(key)
        if spec is None:
            raise _unknown(key)
        section, _, leaf = key.rpartition(".")
        node = cfg
        for part in section.split(".") if section else []:
            node = node[part]
        node[leaf] = spec.check(key, value)
    dc = cfg["data"]
    if dc["name"] == "stream":
        for key, ok in (("root", dc["root"] is not None), ("image_size", dc["image_size"] is None),
                        ("download", not dc["download"]), ("train_subset", dc["train_subset"] is None)):
            if not ok:
                raise ConfigError(f"data.{key}={dc[key]!r} does not apply to data.name=stream" if key != "root" else
                                  "data.name=stream needs data.root: the folder `aot convert SRC DEST` wrote")
    mc = cfg["monitor"]
    if mc["every"] and (mc["theorem1"] or mc["audit"]) and dc["name"] == "stream":
        raise ConfigError("monitor.theorem1 and monitor.audit use a fixed batch of in-memory images; with "
                          "data.name=stream set monitor.theorem1=false monitor.audit=false (monitor.rankme works)")
    if mc["every"] and mc["knn"] and dc["name"] == "stream":
        raise ConfigError("monitor.knn uses labelled in-memory training images; with data.name=stream set monitor.knn=false")
    if not isinstance(cfg["model"]["overrides"], dict):
        raise ConfigError(f"model.overrides must be a mapping of create_model arguments, got {cfg['model']['overrides']!r}")
    v = cfg["views"]
    for size_key in ("global_size", "local_size"):
        patch = cfg["model"]["overrides"].get("patch_size")
        if patch and v[size_key] % patch:
            raise ConfigError(f"views.{size_key}={v[size_key]} is not divisible by the model's patch_size={patch}; "
                              f"choose a multiple of {patch}")
    if check_model:
        model = _check_model(cfg["model"]["name"], cfg["model"]["overrides"], v["global_size"])
        if mc["every"] and mc["audit"] and not all(hasattr(b, "mssa") for b in model.blocks):
            raise ConfigError(f"monitor.audit measures MSSA layers (AoT-ADMM, CRATE, AoT); {cfg['model']['name']} has "
                              "none: set monitor.audit=false")
    return cfg


def _check_model(name: str, overrides: dict, img_size: int):
    """Build the model once on the meta device: an unknown name or a bad override fails here, in one line,
    before any run folder is touched."""
    import torch

    from ..models.registry import create_model

    kw = {"img_size": img_size, **overrides}
    try:
        with torch.device("meta"):
            return create_model(name, **kw)
    except TypeError as e:  # an argument the model does not take
        raise ConfigError(f"model.overrides for {name}: {e}. Remove it, or see `aot models` / the model's docstring "
                          "for its arguments") from None
    except ValueError as e:
        raise ConfigError(f"model {name} with overrides {overrides}: {e}") from None


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
        try:
            value = yaml.safe_load(raw) if raw != "" else None
        except yaml.YAMLError as e:
            problem = str(getattr(e, "problem", None) or e).splitlines()[0]
            raise ConfigError(f"override {item!r}: the value is not valid YAML ({problem}); give a number, a word, "
                              "a list [a, b] or a mapping {k: v}") from None
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
    return validate_config(cfg)


def config_stage(path: str | os.PathLike) -> str:
    """The command a config file is written for: ``distill`` or ``finetune`` when the file itself sets that
    section, else what the file it inherits from is written for (a seed variant of a distillation config is
    one too); ``pretrain`` when no file of the chain sets either (then ``aot probe`` reads the same file)."""
    path = Path(path)
    own = yaml.safe_load(path.read_text()) or {}
    if "distill" in own or "finetune" in own:
        return "distill" if "distill" in own else "finetune"
    return config_stage(path.parent / own["inherit"]) if own.get("inherit") else "pretrain"


def dump_config(cfg: dict) -> str:
    return yaml.safe_dump(cfg, sort_keys=False)
