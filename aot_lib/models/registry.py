"""A timm-style model registry: ``@register_model`` on a factory, ``create_model(name, **overrides)``."""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from typing import Callable

from torch import nn

from .pretrained import PretrainedError, load_pretrained_state, read_pretrained_config

__all__ = ["register_model", "register_sizes", "import_model_modules", "WHITE_BOX_SIZES", "Family", "list_families", "paper_models",
           "create_model", "from_pretrained", "list_models", "is_model"]

_MODELS: dict[str, Callable[..., nn.Module]] = {}


@dataclass
class Family:
    """A model family as :func:`register_sizes` registered it: its name prefix, the name the book prints, the
    paper's tables it appears in (empty for a family of one's own) and its registered model names."""

    prefix: str
    label: str
    tables: tuple[str, ...] = ()
    models: list[str] = field(default_factory=list)


_FAMILIES: dict[str, Family] = {}


def register_model(fn: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
    """Register a factory under its function name (``aot_admm_tiny`` ...)."""
    if fn.__name__ in _MODELS:
        raise ValueError(f"model {fn.__name__!r} is registered twice")
    _MODELS[fn.__name__] = fn
    return fn


# The paper's sizes of the white-box families (AoT-ADMM, AoT, CRATE), each of depth 12.
WHITE_BOX_SIZES = {"tiny": {"embed_dim": 384, "num_heads": 6}, "small": {"embed_dim": 576, "num_heads": 12},
                   "base": {"embed_dim": 768, "num_heads": 12}}


def register_sizes(family: Callable[..., nn.Module], prefix: str, sizes: dict[str, dict], docs: dict[str, str],
                   label: str | None = None, tables: tuple[str, ...] = ()) -> None:
    """Register one factory ``<prefix>_<size>`` per entry of ``docs`` (size -> one line on it, the factory's
    docstring), building ``family`` with ``sizes[size]``; the keyword arguments of :func:`create_model` override them.
    The family is known by ``label`` (default: the class name) and, for the paper's families, the ``tables`` of the
    paper it appears in (``"table1"`` …): what the book's tables and the benchmarks list (:func:`list_families`)."""
    if prefix in _FAMILIES:
        raise ValueError(f"model family {prefix!r} is registered twice")
    _FAMILIES[prefix] = Family(prefix, label or getattr(family, "__name__", prefix), tuple(tables),
                               [f"{prefix}_{size}" for size in docs])
    def factory_of(name: str, args: dict, doc: str) -> Callable[..., nn.Module]:
        def factory(**kw) -> nn.Module:
            return family(**{**args, **kw})
        factory.__name__ = factory.__qualname__ = name
        factory.__doc__ = doc
        return factory

    for size, doc in docs.items():
        register_model(factory_of(f"{prefix}_{size}", sizes[size], doc))


def import_model_modules(names) -> None:
    """Import the modules that register a user's own model families (``model.imports``, ``aot --import``), from
    the installed packages or the current folder, as ``python -m`` would find them. One line names a module that
    cannot be found, or one that fails inside (the error and where it was raised), and the fix."""
    import importlib
    import sys
    import traceback

    for name in names:
        if os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and name.startswith(e.name) and (e.name == name or name.startswith(e.name + ".")):
                raise ImportError(f"model.imports: cannot import {name!r} ({e}); install it, or run from the folder "
                                  "that holds it, or put that folder on PYTHONPATH") from None
            raise ImportError(_failed_inside(name, e, traceback.extract_tb(e.__traceback__))) from None
        except Exception as e:  # noqa: BLE001 - the user's code may raise anything while it runs
            raise ImportError(_failed_inside(name, e, traceback.extract_tb(e.__traceback__))) from None


def _failed_inside(name: str, error: BaseException, frames) -> str:
    """The one line for a user module that was found but failed while it ran: the error, the last place in the
    user's files it passed through (not importlib's or this package's), and the fix."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    own = [f for f in frames if "importlib" not in f.filename and not os.path.abspath(f.filename).startswith(here + os.sep)]
    if isinstance(error, SyntaxError) and error.filename:
        where = f" at {error.filename}:{error.lineno}"
    else:
        where = f" at {own[-1].filename}:{own[-1].lineno}" if own else ""
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return (f"model.imports: importing {name!r} failed inside it ({type(error).__name__}: {text}){where}; fix that "
            "module (python -c 'import " + name + "' shows the traceback) or leave it out of --import/model.imports")


def list_families(table: str | None = None) -> dict[str, Family]:
    """The registered families by prefix, in registration order; with ``table``, those the paper shows in it."""
    return {p: f for p, f in _FAMILIES.items() if table is None or table in f.tables}


def paper_models() -> list[str]:
    """Sorted names of the models of the paper's families (each has the paper's numbers to match)."""
    return sorted(n for f in _FAMILIES.values() if f.tables for n in f.models)


def list_models(pattern: str = "") -> list[str]:
    """Sorted registered names that contain ``pattern``."""
    return sorted(n for n in _MODELS if pattern in n)


def is_model(name: str) -> bool:
    return name in _MODELS


def create_model(name: str, pretrained: str | None = None, **overrides) -> nn.Module:
    """Build a registered model; keyword arguments override the paper's defaults. ``pretrained``: a folder
    with ``model.safetensors`` and ``config.json`` (:mod:`aot_lib.models.pretrained`) whose architecture is ``name``:
    its recorded arguments with ``overrides`` on top, its weights loaded strictly, in evaluation mode; a new
    ``num_classes`` gives a new, untrained classification head (the recorded one is left out).

    >>> m = create_model("aot_admm_tiny", num_classes=100)
    """
    config = state = None
    if pretrained is not None:
        config, state = load_pretrained_state(pretrained)
        import_model_modules(config.get("imports", ()))  # the user's family its config.json records
    if name not in _MODELS:
        close = difflib.get_close_matches(name, _MODELS, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown model {name!r}.{hint} A family of your own: import its module first (--import "
                         f"MODULE, or model.imports). Known models: {', '.join(list_models())}.")
    if pretrained is None:
        return _MODELS[name](**overrides)
    if config["architecture"] != name:
        raise ValueError(f"{pretrained} holds a {config['architecture']}, not a {name}; call "
                         f"create_model({config['architecture']!r}, pretrained=...) or aot_lib.from_pretrained")
    args = {**config["model_args"], **overrides}
    model = _MODELS[name](**args)
    if "num_classes" in overrides and overrides["num_classes"] != config["model_args"].get("num_classes"):
        state = {**{k: v for k, v in state.items() if not k.startswith("head.")},
                 **{k: v for k, v in model.state_dict().items() if k.startswith("head.")}}
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        raise PretrainedError(f"{pretrained} does not fit {name} with {args} "
                              f"({lines[1] if len(lines) > 1 else lines[0]})") from None
    return model.eval()


def from_pretrained(folder: str | os.PathLike, **overrides) -> nn.Module:
    """:func:`create_model` of the architecture a pretrained folder records, with its weights."""
    return create_model(read_pretrained_config(folder)["architecture"], pretrained=folder, **overrides)
