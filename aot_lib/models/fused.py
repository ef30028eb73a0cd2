r"""The element-wise part of one AoT-ADMM layer as one autograd node (the eager fast path).

An AoT-ADMM layer (:class:`~aot_lib.models.ADMMLayer`, Eq. (18) with the RMS
rescalings of Appendix B) is AoT's MSSA plus a chain of element-wise operations on the state:

.. math::
    P &= a Z + b A + c (V - W), \qquad Z^+ = \mathrm{rms}(P) \\
    U &= Z^+ + W, \qquad V^+ = \mathrm{ReLU}(U - \tau), \qquad W_{\mathrm{raw}} = U - V^+ = \min(U, \tau) \\
    W^+ &= \mathrm{rms}(W_{\mathrm{raw}})

with ``A = MSSA(LN(Z))`` and ``rms(x) = x / sqrt(mean(x^2) + eps)`` over the feature axis. Written
as ordinary tensor operations (:meth:`ADMMLayer.step`, the readable reference) this is about fifteen
operations forward, each a pass over a ``(B, N, d)`` tensor and an autograd node that saves its
inputs, and more again backward: on a CPU it costs about as much as the matrix products of MSSA.

:func:`admm_state_update` computes the same chain with a hand-written backward:

* forward: 11 passes over ``(B, N, d)`` memory (4 for the mix, 2 per RMS, 3 for the threshold and
  the dual update, using ``W_raw = min(U, tau)`` and ``V^+ = U - W_raw``);
* backward: one autograd node, 22 passes (9 of them read-only reductions), with the ReLU mask
  recovered from the output as ``sign(V^+)`` (``V^+ = U - min(U, tau)`` is nonzero exactly where
  ``U > tau``: the difference of two distinct floats is never zero);
* memory: no full-size temporaries, only the 3 outputs forward and the 4 input gradients
  backward (on a CPU a fresh tensor of a few MB costs page faults comparable to the arithmetic);
  saved for backward are ``Z, A, V, W`` and ``Z^+, V^+, W^+`` (the next layer's inputs) and two
  ``(B, N, 1)`` reciprocal RMS: per layer 3 full-size tensors beyond what LayerNorm and MSSA keep,
  against 5 for the plain operations (``V - W``, ``P``, ``V^+``, ``W_raw`` and ``Z^+``).

**On a CPU the passes are fused further** (:mod:`aot_lib.cpu_kernels`): forward and backward each run as one
loop over the tokens of a small C++ extension (``admm_cpu.cpp``, built on first use), which keeps each token's
row in the L1 cache from its first read to its last write, so every full-size tensor is read or written once
(forward 4 reads and 3 writes; backward 8 reads and 4 writes, ``V`` and ``W`` not read: :func:`_coefficient_grads`).
The sums over tokens (``dtau``, the coefficients' inner products) are kept per chunk of tokens in float64. The last layer,
whose ``Z^+`` and ``W^+`` get no gradient, skips their terms. Inductor (``torch.compile``), which generated these
kernels before, splits the chain at each row reduction into loops over the whole tensor (13 passes forward) and
turned the sums over tokens into further loops. Idle, caches evicted, at ``(512, 17, 192)`` float32 on the 2-core
Xeon with AVX-512: forward 5.3 ms eager, 2.3-2.8 ms inductor, 1.3-1.6 ms C++; backward 3.1-3.5 ms inductor (the
token sums after it not counted), 2.6-2.9 ms C++ (2.0 ms for the last layer). Values agree with the eager path
to float rounding (another summation order, and ``dc`` by an identity); ``AOT_FUSED_KERNEL=eager`` turns the
kernels off, and a machine where they cannot be built (no C++ compiler) falls back to the eager path with one
warning. The run record names the kernel in use (``hardware.fused_kernel``).

Gradients flow to ``Z, A, V, W``, to the coefficients ``(a, b, c)`` (hence through the softmax to
``coef_logits``) and to ``tau``. Only pure torch operations are used, so it runs on any device.
Inputs of less than single precision (``bfloat16``/``float16``, e.g. ``A`` under autocast) are
computed in float32 with autocast off and the outputs cast back to the inputs' promoted dtype.
Double backward is not supported (``once_differentiable``); nothing in aot_lib needs it.

Backward, for reference (``D`` the width, ``r = 1/sqrt(mean(x^2) + eps)`` per token, ``y = x r``):

* ``rms``: ``dx = r (dy - y mean(dy y))``;
* threshold, with ``m = [U > tau]``: ``dU = m dV^+ + (1 - m) dW_raw``,
  ``dtau = sum_tokens m (dW_raw - dV^+)``;
* mix: ``dZ^+ += dU``, ``dW = dU - c dP``, ``dZ = a dP``, ``dA = b dP``, ``dV = c dP``,
  ``da = <dP, Z>``, ``db = <dP, A>``, ``dc = <dP, V - W>``.
"""
from __future__ import annotations

