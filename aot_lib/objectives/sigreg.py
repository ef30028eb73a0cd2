r"""SIGReg: Sketched Isotropic Gaussian Regularization (LeJEPA).

The paper's Epps-Pulley statistic is Eq. (A.2) (Appendix A): for a law of ``z`` and unit
directions ``a ~ Unif(S^{d-1})``, with ``u_a = a^T z`` and ``phi_a`` its characteristic function,

.. math:: \mathrm{SIGReg} = \mathbb E_a \int_{\mathbb R} \bigl|\varphi_a(t) - e^{-t^2/2}\bigr|^2\, w(t)\,dt.

This module computes its finite-sample version with LeJEPA's weight ``w(t) = e^{-t^2/2}``: for one
projected sample ``u_1..u_N``

.. math:: T = N \int_{\mathbb R} \bigl|\hat\varphi(t) - e^{-t^2/2}\bigr|^2\, w(t)\,dt,
          \qquad \hat\varphi(t) = \tfrac1N \sum_n e^{\mathrm i t u_n},

with the factor ``N`` of LeJEPA's reference implementation (it makes the statistic O(1) under the
null), averaged over random unit directions. The integrand is even in ``t``, so the integral is
twice the trapezoid rule on ``[0, t_max]``.

Eq. (3) of the main text is *not* this statistic but its decomposition around the isotropic
Gaussian into a covariance (second-order) term and higher-order deviations,
``C_w E_a[(a^T (Sigma - I) a)^2] + L_{>2}``; the covariance term and ``C_w`` (Eq. (A.6))
are in :mod:`aot_lib.theory.theorem1`.

Precision: the statistic and its gradient are computed in (at least) float32 even under
``torch.autocast`` (bf16 or fp16 mixed precision), which would otherwise run the two matrix
products (embeddings onto slices, errors onto quadrature weights) in half precision
(:func:`aot_lib.runtime.full_precision`).
"""
from __future__ import annotations

import torch
from torch import nn

from .. import distributed
from ..cpu_kernels import kernel, run_compiled
from ..runtime import full_precision

__all__ = ["epps_pulley", "empirical_cf", "SIGReg", "sample_directions", "quadrature"]


def quadrature(t_max: float = 3.0, n_points: int = 17, *, device=None, dtype=torch.float32):
    """Nodes ``t`` and weights for ``\\int_R f(t) e^{-t^2/2} dt`` of an even ``f``:
    the trapezoid rule on ``[0, t_max]`` doubled by symmetry, times the weight ``w(t)``."""
    if n_points < 2 or t_max <= 0:
        raise ValueError(f"need n_points >= 2 and t_max > 0, got n_points={n_points}, t_max={t_max}")
    t = torch.linspace(0.0, t_max, n_points, device=device, dtype=dtype)
    dt = t_max / (n_points - 1)
    trap = torch.full((n_points,), 2 * dt, device=device, dtype=dtype)
    trap[0] = trap[-1] = dt
    return t, trap * torch.exp(-0.5 * t**2)


#: Nodes between two direct evaluations of cos/sin in :class:`_EmpiricalCF`. 32: at most 31 recurrence steps,
#: so a float32 error below 160 u (1e-5, its docstring); anchors cost 2 transcendental evaluations per 32 nodes
#: (against 64 evaluated directly); LeJEPA's 17 nodes need none, so their values are unchanged.
ANCHOR_EVERY = 32

#: The smallest ``x`` (entries) for which a CPU computes the characteristic function with the compiled kernel
#: (:mod:`aot_lib.cpu_kernels`): below it the eager operations cost a few milliseconds a step, less than building
#: the kernel once (tens of seconds), e.g. in the tests' tiny shapes. The CPU recipe's SIGReg input is 4 x 256 x 256.
COMPILE_MIN_ENTRIES = 1 << 16


