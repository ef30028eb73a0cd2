"""Projection head g of Algorithm 1 (line 12): a LeJEPA-style MLP with BatchNorm."""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

__all__ = ["LeJEPAProjector", "GlobalBatchNorm1d"]


class GlobalBatchNorm1d(nn.BatchNorm1d):
    """BatchNorm1d whose training statistics are those of the global batch under DDP.

    ``torch.nn.SyncBatchNorm`` only runs on GPUs; this one all-reduces the per-feature sum and
    sum of squares with an autograd-aware all-reduce, so it also runs on CPU (gloo). Without a
    process group it is exactly ``nn.BatchNorm1d``.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        distributed = dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1
        if not (self.training and distributed):
            return super().forward(x)
        from .sigreg import all_reduce_sum

        n_local = torch.tensor([float(x.shape[0])], device=x.device)
        dist.all_reduce(n_local)
        n = n_local.item()
        xf = x.float()
        # two passes (mean, then centred squares) as in a single process: E[x^2] - E[x]^2 in float32
        # would lose digits when the mean is large against the spread
        mean = all_reduce_sum(xf.sum(0)) / n
        var = all_reduce_sum((xf - mean).square().sum(0)) / n
        with torch.no_grad():
            self.num_batches_tracked += 1
            m = self.momentum
            self.running_mean.mul_(1 - m).add_(m * mean.detach())
            self.running_var.mul_(1 - m).add_(m * var.detach() * n / max(n - 1, 1))
        y = (xf - mean) * torch.rsqrt(var + self.eps)
        return (y * self.weight + self.bias).to(x.dtype)


class LeJEPAProjector(nn.Module):
    """``num_layers`` Linear layers; every hidden one followed by BatchNorm1d and ReLU.

    Defaults (2048 hidden, 128 out, 3 layers) follow LeJEPA's reference projector. The
    BatchNorms are :class:`GlobalBatchNorm1d`: under DDP their statistics are those of the global
    batch, so a multi-process run matches a single process on the same global batch.
    """

    def __init__(self, in_dim: int, hidden_dim: int = 2048, out_dim: int = 128, num_layers: int = 3):
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        layers: list[nn.Module] = []
        dim = in_dim
        for _ in range(num_layers - 1):
            layers += [nn.Linear(dim, hidden_dim), GlobalBatchNorm1d(hidden_dim), nn.ReLU(inplace=True)]
            dim = hidden_dim
        layers.append(nn.Linear(dim, out_dim))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)
