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

**On a CPU the passes are fused further** (:mod:`aot_lib.cpu_kernels`): the forward arithmetic and the
backward's per-token work (the two RMS backwards, the threshold, the four input gradients, and per token the
terms of ``dtau`` and the coefficients' inner products) run as kernels that ``torch.compile`` (inductor's C++
backend) generates, instead of 11 and 22 passes of eager operations; the last layer, whose ``Z^+`` and ``W^+``
get no gradient, has a backward kernel of its own. The sums over tokens follow the kernel (short passes over
small tensors): fused into it, inductor made them extra loops over memory that cost more than the kernel
(:func:`_backward_all`). Measured on the 2-core Intel Xeon with AVX-512 at ``(512, 17, 192)``, idle:
forward 5.3 ms eager, 1.7 ms compiled. Values agree with the eager path to
float rounding (another summation order, and ``dc`` by an identity: :func:`_coefficient_grads`); ``AOT_FUSED_KERNEL=eager`` turns it off, and a machine
where the kernels cannot be built (no C++ compiler) falls back to the eager path with one warning.
The run record names the kernel in use (``hardware.fused_kernel``).

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

import torch

from ..cpu_kernels import KERNEL_ENV, kernel, run_compiled
from ..runtime import full_precision

__all__ = ["admm_state_update", "ADMMStateUpdate", "kernel", "KERNEL_ENV"]


def _forward_math(z, attn, v, w, coef, tau, eps: float):
    """The forward arithmetic with RMS rescaling, as plain operations for the compiler to fuse."""
    a, b, c = coef.unbind()
    p = a * z + b * attn + c * (v - w)
    r1 = torch.rsqrt(p.square().mean(-1, keepdim=True) + eps)
    z1 = p * r1
    u = z1 + w
    w_raw = torch.minimum(u, tau)
    v1 = u - w_raw
    r2 = torch.rsqrt(w_raw.square().mean(-1, keepdim=True) + eps)
    return z1, v1, w_raw * r2, r1, r2


def _backward_rows(z1, v1, w1, r1, r2, c, gz1, gv1, gw1):
    """The per-token part of the backward (see the module's formulas): ``(dP, dW, dW_raw - dU)``. An output
    gradient may be None (the last layer's ``Z^+`` and ``W^+`` are unused): its terms are zero, and the compiler
    specialises the kernel to skip them."""
    g_wraw = None if gw1 is None else r2 * (gw1 - w1 * (gw1 * w1).mean(-1, keepdim=True))
    if gv1 is None and g_wraw is None:
        g_u = torch.zeros_like(v1)
    else:  # m = [U > tau] = [V^+ > 0]
        g_u = torch.where(v1 > 0, 0.0 if gv1 is None else gv1, 0.0 if g_wraw is None else g_wraw)
    g_z1 = g_u if gz1 is None else gz1 + g_u
    g_p = r1 * (g_z1 - z1 * (g_z1 * z1).mean(-1, keepdim=True))
    return g_p, g_u - c * g_p, -g_u if g_wraw is None else g_wraw - g_u


def _backward_all(z, attn, z1, v1, w1, r1, r2, coef, gz1, gv1, gw1):
    """The backward (see the module's formulas) as one loop over the tokens for the compiler: the gradients of
    ``Z, A, V, W``, each token's ``dW_raw - dU`` (summed over the tokens into ``dtau`` after the kernel) and each
    token's three inner products for the coefficients (summed after it, :func:`_coefficient_grads`).

    Why the sums over tokens are not in the kernel: inductor fuses them in as a second and third loop over memory
    (a column sum per 16 features), which cost more than the per-token loop itself (4.6 against 3.2 ms at
    ``(512, 17, 192)``, idle, on the 2-core Xeon); a sum over 8,704 rows after it is one short pass."""
    return _backward_rows_and_dots(z, attn, z1, r1, coef, *_backward_rows(z1, v1, w1, r1, r2, coef[2], gz1, gv1, gw1))


def _backward_last(z, attn, z1, v1, r1, coef, gv1):
    """:func:`_backward_all` when only ``V^+`` has a gradient (the last layer: ``Z^+`` and ``W^+`` are unused), a
    kernel of its own (one compiled graph per gradient pattern, not a recompile of the other)."""
    return _backward_rows_and_dots(z, attn, z1, r1, coef,
                                   *_backward_rows(z1, v1, None, r1, None, coef[2], None, gv1, None))


