"""A timm-style model registry: ``@register_model`` on a factory, ``create_model(name, **overrides)``."""
from __future__ import annotations

import difflib
from typing import Callable

from torch import nn

__all__ = ["register_model", "create_model", "list_models", "is_model"]

_MODELS: dict[str, Callable[..., nn.Module]] = {}


def register_model(fn: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
    """Register a factory under its function name (``aot_admm_tiny`` ...)."""
    if fn.__name__ in _MODELS:
        raise ValueError(f"model {fn.__name__!r} is registered twice")
    _MODELS[fn.__name__] = fn
    return fn


def list_models(pattern: str = "") -> list[str]:
    """Sorted registered names that contain ``pattern``."""
    return sorted(n for n in _MODELS if pattern in n)


def is_model(name: str) -> bool:
    return name in _MODELS


def create_model(name: str, pretrained: str | None = None, **overrides) -> nn.Module:
    """Build a registered model; keyword arguments override the paper's defaults. ``pretrained``: a folder
    with ``model.safetensors`` and ``config.json`` (:mod:`aot_lib.pretrained`) whose architecture is ``name``;
    its recorded arguments are used, ``overrides`` on top.

    >>> m = create_model("aot_admm_tiny", num_classes=100)
    """
    if pretrained is not None:
        from .pretrained import from_pretrained, read_pretrained_config

        recorded = read_pretrained_config(pretrained)["architecture"]
        if recorded != name:
            raise ValueError(f"{pretrained} holds a {recorded}, not a {name}; call create_model({recorded!r}, "
                             f"pretrained=...) or aot_lib.from_pretrained")
        return from_pretrained(pretrained, **overrides)
    if name not in _MODELS:
        close = difflib.get_close_matches(name, _MODELS, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ValueError(
            f"unknown model {name!r}.{hint} Known models: {', '.join(list_models())}."
        )
    return _MODELS[name](**overrides)
