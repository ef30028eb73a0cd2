"""Helpers the book's notebooks share: the build profile and the run record printed under results.

``AOT_BOOK_PROFILE=fast`` (what CI uses) shrinks Monte Carlo sizes and grids so the whole book
builds in minutes; the default ``full`` profile is what a reader on a laptop runs.
"""
from __future__ import annotations

import os
from typing import TypeVar

from .runtime import git_commit, hardware_summary

__all__ = ["PROFILE", "pick", "run_record"]

T = TypeVar("T")

PROFILE = os.environ.get("AOT_BOOK_PROFILE", "full").strip().lower() or "full"
if PROFILE not in {"fast", "full"}:
    raise ValueError(f"AOT_BOOK_PROFILE must be 'fast' or 'full', got {PROFILE!r}")


def pick(fast: T, full: T) -> T:
    """The value for the current profile."""
    return fast if PROFILE == "fast" else full


def run_record(seed: int | None = None) -> dict:
    """Where and how a notebook's numbers were computed (printed at the top of each chapter)."""
    commit = git_commit()
    short = commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")
    return {"profile": PROFILE, "commit": short, "seed": seed, **hardware_summary()}
