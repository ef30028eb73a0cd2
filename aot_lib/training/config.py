"""Run configuration: one table of keys (each with its default, type, range and comment), YAML files,
``key=value`` overrides.

A YAML file may start from another with ``inherit: other.yaml`` (relative to the file). Every key
must exist in :data:`DEFAULTS`; an unknown key is an error that suggests the closest known one.
``model.overrides`` is free-form: it is passed to :func:`aot_lib.create_model` as keyword
arguments (``embed_dim``, ``depth``, ``num_heads``, ``eta`` ...).

:data:`DEFAULTS` (the nested defaults) and :data:`SCHEMA` (``section.key`` -> what the value may be) are both
read off the one table :data:`_KEYS`, so a key is written once.
"""
from __future__ import annotations

import copy
import difflib
import os
from pathlib import Path
from typing import Any

import yaml

from ..config_format import config_stage, flatten  # noqa: F401  (they live with the config format)
from ..data.augment import MultiCropConfig
from ..probe_grid import check_extension
from .config_spec import ConfigError, _Free, _Spec, _bool, _choice, _int, _num, _prob, _str  # the key table's shorthands

__all__ = ["DEFAULTS", "SCHEMA", "load_config", "config_stage", "apply_overrides", "validate_config", "ConfigError", "flatten",
           "dump_config", "describe_keys"]



def _views(specs: dict[str, _Spec]) -> dict[str, _Spec]:
    """The ``views`` section: its defaults are :class:`~aot_lib.data.augment.MultiCropConfig`'s (their one
    source); ``ratio`` and ``blur_sigma`` are not config keys."""
    defaults = {k: v for k, v in MultiCropConfig.defaults_dict().items() if k not in ("ratio", "blur_sigma")}
    assert list(specs) == list(defaults), "the views keys follow MultiCropConfig's fields"
    for k, spec in specs.items():
        spec.default = defaults[k]
    return specs


# ----------------------------------------------------------------------------- the keys

