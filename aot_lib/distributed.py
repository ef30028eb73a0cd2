"""Collectives for code that runs on one process or on many: the world size and a sum over ranks whose
backward sums the gradients too. Without an initialised process group both act as on a single process.

A base module: imports nothing of ``aot_lib``; the losses (``objectives``) and the monitors use it.
"""
from __future__ import annotations

import torch
import torch.distributed as dist

__all__ = ["world_size", "all_reduce_sum"]


def world_size() -> int:
    """The number of processes in the default group; 1 without an initialised process group."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def all_reduce_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum over ranks, differentiable (the backward sums the gradients over ranks too)."""
    import warnings

    from torch.distributed.nn.functional import all_reduce

    with warnings.catch_warnings():  # deprecated in favour of an API whose autograd is not settled yet
        warnings.simplefilter("ignore", FutureWarning)
        return all_reduce(x)
