r"""Coding rates of the sparse rate reduction objective (Eq. (1)).

Tokens are columns, as in the paper: ``Z`` has shape ``(..., d, N)``.

* :func:`coding_rate` — Eq. (2): ``R(Z) = 1/2 logdet(I_d + d/(N eps^2) Z Z^T)``.
* :func:`subspace_coding_rate` — Eqs. (6) and (7):
  ``R^c(Z | U) = sum_k 1/2 logdet(I_p + p/(N eps^2) U_k^T Z Z^T U_k)``.

Both use a Cholesky factorisation of the (always positive definite) matrix, on the
smaller Gram side (``logdet(I + c A A^T) = logdet(I + c A^T A)``), so they are stable, batched,
differentiable and exact in float64.
"""
from __future__ import annotations

from typing import Sequence

import torch

__all__ = ["coding_rate", "subspace_coding_rate", "logdet_identity_plus"]


def logdet_identity_plus(a: torch.Tensor, scale: float | torch.Tensor) -> torch.Tensor:
    """``logdet(I + scale * a a^T)`` for ``a`` of shape ``(..., m, n)``, via the smaller Gram matrix."""
    gram = a @ a.mT if a.shape[-2] <= a.shape[-1] else a.mT @ a
    eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device)
    chol = torch.linalg.cholesky(eye + scale * gram)
    return 2.0 * chol.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def coding_rate(Z: torch.Tensor, eps: float = 0.5) -> torch.Tensor:
    """``R(Z)`` of Eq. (2) for ``Z`` of shape ``(..., d, N)``."""
    if Z.ndim < 2:
        raise ValueError(f"Z must have shape (..., d, N), got {tuple(Z.shape)}")
    d, n = Z.shape[-2:]
    return 0.5 * logdet_identity_plus(Z, d / (n * eps**2))


def subspace_coding_rate(Z: torch.Tensor, U: torch.Tensor | Sequence[torch.Tensor], eps: float = 0.5) -> torch.Tensor:
    """``R^c(Z | U_[K])`` of Eq. (7); ``U`` is ``(K, d, p)`` or a list of ``(d, p)``."""
    if not torch.is_tensor(U):
        U = torch.stack(list(U))
    if U.ndim != 3 or U.shape[1] != Z.shape[-2]:
        raise ValueError(f"U must have shape (K, d, p) with d={Z.shape[-2]}, got {tuple(U.shape)}")
    p, n = U.shape[-1], Z.shape[-1]
    proj = torch.einsum("kdp,...dn->...kpn", U.to(Z.dtype), Z)  # U_k^T Z for every k
    return 0.5 * logdet_identity_plus(proj, p / (n * eps**2)).sum(-1)