from pathlib import Path

import torch

from ..cpu_kernels import KERNEL_ENV, extension, kernel
from ..runtime import full_precision

__all__ = ["admm_state_update", "ADMMStateUpdate", "kernel", "KERNEL_ENV"]


#: The CPU kernels' C++ source (built on first use: :func:`aot_lib.cpu_kernels.extension`).
_SOURCE = Path(__file__).with_name("admm_cpu.cpp")


def _cpu_kernels():
    """The built CPU kernels (``forward`` and ``backward``), or None: then the eager path runs."""
    return extension("aot_admm_cpu", str(_SOURCE), caller="aot_lib.models.fused")


def _dense(*tensors):
    return [None if t is None else t.detach().contiguous() for t in tensors]


def _coefficient_grads(dots: torch.Tensor, coef: torch.Tensor) -> torch.Tensor:
    """``(da, db, dc)`` from the CPU kernel's sums ``<dP, Z>, <dP, A>, <dP, P>`` (float64).

    ``dc = <dP, V - W>`` is not read from ``V`` and ``W``: ``P = aZ + bA + c(V - W)`` gives
    ``c dc = <dP, P> - a da - b db``, and ``P = Z^+ / r1`` is already in the kernel's loop (two full-size reads
    fewer). RMS makes ``Z^+`` blind to the scale of ``P``, so ``<dP, P>`` is nearly zero (exactly, up to
    ``eps``); ``dc`` then carries the rounding of ``a da + b db`` divided by ``c``."""
    a, b, c = coef.double().unbind()
    g_a, g_b, g_pp = dots.unbind()
    return torch.stack([g_a, g_b, (g_pp - a * g_a - b * g_b) / c]).to(coef.dtype)


def _inv_rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    """``1 / sqrt(mean(x^2) + eps)`` over the last axis, ``(..., 1)``: one read-only pass (a 2-norm)."""
    n = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    return n.square_().div_(x.shape[-1]).add_(eps).rsqrt_()


def _rms_backward(out: torch.Tensor, grad: torch.Tensor, y: torch.Tensor, inv_rms: torch.Tensor,
                  scratch: torch.Tensor) -> torch.Tensor:
    """``out = r (dy - y mean(dy y))``, the gradient of ``x`` for ``y = x r`` (``out`` may be ``grad``).

    ``scratch`` (a buffer of ``y``'s shape, distinct from ``out``) holds ``dy * y`` for the row sums:
    no new full-size tensor is allocated.
    """
    dot = torch.mul(grad, y, out=scratch).sum(-1, keepdim=True).mul_(-1.0 / y.shape[-1])
    return torch.addcmul(grad, y, dot, out=out).mul_(inv_rms)


