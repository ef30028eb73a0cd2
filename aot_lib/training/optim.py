"""Optimisation pieces shared by every command: parameter groups, the learning-rate schedule, the data order.

* :func:`param_groups` — AdamW weight decay on weight matrices only (the paper's recipe follows DINO/LeJEPA:
  no decay on biases and norms, nor on what the model names in its ``no_weight_decay()``: the cls token, the
  position embedding, AoT-ADMM's thresholds ``tau`` and branch logits);
* :func:`warmup_cosine` — linear warm-up, then cosine decay (Sec. Experimental Setup);
* :func:`batch_indices` — the data order, a pure function of ``(seed, epoch)``, so a resumed run and a
  run spread over several processes see the same global batches.
"""
from __future__ import annotations

import functools
import math

import torch
from torch import nn

from ..models._base import collect_no_weight_decay

__all__ = ["param_groups", "layer_id", "warmup_cosine", "epoch_order", "batch_indices", "grad_norm"]


def layer_id(name: str, depth: int) -> int:
    """Depth of a parameter for layer-wise lr decay: 0 for the stem (cls token, position embedding,
    patch embedding), ``i + 1`` for ``blocks.i``, ``depth + 1`` for the head."""
    parts = name.split(".")
    if "blocks" in parts:
        return int(parts[parts.index("blocks") + 1]) + 1
    if parts[0] == "head" or (len(parts) > 1 and parts[1] == "head"):
        return depth + 1
    return 0


def param_groups(module: nn.Module, weight_decay: float, layer_decay: float = 1.0, lr: float | None = None) -> list[dict]:
    """AdamW groups: weight matrices (and convolution kernels) with ``weight_decay``; biases, norm scales and the
    parameters the model exempts by role without: the names a module's ``no_weight_decay()`` gives (timm's
    convention; the highest module that has one speaks for everything under it, so a wrapper such as the LeJEPA
    model asks its encoder). The training code knows no parameter by name.

    With ``layer_decay < 1`` (BEiT/MAE fine-tuning), a parameter at depth ``l`` (:func:`layer_id`) of a
    ``depth``-layer encoder gets ``lr * layer_decay ** (depth + 1 - l)``: the head the full rate, the stem
    the smallest. Each group then carries its own ``lr`` (pass the base ``lr``).
    """
    depth = getattr(module, "depth", None) or getattr(getattr(module, "encoder", None), "depth", 0)
    exempt = collect_no_weight_decay(module)
    groups: dict[tuple, dict] = {}
    for name, p in module.named_parameters():
        if not p.requires_grad:
            continue
        decays = not (p.ndim < 2 or name in exempt)
        scale = layer_decay ** (depth + 1 - layer_id(name, depth)) if layer_decay != 1.0 else 1.0
        g = groups.setdefault((decays, scale), {"params": [], "weight_decay": weight_decay if decays else 0.0})
        if layer_decay != 1.0:
            if lr is None:
                raise ValueError("param_groups: pass the base lr when layer_decay != 1")
            g["lr"] = lr * scale
        g["params"].append(p)
    if layer_decay == 1.0:  # the two plain groups, decay first, even when one is empty
        return [groups.get((True, 1.0), {"params": [], "weight_decay": weight_decay}),
                groups.get((False, 1.0), {"params": [], "weight_decay": 0.0})]
    return list(groups.values())


def warmup_cosine(total_steps: int, warmup_steps: int, min_ratio: float = 0.0):
    """Learning-rate multiplier of step ``s`` (0-based): ``(s+1)/warmup`` during warm-up, then a cosine from 1
    at the first step after warm-up to ``min_ratio`` at the last step (``total_steps - 1``)."""
    if total_steps < 1:
        raise ValueError(f"total_steps must be >= 1, got {total_steps}")
    warmup_steps = max(0, min(warmup_steps, total_steps))

    def fn(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        span = max(1, total_steps - 1 - warmup_steps)
        t = min(1.0, (step - warmup_steps) / span)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * t))
    return fn


@functools.lru_cache(maxsize=2)
def epoch_order(seed: int, epoch: int, n: int) -> torch.Tensor:
    """The data order of one epoch: a function of (seed, epoch, n) only."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1_000_003 + epoch))


def batch_indices(seed: int, epoch: int, i: int, n: int, global_batch: int, rank: int = 0, world: int = 1) -> torch.Tensor:
    """Rank ``rank``'s share of global batch ``i`` of ``epoch`` (a global batch split in ``world`` equal parts)."""
    local = global_batch // world
    return epoch_order(seed, epoch, n)[i * global_batch:(i + 1) * global_batch][rank * local:(rank + 1) * local]


def grad_norm(module: nn.Module) -> torch.Tensor:
    """Global L2 norm of the gradients (a tensor; NaN/inf when a gradient is not finite)."""
    norms = [p.grad.detach().float().norm() for p in module.parameters() if p.grad is not None]
    return torch.stack(norms).norm() if norms else torch.zeros(())
