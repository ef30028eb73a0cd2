"""What a config value may be: :class:`_Spec` (a type, a range or a set of choices, whether null is allowed) and
its shorthands, which the key table of :mod:`aot_lib.training.config` is written with; :class:`ConfigError`, the
one-line refusal of a value that cannot be right."""
from __future__ import annotations

import difflib
import re
from typing import Any

class ConfigError(ValueError):
    """A config value that cannot be right; the message names the key and the fix."""


# ----------------------------------------------------------------------------- types and ranges

_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


class _Spec:
    """One config key: its default, and what its value may be (a type, a range or a set of choices, and
    whether null is allowed)."""

    def __init__(self, kind: str, lo=None, hi=None, *, default: Any = None, lo_open: bool = False,
                 hi_open: bool = False, choices: tuple = (), nullable: bool = False, example: str = ""):
        self.kind, self.lo, self.hi, self.lo_open, self.hi_open = kind, lo, hi, lo_open, hi_open
        self.choices, self.nullable, self.example, self.default = choices, nullable, example, default

    def describe(self) -> str:
        if self.choices:
            what = "one of " + ", ".join(map(str, self.choices))
        else:
            what = {"int": "an integer", "float": "a number", "bool": "true or false", "switch": "true, false or auto", "str": "a non-empty string", "text": "a string",
                    "name": "one folder name (not empty, '.' or '..'; no '/', '\\' or control character)",
                    "prob": "a probability in [0, 1], or a list [first global, other globals, locals] of them",
                    "range": "a pair [low, high] with 0 < low <= high <= 1",
                    "grid": "a number or a list of numbers",
                    "modules": "a list of importable module names, e.g. [mypkg.models]"}[self.kind]
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
        if self.kind == "modules":  # dotted Python module names (model.imports)
            if not isinstance(v, list) or not all(isinstance(m, str) and _MODULE_NAME.fullmatch(m) for m in v):
                raise self._error(key, v)
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


class _Free:
    """A free-form mapping (``model.overrides``): a default, no spec; checked where it is used."""

    def __init__(self, default: dict):
        self.default = default


def _int(default, lo=None, hi=None, **kw) -> _Spec:
    return _Spec("int", lo, hi, default=default, **kw)


def _num(default, lo=None, hi=None, **kw) -> _Spec:
    return _Spec("float", lo, hi, default=default, **kw)


def _bool(default: bool) -> _Spec:
    return _Spec("bool", default=default)


def _str(default, **kw) -> _Spec:
    return _Spec("str", default=default, **kw)


def _choice(default: str, *choices: str) -> _Spec:
    return _Spec("str", choices=choices, default=default)


def _prob() -> _Spec:
    return _Spec("prob")