# Every key once: its default (the paper's CIFAR pretraining setting, Sec. Experimental Setup, unless noted),
# its type and range, and why it is what it is.
_KEYS: dict[str, Any] = {
    "description": _Spec("text", nullable=True, default=""),
    "run": {
        "name": _Spec("name", example="my_run", default=None),  # default: <model>_<dataset>
        "out_dir": _str("runs", example="runs"),
        "seed": _int(0, 0, example="0"),
        "ckpt_every": _int(500, 1, example="500"),  # steps
        "log_every": _int(10, 1, example="10"),  # steps
        "resume": _bool(True),  # continue from <run dir>/last.ckpt when it exists
        "overwrite": _bool(False),  # with resume=false: replace an existing run folder's results (never implied)
        "stop_after": _int(None, 1, nullable=True, example="100"),  # stop (with a checkpoint) after this many steps
        # in this launch: time-sliced jobs
        "progress": _bool(True),
    },
    "model": {
        "name": _str("aot_admm_tiny"),  # checked against the registry, with the overrides, in validate_config
        "overrides": _Free({}),
        # modules imported before the model is built, so a family registered in the user's own code can be named
        # here (aot --import MODULE adds one); recorded in the run's config, so probing or resuming it imports them too
        "imports": _Spec("modules", default=[], example="[mypkg.models]"),
        # regional torch.compile of the encoder's layers (aot_lib.models.compile) for pretraining and fine-tuning:
        # true | false | auto. auto = on a GPU, off on the CPU, where it is not reliably faster than eager
        # (AoT-ADMM, median step of 3 runs: 1.23 vs 1.00 s at Tiny, 0.96 vs 0.99 s at width 192:
        # results/benchmarks/families_run*.json) and compiling costs 6-25 s per family
        "compile": _Spec("switch", default="auto"),
    },
    "data": {
        # litdata chunks from `aot convert` for stream
        "name": _choice("cifar10", "cifar10", "cifar100", "imagefolder", "stream"),
        # default: $AOT_DATA, else ~/.cache/aot_lib/data; a relative root is also looked for under $AOT_DATA
        # (aot_lib.data.datasets.data_root, for every data.name; for stream: the folder `aot convert SRC DEST` wrote)
        "root": _str(None, nullable=True),
        "download": _bool(False),  # torchvision download of CIFAR (online machines only)
        "image_size": _int(None, 1, nullable=True),  # stored resolution; default: native for CIFAR, 160 for imagefolder
        "train_subset": _int(None, 1, nullable=True),  # use only the first n training images (per class-balanced order)
        "test_subset": _int(None, 1, nullable=True),
        # data.name=stream only (aot_lib.data.streaming): loader workers per process (null: this machine's cores),
        # working-image side (null: no global view upsampled), crop|squash, decode device (null: in the workers)
        "stream_workers": _int(None, 0, nullable=True), "stream_working_size": _int(None, 8, nullable=True),
        "stream_fit": _choice("crop", "crop", "squash"), "stream_decode_device": _str(None, nullable=True),
    },
    "views": _views({
        "n_global": _int(None, 1), "n_local": _int(None, 0), "global_size": _int(None, 1), "local_size": _int(None, 1),
        "global_scale": _Spec("range"), "local_scale": _Spec("range"), "flip_p": _prob(), "jitter_p": _prob(),
        "brightness": _num(None, 0), "contrast": _num(None, 0), "saturation": _num(None, 0), "hue": _num(None, 0, 0.5),
        "grayscale_p": _prob(), "solarize_p": _prob(), "blur_p": _prob(),
    }),
    "projector": {"hidden_dim": _int(2048, 1), "out_dim": _int(128, 1), "num_layers": _int(3, 1)},
    "loss": {
        "lejepa_lambda": _num(0.05, 0, 1, hi_open=True, example="0.05"), "num_slices": _int(1024, 1, example="1024"),
        "t_max": _num(3.0, 0, lo_open=True), "n_points": _int(17, 2),
        "sigreg_sample": _choice("per_view", "per_view", "pooled"),
        "sigreg_normalize": _bool(False),  # Appendix A's centring + tr(Sigma) = d before SIGReg
    },
    "optim": {
        "batch_size": _int(256, 1, example="256"), "epochs": _int(800, 1, example="800"),
        "max_steps": _int(None, 1, nullable=True, example="1000"), "lr": _num(5e-4, 0, lo_open=True, example="5e-4"),
        "weight_decay": _num(5e-2, 0), "warmup_epochs": _num(10, 0), "min_lr_ratio": _num(0.0, 0, 1),
        "grad_clip": _num(None, 0, lo_open=True, nullable=True),
        "max_skipped_steps": _int(10, 0),  # consecutive steps with a non-finite gradient skipped before stopping
    },
    "fabric": {
        "accelerator": _choice("auto", "auto", "cpu", "cuda", "gpu", "mps"), "devices": _int(1, 1),
        "num_nodes": _int(1, 1), "strategy": _str("auto"),
        "precision": _choice("auto", "auto", "32-true", "32", "bf16-mixed", "bf16-true", "16-mixed", "64-true"),
    },
    "probe": {
        "protocol": _choice("quick", "quick", "standard"), "epochs": _int(100, 1),
        # quick protocol: a number, or a list (a grid chosen on a validation split of the training set).
        # The grid brackets the best lr of the recorded encoders (3e-3 was the old grid's top edge in 17
        # of 19); weight decay 0: the probe underfits (train ~ val accuracy), and 5e-4 changed no score
        "lr": _Spec("grid", 0, lo_open=True, default=[1e-3, 3e-3, 1e-2]), "weight_decay": _Spec("grid", 0, default=0.0),
        # rates tried one at a time, outward, while the pick sits at that end of the grid (null: none; on the
        # validation split, before the test split is read): aot_lib.probe_grid
        "lr_below": _Spec("grid", 0, lo_open=True, default=None, nullable=True),
        "lr_above": _Spec("grid", 0, lo_open=True, default=None, nullable=True),
        "val_fraction": _num(0.1, 0, 1, lo_open=True, hi_open=True), "batch_size": _int(1024, 1),
        "test": _bool(True),  # false: read no test image; report validation scores only (sweeps)
        # standard protocol (SGD on augmented images)
        "standard_lr": _num(0.1, 0, lo_open=True), "standard_batch_size": _int(256, 1),
        "knn_k": _int(20, 1), "knn_t": _num(0.07, 0, lo_open=True),
    },
    "finetune": {
        "checkpoint": _str(None, nullable=True), "image_size": _int(None, 1, nullable=True), "epochs": _int(100, 1),
        "lr": _num(1e-4, 0, lo_open=True), "weight_decay": _num(5e-2, 0), "batch_size": _int(256, 1),
        "warmup_epochs": _num(5, 0), "label_smoothing": _num(0.1, 0, 1, hi_open=True),
        # the usual fine-tuning regularisers, off by default (see aot_lib.training.supervised)
        "mixup": _num(0.0, 0), "cutmix": _num(0.0, 0), "layer_decay": _num(1.0, 0, 1, lo_open=True),
        "randaugment": _bool(False),
    },
    # training-time monitors (aot_lib.training.monitors), logged every `every` steps (0: off) beside the loss;
    # theorem1 and audit use a fixed batch of the first `images` training images at the global view size;
    # knn (off unless asked: it reads labels) is a k-NN learning curve on the probe's validation split
    # (knn_val images of it, voted on by knn_bank labelled images of the rest; probe.knn_k, probe.knn_t)
    "monitor": {
        "every": _int(0, 0, example="100"), "images": _int(256, 2, example="256"), "rankme": _bool(True),
        "theorem1": _bool(True), "audit": _bool(True), "eps": _num(0.5, 0, lo_open=True, example="0.5"),
        "knn": _bool(False), "knn_bank": _int(10000, 1, example="10000"), "knn_val": _int(5000, 1, example="5000"),
    },
    "distill": {
        "teacher": _str(None, nullable=True), "teacher_model": _str("vit_tiny"),
        "alpha": _num(0.5, 0, 1),  # weight of the teacher's label (the paper: equal weights); 0: labels alone, no teacher
        "student_init": _str(None, nullable=True),  # checkpoint the student starts from (its head excluded); null: from scratch
        "epochs": _int(100, 1), "lr": _num(5e-4, 0, lo_open=True), "weight_decay": _num(5e-2, 0),
        "batch_size": _int(256, 1), "warmup_epochs": _num(5, 0),
    },
}


