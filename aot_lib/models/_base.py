"""What every model in the registry shares: stem -> blocks -> cls pool -> head.

Uniform interface (as in timm):

* ``forward_features(x)``: the pooled ``(B, d)`` feature, ``pool(tokens) = tokens[:, 0]`` (the
  cls token) of the last token state, **before any final normalisation**, for every family;
* ``forward_head(f)``: the logits, through ``head`` = :class:`~aot_lib.models.layers.ClassifierHead`
  (LayerNorm -> Linear); ``forward(x) = forward_head(forward_features(x))``;
* ``forward_intermediates(x)``: the token state after every layer (below).

Why the pooled feature is pre-norm, for every family. Official CRATE's ``mlp_head`` is
``LayerNorm -> Linear`` applied to the raw cls token, so the final LayerNorm belongs to the
classifier; for the white-box families the raw state *is* the object of the theory (AoT-ADMM's
``Pool(V^L)`` is a non-negative sparse code that a LayerNorm would re-centre). A ViT in timm applies
its final ``norm`` to the tokens and then pools; a LayerNorm acts token by token, so that is the
same as our head's LayerNorm on the pooled cls token, and timm's ``norm.*`` maps onto our
``head.norm.*`` (:func:`aot_lib.models.vit.load_timm_vit_state_dict`). One convention then holds
everywhere: what a probe (or LeJEPA's projector) sees is the encoder's own last state, and the
paper's parameter counts "without the classification head" (:func:`aot_lib.count_params`) leave
out exactly ``head.*``, the final LayerNorm included. A ViT's ``forward_features`` therefore
differs from timm's pooled ``forward_features`` by that LayerNorm; ``forward_head(f,
pre_logits=True)`` gives timm's.

``forward_intermediates(x)`` returns a list of ``depth + 1`` states: entry 0 is the stem output
(``Z^0``), entry ``l`` the state after layer ``l``. Every entry has a ``tokens`` attribute, the
``(B, 1 + num_patches, d)`` token state the encoder would pool if it stopped there, so that
``model.pool(states[-1].tokens)`` equals ``model.forward_features(x)`` for every family and a
generic audit reads ``[s.tokens for s in states]``. CRATE, AoT and ViT return :class:`LayerState`;
AoT-ADMM returns its :class:`~aot_lib.models.ADMMState` (a :class:`LayerState` whose ``tokens``
is ``V^l``, with ``Z^l``, ``W^l`` and the layer's parts beside it).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import torch
from torch import nn

from .layers import ClassifierHead, check_heads_divide, check_patch_divides

__all__ = ["EncoderBase", "LayerState", "load_mapped_state_dict", "collect_no_weight_decay"]


def collect_no_weight_decay(module: nn.Module, skip_self: bool = False) -> set[str]:
    """The full names (relative to ``module``) of the parameters its submodules exempt from weight decay through
    their ``no_weight_decay()``; the highest module that answers speaks for everything under it."""
    names: set[str] = set()
    answered: list[str] = []
    for prefix, m in module.named_modules():
        if (skip_self and m is module) or any(a == "" or prefix.startswith(a + ".") for a in answered):
            continue
        ask = getattr(m, "no_weight_decay", None)
        if callable(ask):
            names |= {f"{prefix}.{n}" if prefix else n for n in ask()}
            answered.append(prefix)
    return names


@dataclass
class LayerState:
    """One entry of ``forward_intermediates``: ``tokens`` is the ``(B, N, d)`` token state."""

    tokens: torch.Tensor


class EncoderBase(nn.Module):
    """Subclasses set ``self.stem`` and ``self.blocks``; blocks map tokens to tokens unless the
    subclass overrides ``forward_tokens`` and ``forward_intermediates`` (AoT-ADMM carries three
    states through depth)."""

    #: epsilon of the head's LayerNorm (torch's default, as official CRATE; timm's 1e-6 for ViT)
    norm_eps: float = 1e-5

    def __init__(self, *, img_size: int, patch_size: int, in_chans: int, num_classes: int,
                 embed_dim: int, depth: int, num_heads: int):
        super().__init__()
        for name, value, low in (("img_size", img_size, 1), ("patch_size", patch_size, 1), ("in_chans", in_chans, 1),
                                 ("embed_dim", embed_dim, 1), ("depth", depth, 1), ("num_heads", num_heads, 1),
                                 ("num_classes", num_classes, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}"
                                 + ("; num_classes=0 gives the encoder without a classifier" if name == "num_classes" else ""))
        check_patch_divides(img_size, patch_size)
        check_heads_divide(embed_dim, num_heads)
        self.img_size, self.patch_size, self.in_chans = img_size, patch_size, in_chans
        self.num_classes, self.embed_dim, self.depth, self.num_heads = num_classes, embed_dim, depth, num_heads
        self.num_features = embed_dim
        self.head = ClassifierHead(embed_dim, num_classes, eps=self.norm_eps)

    def no_weight_decay(self) -> set[str]:
        """The full names of the parameters that take no weight decay by their role (timm's convention, which
        :func:`aot_lib.training.optim.param_groups` asks): those each submodule names in its own
        ``no_weight_decay()`` (the stem's cls token and position embedding, AoT-ADMM's branch logits and
        thresholds). Biases and norm scales (1-D) take none anyway. A family with other exemptions overrides this,
        or gives its layer a ``no_weight_decay()``."""
        return collect_no_weight_decay(self, skip_self=True)

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

    def forward_intermediates(self, x: torch.Tensor) -> list[LayerState]:
        """``depth + 1`` states: entry 0 the stem output, entry ``l`` the tokens after layer ``l``."""
        z = self.stem(x)
        states = [LayerState(tokens=z)]
        for block in self.blocks:
            z = block(z)
            states.append(LayerState(tokens=z))
        return states

    @staticmethod
    def pool(tokens: torch.Tensor) -> torch.Tensor:
        """The cls token: ``(B, N, d) -> (B, d)``."""
        return tokens[:, 0]

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """Pooled feature ``(B, d)``: the cls token of the last state (``Pool(V^L)`` for AoT-ADMM),
        before the head's LayerNorm."""
        return self.pool(self.forward_tokens(x))

    def forward_head(self, features: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        return self.head(features, pre_logits=pre_logits)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x))

    def reset_classifier(self, num_classes: int) -> None:
        """Replace the head, LayerNorm and Linear (fine-tuning on another label set)."""
        self.num_classes = num_classes
        self.head = ClassifierHead(self.embed_dim, num_classes, eps=self.norm_eps)