def _cf_sums(x, dt: float, n_nodes: int):
    """``sum_n cos(x t_j), sum_n sin(x t_j)`` for every node, as plain operations for the compiler: one loop over
    ``x`` (the plain recurrence of :meth:`_EmpiricalCF._nodes`: for at most :data:`ANCHOR_EVERY` nodes)."""
    cos_sums, sin_sums = [], []
    for _, c, s in _EmpiricalCF._nodes(x, dt, n_nodes):
        cos_sums.append(c.sum(-2))
        sin_sums.append(s.sum(-2))
    return torch.stack(cos_sums, -1), torch.stack(sin_sums, -1)


def _cf_grad(x, g_cos, g_sin, dt: float, n_nodes: int):
    """``sum_j t_j (cos(x t_j) g^s_j - sin(x t_j) g^c_j) / N``, the backward of :func:`_cf_sums`' means, as plain
    operations for the compiler (one block of :meth:`_EmpiricalCF.backward`: at most :data:`ANCHOR_EVERY` nodes)."""
    n = x.shape[-2]
    grad = torch.zeros_like(x)
    for j, c, s in _EmpiricalCF._nodes(x, dt, n_nodes):
        if j:
            grad = grad + (c * g_sin[..., j].unsqueeze(-2) - s * g_cos[..., j].unsqueeze(-2)) * (j * dt / n)
    return grad


def _use_kernel(x: torch.Tensor, n_nodes: int) -> bool:
    return n_nodes <= ANCHOR_EVERY and x.numel() >= COMPILE_MIN_ENTRIES and kernel(x.device) == "compiled"


