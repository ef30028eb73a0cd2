"""Writing files safely: every result, cache and log is written to a temporary name beside its target and
renamed over it, so a crash or a full disk never leaves half a file and never destroys the previous one. Reading
them strictly: a YAML or JSON mapping that names a key twice is refused (:func:`load_yaml`, :func:`loads_json`)."""
from __future__ import annotations

import errno
import functools
import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

__all__ = ["WriteError", "write_error", "remove_partial", "atomic_write", "swap_into_place", "write_json", "torch_save",
           "sha256_file", "DuplicateKeyError", "load_yaml", "loads_json"]

ANOTHER_FOLDER = "write it to another folder"
# what a run's files (checkpoint, run.json, results) are moved by: run.out_dir may change on resume
RUN_ELSEWHERE = "move the run folder elsewhere and set run.out_dir to match"
_FULL = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}
_DENIED = {errno.EACCES, errno.EPERM, errno.EROFS}


class WriteError(OSError):
    """Writing a file failed (a full disk, no permission ...). The message says what, where, that the previous
    version is intact and what to do, in one line; ``errno`` is the operating system's."""

    def __init__(self, message: str, code: int | None):
        super().__init__(message)
        self.errno = code


def write_error(path: Path, e: OSError, what: str = "file", elsewhere: str = ANOTHER_FOLDER,
                kept: str | None = None) -> WriteError:
    """The :class:`WriteError` for ``e``, raised while writing ``path`` (which is still the old file, or absent)."""
    code = errno.errorcode.get(e.errno, str(e.errno)) if e.errno is not None else type(e).__name__
    reason = f"{e.strerror or str(e) or type(e).__name__} ({code})"
    if kept is None:
        kept = f"the previous {path.name} is intact" if path.exists() else f"no partial {path.name} was left"
    remedy = ("Free space on that disk" if e.errno in _FULL else f"Make {path.parent} writable" if e.errno in _DENIED
              else "Fix that")
    return WriteError(f"writing the {what} {path} failed: {reason}; {kept}. {remedy}, or {elsewhere}; then run the "
                      "same command again", e.errno)


def remove_partial(tmp: Path) -> None:
    """Remove a temporary file or (sharded checkpoint) folder that a failed write left."""
    if tmp.is_dir():
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.unlink(missing_ok=True)


def atomic_write(path: str | os.PathLike, write: Callable[[Path], Any], what: str = "file",
                 elsewhere: str = ANOTHER_FOLDER) -> Path:
    """Call ``write(tmp)`` on a temporary path beside ``path``, then rename it over ``path``.

    The temporary name carries the process id, so two writers never share it; a reader sees the old
    file or the new one, never half of one. On error the temporary file is removed and ``path`` is
    left as it was; an operating-system error (a full disk, no permission) becomes a :class:`WriteError`
    that names the ``what`` and ``path``, and the fix (``elsewhere``: where else it could go).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        os.replace(tmp, path)
    except BaseException as e:
        remove_partial(tmp)
        if isinstance(e, OSError) and not isinstance(e, WriteError):  # a WriteError: of a write inside this one
            raise write_error(path, e, what, elsewhere) from e
        raise
    return path


def swap_into_place(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` (a finished file or folder written beside ``path``) over ``path``. A folder cannot be renamed
    over a non-empty one, so the previous ``path`` is moved aside first (``.<name>.old-<pid>``) and removed once the
    new one is in place; if that rename fails, the previous one is put back."""
    if not tmp.is_dir():
        os.replace(tmp, path)
        return
    old = path.with_name(f".{path.name}.old-{os.getpid()}")
    if path.exists():
        os.replace(path, old)
    try:
        os.replace(tmp, path)
    except OSError:
        if old.exists() and not path.exists():
            os.replace(old, path)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_json(path: str | os.PathLike, obj: dict, what: str = "file", elsewhere: str = ANOTHER_FOLDER) -> Path:
    text = json.dumps(obj, indent=2, default=str)
    return atomic_write(path, lambda tmp: tmp.write_text(text), what, elsewhere)


def torch_save(obj, path: str | os.PathLike, what: str = "file", elsewhere: str = ANOTHER_FOLDER) -> Path:
    import torch

    return atomic_write(path, lambda tmp: torch.save(obj, tmp), what, elsewhere)


def sha256_file(path: str | os.PathLike, block: int = 1 << 22) -> str:
    """Hex SHA-256 of a file's bytes, read in blocks (checksums of data zips, cache keys of checkpoints)."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(block), b""):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------- reading: one key, one value

class DuplicateKeyError(ValueError):
    """A mapping that names one key twice: YAML and JSON readers keep the last silently, so a file that says two
    things would be read as the one the reader may not have meant."""


@functools.lru_cache(maxsize=1)
def _unique_yaml_loader():
    """The loader class, made once (configs are read thousands of times in a test session)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen: dict = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if key in seen:
                    raise DuplicateKeyError(f"key {key!r} appears twice in one mapping (lines {seen[key] + 1} and "
                                            f"{key_node.start_mark.line + 1}); keep one")
                seen[key] = key_node.start_mark.line
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def load_yaml(text: str, source: str | os.PathLike | None = None):
    """``yaml.safe_load`` that refuses a mapping with a key written twice (:class:`DuplicateKeyError`, naming
    ``source`` and both lines)."""
    import yaml

    try:
        return yaml.load(text, Loader=_unique_yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except DuplicateKeyError as e:
        raise DuplicateKeyError(f"{source}: {e}" if source is not None else str(e)) from None


def _unique_pairs(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise DuplicateKeyError(f"key {twice[0]!r} appears twice in one object")
    return dict(pairs)


def loads_json(text: str):
    """``json.loads`` that refuses an object with a key written twice (:class:`DuplicateKeyError`)."""
    return json.loads(text, object_pairs_hook=_unique_pairs)
