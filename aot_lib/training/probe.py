"""Probes of a frozen encoder: a linear classifier and a weighted k-NN on its pooled features.

Two linear protocols (``probe.protocol``): ``quick`` trains on cached features of un-augmented images, with
the learning rate and weight decay chosen on a validation split carved from the training set (``probe.lr`` /
``probe.weight_decay`` may be lists: the grid); ``standard`` is the SimCLR/BYOL protocol the paper cites
(augmented images, SGD with momentum, cosine schedule), as expensive as that many epochs of inference.
The k-NN probe (DINO's weighted vote) always runs on the cached features.

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

from .config import validate_config
from .evaluation import extract_features, knn_probe, knn_val_probe, stratified_split
from .optim import warmup_cosine
from ..models.registry import create_model
from .builders import load_data, load_train_test, normalization_for
from ..files import torch_save, write_json
from ..probe_grid import check_extension, grid_key, next_rate
from .runs import CheckpointError, WeightsMismatch, checkpoint_model, load_checkpoint, load_weights, run_dir
from ..runtime import git_commit, hardware_summary, resolve_fabric_kwargs

__all__ = ["extract_features", "linear_probe", "select_linear_probe", "standard_linear_probe", "stratified_split",
           "knn_probe", "knn_val_probe", "probe", "load_encoder", "feature_cache_key", "PROTOCOLS"]

PROTOCOLS = {
    "quick": "quick: linear classifier (AdamW, cosine) on cached, standardised features of un-augmented images; "
             "lr (and weight decay, where probe.weight_decay lists more than one) chosen on a validation split of the "
             "training set",
    "standard": "standard (SimCLR/BYOL): linear classifier on features of augmented images (random-resized crop + "
                "flip), SGD momentum 0.9, cosine schedule",
}


def _train_classifier(head: nn.Module, opt: torch.optim.Optimizer, steps: int, batch, progress=None) -> None:
    """The one loop both linear protocols train their classifier with: ``steps`` steps of cross-entropy on
    ``batch(step)`` = (features, labels), the learning rate following a cosine schedule without warm-up."""
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(steps, 0))
    for step in range(steps):
        features, labels = batch(step)
        head.train()
        loss = F.cross_entropy(head(features), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if progress is not None:
            progress.update()
    if progress is not None:
        progress.close()


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
    spe = math.ceil(len(xtr) / batch_size)
    perm = None

    def batch(step: int):
        nonlocal perm
        i = step % spe
        if i == 0:
            perm = torch.randperm(len(xtr), generator=g)  # a new order every epoch
        b = perm[i * batch_size:(i + 1) * batch_size]
        return xtr[b], train_y[b]

    _train_classifier(clf, torch.optim.AdamW(clf.parameters(), lr=lr, weight_decay=weight_decay), epochs * spe, batch)
    with torch.no_grad():
        acc = (clf(xte).argmax(1) == test_y).float().mean().item() * 100
        train_acc = (clf(xtr).argmax(1) == train_y).float().mean().item() * 100
    return {"linear_top1": acc, "linear_train_top1": train_acc}


def select_linear_probe(train_f, train_y, test_f, test_y, lrs, weight_decays, val_fraction: float = 0.1,
                        epochs: int = 100, batch_size: int = 1024, seed: int = 0, lr_below=(), lr_above=()) -> dict:
    """The quick linear probe with its learning rate and weight decay chosen on a validation split carved
    from the training set (never the test set): every ``(lr, wd)`` is trained on the rest of the training
    set and scored on the validation split (``linear_val_top1``; the best score is ``linear_val_best``); the
    best is retrained on the whole training set and tested. With ``test_f=None`` nothing is tested: the
    result holds the validation scores alone (what a hyper-parameter sweep may look at).

    ``lr_below`` / ``lr_above``: rates tried one at a time, in order, while the pick sits at the bottom / top of
    the rates tried so far (:func:`aot_lib.probe_grid.next_rate`), all on the validation split before the test
    split is read; ``linear_lr_grid`` lists every rate tried."""
    lrs = [lrs] if isinstance(lrs, (int, float)) else list(lrs)
    wds = [weight_decays] if isinstance(weight_decays, (int, float)) else list(weight_decays)
    below, above = list(lr_below or ()), list(lr_above or ())
    check_extension(lrs, below, above)
    scores = {}
    if len(lrs) * len(wds) > 1 or below or above or test_f is None:
        tr, va = stratified_split(train_y, val_fraction, seed)

        def score(lr: float) -> None:
            for wd in wds:
                r = linear_probe(train_f[tr], train_y[tr], train_f[va], train_y[va], epochs=epochs, lr=lr,
                                 weight_decay=wd, batch_size=batch_size, seed=seed)
                scores[(lr, wd)] = r["linear_top1"]

        def best() -> tuple[float, float]:
            return max(scores, key=lambda k: (scores[k], -k[1], -k[0]))  # ties: less decay, smaller lr

        for lr in lrs:
            score(lr)
        while (extra := next_rate([k[0] for k in scores], best()[0], below, above)) is not None:
            score(extra)  # the pick sat at an end: one rate further out on that side
        lr, wd = best()
    else:
        lr, wd = lrs[0], wds[0]
    result = {} if test_f is None else linear_probe(train_f, train_y, test_f, test_y, epochs=epochs, lr=lr,
                                                    weight_decay=wd, batch_size=batch_size, seed=seed)
    result.update(linear_lr=lr, linear_weight_decay=wd,
                  linear_val_top1={grid_key(*k): v for k, v in scores.items()} or None,
                  linear_lr_grid=sorted({k[0] for k in scores}) or None,
                  linear_val_best=scores[(lr, wd)] if scores else None,
                  linear_val_fraction=val_fraction if scores else None)
    return result


def standard_linear_probe(encoder: nn.Module, train, test, size: int, mean, std, epochs: int = 100, lr: float = 0.1,
                          batch_size: int = 256, seed: int = 0, device="cpu", progress: bool = False) -> dict:
    """The standard self-supervised linear evaluation (SimCLR, BYOL): a linear classifier on the frozen
    encoder's features of augmented images (random-resized crop, scale 0.08-1, and horizontal flip, drawn
    afresh every epoch), trained with SGD (momentum 0.9, no weight decay) and a cosine schedule; features
    are standardised by a parameter-free BatchNorm (as in MAE's linear probing). Top-1 on un-augmented test
    images. Costs a forward pass of the encoder per image and epoch."""
    from tqdm.auto import tqdm

    from ..data.augment import BatchedMultiCrop, MultiCropConfig
    from .optim import batch_indices

    torch.manual_seed(seed)
    encoder.eval().to(device)
    classes = len(train.classes)
    head = nn.Sequential(nn.BatchNorm1d(encoder.num_features, affine=False), nn.Linear(encoder.num_features, classes)).to(device)
    spe = max(1, len(train) // batch_size)
    aug = BatchedMultiCrop(MultiCropConfig(n_global=1, n_local=0, global_size=size, global_scale=(0.08, 1.0),
                                           jitter_p=0.0, grayscale_p=0.0, solarize_p=0.0, blur_p=0.0, mean=mean, std=std))
    gen = torch.Generator().manual_seed(seed + 1)

    @torch.no_grad()
    def batch(step: int):
        idx = batch_indices(seed, *divmod(step, spe), len(train), batch_size)
        return encoder.forward_features(aug(train.images[idx].to(device), gen)[0]).float(), train.labels[idx].to(device)

    _train_classifier(head, torch.optim.SGD(head.parameters(), lr=lr, momentum=0.9, weight_decay=0.0), epochs * spe, batch,
                      tqdm(desc="standard linear probe", total=epochs * spe, disable=not progress))
    head.eval()
    test_f = extract_features(encoder, test, size, mean, std, device=device).to(device)
    with torch.no_grad():
        acc = (head(test_f).argmax(1).cpu() == test.labels).float().mean().item() * 100
    return {"linear_top1": acc, "linear_lr": lr, "linear_epochs": epochs}


def _file_digest(path: Path) -> str:
    """The checkpoint file's sha256; for a recorded encoder folder, those of the files it is read from: the
    weights, their ``config.json`` and the run's ``config.yaml`` beside the folder."""
    from ..files import sha256_file

    path = Path(path)
    if path.is_dir():
        from ..models.pretrained import CONFIG_NAME, WEIGHTS_NAME

        return "+".join(sha256_file(p) for p in (path / WEIGHTS_NAME, path / CONFIG_NAME, path.parent / "config.yaml"))
    return sha256_file(path)


def _data_digest(data) -> str:
    h = hashlib.sha256()
    h.update(data.images.contiguous().numpy().tobytes())
    h.update(data.labels.numpy().tobytes())
    h.update("|".join(data.classes).encode())
    return h.hexdigest()


def feature_cache_key(checkpoint: Path, train, test, size: int, mean, std) -> str:
    """What cached features depend on: the checkpoint's bytes, both splits' images and labels, the
    resolution and the normalisation. Any change gives another key (a new cache file)."""
    return _cache_key(_file_digest(checkpoint), train, test, size, mean, std)


def _cache_key(source: str, train, test, size: int, mean, std) -> str:
    parts = [source, _data_digest(train), _data_digest(test) if test is not None else "no test",
             str(size), repr(tuple(mean)),
             repr(tuple(std)), "v1"]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def load_encoder(checkpoint: str | os.PathLike):
    """The encoder of any aot_lib checkpoint (pretraining, fine-tuning, distillation, a recorded ``encoder/``),
    without its head, built as :func:`~aot_lib.training.runs.checkpoint_model` says, and the checkpoint."""
    ckpt = load_checkpoint(checkpoint)
    model = checkpoint_model(ckpt, checkpoint)
    encoder = create_model(model["name"], num_classes=0, **model["overrides"])
    try:
        load_weights(encoder, ckpt)
    except WeightsMismatch as e:
        raise CheckpointError(f"checkpoint {checkpoint} does not fit {model['name']} ({e})") from None
    return encoder, ckpt


def probe(cfg: dict, checkpoint: str | os.PathLike | None = None) -> dict:
    """Linear and k-NN probes of a pretrained encoder on the configured data; writes ``probe.json`` (and the
    feature cache) beside the checkpoint: for a recorded ``<run>/encoder/``, in ``<run>``. With
    ``probe.test=false`` the test split is not read at all: the result holds the validation scores alone
    (``linear_val_best``, ``knn_val_top1``), as a hyper-parameter sweep needs."""
    validate_config(cfg, check_model=False)
    t0 = time.time()
    ckpt_path = Path(checkpoint) if checkpoint else run_dir(cfg) / "last.ckpt"
    encoder, ckpt = load_encoder(ckpt_path)
    pcfg = ckpt["config"]
    mean, std = normalization_for(pcfg)  # the statistics the encoder was trained with
    result = probe_features(cfg, encoder, pcfg["views"]["global_size"], mean, std, ckpt_path.parent,
                            source=_file_digest(ckpt_path), train_encoder=encoder,
                            head={"checkpoint": str(ckpt_path), "pretrain_step": ckpt["step"]})
    result.update(commit=git_commit(), wall_time_s=round(time.time() - t0, 2), hardware=hardware_summary())
    write_json(ckpt_path.parent / "probe.json", result)
    return result


def probe_features(cfg: dict, encoder: nn.Module, size: int, mean, std, folder: Path, source: str,
                   head: dict, train_encoder: nn.Module | None = None) -> dict:
    """The probes of ``cfg['probe']`` on ``encoder.forward_features`` of the configured data (the test split
    only with ``probe.test=true``), the features cached in ``folder`` under a key of ``source`` (what the
    encoder is) and the data; the result starts with ``head``. ``train_encoder``: the encoder the standard
    protocol trains a head on (it reads augmented images, not the cache)."""
    device = "cuda" if resolve_fabric_kwargs(cfg["fabric"])["accelerator"] == "cuda" else "cpu"
    pc = cfg["probe"]
    if pc["test"]:
        train, test = load_train_test(cfg)
        splits = (("train", train), ("test", test))
    else:
        train, test = load_data(cfg, "train"), None
        splits = (("train", train),)
    cache = Path(folder) / f"features-{_cache_key(source, train, test, size, mean, std)}.pt"
    feats = None
    if cache.exists():
        try:
            feats = torch.load(cache, weights_only=True)
        except Exception:  # noqa: BLE001 - a broken cache file is rebuilt
            feats = None
    if feats is None:
        feats = {split: (extract_features(encoder, data, size, mean, std, device=device), data.labels)
                 for split, data in splits}
        torch_save(feats, cache)
    trf, try_ = feats["train"]
    tef, tey = feats["test"] if test is not None else (None, None)
    result = {**head, "train_images": len(try_),
              "test_images": len(tey) if tey is not None else 0, "dataset": cfg["data"]["name"],
              "data": {"train": train.provenance, "test": test.provenance if test is not None else None},
              "protocol": PROTOCOLS[pc["protocol"]], "probe": dict(pc), "feature_cache": cache.name}
    t1 = time.time()
    seed = cfg["run"]["seed"]
    if pc["protocol"] == "standard":
        if test is None:
            raise ValueError("probe.protocol=standard has no validation mode; use probe.test=true or the quick protocol")
        if train_encoder is None:
            raise ValueError("probe.protocol=standard trains on augmented images through an encoder; this source has "
                             "none, so use probe.protocol=quick")
        result.update(standard_linear_probe(train_encoder, train, test, size, mean, std, epochs=pc["epochs"],
                                            lr=pc["standard_lr"], batch_size=pc["standard_batch_size"],
                                            seed=seed, device=device, progress=cfg["run"]["progress"]))
    else:
        result.update(select_linear_probe(trf, try_, tef, tey, pc["lr"], pc["weight_decay"], pc["val_fraction"],
                                          epochs=pc["epochs"], batch_size=pc["batch_size"], seed=seed,
                                          lr_below=pc["lr_below"], lr_above=pc["lr_above"]))
    result["linear_probe_s"] = round(time.time() - t1, 2)
    knn = dict(k=pc["knn_k"], temperature=pc["knn_t"])
    result.update(knn_val_probe(trf, try_, pc["val_fraction"], seed, **knn))
    if test is not None:
        result.update(knn_probe(trf, try_, tef, tey, **knn))
    return result