def _backward_rows_and_dots(z, attn, z1, r1, coef, g_p, g_w, g_diff):
    a, b, c = coef.unbind()
    # per token: <dP, Z>, <dP, A> and <dP, P> with P = Z^+ / r1 (see _coefficient_grads)
    dots = torch.cat([(g_p * z).sum(-1, keepdim=True), (g_p * attn).sum(-1, keepdim=True),
                      (g_p * z1).sum(-1, keepdim=True) / r1], -1)
    return g_p * a, g_p * b, g_p * c, g_w, g_diff, dots


def _coefficient_grads(dots: torch.Tensor, coef: torch.Tensor) -> torch.Tensor:
    """``(da, db, dc)`` from the per-token ``<dP, Z>, <dP, A>, <dP, P>`` (``dots``, last axis of 3).

    ``dc = <dP, V - W>`` is not read from ``V`` and ``W``: ``P = aZ + bA + c(V - W)`` gives
    ``c dc = <dP, P> - a da - b db``, and ``P = Z^+ / r1`` is already in the kernel's loop (two full-size reads
    fewer). RMS makes ``Z^+`` blind to the scale of ``P``, so ``<dP, P>`` is nearly zero (exactly, up to
    ``eps``); ``dc`` then carries the rounding of ``a da + b db`` divided by ``c``."""
    a, b, c = coef.unbind()
    g_a, g_b, g_pp = dots.reshape(-1, 3).sum(0).unbind()
    return torch.stack([g_a, g_b, (g_pp - a * g_a - b * g_b) / c])


def _run_compiled(name: str, *args):
    """The compiled kernel ``name`` (``forward`` or ``backward``) on ``args``, or None: then the eager path runs
    (:func:`aot_lib.cpu_kernels.run_compiled`)."""
    fn = {"forward": _forward_math, "backward": _backward_all, "backward_last": _backward_last}[name]
    return run_compiled(f"admm_state_update.{name}", fn, *args, caller="aot_lib.models.fused")


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
        compiled = None
        if eps is not None and kernel(z.device) == "compiled":
            with full_precision(z.device):
                compiled = _run_compiled("forward", z, attn, v, w, coef, tau, eps)
        if compiled is not None:
            z1, v1, w1, r1, r2 = compiled
            ctx.eps, ctx.tau_shape, ctx.compiled = eps, tau.shape, True
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(z, attn, v, w, coef, z1, v1, w1, r1, r2)
            return z1, v1, w1
        ctx.compiled = False
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
        ctx.eps = eps
        ctx.tau_shape = tau.shape
        ctx.set_materialize_grads(False)  # an unused output (the last layer's Z, W) gets None: no work
        ctx.save_for_backward(z, attn, v, w, coef, z1, v1, w1, r1, r2)
        return z1, v1, w1

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, gz1, gv1, gw1):
        z, attn, v, w, coef, z1, v1, w1, r1, r2 = ctx.saved_tensors
        need, eps = ctx.needs_input_grad, ctx.eps
        rows = None
        lead = z1.ndim - len(ctx.tau_shape)
        if ctx.compiled and gz1 is not None and gv1 is not None and gw1 is not None:
            with full_precision(z.device):
                rows = _run_compiled("backward", z, attn, z1, v1, w1, r1, r2, coef, gz1, gv1, gw1)
        elif ctx.compiled and gz1 is None and gv1 is not None and gw1 is None:
            with full_precision(z.device):
                rows = _run_compiled("backward_last", z, attn, z1, v1, r1, coef, gv1)
        if rows is not None:
            gz, gattn, gv, gw, g_diff, dots = rows
            with full_precision(z.device):
                gtau = g_diff.sum(tuple(range(lead))).sum_to_size(ctx.tau_shape) if need[5] else None
                gcoef = _coefficient_grads(dots, coef) if need[4] else None
            return (gz if need[0] else None, gattn if need[1] else None, gv if need[2] else None,
                    gw if need[3] else None, gcoef, gtau, None)
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
