"""LeJEPA pretraining (Algorithm 1): multi-crop views -> encoder -> projector -> prediction + SIGReg.

``pretrain(cfg)`` builds the data, the views, the model and the optimiser from a resolved config, and
hands one step function to the shared loop (:func:`aot_lib.training.loop.fit`), which resumes, logs and
checkpoints. The data order is a function of (seed, epoch) and the view generator is checkpointed, so a
resumed run continues the loss trajectory of an uninterrupted one.
"""
from __future__ import annotations

import json
import time

import torch
from torch.profiler import record_function

from ..data.augment import BatchedMultiCrop, MultiCropConfig, prepare_images
from ..objectives.heads import LeJEPAProjector
from ..objectives.lejepa import LeJEPALoss, LeJEPAModel, alpha_from_lejepa_lambda
from ..runtime import compile_enabled, make_fabric
from .builders import build_encoder, data_location, load_data, normalization_for, schedule_steps
from .config import validate_config
from .loop import fit, make_loggers
from .monitors import build_monitors, knn_monitor_split
from .optim import batch_indices, param_groups, warmup_cosine
from .runs import RunFolder

__all__ = ["pretrain", "build_lejepa_model"]


def build_lejepa_model(cfg: dict) -> LeJEPAModel:
    """Encoder + projector + LeJEPA loss, as configured (Algorithm 1, lines 2-15)."""
    encoder = build_encoder(cfg)
    projector = LeJEPAProjector(encoder.num_features, **cfg["projector"])
    lc = cfg["loss"]
    loss = LeJEPALoss(alpha=alpha_from_lejepa_lambda(lc["lejepa_lambda"]), num_global=cfg["views"]["n_global"],
                      num_slices=lc["num_slices"], t_max=lc["t_max"], n_points=lc["n_points"], seed=cfg["run"]["seed"],
                      sigreg_sample=lc["sigreg_sample"], sigreg_normalize=lc["sigreg_normalize"])
    return LeJEPAModel(encoder, projector, loss)


def pretrain(cfg: dict) -> dict:
    """LeJEPA pretraining as configured; returns the final metrics (also in ``metrics.json``)."""
    validate_config(cfg)
    with RunFolder(cfg, "pretrain") as run:
        fabric = make_fabric(cfg["fabric"], loggers=make_loggers(run.path))
        result = fabric.launch(_pretrain_worker, cfg, run)
        if fabric.world_size > 1 and not isinstance(result, dict):  # spawn launcher: read rank 0's result
            result = json.loads((run.path / ("metrics.json" if (run.path / "metrics.json").exists() else "run.json")).read_text())
    return result


def _stream_source(fabric, cfg: dict):
    """The litdata stream of ``data.name=stream`` for this process (built after the process group exists)."""
    from ..data.streaming import open_stream

    dc, v = cfg["data"], cfg["views"]
    return open_stream(data_location(cfg), cfg["optim"]["batch_size"] // fabric.world_size, global_size=v["global_size"],
                       global_scale=v["global_scale"], device=fabric.device, world_size=fabric.world_size,
                       rank=fabric.global_rank, processes_per_node=cfg["fabric"]["devices"],
                       image_size=dc["stream_working_size"], num_workers=dc["stream_workers"], seed=cfg["run"]["seed"],
                       fit=dc["stream_fit"], decode_device=dc["stream_decode_device"])


def _pretrain_worker(fabric, cfg: dict, run: RunFolder) -> dict:
    run.main = fabric.is_global_zero
    rc, oc = cfg["run"], cfg["optim"]
    fabric.seed_everything(rc["seed"])
    stream = None
    if cfg["data"]["name"] == "stream":
        stream, provenance = _stream_source(fabric, cfg)
        train, n = None, stream.n_images
    else:
        train = load_data(cfg, "train")
        provenance, n = train.provenance, len(train)
    run.update(data=provenance, train_images=n)
    mean, std = normalization_for(cfg)
    aug = BatchedMultiCrop(MultiCropConfig.from_config(cfg["views"], mean, std))
    model = build_lejepa_model(cfg)
    if compile_enabled(cfg["model"]["compile"], fabric.device):
        from ..models.compile import compile_blocks

        compile_blocks(model)  # one compiled layer reused by every layer; the first step of each view size compiles
    opt = torch.optim.AdamW(param_groups(model, oc["weight_decay"]), lr=oc["lr"])
    model, opt = fabric.setup(model, opt)

    world, rank, gb = fabric.world_size, fabric.global_rank, oc["batch_size"]
    if gb % world:
        raise ValueError(f"optim.batch_size={gb} must be divisible by the number of processes ({world})")
    spe, total, warmup = schedule_steps(n, gb, oc["epochs"], oc["warmup_epochs"], oc["max_steps"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(total, warmup, oc["min_lr_ratio"]))
    aug_gen = torch.Generator().manual_seed(rc["seed"] + 1)
    local = gb // world

    def step_fn(step: int) -> dict:
        epoch, i = divmod(step, spe)
        with record_function("data"):
            if stream is not None:  # the stream keeps its own order (litdata's shuffle, seeded), resumable
                images = stream.next()
            else:
                idx = batch_indices(rc["seed"], epoch, i, n, gb, rank, world)
                images = train.images[idx].to(fabric.device, non_blocking=True)
        with record_function("augment"):
            views = aug(images, aug_gen, global_batch=gb, offset=rank * local)
        with record_function("forward"):
            out = model(views)
        return {"loss": out.loss, "pred_loss": fabric.all_reduce(out.pred_loss.detach(), reduce_op="mean"),
                "sigreg_loss": out.sigreg_loss.detach(), "epoch": epoch, "embeddings": out.embeddings}

    fixed = None  # the monitors' fixed batch: the first training images, un-augmented, at the global view size
    if cfg["monitor"]["every"] and train is not None:
        fixed = prepare_images(train.images[:cfg["monitor"]["images"]], cfg["views"]["global_size"], mean, std)
    knn = None  # the k-NN learning curve's images: the probe's split of the training set, un-augmented
    if cfg["monitor"]["every"] and cfg["monitor"]["knn"] and train is not None:
        mc, pc = cfg["monitor"], cfg["probe"]
        bank, val = knn_monitor_split(train.labels, mc["knn_bank"], mc["knn_val"], pc["val_fraction"], rc["seed"])
        knn = dict(bank_images=train.images[bank], bank_labels=train.labels[bank], val_images=train.images[val],
                   val_labels=train.labels[val], size=cfg["views"]["global_size"], mean=mean, std=std,
                   k=pc["knn_k"], temperature=pc["knn_t"])
    monitors = build_monitors(cfg["monitor"], fixed, seed=rc["seed"], knn=knn)

    result = fit(fabric, run, model, opt, sched, step_fn, total_steps=total, rng=aug_gen, images_per_step=gb,
                 kind="pretrain", desc=f"pretrain {rc['name']}", data_state=stream, monitors=monitors)
    if result.get("paused"):
        return result
    if result.get("already_finished") and (run.path / "metrics.json").exists():
        # this launch found nothing to do: the run is finished as it was (entering the folder marked it running,
        # and a record that stays "running" cannot be recorded)
        run.finish(finished=run.previous.get("finished") or time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        return json.loads((run.path / "metrics.json").read_text())
    metrics = {**result, "steps_per_epoch": spe, "train_images": n, "data": dict(provenance)}
    metrics.pop("already_finished", None)
    run.write_result("metrics.json", metrics)
    run.finish(metrics=metrics)
    fabric.barrier()
    return metrics
