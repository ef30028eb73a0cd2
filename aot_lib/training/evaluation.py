"""Frozen-encoder evaluation: features of un-augmented images, the stratified validation split carved from a
training set, and DINO's weighted k-NN vote. The probes (:mod:`aot_lib.training.probe`) and the training-time k-NN
monitor (:class:`aot_lib.training.monitors.OnlineKNN`) both build on these, so a learning curve and a final probe
measure the same thing."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..data.augment import prepare_images

__all__ = ["extract_features", "stratified_split", "knn_probe", "knn_val_probe"]


@torch.no_grad()
def extract_features(encoder: nn.Module, data, size: int, mean, std, batch_size: int = 512,
                     device: torch.device | str = "cpu") -> torch.Tensor:
    """Pooled features of every image of ``data`` (an :class:`~aot_lib.data.datasets.ImageData` or a uint8 image tensor;
    no augmentation; resized to ``size`` with antialiasing if needed). Leaves the encoder in evaluation mode."""
    images = data.images if hasattr(data, "images") else data
    encoder.eval().to(device)
    feats = []
    for i in range(0, len(images), batch_size):
        x = prepare_images(images[i:i + batch_size].to(device), size, mean, std)
        feats.append(encoder.forward_features(x).float().cpu())
    return torch.cat(feats)


def stratified_split(labels: torch.Tensor, fraction: float, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices ``(train, val)``: ``fraction`` of every class (at least one image) held out for validation."""
    g = torch.Generator().manual_seed(seed)
    tr, va = [], []
    for c in labels.unique():
        idx = torch.nonzero(labels == c).flatten()
        idx = idx[torch.randperm(len(idx), generator=g)]
        k = max(1, round(fraction * len(idx))) if len(idx) > 1 else 0
        va.append(idx[:k])
        tr.append(idx[k:])
    return torch.cat(tr).sort().values, torch.cat(va).sort().values


@torch.no_grad()
def knn_probe(train_f, train_y, test_f, test_y, k: int = 20, temperature: float = 0.07, chunk: int = 1024) -> dict:
    """Weighted k-NN on cosine similarity (weights ``exp(sim / T)``, as in DINO); top-1 in %."""
    tr, te = F.normalize(train_f, dim=1), F.normalize(test_f, dim=1)
    classes = int(max(train_y.max(), test_y.max())) + 1
    k = min(k, len(tr))
    correct = 0
    for i in range(0, len(te), chunk):
        sim, nn_idx = (te[i:i + chunk] @ tr.T).topk(k, dim=1)
        votes = torch.zeros(len(sim), classes).scatter_add_(1, train_y[nn_idx], (sim / temperature).exp())
        correct += (votes.argmax(1) == test_y[i:i + chunk]).sum().item()
    return {"knn_top1": correct / len(te) * 100, "knn_k": k}


def knn_val_probe(train_f, train_y, val_fraction: float = 0.1, seed: int = 0, **knn) -> dict:
    """:func:`knn_probe` within the training set: the stratified validation split of
    :func:`select_linear_probe` (same fraction, same seed) voted on by the rest; ``knn_val_top1`` in %.
    Deterministic and free of test data: a selection score."""
    tr, va = stratified_split(train_y, val_fraction, seed)
    return {"knn_val_top1": knn_probe(train_f[tr], train_y[tr], train_f[va], train_y[va], **knn)["knn_top1"]}
