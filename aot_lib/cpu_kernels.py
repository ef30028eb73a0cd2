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
import sys
import warnings
from pathlib import Path

import torch

__all__ = ["KERNEL_ENV", "kernel", "run_compiled", "extension", "extension_root", "build_key", "prebuild"]

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


def _quiet_cuda_home_warning() -> None:
    """torch's extension builder logs "No CUDA runtime is found, using CUDA_HOME=..." when it is imported on a
    machine with a CUDA toolkit folder but no GPU; a CPU kernel needs no CUDA, so the line says nothing true about
    what we build. Only that record is dropped (a filter on torch's logger, set before torch's module exists)."""
    import logging

    logging.getLogger("torch.utils.cpp_extension").addFilter(
        lambda record: not str(record.msg).startswith("No CUDA runtime is found"))


_quiet_cuda_home_warning()

#: What torch names a built extension module.
_LIBRARY_SUFFIX = ".pyd" if os.name == "nt" else ".so"


def extension_root() -> Path:
    """Where built kernels live: ``$TORCH_EXTENSIONS_DIR`` (torch's own setting), else
    ``~/.cache/torch_extensions`` (``$XDG_CACHE_HOME`` honoured), under ``aot_lib/``."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not root:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "torch_extensions"
    return Path(root) / "aot_lib"


def build_key(source: str, flags: list[str]) -> str:
    """What changes the built binary, hashed: torch's version and build (its git commit, CUDA/ROCm), Python's
    version and ABI, the instruction set, the compiler flags and the source. Two environments with the same torch
    and Python share one build; any other pair gets one build each, and neither overwrites the other's (torch's
    own cache is one folder per kernel name, and its ninja rebuilds whenever another environment's include paths
    wrote the folder last)."""
    import hashlib
    import sysconfig

    parts = [torch.__version__, getattr(torch.version, "git_version", ""), str(torch.version.cuda),
             str(getattr(torch.version, "hip", None)), sys.version, str(sysconfig.get_config_var("SOABI")),
             torch.backends.cpu.get_cpu_capability(), " ".join(flags)]
    digest = hashlib.sha256("\0".join(parts).encode())
    digest.update(Path(source).read_bytes())
    return digest.hexdigest()[:16]


def _import_built(name: str, library: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, library)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_extension(name: str, source: str):
    """The C++ file ``source`` as module ``name``, for this CPU's vector instructions: loaded from its build folder
    (:func:`build_key`) when built before, else built there once (one line on stderr says so). A file lock keeps
    two processes (pytest's workers, two notebooks) from building one folder at once."""
    from filelock import FileLock

    isa = torch.backends.cpu.get_cpu_capability()  # "AVX512", "AVX2", "DEFAULT", "NO AVX", "Z VECTOR", ...
    cflags, ldflags = ["-O3", "-fopenmp", *_ISA_FLAGS.get(isa, [])], ["-fopenmp"]
    folder = extension_root() / f"{name}-{build_key(source, cflags + ldflags)}"
    folder.mkdir(parents=True, exist_ok=True)
    library = folder / f"{name}{_LIBRARY_SUFFIX}"
    with FileLock(str(folder / ".aot_build.lock")):
        if library.is_file():
            try:
                return _import_built(name, library)
            except ImportError:  # a library cut short (a build killed while linking): built again below
                library.unlink()
        (folder / "lock").unlink(missing_ok=True)  # torch's own lock, left by a build that was killed: we hold ours
        print(f"aot_lib: building the AoT-ADMM CPU kernel once for this environment (25-45 s, needs a C++ compiler) "
              f"in {folder}", file=sys.stderr, flush=True)
        try:  # the ninja of the ninja package, on PATH for torch even when the environment is not activated
            import ninja

            if ninja.BIN_DIR not in os.environ.get("PATH", "").split(os.pathsep):
                os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + os.environ.get("PATH", "")
        except ImportError:  # a ninja on PATH, or the build fails with torch's message
            pass
        from torch.utils.cpp_extension import load

        return load(name=name, sources=[source], build_directory=str(folder), verbose=False,
                    extra_cflags=cflags, extra_ldflags=ldflags)


def extension(name: str, source: str, caller: str = "aot_lib"):
    """The C++ extension ``name`` built from ``source`` (once per process; the build is kept on disk per
    environment, :func:`build_key`, so only an environment's first use compiles, 25-45 s on 2 cores), or None:
    when building a kernel has failed on this machine, and under a Python dispatch mode (:func:`_unavailable`). The
    caller then runs its eager path."""
    if _unavailable():
        return None
    if name not in _KERNELS:
        try:
            _KERNELS[name] = _build_extension(name, source)
        except Exception as e:  # no C++ compiler, no ninja, an unsupported platform: the eager path is the same
            _give_up(caller, e, stacklevel=4)  # past extension and the caller's helper: the code that needed it
            return None
    return _KERNELS[name]


def prebuild() -> bool:
    """Build (or load) the CPU kernels now, so that the first training step or the first chapter that needs them
    does not wait for the compiler (the test session and the book build call this first). True when they are
    ready; False when they do not apply (``AOT_FUSED_KERNEL=eager``) or could not be built (then one warning)."""
    if kernel(torch.device("cpu")) != "compiled":
        return False
    from .models.fused import _cpu_kernels

    return _cpu_kernels() is not None
