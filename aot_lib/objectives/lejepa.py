r"""The LeJEPA objective, Eq. (19): ``L = L_pred + alpha * L_SIGReg``.

``L_SIGReg`` is the finite-sample sliced Epps-Pulley statistic of :class:`~aot_lib.objectives.sigreg.SIGReg`
(Eq. (A.2), times the sample size). Which embeddings form one SIGReg sample is a convention
on which the two reference implementations differ (``sigreg_sample`` of :class:`LeJEPALoss`):

* ``"per_view"`` — LeJEPA's minimal example (``rbalestr-lab/lejepa``, ``MINIMAL.md``) passes the
  ``(V, N, D)`` projections to its ``SIGReg``, which averages the characteristic function over
  the ``N`` axis (``mean(-3)`` of ``(V, N, slices, t)``), multiplies by ``N`` and averages the
  ``(V, slices)`` statistics: one SIGReg per view, averaged over views. The ``lejepa`` package's
  ``SlicingUnivariateTest`` over ``EppsPulley`` (``lejepa/multivariate/slicing.py``,
  ``lejepa/univariate/epps_pulley.py``) does the same for ``(*, N, D)`` input.
* ``"pooled"`` — ``stable-pretraining`` (``galilai-group/stable-pretraining``,
  ``stable_pretraining/methods/lejepa.py``, ``LeJEPA._compute_loss``) reshapes the ``(V, N, K)``
  projections to ``(V*N, K)`` and computes one statistic on that sample (factor ``V*N``).

When every view has the same law the pooled statistic is about ``V`` times the per-view one (exactly
``V`` times for identical views), so ``alpha`` means different things under the two conventions.

The weighting also differs. ``stable-pretraining`` returns ``inv_loss + lamb * sigreg_loss`` with
``lamb = 0.02`` by default: Eq. (19) with ``alpha = lamb``. LeJEPA's minimal example uses
``sigreg_loss * lamb + inv_loss * (1 - lamb)`` (its suggested command line sets ``lamb=0.02``),
which is ``(1 - lamb)`` times Eq. (19) with ``alpha = lamb / (1 - lamb)``: see
:func:`alpha_from_lejepa_lambda`.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import torch
from torch import nn

from .. import distributed
from ..runtime import full_precision
from .sigreg import SIGReg

__all__ = ["LeJEPAModel", "LeJEPALoss", "LeJEPAOutput", "alpha_from_lejepa_lambda", "SIGREG_SAMPLES", "energy_normalize"]

SIGREG_SAMPLES = ("per_view", "pooled")


def alpha_from_lejepa_lambda(lambd: float) -> float:
    """LeJEPA's minimal example writes ``(1-lambda) pred + lambda SIGReg``; dividing by ``1-lambda``
    gives Eq. (19) with ``alpha = lambda / (1 - lambda)`` (same minimiser, gradient scaled by
    ``1/(1-lambda)``). ``stable-pretraining``'s ``lamb`` is already ``alpha``: do not convert it."""
    if not 0 <= lambd < 1:
        raise ValueError(f"LeJEPA's lambda must lie in [0, 1), got {lambd}")
    return lambd / (1 - lambd)


