"""Shared building blocks: patch stems, position embeddings, MSSA, the ISTA block, the head.

Every model family in :mod:`aot_lib.models` is assembled from these pieces, so the
parameter arithmetic of the paper's tables can be read off one file:

* ``PatchStem`` (CRATE-style, used by AoT-ADMM, CRATE and AoT):
  LayerNorm(patch) -> Linear(patch, d) -> LayerNorm(d), a cls token and a learned
  position embedding: ``2P + P*d + d + 2d + d + T*d`` parameters for patch size
  ``P = C*p*p`` and ``T`` tokens.
* ``MSSA`` (Eq. (12)): one shared bias-free projection per layer used as query, key and
  value, and an output projection with a bias (official CRATE's ``to_out``): ``2 d^2 + d``
  parameters.
* ``ISTA`` (CRATE's sparse-coding block): one learnable dictionary, ``d^2`` parameters.
* ``ClassifierHead``: LayerNorm -> Linear: ``2d + d*classes + classes``. The paper's parameter
  counts leave it out (``aot_lib.count_params`` does too unless ``include_head=True``).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "check_patch_divides",
    "check_heads_divide",
    "PatchStem",
    "ConvPatchStem",
    "interpolate_pos_embed",
    "MSSA",
    "ISTA",
    "ClassifierHead",
]


def check_patch_divides(img_size: int, patch_size: int) -> None:
    """One clear ``ValueError`` when the image cannot be cut into whole patches."""
    if img_size % patch_size != 0:
        lo = img_size - img_size % patch_size
        raise ValueError(
            f"img_size={img_size} is not divisible by patch_size={patch_size}; "
            f"use an image size that is a multiple of the patch (e.g. {lo} or {lo + patch_size}) "
            f"or a patch size that divides {img_size}."
        )


def check_heads_divide(dim: int, num_heads: int) -> None:
    """One clear ``ValueError`` when the width cannot be split evenly over the heads."""
    if dim % num_heads != 0:
        raise ValueError(
            f"embed_dim={dim} is not divisible by num_heads={num_heads}; every head needs "
            f"dim/heads channels: choose num_heads among the divisors of {dim} "
            f"(e.g. {', '.join(str(h) for h in range(1, 25) if dim % h == 0)})."
        )


def _check_input(x: torch.Tensor, in_chans: int, patch_size: int) -> None:
    if x.ndim != 4:
        raise ValueError(f"expected images of shape (B, C, H, W), got shape {tuple(x.shape)}")
    if x.shape[1] != in_chans:
        raise ValueError(
            f"the model expects {in_chans} input channels but got {x.shape[1]}; "
            f"create it with in_chans={x.shape[1]} or convert the images "
            f"(e.g. repeat a grayscale channel 3 times)."
        )
    h, w = x.shape[-2:]
    if h % patch_size or w % patch_size:
        raise ValueError(
            f"input of size {h}x{w} is not divisible by patch_size={patch_size}; "
            f"resize or crop the images to a multiple of {patch_size}."
        )


def interpolate_pos_embed(pos_embed: torch.Tensor, grid: tuple[int, int], num_prefix: int = 1,
                          antialias: bool = False) -> torch.Tensor:
    """Resize a learned ``(1, prefix + g*g, d)`` position embedding to another patch grid.

    LeJEPA feeds 32-px global and 16-px local views through one encoder, so the patch-grid
    part is resized bicubically while the ``num_prefix`` leading (cls) entries are kept; at the
    native grid the embedding is returned as it is.

    Two conventions, chosen per stem (``_StemBase.pos_antialias``):

    * ``antialias=False`` (the CRATE-family :class:`PatchStem`): plain bicubic, as DINO's
      ``interpolate_pos_encoding`` does for its multi-crop local views. Official CRATE has no
      reference here (it never resizes), and LeJEPA's multi-crop is DINO's, so we follow DINO;
      it is also what every CRATE / AoT / AoT-ADMM run of this repository was trained with.
    * ``antialias=True`` (the ViT family's :class:`ConvPatchStem`): timm's
      ``resample_abs_pos_embed`` (bicubic with antialiasing, the PIL-style kernel), so a timm ViT
      loaded with :func:`aot_lib.models.vit.load_timm_vit_state_dict` gives timm's outputs at every
      resolution. timm interpolates in float32 whatever the dtype; we keep the embedding's dtype.
    """
    n = pos_embed.shape[1] - num_prefix
    g0 = int(round(math.sqrt(n)))
    if (g0, g0) == tuple(grid):
        return pos_embed
    prefix, patch = pos_embed[:, :num_prefix], pos_embed[:, num_prefix:]
    d = patch.shape[-1]
    patch = patch.reshape(1, g0, g0, d).permute(0, 3, 1, 2)
    patch = F.interpolate(patch, size=tuple(grid), mode="bicubic", align_corners=False, antialias=antialias)
    patch = patch.permute(0, 2, 3, 1).reshape(1, grid[0] * grid[1], d)
    return torch.cat([prefix, patch], dim=1)


class _StemBase(nn.Module):
    """Common part of the two stems: cls token, position embedding, resolution handling.

    At another input resolution the position embedding is resized to the new patch grid
    (:func:`interpolate_pos_embed`, antialiased or not per ``pos_antialias``).
    """

    pos_antialias: bool = False

    def __init__(self, img_size: int, patch_size: int, in_chans: int, dim: int):
        super().__init__()
        self.img_size, self.patch_size, self.in_chans = img_size, patch_size, in_chans
        self.grid = img_size // patch_size
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + self.grid**2, dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.cls_token, std=0.02)

    def no_weight_decay(self) -> set[str]:
        """Tokens, not weight matrices, though 3-D: no weight decay (DINO, LeJEPA; timm's convention)."""
        return {"cls_token", "pos_embed"}

    def _add_cls_pos(self, tokens: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
        cls = self.cls_token.expand(tokens.shape[0], -1, -1)
        tokens = torch.cat([cls, tokens], dim=1)
        return tokens + interpolate_pos_embed(self.pos_embed, grid, antialias=self.pos_antialias).to(tokens.dtype)


class PatchStem(_StemBase):
    """CRATE-style stem: patchify -> LayerNorm -> Linear -> LayerNorm, + cls + PosEmbed.

    This is ``Z^0 = PatchEmbed(x) + PosEmbed`` of Algorithm 1 (line 3), laid out as official
    CRATE's ``to_patch_embedding`` (einops ``"b c (h p1) (w p2) -> b (h w) (p1 p2 c)"``).

    Resolution: official CRATE adds ``pos_embedding[:, :n + 1]``, a slice, and is only ever run
    at the size it was built for. aot_lib instead resizes the embedding to the input's patch
    grid (bicubic, no antialiasing, as DINO), because DINO-style multi-crop (LeJEPA's 16-px local
    views next to 32-px global ones) feeds other resolutions through the same encoder. At the
    native resolution the two agree exactly.
    """

    def __init__(self, img_size: int, patch_size: int, in_chans: int, dim: int):
        super().__init__(img_size, patch_size, in_chans, dim)
        patch_dim = in_chans * patch_size * patch_size
        self.norm_in = nn.LayerNorm(patch_dim)
        self.proj = nn.Linear(patch_dim, dim)
        self.norm_out = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_input(x, self.in_chans, self.patch_size)
        p = self.patch_size
        b, c, h, w = x.shape
        # (B, C, H, W) -> (B, gh*gw, p*p*C), patch-major like einops "b c (h p1) (w p2) -> b (h w) (p1 p2 c)"
        x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1).reshape(b, (h // p) * (w // p), p * p * c)
        x = self.norm_out(self.proj(self.norm_in(x)))
        return self._add_cls_pos(x, (h // p, w // p))


class ConvPatchStem(_StemBase):
    """Standard ViT stem (Dosovitskiy et al.): a strided convolution, + cls + PosEmbed.

    timm's layout (``patch_embed.proj`` is this ``proj``); the position embedding is resized as
    timm's ``resample_abs_pos_embed`` does (bicubic with antialiasing).
    """

    pos_antialias = True

    def __init__(self, img_size: int, patch_size: int, in_chans: int, dim: int):
        super().__init__(img_size, patch_size, in_chans, dim)
        self.proj = nn.Conv2d(in_chans, dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_input(x, self.in_chans, self.patch_size)
        x = self.proj(x)
        grid = tuple(x.shape[-2:])
        return self._add_cls_pos(x.flatten(2).transpose(1, 2), grid)


class MSSA(nn.Module):
    r"""Multi-head subspace self-attention, Eq. (12).

    .. math:: \mathrm{MSSA}(Z\mid U_{[K]}) = \sum_k U_k U_k^\top Z\,
              \mathrm{softmax}(Z^\top U_k U_k^\top Z)

    Tokens are rows here (``(B, N, d)``), so ``U_k^T Z`` is ``x @ U_k``. One bias-free
    projection ``U = [U_1 ... U_K]`` (``d x d``) serves as query, key and value; the output
    projection plays the role of the ``U_k`` that maps each head back. Both follow the official
    CRATE code (``qkv = nn.Linear(dim, inner_dim, bias=False)``, ``to_out = nn.Linear(inner_dim,
    dim)``): the output map may differ from ``U^T`` and carries a bias ``b`` (``d`` parameters),
    so the layer computes Eq. (12) ``+ b``. The bias starts at zero, where the layer is
    exactly Eq. (12). As in CRATE the logits are scaled by ``p^{-1/2}`` (``p = d/K``), a
    temperature the equation leaves implicit. Parameters: ``2 d^2 + d``.
    """

    def __init__(self, dim: int, num_heads: int):
        super().__init__()
        check_heads_divide(dim, num_heads)
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, dim, bias=False)  # U^T: the shared subspace projection
        self.proj = nn.Linear(dim, dim)  # official CRATE's to_out: with a bias
        nn.init.zeros_(self.proj.bias)  # zero: an untrained layer is exactly Eq. mssa

    def subspaces(self) -> torch.Tensor:
        """The bases ``U_k`` as a ``(K, d, p)`` tensor (columns of ``qkv.weight^T``)."""
        w = self.qkv.weight  # (d_out, d_in) so U = w^T has shape (d_in, d_out)
        return w.t().reshape(w.shape[1], self.num_heads, self.head_dim).permute(1, 0, 2)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """The attention weights ``softmax((U_k^T z_i)^T (U_k^T z_j) / sqrt(p))`` of every head, ``(B, K, N, N)``
        (rows sum to one): what :meth:`forward` averages the projected tokens with, for inspection."""
        b, n, d = x.shape
        w = self.qkv(x).reshape(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        return (w @ w.transpose(-1, -2) * self.head_dim**-0.5).softmax(-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        w = self.qkv(x).reshape(b, n, self.num_heads, self.head_dim).transpose(1, 2)
        out = F.scaled_dot_product_attention(w, w, w)
        return self.proj(out.transpose(1, 2).reshape(b, n, d))


class ISTA(nn.Module):
    r"""CRATE's sparse-coding block: one ISTA step on a learnable dictionary ``D``.

    .. math:: Z^{+} = \mathrm{ReLU}\bigl(Z + \eta D^\top (Z - D Z) - \eta\lambda\bigr)

    ``fused=False`` computes it as the official CRATE code does, with three matrix
    products (``DZ``, ``D^T D Z``, ``D^T Z``); the paper's FLOP counts (Table 1) use this
    form. ``fused=True`` computes ``D^T (Z - DZ)`` with two products; the result is the same.
    """

    def __init__(self, dim: int, step_size: float = 0.1, lambd: float = 0.1, fused: bool = False):
        super().__init__()
        if step_size <= 0 or lambd < 0:
            raise ValueError(f"ISTA needs step_size > 0 and lambd >= 0 (a negative threshold is no shrinkage), "
                             f"got step_size={step_size}, lambd={lambd}")
        self.weight = nn.Parameter(torch.empty(dim, dim))
        nn.init.kaiming_uniform_(self.weight)
        self.step_size, self.lambd, self.fused = step_size, lambd, fused

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = self.weight
        if self.fused:
            grad = F.linear(x - F.linear(x, d), d.t())
        else:
            grad = F.linear(x, d.t()) - F.linear(F.linear(x, d), d.t())
        return F.relu(x + self.step_size * grad - self.step_size * self.lambd)


class ClassifierHead(nn.Module):
    """LayerNorm -> Linear on the pooled feature. ``num_classes=0`` gives the identity, with no
    parameters: pretraining then has none that the loss does not reach (DDP requires it).

    This is official CRATE's ``mlp_head`` and, for a ViT, timm's final ``norm`` followed by its
    ``head`` (a LayerNorm acts token by token, so normalising the pooled cls token equals
    pooling the normalised tokens). ``eps`` is the LayerNorm epsilon (1e-5 as in CRATE, 1e-6
    for the ViT family as in timm).
    """

    def __init__(self, dim: int, num_classes: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(dim, eps=eps) if num_classes > 0 else nn.Identity()
        self.fc = nn.Linear(dim, num_classes) if num_classes > 0 else nn.Identity()

    def forward(self, x: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        x = self.norm(x)
        return x if pre_logits else self.fc(x)
