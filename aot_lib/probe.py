"""Probes of a frozen encoder: a linear classifier and a weighted k-NN on its pooled features.

``probe(cfg, checkpoint)`` extracts the features of the configured data once (no augmentation), caches
them beside the checkpoint under a key of everything they depend on (the checkpoint's bytes, the
images and labels, the resolution and normalisation), and writes ``probe.json``.
"""
from __future__ import annotations

import hashlib
import math
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .augment import normalize
from .config import validate_config
from .optim import warmup_cosine
from .pretrain import build_encoder, load_train_test, normalization_for
from .runs import CheckpointError, encoder_state_dict, load_checkpoint, run_dir, torch_save, write_json
from .runtime import git_commit, hardware_summary, resolve_fabric_kwargs

__all__ = ["extract_features", "linear_probe", "knn_probe", "probe", "load_encoder", "feature_cache_key"]


@torch.no_grad()
def extract_features(encoder: nn.Module, data, size: int, mean, std, batch_size: int = 512,
                     device: torch.device | str = "cpu") -> torch.Tensor:
    """Pooled features of every image (no augmentation; resized to ``size`` with antialiasing if needed)."""
    encoder.eval().to(device)
    feats = []
    for i in range(0, len(data), batch_size):
        x = data.images[i:i + batch_size].to(device).float() / 255.0
        if x.shape[-1] != size:
            x = F.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
        feats.append(encoder.forward_features(normalize(x, mean, std)).float().cpu())
    return torch.cat(feats)


def linear_probe(train_f: torch.Tensor, train_y: torch.Tensor, test_f: torch.Tensor, test_y: torch.Tensor,
                 epochs: int = 100, lr: float = 1e-3, weight_decay: float = 0.0, batch_size: int = 1024,
                 seed: int = 0) -> dict:
    """A linear classifier on frozen, standardised features (AdamW, cosine schedule); top-1 in %."""
    if len(train_f) != len(train_y) or len(test_f) != len(test_y):
        raise ValueError(f"features and labels differ in length: train {len(train_f)} vs {len(train_y)}, "
                         f"test {len(test_f)} vs {len(test_y)}")
    g = torch.Generator().manual_seed(seed)
    mu, sd = train_f.mean(0), train_f.std(0).clamp_min(1e-6)
    xtr, xte = (train_f - mu) / sd, (test_f - mu) / sd
    classes = int(max(train_y.max(), test_y.max())) + 1
    torch.manual_seed(seed)
    clf = nn.Linear(xtr.shape[1], classes)
    opt = torch.optim.AdamW(clf.parameters(), lr=lr, weight_decay=weight_decay)
    steps = epochs * math.ceil(len(xtr) / batch_size)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(steps, 0))
    for _ in range(epochs):
        perm = torch.randperm(len(xtr), generator=g)
        for j in range(0, len(xtr), batch_size):
            b = perm[j:j + batch_size]
            loss = F.cross_entropy(clf(xtr[b]), train_y[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
    with torch.no_grad():
        acc = (clf(xte).argmax(1) == test_y).float().mean().item() * 100
        train_acc = (clf(xtr).argmax(1) == train_y).float().mean().item() * 100
    return {"linear_top1": acc, "linear_train_top1": train_acc}


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


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _data_digest(data) -> str:
    h = hashlib.sha256()
    h.update(data.images.contiguous().numpy().tobytes())
    h.update(data.labels.numpy().tobytes())
    h.update("|".join(data.classes).encode())
    return h.hexdigest()


def feature_cache_key(checkpoint: Path, train, test, size: int, mean, std) -> str:
    """What cached features depend on: the checkpoint's bytes, both splits' images and labels, the
    resolution and the normalisation. Any change gives another key (a new cache file)."""
    parts = [_file_digest(checkpoint), _data_digest(train), _data_digest(test), str(size), repr(tuple(mean)),
             repr(tuple(std)), "v1"]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def load_encoder(checkpoint: str | os.PathLike):
    """The encoder of any aot_lib checkpoint (pretraining, fine-tuning, distillation), without its head,
    and the config it was trained with."""
    ckpt = load_checkpoint(checkpoint)
    tcfg = ckpt["config"]
    encoder = build_encoder(tcfg)
    try:
        encoder.load_state_dict(encoder_state_dict(ckpt), strict=True)
    except RuntimeError as e:
        raise CheckpointError(f"checkpoint {checkpoint} does not fit {tcfg['model']['name']} "
                              f"({str(e).splitlines()[1] if len(str(e).splitlines()) > 1 else e})") from None
    return encoder, ckpt


def probe(cfg: dict, checkpoint: str | os.PathLike | None = None) -> dict:
    """Linear and k-NN probes of a pretrained encoder on the configured data; writes ``probe.json`` beside
    the checkpoint."""
    validate_config(cfg, check_model=False)
    t0 = time.time()
    ckpt_path = Path(checkpoint) if checkpoint else run_dir(cfg) / "last.ckpt"
    encoder, ckpt = load_encoder(ckpt_path)
    pcfg = ckpt["config"]
    d = ckpt_path.parent
    device = "cuda" if resolve_fabric_kwargs(cfg["fabric"])["accelerator"] == "cuda" else "cpu"
    mean, std = normalization_for(pcfg)  # the statistics the encoder was trained with
    size = pcfg["views"]["global_size"]
    train, test = load_train_test(cfg)
    key = feature_cache_key(ckpt_path, train, test, size, mean, std)
    cache = d / f"features-{key}.pt"
    feats = None
    if cache.exists():
        try:
            feats = torch.load(cache, weights_only=True)
        except Exception:  # noqa: BLE001 - a broken cache file is rebuilt
            feats = None
    if feats is None:
        feats = {split: (extract_features(encoder, data, size, mean, std, device=device), data.labels)
                 for split, data in (("train", train), ("test", test))}
        torch_save(feats, cache)
    pc = cfg["probe"]
    (trf, try_), (tef, tey) = feats["train"], feats["test"]
    result = {"checkpoint": str(ckpt_path), "pretrain_step": ckpt["step"], "train_images": len(try_),
              "test_images": len(tey), "dataset": cfg["data"]["name"],
              "data": {"train": train.provenance, "test": test.provenance},
              "protocol": "quick: linear classifier on cached, standardised features of un-augmented images",
              "probe": dict(pc), "feature_cache": cache.name}
    t1 = time.time()
    result.update(linear_probe(trf, try_, tef, tey, epochs=pc["epochs"], lr=pc["lr"], weight_decay=pc["weight_decay"],
                               batch_size=pc["batch_size"], seed=cfg["run"]["seed"]))
    result["linear_probe_s"] = round(time.time() - t1, 2)
    result.update(knn_probe(trf, try_, tef, tey, k=pc["knn_k"], temperature=pc["knn_t"]))
    result.update(commit=git_commit(), wall_time_s=round(time.time() - t0, 2), hardware=hardware_summary())
    write_json(d / "probe.json", result)
    return result