def _dot(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Full inner product: one read-only pass."""
    return torch.dot(x.reshape(-1), y.reshape(-1))


class ADMMStateUpdate(torch.autograd.Function):
    """``(Z, A, V, W, coef, tau) -> (Z^+, V^+, W^+)``, all tensors of one floating dtype.

    ``coef`` is ``(a, b, c)`` of shape ``(3,)``; ``tau`` broadcasts against the tokens (shape
    ``(d,)``); ``eps`` is the RMS epsilon, or ``None`` for no RMS rescaling. Use it through
    :func:`admm_state_update`, which also handles mixed precision.

    Forward and backward allocate no full-size tensor beyond the ones they return (3 forward, 4
    backward); an output with no gradient (the last layer's ``Z^+`` and ``W^+``) costs no work.
    """

    @staticmethod
    def forward(ctx, z, attn, v, w, coef, tau, eps):
        cpu = None
        # the kernels: float32/float64, a threshold per feature (any other shape broadcasts in the eager path)
        if (eps is not None and kernel(z.device) == "compiled" and z.dtype in (torch.float32, torch.float64)
                and tau.numel() == tau.shape[-1] == z.shape[-1]):
            cpu = _cpu_kernels()
        if cpu is not None:
            z1, v1, w1, r1, r2 = cpu.forward(*_dense(z, attn, v, w, coef, tau.reshape(-1)), eps)
        else:
            with full_precision(z.device):
                a, b, c = coef.unbind()
                z1 = torch.mul(z, a)
                z1.addcmul_(attn, b).addcmul_(v, c).addcmul_(w, c, value=-1.0)  # P = aZ + bA + c(V - W)
                r1 = r2 = None
                if eps is not None:
                    r1 = _inv_rms(z1, eps)
                    z1.mul_(r1)  # Z^+ = rms(P)
                v1 = torch.add(z1, w)  # U = Z^+ + W
                w1 = torch.minimum(v1, tau)  # W_raw = U - ReLU(U - tau) = min(U, tau)
                v1.sub_(w1)  # V^+ = U - min(U, tau) = ReLU(U - tau)
                if eps is not None:
                    r2 = _inv_rms(w1, eps)
                    w1.mul_(r2)  # W^+ = rms(W_raw)
        ctx.eps, ctx.tau_shape, ctx.compiled = eps, tau.shape, cpu is not None
        ctx.set_materialize_grads(False)  # an unused output (the last layer's Z, W) gets None: no work
        ctx.save_for_backward(z, attn, v, w, coef, z1, v1, w1, r1, r2)
        return z1, v1, w1

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gz1, gv1, gw1):
        z, attn, v, w, coef, z1, v1, w1, r1, r2 = ctx.saved_tensors
        need, eps = ctx.needs_input_grad, ctx.eps
        # the CPU kernels: every output with a gradient, or the last layer's V^+ alone (other patterns: eager)
        cpu = _cpu_kernels() if ctx.compiled and gv1 is not None and (gz1 is None) == (gw1 is None) else None
        if cpu is not None:
            gz, gattn, gv, gw, gtau, dots = cpu.backward(*_dense(z, attn, z1, v1, w1, r1, r2, coef, gz1, gv1, gw1))
            return (gz if need[0] else None, gattn if need[1] else None, gv if need[2] else None,
                    gw if need[3] else None, _coefficient_grads(dots, coef) if need[4] else None,
                    gtau.reshape(ctx.tau_shape) if need[5] else None, None)
        lead = z1.ndim - len(ctx.tau_shape)
        with full_precision(z.device):
            a, b, c = coef.unbind()
            # The four full-size buffers are the four gradients returned; each step writes into one.
            g_u = torch.empty_like(z1)  # dW_raw -> dU -> dW
            g_p = torch.empty_like(z1)  # mask -> dZ^+ + dU -> dP -> dV
            g_z = torch.empty_like(z1) if eps is not None or need[0] else None  # RMS row-sum scratch -> dZ
            # W^+ = rms(W_raw)
            if gw1 is None:
                g_u.zero_()
            elif eps is None:
                g_u.copy_(gw1)
            else:
                _rms_backward(g_u, gw1, w1, r2, scratch=g_z)
            # V^+ = ReLU(U - tau), W_raw = min(U, tau); m = [U > tau] = [V^+ > 0] = sign(V^+) (V^+ >= 0):
            # dU = dW_raw + m (dV^+ - dW_raw), dtau = sum_tokens m (dW_raw - dV^+) = sum_tokens (dW_raw - dU)
            m = torch.sign(v1, out=g_p)
            token_axes = tuple(range(lead))
            gtau = g_u.sum(token_axes) if need[5] else None
            if gv1 is not None:
                g_u.lerp_(gv1, m)  # exact for a 0/1 weight
            else:
                g_u.addcmul_(g_u, m, value=-1.0)
            if need[5]:
                gtau = gtau.sub_(g_u.sum(token_axes)).sum_to_size(ctx.tau_shape)
            # Z^+ = rms(P) and U = Z^+ + W, with P = aZ + bA + c(V - W)
            if gz1 is None:
                g_p.copy_(g_u)
            else:
                torch.add(gz1, g_u, out=g_p)
            if eps is not None:
                _rms_backward(g_p, g_p, z1, r1, scratch=g_z)
            gw = g_u.addcmul_(g_p, c, value=-1.0) if need[3] else None  # dU - c dP
            gcoef = None
            if need[4]:
                gcoef = torch.stack([_dot(g_p, z), _dot(g_p, attn), _dot(g_p, v) - _dot(g_p, w)])
            gz = torch.mul(g_p, a, out=g_z) if need[0] else None
            gattn = g_p * b if need[1] else None
            gv = g_p.mul_(c) if need[2] else None
        return gz, gattn, gv, gw, gcoef, gtau, None


def admm_state_update(z: torch.Tensor, attn: torch.Tensor, v: torch.Tensor, w: torch.Tensor,
                      coef: torch.Tensor, tau: torch.Tensor, eps: float | None):
    """``(Z^+, V^+, W^+)`` of one AoT-ADMM layer from ``Z, A = MSSA(LN(Z)), V, W``, fused.

    ``coef = (a, b, c)`` (shape ``(3,)``), ``tau`` the threshold (broadcast over the tokens),
    ``eps`` the RMS epsilon or ``None`` without RMS rescaling. Same values as the plain
    operations of :meth:`aot_lib.models.ADMMLayer.step` to floating-point rounding, with one
    autograd node.
    Below single precision the arithmetic is float32 and the outputs are cast back.
    """
    out_dtype = torch.promote_types(torch.promote_types(z.dtype, attn.dtype), torch.promote_types(v.dtype, w.dtype))
    dtype = torch.promote_types(out_dtype, torch.float32)
    cast = [t if t.dtype == dtype else t.to(dtype) for t in (z, attn, v, w, coef, tau)]
    z1, v1, w1 = ADMMStateUpdate.apply(*cast, eps)
    if out_dtype != dtype:
        z1, v1, w1 = z1.to(out_dtype), v1.to(out_dtype), w1.to(out_dtype)
    return z1, v1, w1
