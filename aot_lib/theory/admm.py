r"""The ADMM iterations of the paper (Eqs. (10)–(18)) outside any network.

Tokens are columns, as in the paper: ``Z`` has shape ``(d, N)``, the subspace bases ``U`` shape
``(K, d, p)``. :func:`admm_iterations` runs scaled-form ADMM on
``R^c(Z | U) + lambda ||V||_1  s.t.  Z = V`` (Eq. (8)) with the ``Z``-step linearised, using
either of two gradients of ``R^c``:

* :func:`exact_compression_gradient` — the exact ``nabla_Z R^c(Z | U)`` of Eq. (7)
  (automatic differentiation); one gradient step on Eq. (10);
* :func:`mssa_compression_gradient` — the paper's approximation
  ``nabla_Z R^c ≈ gamma [Z - MSSA(Z | U)]`` (Eq. (11)), which turns the
  step into Eq. (14).

:func:`admm_layer_from_subspaces` builds the :class:`~aot_lib.models.ADMMLayer` that computes the
same iterates as the MSSA version.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ..objectives.coding_rate import subspace_coding_rate
from ..models.aot_admm import ADMMLayer, admm_coefficients, inverse_softplus

__all__ = ["mixture_of_subspaces", "mssa_columns", "exact_compression_gradient", "mssa_compression_gradient",
           "admm_iterations", "ADMMHistory", "admm_layer_from_subspaces", "subspace_alignment"]


def mixture_of_subspaces(d: int = 12, p: int = 3, K: int = 4, n_per: int = 32, noise: float = 0.3,
                         basis: str = "random", nonnegative: bool = False,
                         generator: torch.Generator | None = None, dtype=torch.float64):
    """Tokens from a mixture of ``K`` orthogonal ``p``-dim subspaces plus isotropic noise.

    ``basis="random"`` draws the subspaces at random; ``basis="coordinate"`` makes ``U_k`` the
    ``k``-th block of ``p`` coordinate axes, and ``nonnegative=True`` takes ``|c|`` as the
    coefficients, so the clean tokens are sparse and non-negative in the standard basis: the
    structure the ReLU proximal step (Eq. (18), ``V``-step) assumes.
    Returns ``(Z, U, labels)``: ``Z`` ``(d, K*n_per)``, ``U`` ``(K, d, p)`` with orthonormal
    columns, ``labels`` ``(N,)``. Requires ``K*p <= d``.
    """
    if K * p > d:
        raise ValueError(f"K*p = {K * p} orthogonal directions do not fit in d = {d}")
    if basis == "random":
        q, _ = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=dtype))
    elif basis == "coordinate":
        q = torch.eye(d, dtype=dtype)
    else:
        raise ValueError(f"basis must be 'random' or 'coordinate', got {basis!r}")
    U = q[:, : K * p].reshape(d, K, p).permute(1, 0, 2).contiguous()
    labels = torch.arange(K).repeat_interleave(n_per)
    coeff = torch.randn(K * n_per, p, generator=generator, dtype=dtype)
    coeff = coeff.abs() if nonnegative else coeff
    Z = torch.einsum("ndp,np->dn", U[labels], coeff)
    Z = Z + noise * torch.randn(d, K * n_per, generator=generator, dtype=dtype)
    return Z, U, labels


def mssa_columns(Z: torch.Tensor, U: torch.Tensor, temperature: float | None = None) -> torch.Tensor:
    r"""Eq. (12) for column tokens: ``sum_k U_k U_k^T Z softmax(t * Z^T U_k U_k^T Z)``.

    The softmax normalises each column (each output token is a convex combination of the projected
    tokens). Eq. (12) itself has no scaling, ``t = 1``; ``temperature`` defaults to ``p^{-1/2}``,
    the scaling :class:`~aot_lib.models.layers.MSSA` uses.
    """
    p = U.shape[-1]
    t = p**-0.5 if temperature is None else temperature
    proj = torch.einsum("kdp,dn->kpn", U, Z)  # U_k^T Z
    attn = torch.softmax(t * proj.mT @ proj, dim=-2)  # column-wise softmax, (K, N, N)
    return torch.einsum("kdp,kpn->dn", U, proj @ attn)


def exact_compression_gradient(Z: torch.Tensor, U: torch.Tensor, eps: float) -> torch.Tensor:
    """The exact ``nabla_Z R^c(Z | U)``, by automatic differentiation of Eq. (7).

    Not the paper's Eq. (11), which approximates this gradient by
    :func:`mssa_compression_gradient`.
    """
    with torch.enable_grad():
        z = Z.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(subspace_coding_rate(z, U, eps), z)
    return g


def mssa_compression_gradient(Z: torch.Tensor, U: torch.Tensor, gamma: float = 1.0,
                              temperature: float | None = None) -> torch.Tensor:
    """The paper's approximation of ``nabla_Z R^c(Z | U)``, Eq. (11):
    ``gamma [Z - MSSA(Z | U)]``, with MSSA of :func:`mssa_columns` (``temperature`` as there).

    An approximation, not the gradient (that is :func:`exact_compression_gradient`); the paper says
    only that ``gamma > 0`` is determined by the coding precision. With the penalty term it gives the
    ``Z``-subproblem gradient of Eq. (13), and a step of size ``eta`` gives Eq. (14).
    """
    return gamma * (Z - mssa_columns(Z, U, temperature))


def subspace_alignment(Z: torch.Tensor, U: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean over tokens of ``||U_y U_y^T z||^2 / ||z||^2``: 1 when every token lies on its own subspace."""
    own = torch.einsum("ndp,dn->np", U[labels], Z)
    return (own.square().sum(-1) / Z.square().sum(0).clamp_min(1e-300)).mean()


