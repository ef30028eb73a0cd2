r"""Standard ViT (Dosovitskiy et al., 2021) and the MLP-free control of Table 4.

``vit_*``: pre-LN blocks ``x + Attn(LN(x))``, ``x + MLP(LN(x))`` with a 4x GELU MLP, conv
patch stem, cls pooling, LayerNorm epsilon 1e-6 everywhere (head included): timm's
``VisionTransformer``. Its weights do not load by name (timm's final ``norm`` is our
``head.norm``, its ``head`` our ``head.fc``, its ``patch_embed.proj`` our ``stem.proj``): use
:func:`load_timm_vit_state_dict`, which renames them and resizes the position embedding; the
outputs are then timm's, at the native and at other resolutions (tested against timm).
``forward_features`` returns the cls token before the final LayerNorm, as for every family
(see :mod:`aot_lib.models._base`); ``forward_head(f, pre_logits=True)`` is timm's pooled feature.

``vit_*_relu``: every MLP branch becomes a ReLU, ``x + ReLU(LN(x))`` (the paper's
"replacing every MLP branch with a simple ReLU activation"), keeping both LayerNorms.

CIFAR setting (32 px, patch 8), encoder without the classification head (``count_params``):
ViT-T 5,378,880 (5.38 M; the paper prints 5.3 M), ViT-S 21,374,592 (21.4 M), ViT-T-ReLU
1,828,416 (1.8 M), ViT-S-ReLU 7,195,776 (7.2 M). With a 10-class head (final LayerNorm and
Linear): 5,381,194 / 21,379,210 / 1,830,730 / 7,200,394, the same one-decimal numbers, so
Table 4 cannot tell the two conventions apart.
"""
from __future__ import annotations

import math
import re

import torch
import torch.nn.functional as F
from torch import nn

from .layers import ConvPatchStem, interpolate_pos_embed
from .registry import register_sizes
from ._base import EncoderBase, load_mapped_state_dict

__all__ = ["ViT", "ViTBlock", "convert_timm_vit_state_dict", "load_timm_vit_state_dict"]

#: timm's LayerNorm epsilon for ViTs (``partial(nn.LayerNorm, eps=1e-6)``)
VIT_LN_EPS = 1e-6


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
        self.norm1 = nn.LayerNorm(dim, eps=VIT_LN_EPS)
        self.attn = Attention(dim, num_heads)
        self.norm2 = nn.LayerNorm(dim, eps=VIT_LN_EPS)
        self.mlp = nn.ReLU() if relu_mlp else Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(EncoderBase):
    norm_eps = VIT_LN_EPS

    def __init__(self, img_size: int = 32, patch_size: int = 8, in_chans: int = 3, num_classes: int = 10,
                 embed_dim: int = 192, depth: int = 12, num_heads: int = 3, mlp_ratio: float = 4.0,
                 relu_mlp: bool = False):
        super().__init__(img_size=img_size, patch_size=patch_size, in_chans=in_chans, num_classes=num_classes,
                         embed_dim=embed_dim, depth=depth, num_heads=num_heads)
        self.stem = ConvPatchStem(img_size, patch_size, in_chans, embed_dim)
        self.blocks = nn.ModuleList(ViTBlock(embed_dim, num_heads, mlp_ratio, relu_mlp) for _ in range(depth))
        self.relu_mlp = relu_mlp
        self._init_linear()


# ----------------------------------------------------------------------------- timm weights

_TIMM_FIXED = {
    "cls_token": "stem.cls_token",
    "pos_embed": "stem.pos_embed",
    "patch_embed.proj.weight": "stem.proj.weight",
    "patch_embed.proj.bias": "stem.proj.bias",
    "norm.weight": "head.norm.weight",  # timm's final norm = the LayerNorm of our head
    "norm.bias": "head.norm.bias",
    "head.weight": "head.fc.weight",
    "head.bias": "head.fc.bias",
}
_TIMM_BLOCK_RE = re.compile(r"blocks\.(\d+)\.(norm1|attn\.qkv|attn\.proj|norm2|mlp\.fc1|mlp\.fc2)\.(weight|bias)")


def _convert_timm(state_dict: dict, drop_mlp: bool) -> tuple[dict[str, torch.Tensor], list[str]]:
    out, unmapped = {}, []
    for k, v in state_dict.items():
        if k in _TIMM_FIXED:
            out[_TIMM_FIXED[k]] = v
        elif m := _TIMM_BLOCK_RE.fullmatch(k):
            if not (drop_mlp and m.group(2).startswith("mlp.")):
                out[k] = v  # same names inside the blocks
        else:
            unmapped.append(k)
    return out, unmapped