def _defaults(node: dict) -> dict:
    return {k: _defaults(v) if isinstance(v, dict) else copy.deepcopy(v.default) for k, v in node.items()}


def _specs(node: dict, prefix: str = "") -> dict[str, _Spec]:
    out = {}
    for k, v in node.items():
        if isinstance(v, dict):
            out.update(_specs(v, f"{prefix}{k}."))
        elif isinstance(v, _Spec):
            out[f"{prefix}{k}"] = v
    return out


DEFAULTS: dict[str, Any] = _defaults(_KEYS)  # the nested defaults, a fresh copy of the table's
SCHEMA: dict[str, _Spec] = _specs(_KEYS)  # "section.key" -> its spec (model.overrides, free-form, has none)


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
    pc = cfg["probe"]
    for key in ("lr_below", "lr_above"):  # one rate or a list of them: a list, in the order they are tried
        if isinstance(pc.get(key), (int, float)):
            pc[key] = [pc[key]]
    if pc.get("lr_below") or pc.get("lr_above"):
        try:
            check_extension(pc["lr"] if isinstance(pc["lr"], list) else [pc["lr"]], pc["lr_below"] or (),
                            pc["lr_above"] or ())
        except ValueError as e:
            raise ConfigError(str(e)) from None
    dc = cfg["data"]
    if dc["name"] == "stream":
        for key, ok in (("image_size", dc["image_size"] is None), ("download", not dc["download"]),
                        ("train_subset", dc["train_subset"] is None)):
            if not ok:
                raise ConfigError(f"data.{key}={dc[key]!r} does not apply to data.name=stream")
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
        model = _check_model(cfg["model"]["name"], cfg["model"]["overrides"], v["global_size"],
                             cfg["model"].get("imports", ()))
        if mc["every"] and mc["audit"] and not all(hasattr(b, "mssa") for b in model.blocks):
            raise ConfigError(f"monitor.audit measures MSSA layers (AoT-ADMM, CRATE, AoT); {cfg['model']['name']} has "
                              "none: set monitor.audit=false")
    return cfg


