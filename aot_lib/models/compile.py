"""Regional compilation: ``torch.compile`` one layer of an encoder and reuse it for every layer.

Compiling a whole encoder (``torch.compile(model)``) traces every layer and the whole backward,
which took minutes per model on a small CPU. All layers of one of our encoders are instances of one
class running the same code on the same shapes, so compiling that code once is enough
(PyTorch's "regional compilation" recipe): :func:`compile_blocks` replaces the ``forward`` of every
block in ``encoder.blocks`` by the same compiled function of the block's class. Dynamo caches the
compiled code on that function's code object and treats each block's parameters as graph inputs,
not constants, so layer 2..L reuse layer 1's graph. The stem, the pooling, the projector and the
loss stay eager, and the loop over layers runs in Python between compiled calls: no graph break
can fall inside a layer loop that is never traced.

What to expect in a LeJEPA run (global 32 px and local 16 px views, i.e. two token counts):

* one graph per view size for each layer class: with torch's default ``dynamic=None`` the first
  size gets a static-shape graph and the second one a graph with dynamic batch and token counts,
  which also serves any later size (an evaluation batch of another size compiles nothing);
  ``dynamic=False`` gives one static graph per size instead, and compiles again for every new size;
* nothing compiled after the first step of each size; a switch of grad mode (``torch.no_grad()``
  evaluation) or of autocast compiles once more for each kind of input, up to Dynamo's
  ``recompile_limit`` (8 graphs per layer class) after which new cases run eagerly;
* every family works: AoT-ADMM's :class:`~aot_lib.models.ADMMLayer` takes and returns
  ``(Z, V, W)`` (under compilation it traces its readable :meth:`~aot_lib.models.ADMMLayer.step`,
  which the compiler fuses), CRATE / AoT / ViT blocks map tokens to tokens.

The blocks keep their parameters and names (``state_dict`` keys do not change, unlike
``torch.compile(model)``'s ``_orig_mod.`` prefix), so checkpoints load either way.
"""
from __future__ import annotations

import types

import torch
from torch import nn

__all__ = ["compile_blocks", "uncompile_blocks", "encoder_blocks"]

# (block class, compile options) -> its compiled forward, shared by every block and every model
_COMPILED: dict[tuple[type, str], object] = {}


def encoder_blocks(model: nn.Module) -> list[nn.Module]:
    """The layers of every encoder inside ``model`` (``blocks`` of each :class:`EncoderBase`).

    ``model`` may be an encoder, a :class:`~aot_lib.objectives.lejepa.LeJEPAModel` or anything wrapping one
    (a DDP or Fabric module): its sub-modules are searched.
    """
    from ._base import EncoderBase

    blocks = []
    for m in model.modules():
        if isinstance(m, EncoderBase):
            blocks.extend(m.blocks)
    return blocks


def compile_blocks(model: nn.Module, **compile_kwargs) -> nn.Module:
    """Compile the layers of every encoder in ``model`` in place; returns ``model``.

    ``compile_kwargs`` go to :func:`torch.compile` unchanged (``backend``, ``mode``, ``dynamic``,
    ``fullgraph``, ``options``; torch's defaults otherwise: inductor, automatic dynamic shapes).
    Every block of one class gets the same compiled function, so one layer is traced per input
    kind (no layer of ours has a graph break: the tests check it). Call it once, before the first forward pass (e.g. before ``fabric.setup``); calling it
    again replaces the compiled functions; :func:`uncompile_blocks` undoes it.

    Raises ``ValueError`` if ``model`` contains no encoder.
    """
    blocks = encoder_blocks(model)
    if not blocks:
        raise ValueError(f"{type(model).__name__} contains no aot_lib encoder (EncoderBase with blocks) to compile")
    kw = dict(compile_kwargs)
    key_kw = repr(sorted(kw.items()))
    for block in blocks:
        cls = type(block)
        fn = _COMPILED.get((cls, key_kw))
        if fn is None:
            fn = _COMPILED[(cls, key_kw)] = torch.compile(cls.forward, **kw)
        block.forward = types.MethodType(fn, block)  # an instance attribute: nn.Module.__call__ finds it first
    return model


def uncompile_blocks(model: nn.Module) -> nn.Module:
    """Undo :func:`compile_blocks`: every block runs its class's eager ``forward`` again."""
    for block in encoder_blocks(model):
        block.__dict__.pop("forward", None)
    return model
