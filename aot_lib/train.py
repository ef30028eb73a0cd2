"""Training on Lightning Fabric: LeJEPA pretraining (Algorithm 1), linear / k-NN probes,
full fine-tuning (Table 2) and hard-label distillation (Table 4).

Each command writes a run folder ``<run.out_dir>/<run.name>/``:

* ``config.yaml`` — the resolved configuration;
* ``run.json`` — git commit, seed, hardware, start time and wall time, status;
* ``metrics.csv`` — Fabric's CSV logger (TensorBoard events too when tensorboard is installed);
* ``last.ckpt`` — the checkpoint (written atomically: temporary file, then rename);
* ``metrics.json`` (pretraining) / ``probe.json`` / ``finetune.json`` / ``distill.json`` — final numbers.

Pretraining resumes from ``last.ckpt`` when it exists: model, projector, optimiser, scheduler, step,
the augmentation generator and SIGReg's step counter are restored, and the data order is a
function of (seed, epoch), so a resumed run continues the loss trajectory of an uninterrupted one.
"""
from __future__ import annotations

import functools
import json
import math
import os
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .augment import BatchedMultiCrop, MultiCropConfig, normalize
from .config import dump_config
from .data import ImageData, atomic_save, load_split
from .heads import LeJEPAProjector
from .lejepa import LeJEPALoss, alpha_from_lejepa_lambda
from .registry import create_model
from .runtime import git_commit, hardware_summary, make_fabric, resolve_fabric_kwargs

__all__ = ["pretrain", "probe", "finetune", "distill", "record_run", "NonFiniteLossError", "CheckpointError",
           "extract_features", "linear_probe", "knn_probe", "load_checkpoint", "build_encoder"]


class NonFiniteLossError(RuntimeError):
    pass


class CheckpointError(RuntimeError):
    pass


# ----------------------------------------------------------------------------- helpers

def _write_json(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=2, default=str))
    os.replace(tmp, path)


def run_dir(cfg: dict) -> Path:
    return Path(cfg["run"]["out_dir"]) / cfg["run"]["name"]


def _loggers(directory: Path):
    from lightning_fabric.loggers import CSVLogger

    # one version folder per launch (a resumed run adds one); merge_csv_logs joins them at the end
    loggers = [CSVLogger(str(directory), name="logs", flush_logs_every_n_steps=1)]
    try:
        import tensorboard  # noqa: F401
        from lightning_fabric.loggers import TensorBoardLogger

        loggers.append(TensorBoardLogger(str(directory), name="tensorboard"))
    except ImportError:
        pass
    return loggers