class _EmpiricalCF(torch.autograd.Function):
    r"""Mean over ``N`` of ``cos(x t_j)`` and ``sin(x t_j)`` on the uniform grid ``t_j = j * dt``, for
    ``x`` of shape ``(..., N, K)`` -> two ``(..., K, T)`` tensors.

    The nodes of :func:`quadrature` are equally spaced from 0, so ``cos(x t_j), sin(x t_j)`` follow
    from ``cos(x dt), sin(x dt)`` by the angle-addition recurrence, re-anchored with a direct
    ``cos(x t_j), sin(x t_j)`` at every node ``j`` divisible by ``k =`` :data:`ANCHOR_EVERY` (32): about
    ``2 + 2 T / k`` transcendental evaluations per entry of ``x`` instead of ``2 T`` (they dominated
    SIGReg's cost), and no ``(..., N, K, T)`` tensor is ever stored: forward accumulates the means node
    by node, backward recomputes the same recurrence (the same anchors, so the same values) and
    accumulates ``d/dx = sum_j t_j (-sin(x t_j) g^c_j + cos(x t_j) g^s_j) / N``.

    Error bound (``u`` the unit roundoff of ``x``'s dtype, ``2^-24`` in float32; first order in ``u``).
    An entry ``z_j = c_j + i s_j`` computed ``m = j mod k`` steps after its anchor differs from
    ``exp(i x t_j)`` by at most

    .. math:: E_j = \bigl(2\sqrt2 + (2\sqrt2 + \sqrt5)\, m + 2 |x| t_j\bigr)\, u \le (160 + 2|x| t_j)\, u:

    ``2 sqrt 2 u`` for the anchor (cos and sin to 2 ulp, CUDA's bound; 1 ulp on CPUs), per step
    ``2 sqrt 2 u`` for the rotation ``cos(x dt) + i sin(x dt)`` (the same 2 ulp) plus ``sqrt 5 u``
    for rounding the complex product (Brent, Percival and Zimmermann's bound), and ``2 |x| t_j u`` for
    rounding the angle (``t_j`` and its product with ``x``, as a direct ``cos(x * t_j)`` rounds it).
    Since ``m <= k - 1 = 31`` this holds for any node count: without re-anchoring ``m`` is ``j`` and the
    error grows with ``T`` (4.5e-4 measured in float32 at ``T = 16,385``). The means add the summation's
    rounding over ``N``. Backward sums the nodes' terms ``k`` at a time and adds the block sums with
    compensated (Kahan) summation, so its rounding does not grow with ``T`` either: the gradient is off
    by at most ``(max_j E_j + (k + 5) u) G`` with ``G = sum_j t_j |g_j| / N``, ``|g_j|`` the modulus of
    ``g^c_j + i g^s_j``. For ``T <= k`` (LeJEPA's 17 nodes) there is no anchor beyond ``t_0 = 0``: the
    plain recurrence, the value of the earlier code bit for bit.

    On a CPU, for ``T <= k`` and an ``x`` of at least :data:`COMPILE_MIN_ENTRIES` entries, forward and backward
    run the same recurrence as two compiled kernels (:mod:`aot_lib.cpu_kernels`), each one loop over ``x``
    instead of about ``6 T`` and ``10 T`` passes of eager operations: the same values but for the order of the
    sums over ``N`` (and over the nodes, backward), within the bound above.
    """

    @staticmethod
    def _nodes(x, dt: float, n_nodes: int):
        c1, s1 = torch.cos(x * dt), torch.sin(x * dt)
        for j in range(n_nodes):
            if j == 0:
                c, s = torch.ones_like(x), torch.zeros_like(x)
            elif j % ANCHOR_EVERY == 0:  # re-anchor: the recurrence's rounding restarts from 2 ulp
                xt = x * (j * dt)
                c, s = torch.cos(xt), torch.sin(xt)
            else:
                c, s = c * c1 - s * s1, s * c1 + c * s1
            yield j, c, s

    @staticmethod
    def forward(ctx, x: torch.Tensor, dt: float, n_nodes: int):
        n = x.shape[-2]
        ctx.save_for_backward(x)
        ctx.dt, ctx.n_nodes = dt, n_nodes
        sums = run_compiled("empirical_cf.forward", _cf_sums, x, dt, n_nodes,
                            caller="aot_lib.objectives.sigreg") if _use_kernel(x, n_nodes) else None
        if sums is not None:
            return sums[0] / n, sums[1] / n
        cos_mean = x.new_empty(*x.shape[:-2], x.shape[-1], n_nodes)
        sin_mean = torch.empty_like(cos_mean)
        for j, c, s in _EmpiricalCF._nodes(x, dt, n_nodes):
            cos_mean[..., j] = c.sum(-2) / n
            sin_mean[..., j] = s.sum(-2) / n
        return cos_mean, sin_mean

    @staticmethod
    def backward(ctx, g_cos: torch.Tensor, g_sin: torch.Tensor):
        (x,) = ctx.saved_tensors
        n = x.shape[-2]
        if _use_kernel(x, ctx.n_nodes):
            grad = run_compiled("empirical_cf.backward", _cf_grad, x, g_cos, g_sin, ctx.dt, ctx.n_nodes,
                                caller="aot_lib.objectives.sigreg")
            if grad is not None:
                return grad, None, None
        grad, carry = torch.zeros_like(x), torch.zeros_like(x)  # Kahan sum of the blocks and its lost low bits
        block = torch.zeros_like(x)
        for j, c, s in _EmpiricalCF._nodes(x, ctx.dt, ctx.n_nodes):
            if j == 0:  # t_0 = 0
                continue
            tj = j * ctx.dt / n
            block += (c * g_sin[..., j].unsqueeze(-2) - s * g_cos[..., j].unsqueeze(-2)) * tj
            if j % ANCHOR_EVERY == ANCHOR_EVERY - 1 or j == ctx.n_nodes - 1:
                block -= carry
                total = grad + block
                carry = (total - grad).sub_(block)
                grad = total
                block.zero_()
        return grad, None, None


