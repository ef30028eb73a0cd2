r"""CRATE (Yu et al., 2023): MSSA compression step, then one ISTA sparse-coding step.

Layer (pre-LayerNorm, as in the official code):

.. math::
    Z^{\ell+1/2} = Z^\ell + \mathrm{MSSA}(\mathrm{LN}(Z^\ell)),\qquad
    Z^{\ell+1} = \mathrm{ReLU}\bigl(x + \eta D^\top(x - Dx) - \eta\lambda\bigr),\ x = \mathrm{LN}(Z^{\ell+1/2})

Parameters per layer ``3 d^2 + 4 d`` (shared MSSA projection, bias-free output map,
dictionary ``D``, two LayerNorms): 5.41 / 12.10 / 21.44 M in the CIFAR setting and
21.92 M for Base at 128 px / patch 16, as in Tables 1-2.
"""
from __future__ import annotations

import torch
from torch import nn

from ..layers import ISTA, MSSA, PatchStem
from ..registry import register_model
from ._base import EncoderBase

__all__ = ["CRATE", "CRATELayer"]


class CRATELayer(nn.Module):
    def __init__(self, dim: int, num_heads: int, step_size: float = 0.1, lambd: float = 0.1,
                 fused_ista: bool = False):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.mssa = MSSA(dim, num_heads)
        self.norm2 = nn.LayerNorm(dim)
        self.ista = ISTA(dim, step_size=step_size, lambd=lambd, fused=fused_ista)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        z = z + self.mssa(self.norm1(z))
        return self.ista(self.norm2(z))


class CRATE(EncoderBase):
    """CRATE encoder + head. ``fused_ista=True`` uses two matrix products per ISTA step
    instead of the official three (same output, fewer FLOPs)."""

    def __init__(self, img_size: int = 32, patch_size: int = 8, in_chans: int = 3, num_classes: int = 10,
                 embed_dim: int = 384, depth: int = 12, num_heads: int = 6, step_size: float = 0.1,
                 lambd: float = 0.1, fused_ista: bool = False):
        super().__init__(img_size=img_size, patch_size=patch_size, in_chans=in_chans, num_classes=num_classes,
                         embed_dim=embed_dim, depth=depth, num_heads=num_heads)
        self.stem = PatchStem(img_size, patch_size, in_chans, embed_dim)
        self.blocks = nn.ModuleList(
            CRATELayer(embed_dim, num_heads, step_size, lambd, fused_ista) for _ in range(depth)
        )
        self._init_linear()


@register_model
def crate_tiny(**kw) -> CRATE:
    """CRATE-Tiny: d=384, 6 heads, depth 12 (5.41 M)."""
    return CRATE(**{"embed_dim": 384, "num_heads": 6, **kw})


@register_model
def crate_small(**kw) -> CRATE:
    """CRATE-Small: d=576, 12 heads, depth 12 (12.10 M)."""
    return CRATE(**{"embed_dim": 576, "num_heads": 12, **kw})


@register_model
def crate_base(**kw) -> CRATE:
    """CRATE-Base: d=768, 12 heads, depth 12 (21.44 M; 21.92 M at 128 px / patch 16)."""
    return CRATE(**{"embed_dim": 768, "num_heads": 12, **kw})
