"""Helpers the book's notebooks share: the build profile and the run record printed under results.

``AOT_BOOK_PROFILE=fast`` (what CI uses) shrinks Monte Carlo sizes and grids so the whole book
builds in minutes; the default ``full`` profile is what a reader on a laptop runs.
"""
from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import TypeVar

import torch

__all__ = ["PROFILE", "pick", "run_record"]

T = TypeVar("T")

PROFILE = os.environ.get("AOT_BOOK_PROFILE", "full").strip().lower() or "full"
if PROFILE not in {"fast", "full"}:
    raise ValueError(f"AOT_BOOK_PROFILE must be 'fast' or 'full', got {PROFILE!r}")


def pick(fast: T, full: T) -> T:
    """The value for the current profile."""
    return fast if PROFILE == "fast" else full


def _git_commit() -> str:
    try:
        root = Path(__file__).resolve().parent.parent
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def run_record(seed: int | None = None) -> dict:
    """Where and how a notebook's numbers were computed (printed at the top of each chapter)."""
    return {
        "profile": PROFILE,
        "commit": _git_commit(),
        "seed": seed,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores"
        + (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ", no GPU"),
    }
