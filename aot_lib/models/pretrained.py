"""Encoders users can load in one line: a folder with ``model.safetensors`` and ``config.json``, the layout the
Hugging Face Hub and timm use.

``config.json`` names the architecture (a registered model) and the arguments it was built with, the sha256 of
``model.safetensors``, and where the weights come from (run, commit, seed). Loading checks the hash before
reading a byte of the weights, and safetensors holds tensors only: loading never runs code (unlike a pickled
``.pt``, which :func:`aot_lib.training.runs.load_checkpoint` reads with ``weights_only=True``). The model is built by
:func:`aot_lib.create_model`; :func:`aot_lib.training.recording.export_checkpoint` writes such a folder from a checkpoint::

    model = aot_lib.create_model("aot_admm_tiny", pretrained="results/cpu/cpu_aot_admm_cifar10/encoder")
    model = aot_lib.from_pretrained("results/cpu/cpu_aot_admm_cifar10/encoder")   # the same, name from the file
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from torch import nn

from ..files import atomic_write, sha256_file

__all__ = ["save_pretrained", "load_pretrained_state", "read_pretrained_config", "WEIGHTS_NAME", "CONFIG_NAME",
           "PretrainedError"]

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
                              f"aot_lib.models.pretrained.save_pretrained or `aot record` wrote")
    try:
        config = json.loads(path.read_text())
    except ValueError:
        raise PretrainedError(f"{path} is not valid JSON; export the encoder again") from None
    missing = [k for k in ("architecture", "model_args", "sha256") if k not in config]
    if missing:
        raise PretrainedError(f"{path} lacks {', '.join(missing)}; export the encoder again")
    return config


def load_pretrained_state(folder: str | os.PathLike) -> tuple[dict, dict[str, torch.Tensor]]:
    """``(config, state_dict)`` of a pretrained folder, the weights checked against the recorded sha256 before
    safetensors reads them. :func:`aot_lib.create_model` (``pretrained=``) builds the model from these."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

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
        return config, load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as e:
        raise PretrainedError(f"{weights} is not a safetensors file ({str(e).splitlines()[0]}); export it with "
                              "aot_lib.models.pretrained.save_pretrained") from None
