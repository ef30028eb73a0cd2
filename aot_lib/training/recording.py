"""Keeping a finished run: :func:`record_run` copies its small files into ``results/`` (never the checkpoint) with
its trained encoder as ``encoder/``, and :func:`export_checkpoint` writes any checkpoint's encoder as a pretrained
folder (``model.safetensors`` + ``config.json``) that :func:`aot_lib.from_pretrained` loads — each loaded back and
compared bit for bit before it is kept, written under a temporary name and renamed.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from ..files import WriteError, atomic_write, remove_partial, swap_into_place, write_error
from .runs import CheckpointError, checkpoint_model, encoder_state_dict, load_checkpoint

__all__ = ["ENCODER_RECORD_LIMIT", "RECORD_FILES", "record_run", "export_checkpoint"]


ENCODER_RECORD_LIMIT = 10 * 2**20  # bytes: record_run keeps the trained encoder's weights up to this size
RECORD_FILES = ("config.yaml", "run.json", "metrics.csv", "metrics.json", "probe.json", "finetune.json", "distill.json")


def record_run(src: str | os.PathLike, dest: str | os.PathLike, allow_dirty: bool = False) -> list[Path]:
    """Copy a run folder's small files (not the checkpoint) to ``dest``, e.g. ``results/cpu/<name>``:
    what the book reads; with them ``encoder/`` when the trained encoder's weights (its head included) are at most
    10 MB: the pretrained folder :func:`export_checkpoint` writes (``model.safetensors`` + ``config.json``, which
    ``aot_lib.from_pretrained`` loads, and :func:`load_checkpoint` reads as a checkpoint with the ``config.yaml``
    beside it), its provenance the run's commit and wall time, loaded back and compared bit for bit before it is
    kept. An ``encoder.pt`` left in ``dest`` by an earlier recording is removed then: one recorded encoder.

    Refuses a run that is still running or failed, one whose commit had local changes (``+dirty``) and one made
    without git (commit ``unknown``, or none): recorded results come from a clean commit. ``allow_dirty`` lifts
    the last two."""
    src, dest = Path(src), Path(dest)
    if not (src / "run.json").is_file():
        raise FileNotFoundError(f"{src} is not a run folder (no run.json); give the folder aot pretrain wrote, "
                                "e.g. runs/<run.name>")
    try:
        record = json.loads((src / "run.json").read_text())
    except ValueError:
        raise CheckpointError(f"{src / 'run.json'} is corrupt; the run cannot be recorded") from None
    if record.get("status") != "finished":
        raise CheckpointError(f"run {src} is {record.get('status')!r}, not finished; finish it (run it again to resume) "
                              "before recording it")
    if str(record.get("commit", "")).endswith("+dirty") and not allow_dirty:
        raise CheckpointError(f"run {src} was made from a commit with local changes ({record['commit']}); "
                              "commit first and run it again, so the recorded result can be reproduced "
                              "(or pass --allow-dirty for a result you will not publish)")
    commit = record.get("commit")
    if (not isinstance(commit, str) or not commit or commit.startswith("unknown")) and not allow_dirty:
        raise CheckpointError(f"run {src} was made without a known git commit (commit: {commit!r}); run it again "
                              "from a git checkout of a clean commit, so the recorded result can be reproduced "
                              "(or pass --allow-dirty for a result you will not publish)")
    if dest.exists() and not dest.is_dir():
        raise FileExistsError(f"{dest} exists and is not a folder; choose another destination")
    dest.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in RECORD_FILES:
        if (src / name).exists():
            data = (src / name).read_bytes()
            copied.append(atomic_write(dest / name, lambda tmp, data=data: tmp.write_bytes(data), "recorded file"))
    if (src / "last.ckpt").is_file():  # the trained encoder too, when it is small: the book inspects it
        ckpt = load_checkpoint(src / "last.ckpt")
        size = sum(v.numel() * v.element_size() for v in encoder_state_dict(ckpt, with_head=True).values())
        if size <= ENCODER_RECORD_LIMIT:
            copied.append(_export(ckpt, src / "last.ckpt", dest / "encoder", commit=record.get("commit"),
                                  wall_time_s=record.get("wall_time_s"), recorded=str(dest)))
            (dest / "encoder.pt").unlink(missing_ok=True)  # an earlier recording's, in the format before encoder/
    return copied


def export_checkpoint(checkpoint: str | os.PathLike, folder: str | os.PathLike, **provenance) -> Path:
    """A pretrained folder (:mod:`aot_lib.models.pretrained`) from any aot_lib checkpoint, a recorded ``encoder/``
    or an ``encoder.pt`` recorded before that folder: the encoder with its classification head if it has one
    (fine-tuned, distilled), with the arguments the checkpoint's config builds it with. ``config.json`` carries
    ``trained_as``, ``step``, ``seed``, ``run``, ``source`` (``checkpoint``) and ``provenance``. The folder is written
    under a temporary name beside ``folder``, loaded back through :func:`aot_lib.from_pretrained` and compared tensor
    by tensor, and only then renamed to ``folder`` (replacing one that was there): what is there is known to load."""
    return _export(load_checkpoint(checkpoint), checkpoint, folder, **provenance)


def _export(ckpt: dict, source: str | os.PathLike, folder: str | os.PathLike, **provenance) -> Path:
    """:func:`export_checkpoint` of the checkpoint ``ckpt``, read from ``source``; :func:`record_run` writes with it."""
    from ..models.pretrained import save_pretrained
    from ..models.registry import from_pretrained

    cfg, model = ckpt["config"], checkpoint_model(ckpt, source)
    state = encoder_state_dict(ckpt, with_head=True)
    args = dict(model["overrides"])
    args["num_classes"] = int(state["head.fc.weight"].shape[0]) if "head.fc.weight" in state else 0
    provenance = {"trained_as": ckpt.get("trained_as", ckpt.get("kind")), "step": ckpt.get("step"),
                  "seed": cfg["run"]["seed"], "run": cfg["run"]["name"], "source": str(source), **provenance}
    from .builders import input_spec

    provenance["inputs"] = input_spec({**cfg, "model": model})  # what aot_lib.encoder_inputs feeds it
    if model.get("imports"):  # from_pretrained imports them before it builds the model
        provenance["imports"] = list(model["imports"])
    folder = Path(folder)
    tmp = folder.with_name(f".{folder.name}.tmp{os.getpid()}")
    try:
        remove_partial(tmp)
        save_pretrained(state, tmp, model["name"], args, **provenance)
        loaded = from_pretrained(tmp).state_dict()
        if loaded.keys() != state.keys() or not all(torch.equal(loaded[k], state[k].cpu()) for k in state):
            raise CheckpointError(f"the pretrained folder written for {folder} does not load back to the weights of "
                                  f"{source}; nothing was kept: report it, with the checkpoint")
        swap_into_place(tmp, folder)
    except BaseException as e:
        remove_partial(tmp)
        if isinstance(e, OSError) and not isinstance(e, WriteError):
            raise write_error(folder, e, "pretrained folder") from e
        raise
    return folder
