r"""CRATE (Yu et al., 2023): MSSA compression step, then one ISTA sparse-coding step.

Layer (pre-LayerNorm, as in the official code):

.. math::
    Z^{\ell+1/2} = Z^\ell + \mathrm{MSSA}(\mathrm{LN}(Z^\ell)),\qquad
    Z^{\ell+1} = \mathrm{ReLU}\bigl(x + \eta D^\top(x - Dx) - \eta\lambda\bigr),\ x = \mathrm{LN}(Z^{\ell+1/2})

Parameters per layer ``3 d^2 + 5 d`` (shared MSSA projection, output map with a bias as the
official ``to_out``, dictionary ``D``, two LayerNorms). Counted as the paper does, without the
classification head (official CRATE's ``mlp_head``), this is exactly official CRATE:
5,413,632 / 12,101,568 / 21,443,712 parameters = 5.41 / 12.10 / 21.44 M in the CIFAR setting
(32 px, patch 8) and 21,924,096 = 21.92 M for Base at 128 px / patch 16, as in Tables 1-2, for
any number of classes.

:func:`convert_official_crate_state_dict` and :func:`load_official_crate` read a state dict of the
official implementation (Ma-Lab-Berkeley/CRATE, ``model/crate.py``) into ``crate_*``.
"""
from __future__ import annotations

import re

import torch
from torch import nn

from .layers import ISTA, MSSA, PatchStem, interpolate_pos_embed
from .registry import WHITE_BOX_SIZES, register_sizes
from ._base import EncoderBase, load_mapped_state_dict

__all__ = ["CRATE", "CRATELayer", "convert_official_crate_state_dict", "load_official_crate"]


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
    instead of the official three (same output, fewer FLOPs).

    Official CRATE with ``pool='cls'`` (the default), ``dim_head = dim // heads`` (every released
    configuration) and no dropout; ``step_size`` is the official ``ista`` argument, ``lambd`` its
    fixed ``0.1``. Weights of the official code load with :func:`load_official_crate`.
    """

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


register_sizes(CRATE, "crate", WHITE_BOX_SIZES, {
    "tiny": "CRATE-Tiny: d=384, 6 heads, depth 12 (5.41 M).",
    "small": "CRATE-Small: d=576, 12 heads, depth 12 (12.10 M).",
    "base": "CRATE-Base: d=768, 12 heads, depth 12 (21.44 M; 21.92 M at 128 px / patch 16).",
}, label='CRATE', tables=("table1", "table2"))


# ----------------------------------------------------------------------------- official weights

# Official key -> aot_lib key. ``to_patch_embedding.0`` is the einops Rearrange (no parameters);
# ``transformer.layers.N.0`` is PreNorm(Attention), ``transformer.layers.N.1`` PreNorm(FeedForward),
# the ISTA block whose dictionary is the bare parameter ``fn.weight``.
_OFFICIAL_FIXED = {
    "cls_token": "stem.cls_token",
    "pos_embedding": "stem.pos_embed",
    "to_patch_embedding.1.weight": "stem.norm_in.weight",
    "to_patch_embedding.1.bias": "stem.norm_in.bias",
    "to_patch_embedding.2.weight": "stem.proj.weight",
    "to_patch_embedding.2.bias": "stem.proj.bias",
    "to_patch_embedding.3.weight": "stem.norm_out.weight",
    "to_patch_embedding.3.bias": "stem.norm_out.bias",
    "mlp_head.0.weight": "head.norm.weight",
    "mlp_head.0.bias": "head.norm.bias",
    "mlp_head.1.weight": "head.fc.weight",
    "mlp_head.1.bias": "head.fc.bias",
}
_OFFICIAL_LAYER = {
    "0.norm.weight": "norm1.weight",
    "0.norm.bias": "norm1.bias",
    "0.fn.qkv.weight": "mssa.qkv.weight",
    "0.fn.to_out.0.weight": "mssa.proj.weight",
    "0.fn.to_out.0.bias": "mssa.proj.bias",
    "1.norm.weight": "norm2.weight",
    "1.norm.bias": "norm2.bias",
    "1.fn.weight": "ista.weight",
}
_OFFICIAL_LAYER_RE = re.compile(r"transformer\.layers\.(\d+)\.(.+)")


def _convert_official(state_dict: dict) -> tuple[dict[str, torch.Tensor], list[str]]:
    keys = list(state_dict)
    prefix = "module." if keys and all(k.startswith("module.") for k in keys) else ""  # saved from DDP
    out, unmapped = {}, []
    for key, value in state_dict.items():
        k = key[len(prefix):]
        if k in _OFFICIAL_FIXED:
            out[_OFFICIAL_FIXED[k]] = value
        elif (m := _OFFICIAL_LAYER_RE.fullmatch(k)) and m.group(2) in _OFFICIAL_LAYER:
            out[f"blocks.{m.group(1)}.{_OFFICIAL_LAYER[m.group(2)]}"] = value
        else:
            unmapped.append(key)
    # With one head of the full width, official CRATE's to_out is nn.Identity (no keys): the
    # same map is proj = I, b = 0.
    for k in [k for k in out if k.endswith(".mssa.qkv.weight")]:
        w = k.replace("qkv", "proj")
        if w not in out and w.replace("weight", "bias") not in out:
            d = out[k].shape[0]
            out[w] = torch.eye(d, dtype=out[k].dtype)
            out[w.replace("weight", "bias")] = torch.zeros(d, dtype=out[k].dtype)
    return out, unmapped


def convert_official_crate_state_dict(state_dict: dict) -> dict[str, torch.Tensor]:
    """Rename an official CRATE state dict (``CRATE(...).state_dict()`` of Ma-Lab-Berkeley/CRATE,
    ``model/crate.py``, optionally with DDP's ``module.`` prefix) to ``crate_*``'s key names.

    Raises one ``ValueError`` naming every key it has no name for. The tensors are not copied.
    """
    out, unmapped = _convert_official(state_dict)
    if unmapped:
        raise ValueError(f"{len(unmapped)} keys are not official CRATE keys: {', '.join(unmapped)}")
    return out


def load_official_crate(model: CRATE, state_dict: dict, *, drop_head: bool = False) -> CRATE:
    """Load official CRATE weights into a ``crate_*`` model built with the same ``embed_dim``,
    ``depth``, ``num_heads``, ``patch_size`` and ``in_chans``; returns the model.

    Same outputs as the official forward (tested in float64). A position embedding made for
    another image size is resized to the model's patch grid (bicubic, as :class:`PatchStem`
    does at run time). ``drop_head=True`` leaves the classifier Linear as initialised (another
    label set); otherwise every key must match, and one ``ValueError`` lists every unmapped,
    missing, unexpected or mis-shaped key with the likely fix.
    """
    if not isinstance(model, CRATE):
        raise TypeError(f"load_official_crate loads into a CRATE model (crate_*), got {type(model).__name__}")
    sd, unmapped = _convert_official(state_dict)
    pe = sd.get("stem.pos_embed")
    if pe is not None and pe.ndim == 3 and pe.shape[1] != model.stem.pos_embed.shape[1]:
        sd["stem.pos_embed"] = interpolate_pos_embed(pe, (model.stem.grid, model.stem.grid))
    load_mapped_state_dict(model, sd, source="official CRATE", unmapped=unmapped, drop_head=drop_head)
    return model
