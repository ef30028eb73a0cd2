"""What a run's config file means, apart from the trainer that reads it: the flat ``section.key`` view of a
nested config and the model a config builds (its image size stated). Pure Python, no torch: the trainer
(:mod:`aot_lib.training.config`, :mod:`aot_lib.training.runs`) and the evidence reader (:mod:`aot_lib.evidence`,
which reads recorded ``config.yaml`` files) both use these, so the two can never read one config differently.

A base module: imports nothing from ``aot_lib`` but :mod:`aot_lib.files`.
"""
from __future__ import annotations

import os
from typing import Any

__all__ = ["flatten", "built_model", "config_stage"]


def flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    """``{"optim": {"lr": 1e-3}}`` -> ``{"optim.lr": 1e-3}``; ``model.overrides`` stays one value (free-form)."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and key != "model.overrides":
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def built_model(cfg: dict) -> dict:
    """The ``model`` section of config ``cfg`` with the image size its network is built at stated in
    ``overrides.img_size``: the config's own, else ``views.global_size`` (:func:`aot_lib.training.builders.build_encoder`'s
    rule). Two configs build the same network when these agree, whether or not they wrote the size out."""
    return {**cfg["model"], "overrides": {"img_size": cfg["views"]["global_size"], **cfg["model"]["overrides"]}}


def config_stage(path: str | os.PathLike) -> str:
    """The command a config file is written for: ``distill`` or ``finetune`` when the file itself sets that
    section, else what the file it inherits from is written for (a seed variant of a distillation config is
    one too); ``pretrain`` when no file of the chain sets either (then ``aot probe`` reads the same file)."""
    from pathlib import Path

    from .files import load_yaml

    path = Path(path)
    own = load_yaml(path.read_text(), path) or {}
    if "distill" in own or "finetune" in own:
        return "distill" if "distill" in own else "finetune"
    return config_stage(path.parent / own["inherit"]) if own.get("inherit") else "pretrain"