def energy_normalize(y: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    r"""Centre each sample and rescale it to the normalised energy of Theorem 1 (Appendix A,
    Appendix A's normalisation): over the ``N`` embeddings of ``y`` (shape ``(..., N, D)``),
    ``mean = 0`` and ``mean ||y_n||^2 = D``, i.e. ``tr(Sigma) = d`` for the sample covariance.

    Under DDP the mean and the energy are those of the global batch (differentiable all-reduce), so
    every process normalises with the same statistics.
    """
    n, d, world = y.shape[-2], y.shape[-1], distributed.world_size()
    s = y.sum(-2, keepdim=True)
    if world > 1:
        s = distributed.all_reduce_sum(s)
    yc = y - s / (n * world)
    energy = yc.square().sum((-2, -1), keepdim=True)
    if world > 1:
        energy = distributed.all_reduce_sum(energy)
    return yc * torch.rsqrt(energy / (n * world * d) + eps)


class LeJEPAOutput(NamedTuple):
    """The terms of Eq. (19): ``loss = pred_loss + alpha * sigreg_loss`` (each at least float32), and,
    from :class:`LeJEPAModel`, the detached projector ``embeddings`` ``(V, B, D)`` they were computed from
    (for the monitors, :mod:`aot_lib.training.monitors`)."""

    loss: torch.Tensor
    pred_loss: torch.Tensor
    sigreg_loss: torch.Tensor
    embeddings: torch.Tensor | None = None


class LeJEPALoss(nn.Module):
    """Prediction + SIGReg over the views of a batch (Eq. (19); the two "Compute" lines of Algorithm 1).

    Args:
        alpha: SIGReg weight. The default ``0.05/0.95`` equals the ``(1-lambda) pred + lambda SIGReg``
            form with ``lambda = 0.05``.
        num_global: how many of the views are global; the first ``num_global`` are.
        num_slices, t_max, n_points, seed: passed to :class:`SIGReg`.
        sigreg_sample: ``"per_view"`` (default: SIGReg of each view's ``N`` embeddings, averaged over
            views, as LeJEPA's minimal example and the ``lejepa`` package) or ``"pooled"`` (one SIGReg
            of all ``V*N`` embeddings, as ``stable-pretraining``); see the module docstring.
        sigreg_normalize: centre and rescale each SIGReg sample to ``tr(Sigma) = d`` before the test
            (:func:`energy_normalize`; Appendix A: "Centering and the fixed normalized-energy condition
            of Theorem 1 are imposed by the normalization preceding the regularizer"). Off by default,
            as in both reference implementations; the prediction loss always sees the raw embeddings.

    ``forward(embeddings, directions=None)`` takes the projected embeddings of all views, shape
    ``(V, N, D)`` or a list of ``V`` tensors ``(N, D)`` with the global views first; ``directions``
    ``(D, K)`` fixes SIGReg's slices. Every view is pulled to the mean of the global views (the
    target is not detached, as in LeJEPA): ``L_pred = mean_{v,n,j} (mu_{n,j} - y_{v,n,j})^2``.
    Both terms are computed in float32 (float64 for float64 input) with autocast switched off.
    """

    def __init__(self, alpha: float = 0.05 / 0.95, num_global: int = 2, num_slices: int = 1024,
                 t_max: float = 3.0, n_points: int = 17, seed: int = 0, sigreg_sample: str = "per_view",
                 sigreg_normalize: bool = False):
        super().__init__()
        if alpha < 0:
            raise ValueError(f"alpha must be non-negative, got {alpha}")
        if sigreg_sample not in SIGREG_SAMPLES:
            raise ValueError(f"sigreg_sample must be one of {SIGREG_SAMPLES}, got {sigreg_sample!r}")
        self.alpha, self.num_global, self.sigreg_sample = alpha, num_global, sigreg_sample
        self.sigreg_normalize = sigreg_normalize
        self.sigreg = SIGReg(num_slices=num_slices, t_max=t_max, n_points=n_points, seed=seed)

    def forward(self, embeddings: torch.Tensor | Sequence[torch.Tensor],
                directions: torch.Tensor | None = None) -> LeJEPAOutput:
        y = torch.stack(list(embeddings)) if not torch.is_tensor(embeddings) else embeddings
        if y.ndim != 3 or y.shape[0] < self.num_global:
            raise ValueError(
                f"expected embeddings of shape (views, batch, dim) with at least {self.num_global} "
                f"global views first, got {tuple(y.shape)}"
            )
        with full_precision(y.device):
            y = y.to(torch.promote_types(y.dtype, torch.float32))
            target = y[: self.num_global].mean(0)
            pred_loss = (target.unsqueeze(0) - y).square().mean()
            sample = y if self.sigreg_sample == "per_view" else y.reshape(-1, y.shape[-1])
            if self.sigreg_normalize:
                sample = energy_normalize(sample)
            sigreg_loss = self.sigreg(sample, directions)
            return LeJEPAOutput(pred_loss + self.alpha * sigreg_loss, pred_loss, sigreg_loss)

    def extra_repr(self) -> str:
        return (f"alpha={self.alpha:.6g}, num_global={self.num_global}, sigreg_sample={self.sigreg_sample!r}, "
                f"sigreg_normalize={self.sigreg_normalize}")


class LeJEPAModel(nn.Module):
    """Encoder + projection head + LeJEPA loss (Algorithm 1, lines 2-15) as one module.

    ``forward(views)`` takes the list of augmented views (global views first), sends the views of one
    resolution through the encoder together, projects the pooled features and returns the
    :class:`LeJEPAOutput` of Eq. (19).
    """

    def __init__(self, encoder: nn.Module, projector: nn.Module, loss: LeJEPALoss):
        super().__init__()
        self.encoder, self.projector, self.loss = encoder, projector, loss

    def forward(self, views: list[torch.Tensor]):
        # views of one resolution go through the encoder together
        by_size: dict[tuple, list[int]] = {}
        for i, v in enumerate(views):
            by_size.setdefault(tuple(v.shape[-2:]), []).append(i)
        out: list = [None] * len(views)
        for idx in by_size.values():
            f = self.encoder.forward_features(torch.cat([views[i] for i in idx]))
            for i, chunk in zip(idx, f.chunk(len(idx))):
                out[i] = chunk
        y = self.project(torch.cat(out)).view(len(views), views[0].shape[0], -1)
        return self.loss(y)._replace(embeddings=y.detach())

    def project(self, features: torch.Tensor) -> torch.Tensor:
        """The projector's embeddings of pooled features, at least float32 (bf16 up, float64 kept)."""
        y = self.projector(features)
        return y.to(torch.promote_types(y.dtype, torch.float32))
