"""Floors under the probe numbers: the same probes on an encoder that was never trained, and on raw pixels.

A linear probe of 51 % after ten epochs of pretraining means little until one knows what the same probe reaches
with no pretraining at all. ``aot baseline init`` probes the encoder as pretraining would start it (the
config's model, built at the config's seed in the order :func:`aot_lib.training.pretrain.pretrain` builds it, no step
taken); ``aot baseline pixels`` probes the normalised pixels themselves, flattened (3 x size x size values, at
the size the encoders see). Both use the config's probe settings, data and normalisation unchanged, so a
baseline and a pretrained run of the same config are scored by one protocol.

Each writes a run folder like any run (``config.yaml``, ``run.json`` with commit and hardware, ``probe.json``)
that ``aot record`` copies into ``results/``. No checkpoint: the initial weights are a function of the seed.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from torch import nn

from ..runtime import git_commit, hardware_summary
from .builders import normalization_for
from .config import validate_config
from .probe import probe_features
from .runs import RunFolder, config_differences, run_dir

__all__ = ["BASELINES", "PixelFeatures", "initial_encoder", "baseline", "baseline_name"]

BASELINES = {
    "init": "the config's encoder at initialisation (its seed, no pretraining step)",
    "pixels": "raw pixels: the normalised image, flattened (no encoder)",
}


# What may differ between two launches of one baseline: where things are and how progress shows. The probe
# settings may not (unlike a pretraining run's, whose probe is redone apart): they make the result.
RESULT_NEUTRAL_KEYS = ("description", "model.compile", "run.out_dir", "run.progress", "run.resume", "run.overwrite",
                       "data.root", "data.download", "fabric.")


class PixelFeatures(nn.Module):
    """The image as its own feature vector: ``forward_features`` flattens the normalised pixels."""

    def forward_features(self, x):
        return x.flatten(1)


def initial_encoder(cfg: dict) -> nn.Module:
    """The encoder exactly as ``aot pretrain`` starts it: torch's generator seeded with ``run.seed`` (as Fabric's
    ``seed_everything`` seeds it), then the encoder built, the first thing the pretraining worker draws."""
    import torch

    from .builders import build_encoder

    torch.manual_seed(cfg["run"]["seed"])
    return build_encoder(cfg)


def baseline_name(cfg: dict, kind: str) -> str:
    """The run name of a baseline: ``baseline_init_<run.name>`` (the pretrained run it is the floor of), or
    ``baseline_pixels_<data set>_seed<seed>`` (pixels do not depend on the model)."""
    if kind not in BASELINES:
        raise ValueError(f"unknown baseline {kind!r}; choose one of {', '.join(BASELINES)}")
    if kind == "init":
        return f"baseline_init_{cfg['run']['name']}"
    return f"baseline_pixels_{cfg['data']['name']}_seed{cfg['run']['seed']}"


def baseline(cfg: dict, kind: str) -> dict:
    """Probe the ``kind`` baseline (:data:`BASELINES`) of ``cfg`` into ``<run.out_dir>/<baseline_name>``; returns
    the probe result (also ``probe.json``). A finished baseline is not probed twice: its result is returned."""
    name = baseline_name(cfg, kind)
    cfg = validate_config({**cfg, "run": {**cfg["run"], "name": name}})
    finished = _finished(run_dir(cfg), cfg, kind)
    if finished is not None:
        return finished
    with RunFolder(cfg, f"baseline-{kind}") as run:
        t0 = time.time()
        mean, std = normalization_for(cfg)
        size = cfg["views"]["global_size"]
        if kind == "init":
            encoder = initial_encoder(cfg)
            digest = hashlib.sha256()
            for k, v in encoder.state_dict().items():
                digest.update(k.encode())
                digest.update(v.detach().float().contiguous().numpy().tobytes())
            source, model = f"init:{digest.hexdigest()}", cfg["model"]["name"]
        else:
            encoder, source, model = PixelFeatures(), "pixels", None
        result = probe_features(cfg, encoder, size, mean, std, run.path, source=source,
                                head={"baseline": kind, "what": BASELINES[kind], "model": model,
                                      "pretrain_step": 0 if kind == "init" else None})
        result.update(commit=git_commit(), wall_time_s=round(time.time() - t0, 2), hardware=hardware_summary())
        run.write_result("probe.json", result)
        run.finish(linear_top1=result.get("linear_top1"), knn_top1=result.get("knn_top1"))
    return result


def _finished(path: Path, cfg: dict, kind: str) -> dict | None:
    """The result of a baseline already finished in ``path`` with this config, or None when there is none; a
    finished one made with another config is refused (its result would not be this config's)."""
    import yaml

    from .config import ConfigError

    try:
        record = json.loads((path / "run.json").read_text())
        result = json.loads((path / "probe.json").read_text())
    except (OSError, ValueError):
        return None
    if record.get("status") != "finished" or result.get("baseline") != kind:
        return None
    diff = config_differences(yaml.safe_load((path / "config.yaml").read_text()), cfg, allowed=RESULT_NEUTRAL_KEYS)
    if diff:
        lines = "; ".join(f"{k}: {a!r} -> {b!r}" for k, a, b in diff[:5])
        raise ConfigError(f"{path} holds a finished {kind} baseline made with another config ({lines}); delete "
                          "that folder to probe it again, or set another run.out_dir")
    print(f"{path} already finished; nothing to do")
    return result
