r"""Closed forms and population quantities behind Theorem 1 and the Proposition (Appendix A).

Notation of the appendix: ``c = d / eps^2``, ``theta = c / (1 + c)``, ``A = Sigma - I``, and the
trace-``d`` set ``S = {Sigma >= 0 : tr Sigma = d}``. SIGReg here is the *population*
Epps-Pulley discrepancy of Eq. (A.2) (no factor ``N``); the finite-sample statistic of
:func:`aot_lib.epps_pulley` is ``N`` times an estimate of it, biased by
:func:`finite_sample_bias`.

For a Gaussian law every projection is Gaussian, ``u_a ~ N(0, v)`` with ``v = a^T Sigma a``, and
with LeJEPA's weight ``w(t) = e^{-t^2/2}`` the integral has the closed form

.. math:: L(v) = \int_{\mathbb R} (e^{-v t^2/2} - e^{-t^2/2})^2 e^{-t^2/2} dt
          = \sqrt{2\pi}\,\bigl[(2v+1)^{-1/2} - 2 (v+2)^{-1/2} + 3^{-1/2}\bigr],

whose expansion around ``v = 1`` is ``C_w s^2 + O(s^3)`` with ``s = v - 1`` (Eq. (A.6)).
"""
from __future__ import annotations

import math

import torch

from ..objectives.sigreg import quadrature

__all__ = [
    "cw_gaussian_weight", "cw_quadrature", "gaussian_slice_sigreg", "population_sigreg",
    "sigreg2", "population_rate", "rate_gap", "theta", "limit_ratio", "finite_sample_bias",
    "random_traceless", "random_trace_d_covariance", "project_traceless",
]

SQRT_2PI = math.sqrt(2 * math.pi)


def cw_gaussian_weight(sigma: float = 1.0) -> float:
    r"""``C_w = 1/4 \int t^4 e^{-t^2} w(t) dt`` for ``w(t) = e^{-t^2/(2 sigma^2)}`` (Eq. (A.6)).

    With ``k = 2 + 1/sigma^2``: ``\int t^4 e^{-k t^2/2} dt = 3 sqrt(2 pi) k^{-5/2}``, so
    ``C_w = (3/4) sqrt(2 pi) k^{-5/2}``; LeJEPA's ``sigma = 1`` gives ``sqrt(2 pi) / (4 * 3^{3/2})``.
    """
    k = 2.0 + 1.0 / sigma**2
    return 0.75 * SQRT_2PI * k ** (-2.5)


def cw_quadrature(t_max: float = 3.0, n_points: int = 17) -> float:
    """``C_w`` as SIGReg's trapezoid rule on ``[-t_max, t_max]`` actually integrates it."""
    t, w = quadrature(t_max, n_points, dtype=torch.float64)
    return 0.25 * float((t**4 * torch.exp(-(t**2)) * w).sum())


def gaussian_slice_sigreg(v: torch.Tensor | float) -> torch.Tensor:
    """Population Epps-Pulley discrepancy of ``N(0, v)`` from ``N(0, 1)`` (closed form, weight e^{-t^2/2})."""
    v = torch.as_tensor(v, dtype=torch.float64)
    return SQRT_2PI * ((2 * v + 1) ** -0.5 - 2 * (v + 2) ** -0.5 + 3**-0.5)


def population_sigreg(sigma: torch.Tensor, directions: torch.Tensor) -> torch.Tensor:
    """``E_a L(a^T Sigma a)`` over the given unit directions ``(d, K)``: SIGReg of ``N(0, Sigma)``."""
    v = torch.einsum("dk,de,ek->k", directions, sigma, directions)
    return gaussian_slice_sigreg(v).mean()


def sigreg2(sigma: torch.Tensor, cw: float | None = None) -> torch.Tensor:
    """Covariance component ``2 C_w / (d (d+2)) ||Sigma - I||_F^2`` (Eq. (A.12))."""
    d = sigma.shape[-1]
    cw = cw_gaussian_weight() if cw is None else cw
    a = sigma - torch.eye(d, dtype=sigma.dtype, device=sigma.device)
    return 2 * cw / (d * (d + 2)) * a.square().sum((-2, -1))


def population_rate(sigma: torch.Tensor, eps: float) -> torch.Tensor:
    """``R(Sigma) = 1/2 logdet(I + (d / eps^2) Sigma)`` (Eq. (A.1))."""
    d = sigma.shape[-1]
    eye = torch.eye(d, dtype=sigma.dtype, device=sigma.device)
    return 0.5 * torch.linalg.slogdet(eye + d / eps**2 * sigma)[1]


def rate_gap(sigma: torch.Tensor, eps: float) -> torch.Tensor:
    """``R(I) - R(Sigma)``; positive on the trace-d set except at ``I`` (Eq. (A.17))."""
    d = sigma.shape[-1]
    return 0.5 * d * math.log1p(d / eps**2) - population_rate(sigma, eps)


def theta(d: int, eps: float) -> float:
    c = d / eps**2
    return c / (1 + c)


def limit_ratio(d: int, eps: float, cw: float | None = None) -> float:
    """``lim_{Sigma -> I} SIGReg^(2) / (R(I) - R(Sigma)) = 8 C_w / (theta^2 d (d+2))`` (Eq. (A.23))."""
    cw = cw_gaussian_weight() if cw is None else cw
    return 8 * cw / (theta(d, eps) ** 2 * d * (d + 2))


def finite_sample_bias(v: torch.Tensor | float, n: int) -> torch.Tensor:
    """``E[T_N / N] - L(v)`` for ``N`` i.i.d. ``N(0, v)`` samples: ``(1/N) int (1 - e^{-v t^2}) w dt``.

    ``E|phi_hat(t) - phi(t)|^2 = |phi(t) - phi_N(t)|^2 + (1 - |phi(t)|^2) / N``, so the finite-sample
    statistic over-estimates the population discrepancy by ``sqrt(2 pi) (1 - (2v+1)^{-1/2}) / N``.
    """
    v = torch.as_tensor(v, dtype=torch.float64)
    return SQRT_2PI * (1 - (2 * v + 1) ** -0.5) / n


def random_traceless(d: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """A random symmetric traceless ``d x d`` matrix with unit Frobenius norm (float64)."""
    b = torch.randn(d, d, generator=generator, dtype=torch.float64)
    b = (b + b.T) / 2
    b = b - b.trace() / d * torch.eye(d, dtype=torch.float64)
    return b / b.norm()


def random_trace_d_covariance(d: int, generator: torch.Generator | None = None, rank: int | None = None) -> torch.Tensor:
    """A random point of ``S``: a Wishart matrix of the given rank rescaled to trace ``d``."""
    g = torch.randn(d, rank or d, generator=generator, dtype=torch.float64)
    s = g @ g.T
    return s * d / s.trace()


def project_traceless(x: torch.Tensor) -> torch.Tensor:
    """``P(X) = X - tr(X)/d I``: orthogonal projection onto traceless matrices (Proposition)."""
    d = x.shape[-1]
    return x - x.diagonal(dim1=-2, dim2=-1).sum(-1)[..., None, None] / d * torch.eye(d, dtype=x.dtype)
