"""Compiled CPU kernels: which implementation runs, and the one place that builds them.

Two hot spots of a CPU training step are chains of element-wise operations, each a pass over memory: AoT-ADMM's
state update (:mod:`aot_lib.models.fused`) and SIGReg's empirical characteristic function
(:mod:`aot_lib.objectives.sigreg`). On a CPU each runs as a kernel that loops over memory once instead of dozens
of times: SIGReg's as code that ``torch.compile`` (inductor's C++ backend) generates from the same arithmetic
(:func:`run_compiled`), AoT-ADMM's as a small C++ extension built on first use (:func:`extension`; inductor splits
its per-token chain at each of its row reductions, see ``aot_lib/models/admm_cpu.cpp``). ``AOT_FUSED_KERNEL=eager``
turns every one of them off; a machine where they cannot be built (no C++ compiler) falls back to the eager path
with one warning; a run records the choice (``hardware.fused_kernel``, :func:`aot_lib.runtime.hardware_summary`).
"""
from __future__ import annotations

import os
import re
import warnings

import torch

__all__ = ["KERNEL_ENV", "kernel", "run_compiled", "extension"]

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
    """``fn(*args)`` compiled (once per ``name``), or None (:func:`_unavailable`): the caller then runs its eager
    path, which gives the same values."""
    if _unavailable():
        return None
    try:  # detached: the kernels see plain tensors (autograd is the caller's Function's business)
        return _compiled(name, fn)(*(x.detach() if isinstance(x, torch.Tensor) else x for x in args))
    except Exception as e:  # no C++ compiler, an unsupported platform: the eager path gives the same values
        _give_up(caller, e, stacklevel=4)  # past run_compiled and the caller's helper
        return None


def _unavailable() -> bool:
    """No kernel runs once building one has failed on this machine, nor under a Python dispatch mode (a FLOP
    counter: what it counts are the eager operations, and Dynamo compiles nothing under one)."""
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    return bool(_KERNELS.get("failed")) or _get_current_dispatch_mode() is not None


def _give_up(caller: str, error: Exception, stacklevel: int) -> None:
    """Every kernel off for the rest of the process, with one warning naming the cause, attributed ``stacklevel``
    frames up (to the code whose step needed the kernel)."""
    _KERNELS["failed"] = True
    warnings.warn(f"{caller}: the compiled CPU kernel could not be built ({type(error).__name__}: "
                  f"{str(error).splitlines()[0] if str(error) else ''}); using the eager path (set {KERNEL_ENV}=eager "
                  "to skip the attempt)", RuntimeWarning, stacklevel=stacklevel)


#: Vector instructions to build an extension for, by torch's reading of this CPU (other CPUs: the compiler's default).
_ISA_FLAGS = {"AVX512": ["-mavx512f", "-mavx512dq", "-mavx512vl", "-mavx512bw", "-mavx2", "-mfma"],
              "AVX2": ["-mavx2", "-mfma"]}


def _build_extension(name: str, source: str):
    """Build (or load from torch's extension cache) the C++ file ``source`` as module ``name``, for this CPU's
    vector instructions: the name carries them, so a cache shared by two kinds of CPU holds one build per kind."""
    from torch.utils.cpp_extension import load

    try:  # the ninja of the ninja package, on PATH for torch even when the environment is not activated
        import ninja

        if ninja.BIN_DIR not in os.environ.get("PATH", "").split(os.pathsep):
            os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + os.environ.get("PATH", "")
    except ImportError:  # a ninja on PATH, or the build fails with torch's message
        pass
    isa = torch.backends.cpu.get_cpu_capability()  # "AVX512", "AVX2", "DEFAULT", "NO AVX", "Z VECTOR", ...
    return load(name=f"{name}_{re.sub(r'[^a-z0-9]+', '_', isa.lower())}", sources=[source], verbose=False,
                extra_cflags=["-O3", "-fopenmp", *_ISA_FLAGS.get(isa, [])], extra_ldflags=["-fopenmp"])


def extension(name: str, source: str, caller: str = "aot_lib"):
    """The C++ extension ``name`` built from ``source`` (once per process; torch caches the build on disk, so
    only the first use on a machine compiles, about 25 s), or None: when building a kernel has failed on this
    machine, and under a Python dispatch mode (:func:`_unavailable`). The caller then runs its eager path."""
    if _unavailable():
        return None
    if name not in _KERNELS:
        try:
            _KERNELS[name] = _build_extension(name, source)
        except Exception as e:  # no C++ compiler, no ninja, an unsupported platform: the eager path is the same
            _give_up(caller, e, stacklevel=4)  # past extension and the caller's helper: the code that needed it
            return None
    return _KERNELS[name]
