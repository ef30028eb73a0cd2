"""Compiled CPU kernels: which implementation runs, and the one place that builds them.

Two hot spots of a CPU training step are chains of element-wise operations, each a pass over memory: AoT-ADMM's
state update (:mod:`aot_lib.models.fused`) and SIGReg's empirical characteristic function
(:mod:`aot_lib.objectives.sigreg`). On a CPU each is run as a kernel that ``torch.compile`` (inductor's C++
backend) generates from the same arithmetic, one loop over memory instead of dozens. ``AOT_FUSED_KERNEL=eager``
turns every one of them off; a machine where they cannot be built (no C++ compiler) falls back to the eager
path with one warning; a run records the choice (``hardware.fused_kernel``, :func:`aot_lib.runtime.hardware_summary`).
"""
from __future__ import annotations

import os
import warnings

import torch

__all__ = ["KERNEL_ENV", "kernel", "run_compiled"]

#: The environment variable that chooses the CPU kernels: ``compiled`` (default) or ``eager``.
KERNEL_ENV = "AOT_FUSED_KERNEL"

#: Built kernels by name, and ``"failed"`` once building one has failed on this machine.
_KERNELS: dict[str, object] = {}


def kernel(device: torch.device) -> str:
    """Which implementation the kernels use on ``device``: ``"compiled"`` (CPU, unless ``AOT_FUSED_KERNEL=eager``
    or the kernels could not be built here) or ``"eager"``."""
    choice = os.environ.get(KERNEL_ENV, "compiled")
    if choice not in ("compiled", "eager"):
        raise ValueError(f"{KERNEL_ENV}={choice!r}: set it to 'compiled' or 'eager'")
    if device.type != "cpu" or choice == "eager" or _KERNELS.get("failed"):
        return "eager"
    return "compiled"


def _compiled(name: str, fn):
    if name not in _KERNELS:
        _KERNELS[name] = torch.compile(fn, fullgraph=True)
    return _KERNELS[name]


def run_compiled(name: str, fn, *args, caller: str = "aot_lib"):
    """``fn(*args)`` compiled (once per ``name``); None once building a kernel has failed on this machine, and None
    under a Python dispatch mode (a FLOP counter: what it counts are the eager operations, and Dynamo compiles
    nothing under one). The caller then runs its eager path, which gives the same values."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    if _KERNELS.get("failed") or _get_current_dispatch_mode() is not None:
        return None
    try:  # detached: the kernels see plain tensors (autograd is the caller's Function's business)
        return _compiled(name, fn)(*(x.detach() if isinstance(x, torch.Tensor) else x for x in args))
    except Exception as e:  # no C++ compiler, an unsupported platform: the eager path gives the same values
        _KERNELS["failed"] = True
        warnings.warn(f"{caller}: the compiled CPU kernel could not be built ({type(e).__name__}: "
                      f"{str(e).splitlines()[0] if str(e) else ''}); using the eager path (set {KERNEL_ENV}=eager "
                      "to skip the attempt)", RuntimeWarning, stacklevel=3)
        return None