def empirical_cf(x: torch.Tensor, t_max: float = 3.0, n_points: int = 17) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mean_n cos(x_n t), mean_n sin(x_n t))`` at the nodes of :func:`quadrature`: ``(..., K, T)`` each
    for ``x`` of shape ``(..., N, K)`` (see :class:`_EmpiricalCF` for how)."""
    return _EmpiricalCF.apply(x, t_max / (n_points - 1), n_points)


def epps_pulley(x: torch.Tensor, t_max: float = 3.0, n_points: int = 17) -> torch.Tensor:
    """Epps-Pulley normality statistic of every column of ``x`` (shape ``(..., N, K)``) -> ``(..., K)``.

    ``N`` times the trapezoid-rule value of the integral in Eq. (A.2) for one direction.
    Under DDP the empirical characteristic function is averaged over ranks with an
    autograd-aware all-reduce, so the statistic is the one of the global batch (``N`` global).
    Computed in float32, or float64 for float64 input, also under autocast: the input is cast up
    and autocast is switched off for the computation; the gradient flows back in ``x``'s dtype.
    """
    if x.ndim < 2:
        raise ValueError(f"epps_pulley expects shape (..., N, K), got {tuple(x.shape)}")
    dtype = torch.promote_types(x.dtype, torch.float32)
    with full_precision(x.device):
        x = x.to(dtype)
        t, weights = quadrature(t_max, n_points, device=x.device, dtype=dtype)
        cos_mean, sin_mean = empirical_cf(x, t_max, n_points)  # (..., K, T)
        n, world = x.shape[-2], distributed.world_size()
        if world > 1:
            cos_mean = distributed.all_reduce_sum(cos_mean) / world
            sin_mean = distributed.all_reduce_sum(sin_mean) / world
        err = (cos_mean - torch.exp(-0.5 * t**2)) ** 2 + sin_mean**2
        return (err @ weights) * (n * world)


def sample_directions(dim: int, num_slices: int, seed: int, *, device=None, dtype=torch.float32) -> torch.Tensor:
    """``(dim, num_slices)`` unit-norm Gaussian directions, a pure function of ``seed``.

    Drawn on the CPU from a seeded generator, so every rank and every device draws the same.
    """
    g = torch.Generator().manual_seed(int(seed))
    a = torch.randn(dim, num_slices, generator=g, dtype=torch.float32)
    a = a / a.norm(dim=0, keepdim=True)
    return a.to(device=device, dtype=dtype)


class SIGReg(nn.Module):
    """Sliced Epps-Pulley test against N(0, I) (Eq. (A.2)): mean over ``num_slices`` random directions.

    ``forward(z)`` with ``z`` of shape ``(..., N, D)`` (e.g. ``(views, batch, D)``) returns the
    mean of ``epps_pulley(z @ A)`` over slices and leading dims, so every leading index (view) is
    its own sample of ``N`` points. ``A`` is drawn fresh at every training step from
    ``seed + step``; the step counter is a buffer, so it is saved in checkpoints and a resumed run
    draws the same directions. Pass ``directions`` (D, K) to fix them (tests, the book).

    The projection and the statistic are computed in float32 (float64 if ``z`` or ``directions``
    is float64) with autocast switched off, so the value is float32 under bf16 mixed precision.
    """

    def __init__(self, num_slices: int = 1024, t_max: float = 3.0, n_points: int = 17, seed: int = 0):
        super().__init__()
        self.num_slices, self.t_max, self.n_points, self.seed = num_slices, t_max, n_points, seed
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    def forward(self, z: torch.Tensor, directions: torch.Tensor | None = None) -> torch.Tensor:
        if directions is None:
            dtype = torch.promote_types(z.dtype, torch.float32)
            directions = sample_directions(z.shape[-1], self.num_slices, self.seed + int(self.step),
                                           device=z.device, dtype=dtype)
            if self.training:
                self.step += 1
        elif directions.ndim != 2 or directions.shape[0] != z.shape[-1]:
            raise ValueError(f"directions must have shape ({z.shape[-1]}, K), got {tuple(directions.shape)}")
        else:
            dtype = torch.promote_types(torch.promote_types(z.dtype, directions.dtype), torch.float32)
        with full_precision(z.device):
            proj = z.to(dtype) @ directions.to(device=z.device, dtype=dtype)
            return epps_pulley(proj, self.t_max, self.n_points).mean()

    def extra_repr(self) -> str:
        return f"num_slices={self.num_slices}, t_max={self.t_max}, n_points={self.n_points}"
