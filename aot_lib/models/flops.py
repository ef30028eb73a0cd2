"""FLOP counts of one forward pass, as reported in Tables 1-4 (parameter counts: :mod:`aot_lib.models.params`)."""
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

__all__ = ["count_flops"]


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
