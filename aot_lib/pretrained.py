"""Encoders users can load in one line: a folder with ``model.safetensors`` and ``config.json``, the layout the
Hugging Face Hub and timm use.

``config.json`` names the architecture (a registered model) and the arguments it was built with, the sha256 of
``model.safetensors``, and where the weights come from (run, commit, seed). Loading checks the hash before
reading a byte of the weights, and safetensors holds tensors only: loading never runs code (unlike a pickled
``.pt``, which :func:`aot_lib.runs.load_checkpoint` reads with ``weights_only=True``)::

    model = aot_lib.create_model("aot_admm_tiny", pretrained="results/cpu/cpu_aot_admm_cifar10/encoder")
    model = aot_lib.from_pretrained("results/cpu/cpu_aot_admm_cifar10/encoder")   # the same, name from the file
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from torch import nn

from .files import atomic_write, sha256_file

__all__ = ["save_pretrained", "from_pretrained", "read_pretrained_config", "export_checkpoint", "WEIGHTS_NAME",
           "CONFIG_NAME", "PretrainedError"]

WEIGHTS_NAME = "model.safetensors"
CONFIG_NAME = "config.json"
FORMAT = 1


class PretrainedError(RuntimeError):
    """A pretrained folder that cannot be loaded as it is: missing, damaged or not what it says."""


def save_pretrained(model: nn.Module | dict, folder: str | os.PathLike, architecture: str, model_args: dict,
                    **provenance) -> Path:
    """Write ``model.safetensors`` (the state dict of ``model``, or a state dict) and then ``config.json``
    (``architecture``, ``model_args``, the weights' sha256 and ``provenance``) to ``folder``; both atomically."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = model.state_dict() if isinstance(model, nn.Module) else model
    state = {k: v.detach().to("cpu").contiguous().clone() for k, v in state.items()}  # no shared storage

    def write(tmp: Path) -> None:
        save_file(state, str(tmp), metadata={"format": "pt"})
        os.chmod(tmp, 0o644)  # safetensors creates it owner-only; a shared result is read by others too

    weights = atomic_write(folder / WEIGHTS_NAME, write)
    config = {"format": FORMAT, "architecture": architecture, "model_args": dict(model_args),
              "sha256": sha256_file(weights), **provenance}
    text = json.dumps(config, indent=2, sort_keys=False, default=str) + "\n"
    atomic_write(folder / CONFIG_NAME, lambda tmp: tmp.write_text(text))
    return folder


def read_pretrained_config(folder: str | os.PathLike) -> dict:
    """``config.json`` of a pretrained folder, checked for the keys a load needs."""
    path = Path(folder) / CONFIG_NAME
    if not path.is_file():
        raise PretrainedError(f"{folder} is not a pretrained folder (no {CONFIG_NAME}); give the folder "
                              f"aot_lib.pretrained.save_pretrained or `aot record` wrote")
    try:
        config = json.loads(path.read_text())
    except ValueError:
        raise PretrainedError(f"{path} is not valid JSON; export the encoder again") from None
    missing = [k for k in ("architecture", "model_args", "sha256") if k not in config]
    if missing:
        raise PretrainedError(f"{path} lacks {', '.join(missing)}; export the encoder again")
    return config


def from_pretrained(folder: str | os.PathLike, **overrides) -> nn.Module:
    """The model of a pretrained folder, its weights checked against the recorded sha256 and loaded strictly.
    ``overrides`` go to :func:`aot_lib.create_model` over the recorded arguments; a new ``num_classes`` gives a
    new, untrained classification head (the recorded head, if any, is left out)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from .registry import create_model

    folder = Path(folder)
    config = read_pretrained_config(folder)
    weights = folder / WEIGHTS_NAME
    if not weights.is_file():
        raise PretrainedError(f"{folder} has {CONFIG_NAME} but no {WEIGHTS_NAME}; copy the weights beside it")
    digest = sha256_file(weights)
    if digest != config["sha256"]:
        raise PretrainedError(f"{weights} does not match the sha256 in {CONFIG_NAME} ({digest[:12]}... vs "
                              f"{config['sha256'][:12]}...): the file was changed or damaged; copy or export it again")
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as e:
        raise PretrainedError(f"{weights} is not a safetensors file ({str(e).splitlines()[0]}); export it with "
                              "aot_lib.pretrained.save_pretrained") from None
    args = {**config["model_args"], **overrides}
    model = create_model(config["architecture"], **args)
    new_head = "num_classes" in overrides and overrides["num_classes"] != config["model_args"].get("num_classes")
    if new_head:
        state = {k: v for k, v in state.items() if not k.startswith("head.")}
        own = {k: v for k, v in model.state_dict().items() if k.startswith("head.")}
        state.update(own)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
        raise PretrainedError(f"{weights} does not fit {config['architecture']} with {args} "
                              f"({lines[1] if len(lines) > 1 else lines[0]})") from None
    return model.eval()


def export_checkpoint(checkpoint: str | os.PathLike, folder: str | os.PathLike, **provenance) -> Path:
    """A pretrained folder from any aot_lib checkpoint or recorded ``encoder.pt``: the encoder with its
    classification head if it has one (fine-tuned, distilled), built as the checkpoint's config says, then
    loaded back through :func:`from_pretrained` and compared tensor by tensor, so what is written is known
    to load."""
    from .runs import encoder_state_dict, load_checkpoint

    ckpt = load_checkpoint(checkpoint)
    cfg = ckpt["config"]
    state = encoder_state_dict(ckpt, with_head=True)
    args = dict(cfg["model"]["overrides"])
    args.setdefault("img_size", cfg["views"]["global_size"])
    args["num_classes"] = int(state["head.fc.weight"].shape[0]) if "head.fc.weight" in state else 0
    provenance = {"trained_as": ckpt.get("trained_as", ckpt.get("kind")), "step": ckpt.get("step"),
                  "seed": cfg["run"]["seed"], "run": cfg["run"]["name"], "source": str(checkpoint), **provenance}
    folder = save_pretrained(state, folder, cfg["model"]["name"], args, **provenance)
    loaded = from_pretrained(folder).state_dict()
    if loaded.keys() != state.keys() or not all(torch.equal(loaded[k], state[k].cpu()) for k in state):
        raise PretrainedError(f"{folder} does not load back to the weights of {checkpoint}")
    return folder
