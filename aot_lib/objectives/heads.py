"""Projection head g of Algorithm 1 (line 12): a LeJEPA-style MLP with BatchNorm."""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn

from .. import distributed

__all__ = ["LeJEPAProjector", "GlobalBatchNorm1d"]

HALF = (torch.bfloat16, torch.float16)


class GlobalBatchNorm1d(nn.BatchNorm1d):
    """BatchNorm1d whose training statistics are those of the global batch under DDP.

    ``torch.nn.SyncBatchNorm`` only runs on GPUs; this one all-reduces the per-feature sum and
    sum of squares with an autograd-aware all-reduce, so it also runs on CPU (gloo). Without a
    process group it is exactly ``nn.BatchNorm1d``.

    Dtypes, one rule with or without a process group (``nn.BatchNorm1d``'s on a CPU): the input has
    the parameters' dtype, or is half precision (bf16, fp16) with float32 parameters (autocast's
    case); the statistics are computed in the input's dtype or float32, whichever is wider (float64
    for a float64 model), and the output has the input's dtype. Other pairs are refused with the same
    message on both paths.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check_dtype(x)
        if not (self.training and distributed.world_size() > 1):
            return super().forward(x)
        n_local = torch.tensor([float(x.shape[0])], device=x.device)
        dist.all_reduce(n_local)
        n = n_local.item()
        xf = x.to(torch.promote_types(x.dtype, torch.float32))
        # two passes (mean, then centred squares) as in a single process: E[x^2] - E[x]^2 in float32
        # would lose digits when the mean is large against the spread
        mean = distributed.all_reduce_sum(xf.sum(0)) / n
        var = distributed.all_reduce_sum((xf - mean).square().sum(0)) / n
        with torch.no_grad():
            self.num_batches_tracked += 1
            m = self.momentum
            self.running_mean.mul_(1 - m).add_(m * mean.detach())
            self.running_var.mul_(1 - m).add_(m * var.detach() * n / max(n - 1, 1))
        y = (xf - mean) * torch.rsqrt(var + self.eps)
        return (y * self.weight + self.bias).to(x.dtype)

    def _check_dtype(self, x: torch.Tensor) -> None:
        ref = self.weight if self.weight is not None else self.running_mean
        if ref is None or x.dtype == ref.dtype or (ref.dtype == torch.float32 and x.dtype in HALF):
            return
        raise TypeError(f"GlobalBatchNorm1d got {x.dtype} input with {ref.dtype} parameters: cast the model or the "
                        f"input to one dtype (model.to({x.dtype}) or x.to({ref.dtype}))")


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