@dataclass
class ADMMHistory:
    """Per-iteration diagnostics and iterates of :func:`admm_iterations` (index 0 = the start)."""

    objective: list = field(default_factory=list)  # R^c(Z|U) + lambda ||V||_1
    primal: list = field(default_factory=list)  # ||Z - V||_F
    dual: list = field(default_factory=list)  # rho ||V^{t+1} - V^t||_F
    sparsity: list = field(default_factory=list)  # fraction of zero entries in V
    alignment: list = field(default_factory=list)  # subspace_alignment(Z)
    iterates: list = field(default_factory=list)  # (Z, V, W)


def admm_iterations(Z0: torch.Tensor, U: torch.Tensor, *, eta: float = 0.25, gamma: float = 1.0, rho: float = 1.0,
                    lambd: float = 0.1, eps: float = 0.5, iters: int = 20, gradient: str = "mssa",
                    labels: torch.Tensor | None = None, temperature: float | None = None) -> ADMMHistory:
    r"""Scaled-form ADMM with a linearised ``Z``-step, started as Algorithm 1: ``V^0 = Z^0``, ``W^0 = 0``.

    ``gradient="mssa"`` (Eq. (14), the step with :func:`mssa_compression_gradient`):
        ``Z+ = (1 - eta*gamma - eta*rho) Z + eta*gamma MSSA(Z|U) + eta*rho (V - W)``,
        computed in this form, the one the network's layer computes;
    ``gradient="exact"`` (one gradient step on Eq. (10) with :func:`exact_compression_gradient`):
        ``Z+ = Z - eta (grad R^c(Z|U) + rho (Z - V + W))``.
    Then ``V+ = ReLU(Z+ + W - lambda/rho)`` and ``W+ = W + Z+ - V+``. ``gamma`` and ``temperature``
    enter only the MSSA version, ``eps`` only the exact one (and the recorded objective).
    """
    if gradient not in {"mssa", "exact"}:
        raise ValueError(f"gradient must be 'mssa' or 'exact', got {gradient!r}")
    a, b, c = admm_coefficients(eta, gamma, rho)
    tau = lambd / rho
    Z, V, W = Z0.clone(), Z0.clone(), torch.zeros_like(Z0)
    hist = ADMMHistory()

    def record(Z, V, W, V_prev):
        hist.objective.append(float(subspace_coding_rate(Z, U, eps) + lambd * V.abs().sum()))
        hist.primal.append(float((Z - V).norm()))
        hist.dual.append(math.nan if V_prev is None else float(rho * (V - V_prev).norm()))
        hist.sparsity.append(float((V == 0).double().mean()))
        hist.alignment.append(math.nan if labels is None else float(subspace_alignment(Z, U, labels)))
        hist.iterates.append((Z, V, W))

    record(Z, V, W, None)
    for _ in range(iters):
        if gradient == "mssa":
            Z_next = a * Z + b * mssa_columns(Z, U, temperature) + c * (V - W)
        else:
            Z_next = Z - eta * (exact_compression_gradient(Z, U, eps) + rho * (Z - V + W))
        V_next = F.relu(Z_next + W - tau)
        W = W + Z_next - V_next
        V_prev, Z, V = V, Z_next, V_next
        record(Z, V, W, V_prev)
    return hist


def admm_layer_from_subspaces(U: torch.Tensor, *, eta: float = 0.25, gamma: float = 1.0, rho: float = 1.0,
                              lambd: float = 0.1) -> ADMMLayer:
    """An :class:`ADMMLayer` whose MSSA uses the given subspaces (``K*p = d``), without the
    LayerNorm and RMS rescaling: one application is one iteration of :func:`admm_iterations`."""
    K, d, p = U.shape
    if K * p != d:
        raise ValueError(f"the layer's heads tile the width: need K*p = d, got K={K}, p={p}, d={d}")
    layer = ADMMLayer(d, K, eta=eta, gamma=gamma, rho=rho, lambd=lambd, pre_norm=False, rms_rescale=False)
    layer = layer.to(U.dtype)
    u_cat = U.permute(1, 0, 2).reshape(d, K * p)  # [U_1 ... U_K]
    with torch.no_grad():
        # re-set in the target precision: the float32 initial values would cost 1e-8
        layer.coef_logits.copy_(torch.tensor(admm_coefficients(eta, gamma, rho), dtype=torch.float64).log())
        layer.tau_raw.fill_(inverse_softplus(lambd / rho))
        layer.mssa.qkv.weight.copy_(u_cat.T)  # x @ U: every head's U_k^T z
        layer.mssa.proj.weight.copy_(u_cat)  # sum_k U_k (head_k)
    return layer