def merge_csv_logs(directory: Path) -> Path | None:
    """Join ``logs/version_*/metrics.csv`` into ``metrics.csv``; for a step logged twice (a run resumed
    from an earlier checkpoint), the later launch wins."""
    import csv

    rows: dict[int, dict] = {}
    keys: list[str] = []
    versions = sorted((directory / "logs").glob("version_*/metrics.csv"), key=lambda p: int(p.parent.name.split("_")[1]))
    for f in versions:
        with open(f, newline="") as fh:
            for row in csv.DictReader(fh):
                keys += [k for k in row if k not in keys]
                rows[int(float(row["step"]))] = row
    if not rows:
        return None
    out = directory / "metrics.csv"
    tmp = out.with_name(".metrics.csv.tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows[k] for k in sorted(rows))
    os.replace(tmp, out)
    return out


def _start_run(cfg: dict, kind: str) -> tuple[Path, dict]:
    d = run_dir(cfg)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.yaml").write_text(dump_config(cfg))
    record = {"kind": kind, "commit": git_commit(), "seed": cfg["run"]["seed"], "hardware": hardware_summary(),
              "fabric": resolve_fabric_kwargs(cfg["fabric"]), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "status": "running"}
    return d, record


def _finish_run(d: Path, record: dict, t0: float, status: str, name: str = "run.json") -> None:
    record.update(status=status, wall_time_s=round(time.time() - t0, 2),
                  finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    _write_json(d / name, record)


def _data(cfg: dict, split: str, size: int | None = None) -> ImageData:
    dc = cfg["data"]
    data = load_split(dc["name"], split, root=dc["root"], download=dc["download"],
                      image_size=size if size is not None else dc["image_size"])
    return data.subset(dc["train_subset"] if split == "train" else dc["test_subset"])


def _param_groups(module: nn.Module, weight_decay: float):
    """No weight decay on biases, norms, thresholds, logits, cls token and position embedding."""
    decay, no_decay = [], []
    for _, p in module.named_parameters():
        if not p.requires_grad:
            continue
        (decay if p.ndim >= 2 and p.shape[0] > 1 and p.shape[1] > 1 else no_decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def warmup_cosine(total_steps: int, warmup_steps: int, min_ratio: float = 0.0):
    """Learning-rate multiplier: linear warm-up, then cosine decay to ``min_ratio``."""
    def fn(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        t = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, t)))
    return fn


@functools.lru_cache(maxsize=2)
def _epoch_order(seed: int, epoch: int, n: int) -> torch.Tensor:
    """The data order of one epoch: a function of (seed, epoch) only, so a resumed run sees the same batches."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed * 1_000_003 + epoch))


def _batch_indices(seed: int, epoch: int, i: int, n: int, global_batch: int, rank: int, local: int) -> torch.Tensor:
    """This rank's share of global batch ``i`` of ``epoch``."""
    return _epoch_order(seed, epoch, n)[i * global_batch:(i + 1) * global_batch][rank * local:(rank + 1) * local]


def _grad_norm(module: nn.Module) -> float:
    norms = [p.grad.detach().float().norm() for p in module.parameters() if p.grad is not None]
    return float(torch.stack(norms).norm()) if norms else 0.0


def save_checkpoint(fabric, path: Path, state: dict) -> None:
    """Atomic: Fabric writes a temporary file, rank 0 renames it over the old checkpoint."""
    import shutil

    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    fabric.save(tmp, state)
    fabric.barrier()
    if fabric.is_global_zero:
        if tmp.is_dir():  # FSDP writes a sharded folder: swap folders, then drop the old one
            old = path.with_name(f".{path.name}.old")
            if path.exists():
                os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    fabric.barrier()


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Read a checkpoint on the CPU, with one clear error if it is missing or unreadable."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint {path} does not exist; pretrain first (aot pretrain ...) or fix the path")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as e:  # noqa: BLE001 - truncated or foreign files raise many kinds of errors
        raise CheckpointError(f"checkpoint {path} is corrupt or not a torch checkpoint ({type(e).__name__}: {e}); "
                              "delete it to start over, or point to another checkpoint") from None
    if not isinstance(ckpt, dict) or "model" not in ckpt or "config" not in ckpt:
        raise CheckpointError(f"checkpoint {path} was not written by aot_lib (no 'model'/'config' entries)")
    return ckpt


def build_encoder(cfg: dict, num_classes: int = 0, img_size: int | None = None) -> nn.Module:
    kw = dict(cfg["model"]["overrides"])
    kw.setdefault("img_size", img_size or cfg["views"]["global_size"])
    return create_model(cfg["model"]["name"], num_classes=num_classes, **kw)


def _mean_std(cfg: dict):
    from .augment import CIFAR_MEAN, CIFAR_STD

    if cfg["data"]["name"] == "imagefolder":
        return (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)  # ImageNet statistics
    return CIFAR_MEAN, CIFAR_STD


# ----------------------------------------------------------------------------- pretraining

class LeJEPAModel(nn.Module):
    """Encoder + projection head + LeJEPA loss (Algorithm 1, lines 2-15) as one module."""

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
        feats = torch.cat(out)
        y = self.projector(feats).float().view(len(views), views[0].shape[0], -1)
        return self.loss(y)