def convert_timm_vit_state_dict(state_dict: dict, *, drop_mlp: bool = False) -> dict[str, torch.Tensor]:
    """Rename the state dict of a timm ``VisionTransformer`` with a class token and the standard
    blocks (``cls_token``, ``pos_embed``, ``patch_embed.proj.*``, ``blocks.N.{norm1, attn.qkv,
    attn.proj, norm2, mlp.fc1, mlp.fc2}.*``, ``norm.*``, ``head.*``) to ``vit_*``'s key names.

    ``drop_mlp=True`` leaves out the MLP weights (to start an MLP-free ``vit_*_relu`` student
    from a full ViT, as Table 4 does). Raises one ``ValueError`` naming every other key
    (register tokens, layer scale, ``fc_norm`` ...: variants these models do not have).
    """
    out, unmapped = _convert_timm(state_dict, drop_mlp)
    if unmapped:
        raise ValueError(f"{len(unmapped)} keys have no vit_* counterpart: {', '.join(unmapped)}")
    return out


def load_timm_vit_state_dict(model: ViT, state_dict: dict, *, drop_head: bool = False,
                             drop_mlp: bool = False) -> ViT:
    """Load the weights of a timm ViT (``timm.create_model("vit_tiny_patch16_224").state_dict()``
    or a checkpoint of one) into a ``vit_*`` model; returns the model.

    The model must have the checkpoint's width, depth, heads and patch size; its image size may
    differ: the position embedding is resized to the model's patch grid as timm does
    (``resample_abs_pos_embed``: bicubic with antialiasing). timm's final ``norm`` becomes our
    ``head.norm`` and its ``head`` our ``head.fc``, so logits equal timm's (tested against timm
    in float64). ``drop_head=True`` keeps the model's classifier Linear (another label set);
    ``drop_mlp=True`` skips the MLPs, for a ``vit_*_relu`` model. Anything else that does not
    match raises one ``ValueError`` listing every problem key with the likely fix.
    """
    if not isinstance(model, ViT):
        raise TypeError(f"load_timm_vit_state_dict loads into a ViT model (vit_*), got {type(model).__name__}")
    sd, unmapped = _convert_timm(state_dict, drop_mlp)
    extra = []
    if model.relu_mlp and not drop_mlp and any(".mlp." in k for k in sd):
        extra.append("the model has no MLPs (relu_mlp=True): pass drop_mlp=True to load the rest")
    pe = sd.get("stem.pos_embed")
    if pe is not None and pe.ndim == 3 and pe.shape[1] != model.stem.pos_embed.shape[1]:
        g = math.isqrt(pe.shape[1] - 1)
        if g * g != pe.shape[1] - 1:
            raise ValueError(f"pos_embed has {pe.shape[1]} entries, not 1 + g*g: a timm ViT without a class-token "
                             "position (no_embed_class) or with register tokens, which vit_* does not support")
        sd["stem.pos_embed"] = interpolate_pos_embed(pe, (model.stem.grid, model.stem.grid), antialias=True)
    try:
        load_mapped_state_dict(model, sd, source="timm ViT", unmapped=unmapped, drop_head=drop_head)
    except ValueError as e:
        if not extra:
            raise
        raise ValueError("\n  - ".join([str(e), *extra])) from None
    return model


register_sizes(ViT, "vit", {
    "tiny": {"embed_dim": 192, "num_heads": 3}, "small": {"embed_dim": 384, "num_heads": 6},
    "tiny_relu": {"embed_dim": 192, "num_heads": 3, "relu_mlp": True},
    "small_relu": {"embed_dim": 384, "num_heads": 6, "relu_mlp": True},
}, {
    "tiny": "ViT-Tiny: d=192, 3 heads, depth 12, MLP ratio 4 (5.38 M in the CIFAR setting).",
    "small": "ViT-Small: d=384, 6 heads, depth 12, MLP ratio 4 (21.38 M).",
    "tiny_relu": "ViT-T with every MLP branch replaced by ReLU (1.83 M; Table 4's ViT-T-AoT).",
    "small_relu": "ViT-S with every MLP branch replaced by ReLU (7.20 M; Table 4's ViT-S-AoT).",
}, label='ViT', tables=("table4",))
