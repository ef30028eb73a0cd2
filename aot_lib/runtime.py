"""Device, precision and distributed strategy: the one place where these are chosen.

``fabric.accelerator: auto`` picks CUDA when present, else the CPU; ``fabric.precision: auto``
picks ``bf16-mixed`` on a GPU that supports it and ``32-true`` otherwise. ``fabric.strategy`` and
``fabric.devices`` go to Lightning Fabric unchanged (``ddp``, ``fsdp``, ``ddp_spawn`` ...), so a
run moves from one CPU to many GPUs by changing the config, not the code. ``model.compile: auto``
compiles the encoder's layers on a GPU and not on a CPU (:func:`compile_enabled`).
"""
from __future__ import annotations

import contextlib
import os
import platform
from pathlib import Path

import torch

__all__ = ["resolve_fabric_kwargs", "make_fabric", "compile_enabled", "full_precision", "hardware_summary", "cpu_label", "cpu_cores",
           "git_commit", "machine_cpu_s", "process_tree_cpu_s"]


def resolve_fabric_kwargs(fab: dict) -> dict:
    accelerator = fab.get("accelerator", "auto")
    if accelerator == "auto":
        accelerator = "cuda" if torch.cuda.is_available() else "cpu"
    precision = fab.get("precision", "auto")
    if precision == "auto":
        precision = "bf16-mixed" if accelerator == "cuda" and torch.cuda.is_bf16_supported() else "32-true"
    return dict(accelerator=accelerator, devices=fab.get("devices", 1), num_nodes=fab.get("num_nodes", 1),
                strategy=fab.get("strategy", "auto"), precision=precision)


def compile_enabled(setting: bool | str, device: torch.device | str) -> bool:
    """``model.compile``: ``true``/``false``, or ``auto``: on for CUDA, where fusing AoT-ADMM's memory-bound
    element-wise chain is what compilation is for, off on the CPU, where it measured no faster than the fused
    eager path and costs 6-25 s of compile time per family (``results/benchmarks/families_run*.json``)."""
    if setting == "auto":
        return torch.device(device).type == "cuda"
    return bool(setting)


def make_fabric(fab: dict, loggers=None):
    from lightning_fabric import Fabric

    return Fabric(**resolve_fabric_kwargs(fab), loggers=loggers)


def full_precision(device: torch.device) -> contextlib.AbstractContextManager:
    """A context in which ``torch.autocast`` is off on ``device`` (a no-op where autocast does not exist)."""
    available = getattr(torch.amp, "is_autocast_available", None)  # torch >= 2.4
    if available is None or available(device.type):
        try:
            return torch.autocast(device_type=device.type, enabled=False)
        except RuntimeError:  # a device type autocast does not know
            pass
    return contextlib.nullcontext()


def cpu_model() -> str:
    """The CPU's model name (Linux: ``/proc/cpuinfo``; elsewhere what ``platform`` knows, or "unknown")."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_label(hardware: dict | None) -> str:
    """A recorded :func:`hardware_summary`'s CPU as a reader's label, model then instruction set
    (``"AMD EPYC AVX512"``): what float results and kernel speeds depend on; the fields not recorded are left out."""
    return " ".join(str(hardware[k]) for k in ("cpu_model", "cpu_isa") if (hardware or {}).get(k))


def hardware_summary() -> dict:
    """What a run's numbers depend on besides its config and commit. Float results differ between CPU kinds (an AMD
    with AVX2 and an Intel with AVX-512 sum in other orders), so the CPU model and the instruction set torch's kernels
    use (``torch.backends.cpu.get_cpu_capability()``) are recorded beside torch's version, and the kernels AoT-ADMM's
    state update and SIGReg use on a CPU (``fused_kernel``: compiled or eager, :func:`aot_lib.cpu_kernels.kernel`;
    the two sum in other orders)."""
    from .cpu_kernels import kernel

    info = {"machine": platform.machine(), "cpu_model": cpu_model(),
            "cpu_isa": torch.backends.cpu.get_cpu_capability(), "cpu_count": os.cpu_count(),
            "torch": torch.__version__, "python": platform.python_version(), "torch_threads": torch.get_num_threads(),
            "fused_kernel": kernel(torch.device("cpu"))}
    if torch.cuda.is_available():
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


SOURCE_DIRS = ("aot_lib", "configs", "notebooks")  # an untracked file here changes what a run or the book does


def cpu_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the OS has one, e.g. under a job scheduler)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def git_commit(root: str | os.PathLike | None = None) -> str:
    """The repository's HEAD (of ``root``; default: this checkout), with ``+dirty`` when a tracked file has
    uncommitted changes or a file under :data:`SOURCE_DIRS` is untracked and not git-ignored (a new module or
    config the commit does not hold); ``"unknown"`` without git."""
    import subprocess
    from pathlib import Path

    root = Path(root) if root is not None else Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=5).stdout.strip()

    try:
        head = git("rev-parse", "HEAD")
        dirty = (git("status", "--porcelain", "--untracked-files=no")
                 or git("ls-files", "--others", "--exclude-standard", "--", *SOURCE_DIRS))
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+dirty" if dirty else "")


# ----------------------------------------------------------------------------- who else used the CPU

def machine_cpu_s(proc: str | os.PathLike = "/proc") -> float | None:
    """CPU seconds every process on the machine has been busy since boot (``/proc/stat``: user, nice, system, irq,
    softirq; not idle, I/O wait, or time stolen by other virtual machines); None without ``/proc/stat`` (not Linux)."""
    try:
        fields = Path(proc, "stat").read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def _proc_stat(path: Path) -> list[str] | None:
    try:
        text = path.read_text()
    except OSError:  # the process ended while we looked
        return None
    return text[text.rindex(")") + 2:].split()  # fields after the command name, which may hold spaces


def process_tree_cpu_s(pid: int | None = None, proc: str | os.PathLike = "/proc") -> float | None:
    """CPU seconds of process ``pid`` (this one by default), all its threads, its ended children (reaped) and its
    live descendants (data-loader workers); None without ``/proc``. What :func:`machine_cpu_s` counts beyond this,
    over a run, is other work that shared the machine."""
    proc, pid = Path(proc), pid or os.getpid()
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for d in proc.glob("[0-9]*"):
        st = _proc_stat(d / "stat")
        if st is not None:
            stats[int(d.name)] = st
            children.setdefault(int(st[1]), []).append(int(d.name))  # field 4 of stat: the parent's pid
    if pid not in stats:
        return None
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        st = stats.get(p)
        if st is None:
            continue
        # utime, stime (fields 14, 15), and for the process itself its reaped children's cutime, cstime (16, 17)
        total += int(st[11]) + int(st[12]) + (int(st[13]) + int(st[14]) if p == pid else 0)
        todo += children.get(p, [])
    return total / os.sysconf("SC_CLK_TCK")