# ----------------------------------------------------------------------------- loading foreign weights

def _key_pattern(key: str) -> str:
    return re.sub(r"\.\d+\.", ".N.", key)


def _summarise(keys) -> str:
    """``blocks.N.mssa.proj.bias (x12), head.fc.weight``: one entry per key pattern."""
    counts = Counter(_key_pattern(k) for k in keys)
    return ", ".join(f"{p} (x{n})" if n > 1 else p for p, n in sorted(counts.items()))


def load_mapped_state_dict(model: EncoderBase, state_dict: dict, *, source: str, unmapped=(),
                           drop_head: bool = False) -> None:
    """Load a state dict already renamed to this model's keys, or raise one ``ValueError`` that
    lists every problem at once: ``unmapped`` source keys (the converter knew no name for them),
    keys the model needs and the checkpoint lacks, keys the model lacks, and shape mismatches,
    each with the likely fix (depth, width, patch size, number of classes).

    ``drop_head=True`` ignores the checkpoint's classifier Linear (``head.fc.*``; the model's stays
    as initialised, e.g. for another label set), and the head's LayerNorm too when the model has
    no head (``num_classes=0``).
    """
    own = model.state_dict()
    sd = dict(state_dict)
    if drop_head:
        has_head_norm = any(k.startswith("head.norm.") for k in own)
        sd = {k: v for k, v in sd.items()
              if not (k.startswith("head.fc.") or (k.startswith("head.") and not has_head_norm))}
    missing = [k for k in own if k not in sd and not (drop_head and k.startswith("head.fc."))]
    unexpected = [k for k in sd if k not in own]
    shapes = [f"{k}: checkpoint {tuple(sd[k].shape)} vs model {tuple(own[k].shape)}"
              for k in sd if k in own and sd[k].shape != own[k].shape]
    if not (unmapped or missing or unexpected or shapes):
        model.load_state_dict(sd, strict=False)  # every key and shape was checked above
        return
    problems = []
    if unmapped:
        problems.append(f"{len(unmapped)} unmapped {source} keys (no aot_lib name for them): {_summarise(unmapped)}")
    if missing:
        problems.append(f"{len(missing)} keys missing from the checkpoint: {_summarise(missing)}")
    if unexpected:
        problems.append(f"{len(unexpected)} checkpoint keys the model does not have: {_summarise(unexpected)}")
    if shapes:
        problems.append(f"{len(shapes)} shape mismatches: " + "; ".join(shapes))
    # the likely fixes
    depth = {int(m.group(1)) for k in sd if (m := re.match(r"blocks\.(\d+)\.", k))}
    if depth and max(depth) + 1 != model.depth:
        problems.append(f"the checkpoint has {max(depth) + 1} layers, the model {model.depth}: "
                        f"create it with depth={max(depth) + 1}")
    cls = sd.get("stem.cls_token")
    if cls is not None and cls.shape[-1] != model.embed_dim:
        problems.append(f"the checkpoint's width is {cls.shape[-1]}, the model's {model.embed_dim}: "
                        f"create it with embed_dim={cls.shape[-1]} (and a matching num_heads)")
    w, ow = sd.get("stem.proj.weight"), own.get("stem.proj.weight")
    if w is not None and ow is not None and w.shape[1:] != ow.shape[1:]:
        if w.ndim == 4:
            problems.append(f"the checkpoint's patches are {w.shape[-2]}x{w.shape[-1]} with {w.shape[1]} channels, the "
                            f"model's {model.patch_size}x{model.patch_size} with {model.in_chans}: create it with "
                            f"patch_size={w.shape[-1]}, in_chans={w.shape[1]} and an img_size the patch divides")
        else:
            problems.append(f"the checkpoint's patches hold {w.shape[1]} values (in_chans * patch_size^2), the model's "
                            f"{ow.shape[1]}: create it with the checkpoint's patch_size and in_chans")
    fc = sd.get("head.fc.weight")
    if any(k.startswith("head.") for k in unexpected) and model.num_classes == 0:
        problems.append("the model has no head (num_classes=0): pass drop_head=True to load the encoder only, "
                        "or create it with the checkpoint's num_classes")
    elif fc is not None and fc.shape[0] != model.num_classes:
        problems.append(f"the checkpoint's classifier has {fc.shape[0]} classes, the model {model.num_classes}: "
                        f"create it with num_classes={fc.shape[0]}, or pass drop_head=True to keep the model's")
    raise ValueError(f"cannot load the {source} state dict into {type(model).__name__}:\n  - "
                     + "\n  - ".join(problems))
