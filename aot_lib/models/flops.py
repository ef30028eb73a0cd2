"""Parameter and FLOP counts, as reported in Tables 1-4."""
from __future__ import annotations

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

# The counter knows the CUDA attention kernels but not the CPU one that
# F.scaled_dot_product_attention dispatches to here; count it with the same formula.
def _cpu_attention_flops(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return sdpa_flop_count(query_shape, key_shape, value_shape)


_CPU_ATTENTION = {}
if hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu"):
    _CPU_ATTENTION[torch.ops.aten._scaled_dot_product_flash_attention_for_cpu] = _cpu_attention_flops

__all__ = ["count_params", "count_head_params", "count_flops"]


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


@torch.no_grad()
def count_flops(model: nn.Module, img_size: int | None = None, batch_size: int = 1) -> int:
    """FLOPs of one forward pass per image, counted by ``torch.utils.flop_counter``.

    A multiply-add counts as 2 FLOPs (the counter's convention); only matrix products,
    convolutions and attention are counted, as in the paper's tables. With 17 tokens
    (32 px, patch 8) this gives AoT-ADMM 0.13 / 0.28 / 0.50 G and CRATE 0.31 / 0.69 / 1.22 G.
    """
    img_size = img_size or model.img_size
    p = next(model.parameters())
    x = torch.zeros(batch_size, model.in_chans, img_size, img_size, device=p.device, dtype=p.dtype)
    was_training = model.training
    model.eval()
    try:
        with FlopCounterMode(display=False, custom_mapping=_CPU_ATTENTION) as counter:
            model(x)
    finally:
        model.train(was_training)
    return counter.get_total_flops() // batch_size
