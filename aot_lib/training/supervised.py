"""Supervised training with labels: full fine-tuning (Table 2) and hard-label distillation (Table 4).

Both run through the shared loop (:func:`aot_lib.training.loop.fit`), so they resume from ``last.ckpt``, log,
skip non-finite gradients and save on Ctrl-C exactly as pretraining does, with the same checkpoint layout.

Recipe: random-resized crop (scale 0.35-1) and horizontal flip, AdamW with linear warm-up and cosine decay,
label smoothing for fine-tuning. The regularisers that the 95-96 % fine-tuning results in the literature
usually rely on are options, off by default: ``finetune.randaugment`` (torchvision's RandAugment, per image,
before the crop), ``finetune.mixup`` / ``finetune.cutmix`` (Beta(α, α) mixing of a batch with its reverse;
with both set, each batch draws one of the two), ``finetune.layer_decay`` (layer-wise lr decay, BEiT/MAE).
Drop-path is not offered: AoT-ADMM's layer is one ADMM iteration, not a residual branch to drop.
"""
from __future__ import annotations

import json
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..data.augment import BatchedMultiCrop, MultiCropConfig, normalize
from ..data.datasets import normalization_stats
from .config import validate_config
from .loop import fit, make_loggers
from .optim import batch_indices, param_groups, warmup_cosine
from .builders import build_encoder, load_train_test, normalization_for, schedule_steps
from ..models.registry import create_model, import_model_modules
from .runs import (CheckpointError, RunFolder, WeightsMismatch, checkpoint_model, encoder_state_dict, load_checkpoint,
                   load_weights)
from ..runtime import compile_enabled, make_fabric

__all__ = ["finetune", "distill", "evaluate", "hard_label_distillation_loss"]


def hard_label_distillation_loss(logits: torch.Tensor, label_loss: torch.Tensor, teacher_logits: torch.Tensor,
                                 alpha: float = 0.5) -> torch.Tensor:
    """DeiT's hard-label distillation (Sec. Black-Box Transformer Validation, Table 4 ``tab:vit``):
    "the student minimizes an equal-weighted sum of cross-entropy losses against the ground-truth label and
    the teacher pseudo-label", the pseudo-label being the teacher's highest-confidence class:

        (1 - alpha) * label_loss + alpha * CE(logits, argmax teacher_logits)

    ``label_loss`` is the ground-truth cross-entropy as the caller computed it (label smoothing or mixing
    included; DeiT uses the teacher's label as given). ``alpha`` = 0.5 is the paper's equal weighting;
    0 trains on the labels alone (``distill.alpha``)."""
    if alpha == 0:
        return label_loss
    return (1 - alpha) * label_loss + alpha * F.cross_entropy(logits, teacher_logits.argmax(1))


