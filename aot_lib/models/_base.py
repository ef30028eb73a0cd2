"""What every model in the registry shares: stem -> blocks -> cls pool -> head.

Uniform interface (as in timm): ``forward_features(x)`` returns the pooled ``(B, d)``
feature, ``forward_head(f)`` the logits, ``forward(x) = forward_head(forward_features(x))``.
``forward_intermediates(x)`` returns the per-layer states for inspection and tests.
"""
from __future__ import annotations

import torch
from torch import nn

from ..layers import ClassifierHead, check_heads_divide, check_patch_divides


class EncoderBase(nn.Module):
    """Subclasses set ``self.stem`` and ``self.blocks``; blocks map tokens to tokens unless the
    subclass overrides ``forward_tokens`` (AoT-ADMM carries three states through depth)."""

    def __init__(self, *, img_size: int, patch_size: int, in_chans: int, num_classes: int,
                 embed_dim: int, depth: int, num_heads: int):
        super().__init__()
        check_patch_divides(img_size, patch_size)
        check_heads_divide(embed_dim, num_heads)
        if depth < 1:
            raise ValueError(f"depth must be at least 1, got {depth}")
        self.img_size, self.patch_size, self.in_chans = img_size, patch_size, in_chans
        self.num_classes, self.embed_dim, self.depth, self.num_heads = num_classes, embed_dim, depth, num_heads
        self.num_features = embed_dim
        self.head = ClassifierHead(embed_dim, num_classes)

    def _init_linear(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward_tokens(self, x: torch.Tensor) -> torch.Tensor:
        """Images -> final token states ``(B, 1 + num_patches, d)``."""
        z = self.stem(x)
        for block in self.blocks:
            z = block(z)
        return z

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """Pooled feature ``(B, d)``: the cls token of the last state (``Pool(V^L)`` for AoT-ADMM)."""
        return self.forward_tokens(x)[:, 0]

    def forward_head(self, features: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        return self.head(features, pre_logits=pre_logits)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x))

    def reset_classifier(self, num_classes: int) -> None:
        """Replace the last Linear (fine-tuning on another label set)."""
        self.num_classes = num_classes
        self.head = ClassifierHead(self.embed_dim, num_classes)