def _check_model(name: str, overrides: dict, img_size: int, imports: list | tuple = ()):
    """Build the model once on the meta device: an unknown name, a module that cannot be imported or a bad override
    fails here, in one line, before any run folder is touched."""
    import torch

    from ..models.registry import create_model, import_model_modules

    try:
        import_model_modules(imports)
    except ImportError as e:
        raise ConfigError(str(e)) from None

    kw = {"img_size": img_size, **overrides}
    try:
        with torch.device("meta"):
            return create_model(name, **kw)
    except TypeError as e:  # an argument the model does not take
        raise ConfigError(f"model.overrides for {name}: {e}. Remove it, or see `aot models` / the model's docstring "
                          "for its arguments") from None
    except ValueError as e:
        raise ConfigError(f"model {name} with overrides {overrides}: {e}") from None


def _unknown(key: str) -> ConfigError:
    known = list(flatten(DEFAULTS))
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    return ConfigError(f"unknown config key {key!r}.{hint} `aot keys` lists every key (`aot keys {key.split('.')[0]}` "
                       "those of a section).")


def describe_keys(pattern: str = "") -> list[str]:
    """One line per config key that contains ``pattern``: the key, its default and what it may be (``aot keys``)."""
    defaults = flatten(DEFAULTS)
    return [f"{key} = {defaults.get(key)!r}  # {SCHEMA[key].describe() if key in SCHEMA else 'create_model arguments'}"
            for key in defaults if pattern in key]


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
    from ..files import DuplicateKeyError, load_yaml

    try:
        data = load_yaml(path.read_text(), path) or {}
    except DuplicateKeyError as e:
        raise ConfigError(f"config file {e}: one value per key") from None
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
    """Apply ``section.key=value`` strings (values parsed as YAML: ``optim.lr=1e-3``, ``model.overrides.depth=6``);
    a later one wins (a caller layering its own on top of others' means it; a command line is checked first by
    :func:`refuse_repeated`)."""
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


def refuse_repeated(overrides: list[str]) -> None:
    """A command line that gives one key twice says two things and only the last would count: refused."""
    given: dict[str, str] = {}
    for item in overrides:
        key = item.split("=", 1)[0].strip()
        if key in given:
            raise ConfigError(f"{key} is given twice ({given[key]!r} and {item!r}): give it once")
        given[key] = item


def load_config(path: str | os.PathLike | None = None, overrides: list[str] | None = None) -> dict:
    """Defaults, updated by the YAML file (and what it inherits), then by the overrides."""
    cfg = copy.deepcopy(DEFAULTS)
    if path is not None:
        _merge(cfg, _read_yaml(Path(path)))
    apply_overrides(cfg, list(overrides or []))
    if cfg["run"]["name"] is None:
        cfg["run"]["name"] = f"{cfg['model']['name']}_{cfg['data']['name']}"
    return validate_config(cfg)


def dump_config(cfg: dict) -> str:
    return yaml.safe_dump(cfg, sort_keys=False)
