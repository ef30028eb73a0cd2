"""litdata, the optional dependency of streaming, imported in one place: the converter, the dataset and the loader
need it; importing them (the CLI does) does not."""
from __future__ import annotations

from .datasets import DataError

try:
    from litdata import StreamingDataLoader, StreamingDataset
    _MISSING: ImportError | None = None
except ImportError as _e:  # pragma: no cover - exercised only without litdata
    StreamingDataset, StreamingDataLoader = object, None
    _MISSING = _e

__all__ = ["StreamingDataset", "StreamingDataLoader", "require_litdata"]


def require_litdata() -> None:
    if _MISSING is not None:
        raise DataError(f"streaming needs litdata ({_MISSING}); install it with "
                        "pip install 'aot_lib[stream]' (or pip install litdata)")
