"""Writing files safely: every result, cache and log is written to a temporary name beside its target and
renamed over it, so a crash or a full disk never leaves half a file and never destroys the previous one."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

__all__ = ["atomic_write", "write_json", "torch_save", "sha256_file"]


def atomic_write(path: str | os.PathLike, write: Callable[[Path], Any]) -> Path:
    """Call ``write(tmp)`` on a temporary path beside ``path``, then rename it over ``path``.

    The temporary name carries the process id, so two writers never share it; a reader sees the old
    file or the new one, never half of one. On error the temporary file is removed and ``path`` is
    left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise
    return path


def write_json(path: str | os.PathLike, obj: dict) -> Path:
    text = json.dumps(obj, indent=2, default=str)
    return atomic_write(path, lambda tmp: tmp.write_text(text))


def torch_save(obj, path: str | os.PathLike) -> Path:
    import torch

    return atomic_write(path, lambda tmp: torch.save(obj, tmp))


def sha256_file(path: str | os.PathLike, block: int = 1 << 22) -> str:
    """Hex SHA-256 of a file's bytes, read in blocks (checksums of data zips, cache keys of checkpoints)."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(block), b""):
            h.update(chunk)
    return h.hexdigest()