@torch.no_grad()
def evaluate(model: nn.Module, data, size: int, mean, std, device, batch_size: int = 512) -> float:
    """Top-1 accuracy in % on un-augmented images (resized with antialiasing when needed)."""
    model.eval()
    correct = 0
    for j in range(0, len(data), batch_size):
        xb = data.images[j:j + batch_size].to(device).float() / 255.0
        if xb.shape[-1] != size:
            xb = F.interpolate(xb, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
        correct += (model(normalize(xb, mean, std)).argmax(1).cpu() == data.labels[j:j + batch_size]).sum().item()
    return correct / len(data) * 100


def mix_batch(x: torch.Tensor, y: torch.Tensor, num_classes: int, mixup: float, cutmix: float, g: torch.Generator,
              smoothing: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Mixup or CutMix of a batch with its reverse; returns the mixed images and soft targets
    (label-smoothed one-hot vectors mixed with the same weight ``lam`` the pixels were)."""
    soft = F.one_hot(y, num_classes).float() * (1 - smoothing) + smoothing / num_classes
    use_cutmix = cutmix > 0 and (mixup <= 0 or torch.rand((), generator=g).item() < 0.5)
    alpha = cutmix if use_cutmix else mixup
    # one draw per batch, from the run's generator (so a resumed run mixes the same way)
    seed = int(torch.randint(0, 2**31 - 1, (), generator=g))
    lam = float(np.random.default_rng(seed).beta(alpha, alpha)) if alpha > 0 else 1.0
    flipped = x.flip(0)
    if use_cutmix:
        h, w = x.shape[-2:]
        ch, cw = int(h * math.sqrt(1 - lam)), int(w * math.sqrt(1 - lam))
        cy, cx = (torch.randint(0, h, (), generator=g).item(), torch.randint(0, w, (), generator=g).item())
        y0, y1, x0, x1 = max(cy - ch // 2, 0), min(cy + ch // 2, h), max(cx - cw // 2, 0), min(cx + cw // 2, w)
        x = x.clone()
        x[..., y0:y1, x0:x1] = flipped[..., y0:y1, x0:x1]
        lam = 1 - (y1 - y0) * (x1 - x0) / (h * w)  # the area actually kept
    else:
        x = lam * x + (1 - lam) * flipped
    return x, lam * soft + (1 - lam) * soft.flip(0)


def _randaugment(images: torch.Tensor) -> torch.Tensor:
    """torchvision's RandAugment (2 ops, magnitude 9), one uint8 image at a time."""
    from torchvision.transforms import v2

    ra = v2.RandAugment()
    return torch.stack([ra(img) for img in images])


def _load_into(model: nn.Module, ckpt: dict, path, what: str) -> dict:
    """Load the encoder weights (not the head) of checkpoint ``ckpt``, read from ``path``, into ``model``; every
    non-head weight of ``model`` must be found. Weights the model does not have (e.g. the MLPs a ReLU student
    lacks) are left out and reported."""
    try:
        left_out = load_weights(model, ckpt, extra_ok=True)
    except WeightsMismatch as e:
        other = [k for k in e.mismatched if not k.endswith("pos_embed")]
        if e.missing or other:
            raise CheckpointError(f"{what} {path} does not fit {type(model).__name__}: missing {e.missing[:4]}, "
                                  f"shape mismatch {other[:4]}; use a checkpoint of the same model family and width") from None
        own, theirs = model.state_dict()[e.mismatched[0]], encoder_state_dict(ckpt)[e.mismatched[0]]
        raise CheckpointError(f"{what} {path}: position embedding {tuple(theirs.shape)} does not fit {tuple(own.shape)}; "
                              "build the model at the checkpoint's image size") from None
    return {"loaded_from": str(path), "left_out": left_out[:20], "checkpoint_config": ckpt["config"]}


def _supervised(cfg: dict, kind: str, student: nn.Module, teacher: nn.Module | None, mean, std, info: dict,
                train, test) -> dict:
    with RunFolder(cfg, kind) as run:
        run.update(data={"train": train.provenance, "test": test.provenance},
                   normalization={"mean": list(mean), "std": list(std)},
                   init={k: v for k, v in info.items() if k != "checkpoint_config"})
        fabric = make_fabric(cfg["fabric"], loggers=make_loggers(run.path))
        # launched as pretraining is: one process as it is, several by Fabric's launcher (or torchrun's)
        result = fabric.launch(_supervised_worker, cfg, kind, run, student, teacher, mean, std, train, test)
        if fabric.world_size > 1 and not isinstance(result, dict):  # spawn launcher: read rank 0's result
            done = run.path / f"{kind}.json"
            result = json.loads((done if done.exists() else run.path / "run.json").read_text())
    return result


def _supervised_worker(fabric, cfg: dict, kind: str, run: RunFolder, student: nn.Module, teacher: nn.Module | None,
                       mean, std, train, test) -> dict:
    run.main = fabric.is_global_zero
    sc = cfg[kind]
    fabric.seed_everything(cfg["run"]["seed"])
    if compile_enabled(cfg["model"]["compile"], fabric.device):
        from ..models.compile import compile_blocks

        compile_blocks(student)
    size = student.img_size
    aug = BatchedMultiCrop(MultiCropConfig(n_global=1, n_local=0, global_size=size, global_scale=(0.35, 1.0),
                                           jitter_p=0.0, grayscale_p=0.0, solarize_p=0.0, mean=mean, std=std))
    opt = torch.optim.AdamW(param_groups(student, sc["weight_decay"], sc.get("layer_decay", 1.0), sc["lr"]),
                            lr=sc["lr"])
    student, opt = fabric.setup(student, opt)
    if teacher is not None:
        teacher = fabric.to_device(teacher).eval()
    gb = sc["batch_size"]
    world, rank = fabric.world_size, fabric.global_rank
    if gb % world:
        raise ValueError(f"{kind}.batch_size={gb} must be divisible by the number of processes ({world})")
    spe, total, warmup = schedule_steps(len(train), gb, sc["epochs"], sc["warmup_epochs"], None)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(total, warmup))
    gen = torch.Generator().manual_seed(cfg["run"]["seed"] + 1)
    local = gb // world
    smoothing = sc.get("label_smoothing", 0.0)
    mixing = sc.get("mixup", 0.0) > 0 or sc.get("cutmix", 0.0) > 0
    num_classes = len(train.classes)

    def step_fn(step: int) -> dict:
        epoch, i = divmod(step, spe)
        idx = batch_indices(cfg["run"]["seed"], epoch, i, len(train), gb, rank, world)
        images = train.images[idx]
        if sc.get("randaugment"):
            torch.manual_seed(cfg["run"]["seed"] * 1_000_003 + step)  # RandAugment draws from the global RNG
            images = _randaugment(images)
        x = aug(images.to(fabric.device), gen, global_batch=gb, offset=rank * local)[0]
        y = train.labels[idx].to(fabric.device)
        if mixing:
            x, target = mix_batch(x, y, num_classes, sc["mixup"], sc["cutmix"], gen, smoothing)
            logits = student(x)
            ce = torch.sum(-target * F.log_softmax(logits.float(), dim=1), dim=1).mean()
        else:
            logits = student(x)
            ce = F.cross_entropy(logits, y, label_smoothing=smoothing)
        if teacher is None:
            return {"loss": ce, "epoch": epoch}
        with torch.no_grad():
            teacher_logits = teacher(x)
        loss = hard_label_distillation_loss(logits, ce, teacher_logits, sc["alpha"])
        return {"loss": loss, "ce_label": ce.detach(), "epoch": epoch}

    result = fit(fabric, run, student, opt, sched, step_fn, total_steps=total, rng=gen, images_per_step=gb,
                 kind=kind)
    if result.get("paused"):
        return result
    acc = evaluate(student, test, size, mean, std, fabric.device)
    out = {"top1": acc, "steps": result["step"], "test_images": len(test), "train_images": len(train),
           "data": {"train": dict(train.provenance), "test": dict(test.provenance)},
           "wall_time_s": run.record.get("wall_time_s")}
    run.write_result(f"{kind}.json", out)
    run.finish(result=out)
    fabric.barrier()  # every process leaves together, as pretraining's do
    return out


def finetune(cfg: dict) -> dict:
    """Full fine-tuning of a pretrained encoder (Table 2), or supervised training from scratch when
    ``finetune.checkpoint`` is null (e.g. a ViT teacher for :func:`distill`).

    With a checkpoint, the model is the checkpoint's: its ``model`` section, with the image size it was built
    at (:func:`~aot_lib.training.runs.checkpoint_model`), replaces the config's before the config is checked,
    so what is validated, built and recorded in the run's ``config.yaml`` is the network that is trained (a
    later distillation, resume or :func:`~aot_lib.training.probe.load_encoder` rebuilds it from that file).
    Inputs are normalised with the statistics of the data it was pretrained on (the features were learned
    for those), and the position embedding is interpolated to ``finetune.image_size``.
    """
    fc = cfg["finetune"]
    pretrained = load_checkpoint(fc["checkpoint"]) if fc["checkpoint"] else None
    if pretrained is not None:
        cfg["model"] = {**checkpoint_model(pretrained, fc["checkpoint"]), "compile": cfg["model"]["compile"]}
    validate_config(cfg)
    train, test = load_train_test(cfg)
    # the statistics of the data the weights were trained on (builders.normalization_for's rule, read here from
    # the data layer directly: the data pair and its normalisation are read in one visit)
    mean, std = normalization_stats((pretrained["config"] if pretrained is not None else cfg)["data"]["name"])
    torch.manual_seed(cfg["run"]["seed"])  # the initial weights (the new head at least) follow run.seed, not the caller's RNG
    model = build_encoder(cfg, num_classes=len(train.classes))
    info = _load_into(model, pretrained, fc["checkpoint"], "finetune.checkpoint") if pretrained is not None else {"loaded_from": None}
    if fc["image_size"]:
        model.img_size = fc["image_size"]
    return _supervised(cfg, "finetune", model, None, mean, std, info, train, test)


def distill(cfg: dict) -> dict:
    """Hard-label distillation (DeiT; Table 4, :func:`hard_label_distillation_loss`): the student
    ``model.name`` learns from the label and from the argmax of a teacher loaded from a local checkpoint
    (never from a hub), weighted by ``distill.alpha`` (0.5, the paper's equal weights; 0: no teacher, labels
    alone). The student starts from ``distill.student_init`` (any aot_lib checkpoint; its head is not used)
    or from scratch — never from the teacher's own weights, which would hand it the teacher's solution."""
    validate_config(cfg)
    dc = cfg["distill"]
    if dc["alpha"] == 0 and dc["teacher"]:
        raise ValueError(f"distill.alpha is 0, so the teacher {dc['teacher']} would never be used: "
                         "set distill.teacher=null, or distill.alpha above 0 to distil")
    if dc["alpha"] > 0 and not dc["teacher"]:
        raise CheckpointError("distill.teacher is not set: train a teacher first, e.g. "
                              "'aot finetune --config configs/cpu/table4/vit_tiny_teacher.yaml', then pass its "
                              "last.ckpt (or set distill.alpha=0 to train on the labels alone)")
    ckpt = load_checkpoint(dc["teacher"]) if dc["teacher"] else None  # checks first: refused before the data loads
    if ckpt is not None:
        import_model_modules(ckpt["config"]["model"].get("imports", ()))  # a teacher of the user's own family
    train, test = load_train_test(cfg)
    classes = len(train.classes)
    teacher = None
    if ckpt is not None:
        tcfg = ckpt["config"]
        teacher = create_model(dc["teacher_model"], num_classes=classes,
                               **{**tcfg["model"]["overrides"], "img_size": cfg["views"]["global_size"]})
        try:
            load_weights(teacher, ckpt, with_head=True)
        except WeightsMismatch as e:
            raise CheckpointError(f"teacher checkpoint {dc['teacher']} does not fit {dc['teacher_model']} "
                                  f"with {classes} classes ({e}); check distill.teacher_model") from None
        for p in teacher.parameters():
            p.requires_grad_(False)
    torch.manual_seed(cfg["run"]["seed"])  # the student's initial weights follow run.seed, not the caller's RNG
    student = build_encoder(cfg, num_classes=classes)
    info = ({"loaded_from": None} if not dc["student_init"] else
            _load_into(student, load_checkpoint(dc["student_init"]), dc["student_init"], "distill.student_init"))
    # inputs as the teacher saw them; without one (alpha 0), as the initial weights did
    mean, std = normalization_for(tcfg if teacher is not None else info.get("checkpoint_config") or cfg)
    return _supervised(cfg, "distill", student, teacher, mean, std, info, train, test)
