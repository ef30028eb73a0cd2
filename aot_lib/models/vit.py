r"""Standard ViT (Dosovitskiy et al., 2021) and the MLP-free control of Table 4.

``vit_*``: pre-LN blocks ``x + Attn(LN(x))``, ``x + MLP(LN(x))`` with a 4x GELU MLP, conv
patch stem, cls pooling (timm's layout, so pretrained timm weights map onto it by name).
``vit_*_relu``: every MLP branch becomes a ReLU, ``x + ReLU(LN(x))`` (the paper's
"replacing every MLP branch with a simple ReLU activation"), keeping both LayerNorms.

CIFAR setting (32 px, patch 8, 10 classes): ViT-T 5.38 M (the paper prints 5.3 M),
ViT-S 21.38 M (21.4 M), ViT-T-ReLU 1.83 M (1.8 M), ViT-S-ReLU 7.20 M (7.2 M).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..layers import ConvPatchStem
from ..registry import register_model
from ._base import EncoderBase

__all__ = ["ViT", "ViTBlock"]


class Attention(nn.Module):
    def __init__(self, dim: int, num_heads: int):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class ViTBlock(nn.Module):
    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, relu_mlp: bool = False):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, num_heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.ReLU() if relu_mlp else Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(EncoderBase):
    def __init__(self, img_size: int = 32, patch_size: int = 8, in_chans: int = 3, num_classes: int = 10,
                 embed_dim: int = 192, depth: int = 12, num_heads: int = 3, mlp_ratio: float = 4.0,
                 relu_mlp: bool = False):
        super().__init__(img_size=img_size, patch_size=patch_size, in_chans=in_chans, num_classes=num_classes,
                         embed_dim=embed_dim, depth=depth, num_heads=num_heads)
        self.stem = ConvPatchStem(img_size, patch_size, in_chans, embed_dim)
        self.blocks = nn.ModuleList(ViTBlock(embed_dim, num_heads, mlp_ratio, relu_mlp) for _ in range(depth))
        self._init_linear()


@register_model
def vit_tiny(**kw) -> ViT:
    """ViT-Tiny: d=192, 3 heads, depth 12, MLP ratio 4 (5.38 M in the CIFAR setting)."""
    return ViT(**{"embed_dim": 192, "num_heads": 3, **kw})


@register_model
def vit_small(**kw) -> ViT:
    """ViT-Small: d=384, 6 heads, depth 12, MLP ratio 4 (21.38 M)."""
    return ViT(**{"embed_dim": 384, "num_heads": 6, **kw})


@register_model
def vit_tiny_relu(**kw) -> ViT:
    """ViT-T with every MLP branch replaced by ReLU (1.83 M; Table 4's ViT-T-AoT)."""
    return ViT(**{"embed_dim": 192, "num_heads": 3, "relu_mlp": True, **kw})


@register_model
def vit_small_relu(**kw) -> ViT:
    """ViT-S with every MLP branch replaced by ReLU (7.20 M; Table 4's ViT-S-AoT)."""
    return ViT(**{"embed_dim": 384, "num_heads": 6, "relu_mlp": True, **kw})
