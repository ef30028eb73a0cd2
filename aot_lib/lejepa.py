r"""The LeJEPA objective, Eq. ``total``: ``L = L_pred + alpha * L_SIGReg``."""
from __future__ import annotations

from typing import NamedTuple, Sequence

import torch
from torch import nn

from .sigreg import SIGReg

__all__ = ["LeJEPALoss", "LeJEPAOutput", "alpha_from_lejepa_lambda"]


def alpha_from_lejepa_lambda(lambd: float) -> float:
    """LeJEPA writes ``(1-lambda) pred + lambda SIGReg``; dividing by ``1-lambda`` gives
    Eq. ``total`` with ``alpha = lambda / (1 - lambda)`` (same minimiser, same gradient direction)."""
    if not 0 <= lambd < 1:
        raise ValueError(f"LeJEPA's lambda must lie in [0, 1), got {lambd}")
    return lambd / (1 - lambd)


class LeJEPAOutput(NamedTuple):
    loss: torch.Tensor
    pred: torch.Tensor
    sigreg: torch.Tensor


class LeJEPALoss(nn.Module):
    """Prediction + SIGReg over the views of a batch (Algorithm 1, lines 14-15).

    Args:
        alpha: SIGReg weight. The default ``0.05/0.95`` equals LeJEPA's ``lambda = 0.05``.
        num_global: how many of the views are global; the first ``num_global`` are.
        num_slices, t_max, n_points: passed to :class:`SIGReg`.

    ``forward(embeddings)`` takes the projected embeddings of all views, shape
    ``(V, N, D)`` or a list of ``V`` tensors ``(N, D)`` with the global views first.
    Every view is pulled to the mean of the global views (the target is not detached,
    as in LeJEPA): ``L_pred = mean_{v,n,j} (mu_{n,j} - y_{v,n,j})^2``; SIGReg is computed per view
    and averaged.
    """

    def __init__(self, alpha: float = 0.05 / 0.95, num_global: int = 2, num_slices: int = 1024,
                 t_max: float = 3.0, n_points: int = 17, seed: int = 0):
        super().__init__()
        if alpha < 0:
            raise ValueError(f"alpha must be non-negative, got {alpha}")
        self.alpha, self.num_global = alpha, num_global
        self.sigreg = SIGReg(num_slices=num_slices, t_max=t_max, n_points=n_points, seed=seed)

    def forward(self, embeddings: torch.Tensor | Sequence[torch.Tensor]) -> LeJEPAOutput:
        y = torch.stack(list(embeddings)) if not torch.is_tensor(embeddings) else embeddings
        if y.ndim != 3 or y.shape[0] < self.num_global:
            raise ValueError(
                f"expected embeddings of shape (views, batch, dim) with at least {self.num_global} "
                f"global views first, got {tuple(y.shape)}"
            )
        target = y[: self.num_global].mean(0)
        pred = (target.unsqueeze(0) - y).square().mean()
        sig = self.sigreg(y)
        return LeJEPAOutput(pred + self.alpha * sig, pred, sig)
