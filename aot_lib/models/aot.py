r"""AoT (Wang et al., 2025): attention-only Transformer from unrolled subspace denoising.

.. math:: Z^{\ell+1} = Z^\ell + \mathrm{MSSA}(\mathrm{LN}(Z^\ell))

no MLP and no sparse-coding step; AoT has no public code, so the layer is reconstructed from its paper, with
CRATE's MSSA. Parameters per layer ``2 d^2 + 3 d`` (MSSA's ``U`` and its output map with a bias, as official
CRATE's ``to_out``, and the LayerNorm). Counted as the
paper does, without the classification head: 3,634,944 / 8,106,432 / 14,347,392 parameters,
3.63 / 8.11 / 14.35 M in the CIFAR setting (Table 3).
"""
from __future__ import annotations

import torch
from torch import nn

from .layers import MSSA, PatchStem
from .registry import WHITE_BOX_SIZES, register_sizes
from ._base import EncoderBase

__all__ = ["AoT", "AoTLayer"]


class AoTLayer(nn.Module):
    def __init__(self, dim: int, num_heads: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mssa = MSSA(dim, num_heads)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return z + self.mssa(self.norm(z))


class AoT(EncoderBase):
    def __init__(self, img_size: int = 32, patch_size: int = 8, in_chans: int = 3, num_classes: int = 10,
                 embed_dim: int = 384, depth: int = 12, num_heads: int = 6):
        super().__init__(img_size=img_size, patch_size=patch_size, in_chans=in_chans, num_classes=num_classes,
                         embed_dim=embed_dim, depth=depth, num_heads=num_heads)
        self.stem = PatchStem(img_size, patch_size, in_chans, embed_dim)
        self.blocks = nn.ModuleList(AoTLayer(embed_dim, num_heads) for _ in range(depth))
        self._init_linear()


register_sizes(AoT, "aot", WHITE_BOX_SIZES, {
    "tiny": "AoT-Tiny: d=384, 6 heads, depth 12 (3.63 M).",
    "small": "AoT-Small: d=576, 12 heads, depth 12 (8.11 M).",
    "base": "AoT-Base: d=768, 12 heads, depth 12 (14.35 M).",
}, label='AoT', tables=("table3",))