def pretrain(cfg: dict) -> dict:
    """LeJEPA pretraining as configured; returns the final metrics (also in ``metrics.json``)."""
    d, record = _start_run(cfg, "pretrain")
    fabric = make_fabric(cfg["fabric"], loggers=_loggers(d))
    result = fabric.launch(_pretrain_worker, cfg, d, record)
    if fabric.world_size > 1 and not isinstance(result, dict):  # spawn launcher: read rank 0's result
        result = json.loads((d / "metrics.json").read_text())
    return result


def _pretrain_worker(fabric, cfg: dict, d: Path, record: dict) -> dict:
    t0 = time.time()
    rc, oc = cfg["run"], cfg["optim"]
    fabric.seed_everything(rc["seed"])
    train = _data(cfg, "train")
    mean, std = _mean_std(cfg)
    aug = BatchedMultiCrop(MultiCropConfig.from_config(cfg["views"], mean, std))
    encoder = build_encoder(cfg)
    projector = LeJEPAProjector(encoder.num_features, **cfg["projector"])
    loss = LeJEPALoss(alpha=alpha_from_lejepa_lambda(cfg["loss"]["lejepa_lambda"]), num_global=cfg["views"]["n_global"],
                      num_slices=cfg["loss"]["num_slices"], t_max=cfg["loss"]["t_max"],
                      n_points=cfg["loss"]["n_points"], seed=rc["seed"])
    model = LeJEPAModel(encoder, projector, loss)
    opt = torch.optim.AdamW(_param_groups(model, oc["weight_decay"]), lr=oc["lr"])
    model, opt = fabric.setup(model, opt)

    world, rank = fabric.world_size, fabric.global_rank
    gb = oc["batch_size"]
    if gb % world:
        raise ValueError(f"optim.batch_size={gb} must be divisible by the number of processes ({world})")
    n = len(train)
    steps_per_epoch = n // gb
    if steps_per_epoch == 0:
        raise ValueError(f"optim.batch_size={gb} is larger than the training set ({n} images); lower it")
    total = oc["max_steps"] or oc["epochs"] * steps_per_epoch
    warmup = min(total, oc["warmup_epochs"] * steps_per_epoch) if oc["max_steps"] is None else min(total, max(1, total // 20))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(total, warmup, oc["min_lr_ratio"]))
    aug_gen = torch.Generator().manual_seed(rc["seed"] + 1)
    state = {"model": model, "optimizer": opt, "scheduler": sched.state_dict(), "step": 0,
             "aug_rng": aug_gen.get_state(), "config": cfg, "metrics": {}}
    ckpt_path = d / "last.ckpt"
    start = 0
    if rc["resume"] and ckpt_path.exists():
        if ckpt_path.is_file():
            load_checkpoint(ckpt_path)  # clear error if corrupt, before Fabric touches it
        rest = fabric.load(ckpt_path, {"model": model, "optimizer": opt})
        sched.load_state_dict(rest["scheduler"])
        aug_gen.set_state(rest["aug_rng"])
        start = rest["step"]
        fabric.print(f"resumed from {ckpt_path} at step {start}")
    record.update(total_steps=total, steps_per_epoch=steps_per_epoch, train_images=n, resumed_from=start)

    from tqdm.auto import tqdm

    bar = tqdm(total=total, initial=start, desc=f"pretrain {rc['name']}", disable=not (fabric.is_global_zero and rc["progress"]),
               dynamic_ncols=True)
    local = gb // world
    model.train()
    last = {}
    tick, seen = time.time(), 0
    for step in range(start, total):
        epoch, i = divmod(step, steps_per_epoch)
        idx = _batch_indices(rc["seed"], epoch, i, n, gb, rank, local)
        images = train.images[idx].to(fabric.device, non_blocking=True)
        views = aug(images, aug_gen, global_batch=gb, offset=rank * local)
        out = model(views)
        loss_value = fabric.all_reduce(out.loss.detach(), reduce_op="mean")
        if not torch.isfinite(loss_value):
            bar.close()
            _finish_run(d, record, t0, "failed: non-finite loss")
            raise NonFiniteLossError(
                f"the loss became {loss_value.item()} at step {step}; the last good checkpoint {ckpt_path} is "
                "untouched. Lower optim.lr, set optim.grad_clip, or use fabric.precision=32-true, then resume.")
        fabric.backward(out.loss)
        if oc["grad_clip"]:
            fabric.clip_gradients(model, opt, max_norm=oc["grad_clip"])
        gnorm = _grad_norm(model)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        seen += gb
        state.update(step=step + 1, aug_rng=aug_gen.get_state(), scheduler=sched.state_dict())
        last = {"loss": loss_value.item(), "pred": fabric.all_reduce(out.pred.detach(), reduce_op="mean").item(),
                "sigreg": out.sigreg.item(), "lr": opt.param_groups[0]["lr"], "grad_norm": gnorm, "epoch": epoch}
        if (step + 1) % rc["log_every"] == 0 or step + 1 == total:
            now = time.time()
            last["images_per_s"] = seen / max(now - tick, 1e-9)
            tick, seen = now, 0
            fabric.log_dict(last, step=step + 1)
            bar.set_postfix(loss=f"{last['loss']:.4f}", pred=f"{last['pred']:.4f}", sigreg=f"{last['sigreg']:.3f}",
                            lr=f"{last['lr']:.2e}", img_s=f"{last['images_per_s']:.0f}")
        bar.update()
        stop = rc["stop_after"] is not None and step + 1 - start >= rc["stop_after"]
        if (step + 1) % rc["ckpt_every"] == 0 or step + 1 == total or stop:
            state["metrics"] = last
            save_checkpoint(fabric, ckpt_path, state)
        if stop and step + 1 < total:
            bar.close()
            fabric.print(f"stopped after {rc['stop_after']} steps at step {step + 1}; run again to resume")
            for logger in fabric.loggers:
                logger.finalize("success")
            if fabric.is_global_zero:
                merge_csv_logs(d)
                _finish_run(d, record, t0, f"paused at step {step + 1}")
            return {"step": step + 1, "paused": True, **last}
    bar.close()
    for logger in fabric.loggers:
        logger.finalize("success")
    metrics = {"step": total, **{k: v for k, v in last.items()}, "wall_time_s": round(time.time() - t0, 2)}
    if fabric.is_global_zero:
        merge_csv_logs(d)
        _write_json(d / "metrics.json", metrics)
        _finish_run(d, record, t0, "finished")
    fabric.barrier()
    return metrics


# ----------------------------------------------------------------------------- probes

@torch.no_grad()
def extract_features(encoder: nn.Module, data: ImageData, size: int, mean, std, batch_size: int = 512,
                     device: torch.device | str = "cpu") -> torch.Tensor:
    """Pooled features of every image (no augmentation; resized to ``size`` if needed)."""
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


def probe(cfg: dict, checkpoint: str | os.PathLike | None = None) -> dict:
    """Linear and k-NN probes of a pretrained encoder; features are extracted once and cached."""
    t0 = time.time()
    ckpt_path = Path(checkpoint) if checkpoint else run_dir(cfg) / "last.ckpt"
    ckpt = load_checkpoint(ckpt_path)
    pcfg = ckpt["config"]
    encoder = build_encoder(pcfg)
    state = {k[len("encoder."):]: v for k, v in ckpt["model"].items() if k.startswith("encoder.")}
    encoder.load_state_dict(state)
    d = ckpt_path.parent
    device = resolve_fabric_kwargs(cfg["fabric"])["accelerator"]
    device = "cuda" if device == "cuda" else "cpu"
    mean, std = _mean_std(pcfg)
    size = pcfg["views"]["global_size"]
    cache = d / f"features-step{ckpt['step']}.pt"
    if cache.exists():
        feats = torch.load(cache, weights_only=True)
    else:
        feats = {}
        for split in ("train", "test"):
            data = _data(cfg, split)
            feats[split] = (extract_features(encoder, data, size, mean, std, device=device), data.labels)
        atomic_save(feats, cache)
    pc = cfg["probe"]
    (trf, try_), (tef, tey) = feats["train"], feats["test"]
    result = {"checkpoint": str(ckpt_path), "pretrain_step": ckpt["step"], "train_images": len(try_),
              "test_images": len(tey), "dataset": cfg["data"]["name"]}
    t1 = time.time()
    result.update(linear_probe(trf, try_, tef, tey, epochs=pc["epochs"], lr=pc["lr"], weight_decay=pc["weight_decay"],
                               batch_size=pc["batch_size"], seed=cfg["run"]["seed"]))
    result["linear_probe_s"] = round(time.time() - t1, 2)
    result.update(knn_probe(trf, try_, tef, tey, k=pc["knn_k"], temperature=pc["knn_t"]))
    result.update(commit=git_commit(), wall_time_s=round(time.time() - t0, 2), hardware=hardware_summary())
    _write_json(d / "probe.json", result)
    return result


# ----------------------------------------------------------------------------- supervised: fine-tune, distill

def _supervised(cfg: dict, section: str, student: nn.Module, teacher: nn.Module | None) -> dict:
    sc = cfg[section]
    d, record = _start_run(cfg, section)
    t0 = time.time()
    fabric = make_fabric(cfg["fabric"], loggers=_loggers(d))
    fabric.seed_everything(cfg["run"]["seed"])
    size = student.img_size
    train, test = _data(cfg, "train"), _data(cfg, "test")
    mean, std = _mean_std(cfg)
    # light augmentation: random-resized crop + flip, batched
    aug = BatchedMultiCrop(MultiCropConfig(n_global=1, n_local=0, global_size=size, global_scale=(0.35, 1.0),
                                           jitter_p=0.0, grayscale_p=0.0, solarize_p=0.0, mean=mean, std=std))
    opt = torch.optim.AdamW(_param_groups(student, sc["weight_decay"]), lr=sc["lr"])
    student, opt = fabric.setup(student, opt)
    if teacher is not None:
        teacher = fabric.to_device(teacher).eval()
    gb = sc["batch_size"]
    spe = max(1, len(train) // gb)
    total = sc["epochs"] * spe
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(total, min(total, sc["warmup_epochs"] * spe)))
    gen = torch.Generator().manual_seed(cfg["run"]["seed"] + 1)
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=f"{section} {cfg['run']['name']}", disable=not (fabric.is_global_zero and cfg["run"]["progress"]))
    rank, local = fabric.global_rank, gb // fabric.world_size
    smoothing = sc.get("label_smoothing", 0.0)
    for step in range(total):
        epoch, i = divmod(step, spe)
        idx = _batch_indices(cfg["run"]["seed"], epoch, i, len(train), gb, rank, local)
        x = aug(train.images[idx].to(fabric.device), gen, global_batch=gb, offset=rank * local)[0]
        y = train.labels[idx].to(fabric.device)
        student.train()
        logits = student(x)
        loss = F.cross_entropy(logits, y, label_smoothing=smoothing)
        if teacher is not None:  # DeiT hard-label distillation: 1/2 CE(label) + 1/2 CE(teacher argmax)
            with torch.no_grad():
                pseudo = teacher(x).argmax(1)
            loss = 0.5 * loss + 0.5 * F.cross_entropy(logits, pseudo)
        if not torch.isfinite(loss):
            raise NonFiniteLossError(f"the {section} loss became {loss.item()} at step {step}; lower {section}.lr")
        fabric.backward(loss)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        if (step + 1) % cfg["run"]["log_every"] == 0:
            fabric.log_dict({"loss": loss.item(), "lr": opt.param_groups[0]["lr"], "epoch": epoch}, step=step + 1)
            bar.set_postfix(loss=f"{loss.item():.4f}")
        bar.update()
    bar.close()
    student.eval()
    with torch.no_grad():
        correct = 0
        for j in range(0, len(test), 512):
            xb = test.images[j:j + 512].to(fabric.device).float() / 255.0
            if xb.shape[-1] != size:
                xb = F.interpolate(xb, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
            correct += (student(normalize(xb, mean, std)).argmax(1).cpu() == test.labels[j:j + 512]).sum().item()
    acc = correct / len(test) * 100
    unwrapped = student.module if hasattr(student, "module") else student
    if fabric.is_global_zero:
        atomic_save({"model": unwrapped.state_dict(), "config": cfg, "step": total, "kind": section}, d / "last.ckpt")
    result = {"top1": acc, "steps": total, "test_images": len(test), "wall_time_s": round(time.time() - t0, 2)}
    for logger in fabric.loggers:
        logger.finalize("success")
    if fabric.is_global_zero:
        merge_csv_logs(d)
        _write_json(d / f"{section}.json", result)
        _finish_run(d, record, t0, "finished")
    return result


def finetune(cfg: dict) -> dict:
    """Full fine-tuning of a pretrained encoder (Table 2), or supervised training from scratch
    when ``finetune.checkpoint`` is null (e.g. a ViT teacher for :func:`distill`)."""
    fc = cfg["finetune"]
    classes = len(_data(cfg, "test").classes)
    if fc["checkpoint"]:
        ckpt = load_checkpoint(fc["checkpoint"])
        pcfg = ckpt["config"]
        size = fc["image_size"] or pcfg["views"]["global_size"]
        model = build_encoder(pcfg, num_classes=classes, img_size=pcfg["views"]["global_size"])
        enc = {k[len("encoder."):]: v for k, v in ckpt["model"].items() if k.startswith("encoder.")}
        missing, unexpected = model.load_state_dict(enc, strict=False)
        if unexpected or any(not k.startswith("head.") for k in missing):
            raise CheckpointError(f"checkpoint {fc['checkpoint']} does not fit model {pcfg['model']['name']}: "
                                  f"missing {missing[:5]}, unexpected {unexpected[:5]}")
        model.img_size = size  # inputs at the fine-tuning resolution; the position embedding is interpolated
    else:
        model = build_encoder(cfg, num_classes=classes)
    return _supervised(cfg, "finetune", model, None)


def distill(cfg: dict) -> dict:
    """Hard-label distillation (DeiT; Table 4): the student ``model.name`` learns from the label and
    from the argmax of a teacher loaded from a local checkpoint (never from a hub)."""
    dc = cfg["distill"]
    if not dc["teacher"]:
        raise CheckpointError("distill.teacher is not set: train a teacher first, e.g. "
                              "'aot finetune --config configs/cpu/vit_tiny_teacher_cifar10.yaml', then pass its last.ckpt")
    ckpt = load_checkpoint(dc["teacher"])
    classes = len(_data(cfg, "test").classes)
    tcfg = ckpt["config"]
    teacher = create_model(dc["teacher_model"], num_classes=classes,
                           **{**tcfg["model"]["overrides"], "img_size": cfg["views"]["global_size"]})
    try:
        teacher.load_state_dict(ckpt["model"])
    except RuntimeError as e:
        raise CheckpointError(f"teacher checkpoint {dc['teacher']} does not fit {dc['teacher_model']}: {e}") from None
    student = build_encoder(cfg, num_classes=classes)
    # initialise the student from the teacher where the shapes agree (all but the removed MLPs)
    own = student.state_dict()
    student.load_state_dict({**own, **{k: v for k, v in ckpt["model"].items() if k in own and v.shape == own[k].shape}})
    for p in teacher.parameters():
        p.requires_grad_(False)
    return _supervised(cfg, "distill", student, teacher)


RECORD_FILES = ("config.yaml", "run.json", "metrics.csv", "metrics.json", "probe.json", "finetune.json", "distill.json")


def record_run(src: str | os.PathLike, dest: str | os.PathLike) -> list[Path]:
    """Copy a run folder's small files (not the checkpoint) to ``dest``, e.g. ``results/cpu/<name>``:
    what the book reads. Returns the copied paths."""
    import shutil

    src, dest = Path(src), Path(dest)
    if not (src / "run.json").exists():
        raise FileNotFoundError(f"{src} is not a run folder (no run.json)")
    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in RECORD_FILES:
        if (src / name).exists():
            shutil.copy2(src / name, dest / name)
            copied.append(dest / name)
    return copied
