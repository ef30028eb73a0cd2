"""Parameter counts as the paper reports them (Tables 1-4): the encoder without its classification head.

The convention of what the head is lives here too: ``model.head`` (the final LayerNorm and Linear of every
family, :class:`aot_lib.models.layers.ClassifierHead`); a module without one is counted whole.
"""
from __future__ import annotations

from torch import nn

__all__ = ["count_params", "count_head_params"]


def _head_param_ids(model: nn.Module) -> set[int]:
    head = getattr(model, "head", None)
    return {id(p) for p in head.parameters()} if isinstance(head, nn.Module) else set()


def count_params(model: nn.Module, trainable_only: bool = False, *, include_head: bool = False) -> int:
    """Number of parameters, counted as the paper does: the encoder without its classification
    head (``model.head``: the final LayerNorm and Linear), so the count does not depend on the
    number of classes (the paper prints the same numbers for CIFAR-10 and CIFAR-100).

    ``include_head=True`` counts every parameter (``count_params(m) + count_head_params(m)``);
    ``trainable_only=True`` only those with ``requires_grad``. A module without a ``head``
    attribute is counted whole. For example ``count_params(create_model("crate_tiny"))`` is
    5,413,632 (official CRATE-Tiny in the CIFAR setting, 5.41 M in Table 1) whatever
    ``num_classes``; with ``include_head=True`` and 10 classes it is 5,418,250 (a head of
    ``2*384 + 384*10 + 10`` parameters).
    """
    skip = set() if include_head else _head_param_ids(model)
    return sum(p.numel() for p in model.parameters() if (p.requires_grad or not trainable_only) and id(p) not in skip)


def count_head_params(model: nn.Module, trainable_only: bool = False) -> int:
    """Parameters of ``model.head`` alone (0 for ``num_classes=0`` or a module without a head)."""
    head = getattr(model, "head", None)
    if not isinstance(head, nn.Module):
        return 0
    return sum(p.numel() for p in head.parameters() if p.requires_grad or not trainable_only)
