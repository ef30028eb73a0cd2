"""Run folders and checkpoints: the bookkeeping every command shares.

A run folder ``<run.out_dir>/<run.name>/`` holds

* ``config.yaml`` — the resolved configuration the run was started with;
* ``run.json`` — kind, git commit, seed, hardware, data provenance, status and step, wall time; written when
  the run starts and updated at every checkpoint, so a killed run can still be inspected;
* ``metrics.csv`` — every logged step (Fabric's CSV logger, launches of a resumed run merged);
* ``last.ckpt`` — the checkpoint, one layout for every command (written by :func:`aot_lib.training.loop.fit`
  through :func:`save_checkpoint`; read by :func:`load_checkpoint`, its encoder by :func:`encoder_state_dict`);
* ``metrics.json`` / ``probe.json`` / ``finetune.json`` / ``distill.json`` — final numbers.

A recorded run (:func:`aot_lib.training.recording.record_run`, e.g. ``results/cpu/<name>/``) keeps the small files and the trained encoder as
``encoder/``: a pretrained folder (:mod:`aot_lib.models.pretrained`, ``model.safetensors`` + ``config.json``) that
:func:`load_checkpoint` reads as a checkpoint, with the run's ``config.yaml`` beside it.

Every file is written to a temporary name in the same folder and renamed (:func:`atomic_write`), so a
crash never leaves half a file; a lock (``.lock``, via ``filelock``) keeps two launches out of one folder.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Sequence

import torch

from ..config_format import built_model
from .config import SCHEMA, ConfigError, dump_config
from ..files import RUN_ELSEWHERE, WriteError, atomic_write, remove_partial, swap_into_place, write_error, write_json
from ..runtime import git_commit, hardware_summary, machine_cpu_s, process_tree_cpu_s, resolve_fabric_kwargs

__all__ = ["CheckpointError", "RunLockedError", "RunStopped", "CHECKPOINT_FORMAT", "run_dir", "RunFolder", "save_checkpoint",
           "load_checkpoint", "encoder_state_dict", "load_weights", "WeightsMismatch", "built_model", "checkpoint_model",
           "merge_csv_logs",
           "RESUMABLE_KEYS", "config_differences"]

CHECKPOINT_FORMAT = 1


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, unreadable, not ours, or does not fit the model or config."""


class RunLockedError(RuntimeError):
    """Another launch is using the run folder."""


class RunStopped(KeyboardInterrupt):
    """A termination signal (SIGTERM: ``kill``, a job scheduler's time limit) taken as Ctrl-C is: the loop saves a
    checkpoint at the last completed step and the run reads "stopped at step N (SIGTERM)", to resume."""


# ----------------------------------------------------------------------------- folders

def run_dir(cfg: dict) -> Path:
    """``<run.out_dir>/<run.name>``; a name that would leave ``run.out_dir`` is refused here too, for a config
    dict that never went through :func:`aot_lib.training.config.validate_config`."""
    return Path(cfg["run"]["out_dir"]) / SCHEMA["run.name"].check("run.name", cfg["run"]["name"])


# ----------------------------------------------------------------------------- configs on resume

#: What each launch writes of itself into run.json; every other key an earlier launch wrote is carried over.
LAUNCH_KEYS = ("kind", "commit", "launch_commits", "seed", "hardware", "fabric", "started", "launches",
               "wall_time_s_before", "status", "wall_time_s", "updated", "finished", "other_cpu_s", "other_cpu_wall_s",
               "other_cores")

# Keys that may differ between the launches of one run: where things are, how often to log and save,
# how the work is spread over devices. Anything else changes what is trained.
RESUMABLE_KEYS = ("description", "model.compile", "run.out_dir", "run.ckpt_every", "run.log_every", "run.resume", "run.overwrite",
                  "run.stop_after", "run.progress", "data.root", "data.download", "fabric.", "probe.",
                  "monitor.")  # monitors measure without gradients or random draws: the trajectory is the same


def config_differences(old: dict, new: dict, allowed: Sequence[str] = RESUMABLE_KEYS) -> list[tuple[str, Any, Any]]:
    """``(key, old, new)`` for every key that differs and is not ``allowed`` to (by default: may not change on
    resume); a key ending in ``.`` allows its whole section. A key the old config lacks because it was added to
    the package since (e.g. ``model.imports``) is no difference while the new config holds its default: the run was
    made with the behaviour that default stands for."""
    from .config import DEFAULTS, flatten

    a, b, defaults = flatten(old), flatten(new), flatten(DEFAULTS)
    out = []
    for key in sorted(set(a) | set(b)):
        if any(key == k or (k.endswith(".") and key.startswith(k)) for k in allowed):
            continue
        if key not in a and key in defaults and b.get(key) == defaults[key]:
            continue
        if a.get(key) != b.get(key):
            out.append((key, a.get(key, "<absent>"), b.get(key, "<absent>")))
    return out


# ----------------------------------------------------------------------------- the run folder

def _is_rank_zero() -> bool:
    """Before Fabric exists: launchers (torchrun, SLURM, Fabric's own) set these for every process."""
    return all(int(os.environ.get(k, "0")) == 0 for k in ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID"))


class RunFolder:
    """One run's folder: lock, config, ``run.json``. Use as a context manager around the whole command.

    ``kind`` is the command (``pretrain``, ``finetune``, ``distill``). On entry the folder is locked
    (a second launch of the same run fails at once with :class:`RunLockedError`), the config is checked
    against the one the run was started with when resuming, and ``run.json`` is written with status
    ``running``. Only rank 0 of a multi-process launch touches the folder.
    """

    def __init__(self, cfg: dict, kind: str):
        self.cfg, self.kind = cfg, kind
        self.path = run_dir(cfg)
        self.ckpt = self.path / "last.ckpt"
        self.record: dict = {}
        self.previous: dict = {}
        self._lock = None
        self.created = False
        self.t0 = time.time()
        self.main = _is_rank_zero()
        # the launching process: a spawned worker (ddp_spawn) gets a pickled copy, and its CPU accounting must
        # cover the launcher's whole tree, every rank included, or the other ranks would count as other work
        self.launcher_pid = os.getpid()

    def __getstate__(self) -> dict:  # sent to spawned workers: the lock stays with the launcher
        return {**self.__dict__, "_lock": None}

    # --- lifecycle
    def __enter__(self) -> "RunFolder":
        if not self.main:
            return self
        from filelock import FileLock, Timeout

        self.created = not self.path.exists()  # by this launch: removed again if it fails before training
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.path / ".lock"))
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            self._lock = None
            raise RunLockedError(f"run folder {self.path} is in use by another launch; wait for it to finish, "
                                 "or choose another run.name") from None
        try:
            self._prepare()
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.main and exc_type is not None:
            self._catch_up()
        if self.main and exc_type is not None and self._never_trained():
            # a missing data folder, a bad override found late, Ctrl-C while loading: nothing to resume or read,
            # so the folder this launch made goes (the next launch starts clean, and nothing half-made is recorded)
            self._release()
            shutil.rmtree(self.path, ignore_errors=True)
            return
        if self.main and exc_type is not None and self.record.get("status") == "running":
            status = ("stopped (SIGTERM)" if issubclass(exc_type, RunStopped) else "interrupted"
                      if issubclass(exc_type, KeyboardInterrupt) else f"failed: {exc_type.__name__}: {exc}")
            try:
                self.update(status=status)
            except WriteError:  # the disk that failed the run fails this too: the run's own error is the news
                pass
        self._release()

    def _catch_up(self) -> None:
        """Take this launch's ``run.json`` from disk: a spawned worker wrote it from its own pickled copy, so the
        launcher's record is stale (no step, no totals), and a failure written from it would erase what the worker
        recorded. The file of another launch (or none, or a damaged one) is left alone."""
        try:
            disk = json.loads((self.path / "run.json").read_text())
        except (OSError, ValueError):
            return
        if isinstance(disk, dict) and disk.get("launches") == self.record.get("launches") \
                and disk.get("started") == self.record.get("started"):
            self.record = disk

    def _never_trained(self) -> bool:
        """This launch made the folder and failed before the loop began (run.json has no ``total_steps``, which the
        loop writes first; read from disk, since a spawned worker writes it) and left no checkpoint."""
        if not getattr(self, "created", False) or self.ckpt.exists():
            return False
        try:
            return "total_steps" not in json.loads((self.path / "run.json").read_text())
        except (OSError, ValueError):
            return True

    def _release(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def _prepare(self) -> None:
        rc = self.cfg["run"]
        cfg_file = self.path / "config.yaml"
        existing = [p.name for p in (self.ckpt, self.path / "metrics.csv", self.path / "logs") if p.exists()]
        if existing and not rc["resume"]:
            if not rc["overwrite"]:
                raise ConfigError(f"run folder {self.path} already holds a run ({', '.join(existing)}) and run.resume=false; "
                                  "choose another run.name, resume it (run.resume=true), or replace it (run.overwrite=true)")
            for name in ("last.ckpt", "metrics.csv", "metrics.json", "logs", "tensorboard", "run.json",
                         "finetune.json", "distill.json", "probe.json"):
                p = self.path / name
                shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
            for p in self.path.glob("features-*.pt"):
                p.unlink()
        if rc["resume"] and self.ckpt.exists() and cfg_file.exists():
            import yaml

            old = yaml.safe_load(cfg_file.read_text())
            diff = config_differences(old, self.cfg)
            if diff:
                lines = "; ".join(f"{k}: {a!r} -> {b!r}" for k, a, b in diff[:5])
                raise ConfigError(f"run {self.path} was started with another config ({lines}); resume with the same "
                                  "settings, or start a new run (another run.name, or run.resume=false run.overwrite=true)")
        else:
            atomic_write(cfg_file, lambda tmp: tmp.write_text(dump_config(self.cfg)), "run config", RUN_ELSEWHERE)
        previous = {}  # kept as self.previous: what run.json said before this launch
        if (self.path / "run.json").exists():
            try:
                previous = json.loads((self.path / "run.json").read_text())
            except (OSError, ValueError):
                previous = {}
        self.previous = previous
        commit = git_commit()
        # "commit" is this launch's; "launch_commits" keeps every launch's, so a run resumed from a later commit
        # still names the one it started from (records from before this key have the last launch's alone)
        before = previous.get("launch_commits") or ([previous["commit"]] if previous.get("commit") else [])
        # what earlier launches recorded of the run itself (its step, metrics, totals) stays until this launch
        # replaces it: a launch that finds the run finished trains nothing, and must not erase them
        carried = {k: v for k, v in previous.items() if k not in LAUNCH_KEYS}
        self.record = {**carried, "kind": self.kind, "commit": commit, "launch_commits": [*before, commit],
                       "seed": self.cfg["run"]["seed"],
                       "hardware": hardware_summary(), "fabric": resolve_fabric_kwargs(self.cfg["fabric"]),
                       "started": previous.get("started") or time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                       "launches": previous.get("launches", 0) + 1,
                       "wall_time_s_before": previous.get("wall_time_s", 0.0), "status": "running"}
        # who else used the CPU while this launch ran (Linux): a wall time is a clock only on an idle machine
        self._cpu0 = machine_cpu_s(), process_tree_cpu_s(self.launcher_pid)
        self._other0 = (previous.get("other_cpu_s", 0.0), previous.get("other_cpu_wall_s", 0.0)
                        ) if previous.get("other_cpu_wall_s") or not previous.get("wall_time_s") else None
        self.update()

    # --- updates
    def update(self, **fields) -> None:
        """Merge ``fields`` into ``run.json`` (rank 0 only), with the wall time so far."""
        if not self.main:
            return
        self.record.update(fields)
        self.record["wall_time_s"] = self.elapsed_s()
        self._other_cpu()
        self.record["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        write_json(self.path / "run.json", self.record, "run record", RUN_ELSEWHERE)

    def elapsed_s(self) -> float:
        """The run's wall seconds so far: earlier launches' and this one's."""
        return round(self.record.get("wall_time_s_before", 0.0) + time.time() - self.t0, 2)

    def _other_cpu(self) -> None:
        """``other_cpu_s``: CPU seconds the rest of the machine was busy over the launches measured (all of the
        machine's busy time but this process tree's), over ``other_cpu_wall_s`` seconds of wall time, and their
        ratio ``other_cores``: about 0 on an idle machine, 1 with another single-core job beside it. Not written
        where it cannot be measured (not Linux), nor for a run with an unmeasured earlier launch."""
        (machine0, own0), before = getattr(self, "_cpu0", (None, None)), getattr(self, "_other0", None)
        machine, own = machine_cpu_s(), process_tree_cpu_s(self.launcher_pid)
        if None in (machine0, own0, machine, own, before):
            return
        wall = before[1] + time.time() - self.t0
        other = before[0] + max(0.0, (machine - machine0) - (own - own0))
        self.record.update(other_cpu_s=round(other, 2), other_cpu_wall_s=round(wall, 2),
                           other_cores=round(other / wall, 3) if wall > 0 else None)

    def finish(self, status: str = "finished", **fields) -> None:
        self.update(**{"status": status, "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **fields})

    def write_result(self, name: str, obj: dict) -> Path | None:
        return write_json(self.path / name, obj, "result file", RUN_ELSEWHERE) if self.main else None


# ----------------------------------------------------------------------------- checkpoints

def _all_finite(module_or_state) -> str | None:
    """The first parameter/buffer name holding a NaN or inf, or None."""
    items = module_or_state.state_dict().items() if hasattr(module_or_state, "state_dict") else module_or_state.items()
    for k, v in items:
        if torch.is_tensor(v) and v.is_floating_point() and not torch.isfinite(v).all():
            return k
    return None


def save_checkpoint(fabric, path: str | os.PathLike, state: dict) -> None:
    """Write ``state`` with Fabric (sharded under FSDP) to a temporary name, then rename it over ``path``.

    Refuses a model with non-finite weights: the previous (good) checkpoint is kept. A failed write (a full disk)
    removes the temporary file and raises a :class:`WriteError`: the previous checkpoint is kept then too.
    """
    path = Path(path)
    bad = _all_finite(state["model"])
    if bad is not None:
        raise CheckpointError(f"refusing to save a checkpoint with non-finite values in {bad!r}; "
                              f"the previous checkpoint {path} is kept")
    tmp = path.with_name(f".{path.name}.tmp{os.getpid() if fabric.world_size == 1 else 'ddp'}")
    kept = "the last checkpoint is intact" if path.exists() else "no checkpoint had been written yet"
    try:
        fabric.save(tmp, state)
        fabric.barrier()
        if fabric.is_global_zero:
            swap_into_place(tmp, path)  # FSDP writes a sharded folder: swapped as a whole
    except OSError as e:
        if fabric.is_global_zero:
            remove_partial(tmp)
        raise write_error(path, e, "checkpoint", RUN_ELSEWHERE, kept) from e
    fabric.barrier()


def load_checkpoint(path: str | os.PathLike) -> dict:
    """Read an aot_lib checkpoint on the CPU, safely (``weights_only=True``: a file that carries pickled
    code is refused), with one clear error if it is missing, unreadable or not ours.

    A recorded encoder folder (``<run>/encoder/``, what :func:`record_run` keeps) is read as the checkpoint it was
    written from: ``{"format", "kind": "encoder", "trained_as", "step", "config", "model"}``, the weights from
    ``model.safetensors`` (its sha256 checked first), ``trained_as`` and ``step`` from its ``config.json``, and the
    run's config from the ``config.yaml`` beside the folder."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint {path} does not exist; pretrain first (aot pretrain ...) or fix the path")
    if _is_pretrained_folder(path):
        return _load_encoder_folder(path)
    if path.is_dir():
        raise CheckpointError(f"checkpoint {path} is a sharded (FSDP) folder; load it through the trainer "
                              "(resume) or consolidate it with lightning's consolidate_checkpoint first")
    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - truncated, foreign or unsafe files raise many kinds of errors
        text = str(e)
        first = text.strip().splitlines()[0] if text.strip() else ""
        if "Unsupported global" in text or "can still be loaded" in text:
            raise CheckpointError(f"checkpoint {path} holds pickled Python objects, which are not loaded (they could run "
                                  "code); use a checkpoint written by aot_lib, or re-save its tensors only") from None
        raise CheckpointError(f"checkpoint {path} is corrupt or not a torch checkpoint ({type(e).__name__}: {first[:80]}); "
                              "delete it to start over, or point to another checkpoint") from None
    if not isinstance(ckpt, dict) or "model" not in ckpt or "config" not in ckpt:
        raise CheckpointError(f"checkpoint {path} was not written by aot_lib (no 'model'/'config' entries)")
    if ckpt.get("format", CHECKPOINT_FORMAT) > CHECKPOINT_FORMAT:
        raise CheckpointError(f"checkpoint {path} has format {ckpt['format']}, newer than this aot_lib understands "
                              f"({CHECKPOINT_FORMAT}); update aot_lib")
    return ckpt


def _is_pretrained_folder(path: Path) -> bool:
    """A folder holding ``config.json`` or ``model.safetensors`` (:mod:`aot_lib.models.pretrained`); a damaged one
    (one of the two missing) counts too, so that loading it says which file is missing."""
    from ..models.pretrained import CONFIG_NAME, WEIGHTS_NAME

    return path.is_dir() and ((path / CONFIG_NAME).is_file() or (path / WEIGHTS_NAME).is_file())


def _load_encoder_folder(path: Path) -> dict:
    """The checkpoint a recorded encoder folder ``<run>/encoder/`` stands for (:func:`load_checkpoint`)."""
    from ..models.pretrained import CONFIG_NAME, PretrainedError, load_pretrained_state
    from .config import load_config

    run_config = path.parent / "config.yaml"
    if not run_config.is_file():
        raise CheckpointError(f"checkpoint {path} is a pretrained folder with no config.yaml of its run beside it "
                              f"({run_config}); load it with aot_lib.from_pretrained('{path}'), or keep it inside its "
                              "recorded run folder")
    try:
        info, state = load_pretrained_state(path)
    except PretrainedError as e:
        raise CheckpointError(str(e)) from None
    missing = [k for k in ("trained_as", "step") if k not in info]
    if missing:
        raise CheckpointError(f"{path / CONFIG_NAME} lacks {', '.join(missing)}, so it is no recorded encoder; load it "
                              "with aot_lib.from_pretrained, or write it with aot record or "
                              "aot_lib.training.recording.export_checkpoint")
    cfg = load_config(run_config)
    if info.get("run") not in (None, cfg["run"]["name"]):
        raise CheckpointError(f"checkpoint {path} holds the encoder of run {info['run']!r} but sits in the folder of "
                              f"run {cfg['run']['name']!r} ({run_config}); keep it inside its own recorded run folder")
    return {"format": CHECKPOINT_FORMAT, "kind": "encoder", "trained_as": info["trained_as"], "step": info["step"],
            "config": cfg, "model": state}


def encoder_state_dict(ckpt: dict, with_head: bool = False) -> dict:
    """The encoder's weights from any checkpoint: ``encoder.*`` of a pretraining checkpoint, the model of a
    fine-tuning or distillation one or of a recorded encoder (``encoder/``, or an old ``encoder.pt``). The
    classification head (``head.*``) only when ``with_head``."""
    state = ckpt["model"]
    if ckpt.get("kind", "pretrain") == "pretrain":
        state = {k[len("encoder."):]: v for k, v in state.items() if k.startswith("encoder.")}
    return {k: v for k, v in state.items() if with_head or not k.startswith("head.")}


class WeightsMismatch(CheckpointError):
    """A checkpoint's weights do not fit a model: the names missing from the checkpoint, those whose shapes
    differ, and those the model does not have (each list in the model's / the checkpoint's order)."""

    def __init__(self, missing: list[str], mismatched: list[str], unexpected: list[str]):
        self.missing, self.mismatched, self.unexpected = missing, mismatched, unexpected
        super().__init__(", ".join(f"{what} {keys[:4]}" for what, keys in
                                   (("missing", missing), ("shape mismatch", mismatched), ("unexpected", unexpected))
                                   if keys))


def load_weights(model: torch.nn.Module, ckpt: dict, *, with_head: bool = False, extra_ok: bool = False) -> list[str]:
    """Copy a checkpoint's encoder weights (:func:`encoder_state_dict`; the head too when ``with_head``) into
    ``model``, the one way every command loads weights. Every weight of ``model`` (its head aside unless
    ``with_head``) must be in the checkpoint with the same shape, and the checkpoint may hold no other weight
    unless ``extra_ok`` (e.g. the MLPs a ReLU student lacks); else :class:`WeightsMismatch`, and ``model`` is
    left as it was. Returns the checkpoint's weights that were left out (sorted)."""
    state = encoder_state_dict(ckpt, with_head)
    own = model.state_dict()
    needed = [k for k in own if with_head or not k.startswith("head.")]
    missing = [k for k in needed if k not in state]
    mismatched = [k for k in needed if k in state and state[k].shape != own[k].shape]
    unexpected = [k for k in state if k not in own]
    if missing or mismatched or (unexpected and not extra_ok):
        raise WeightsMismatch(missing, mismatched, [] if extra_ok else unexpected)
    model.load_state_dict({**own, **{k: state[k] for k in needed}})
    return sorted(unexpected)


def checkpoint_model(ckpt: dict, path: str | os.PathLike) -> dict:
    """The ``model`` section that builds the network of checkpoint ``ckpt`` (read from ``path``), with the
    image size it was built at stated in ``overrides.img_size`` (else the config's ``views.global_size`` would
    decide it, which a fine-tuning config may set to another size).

    A fine-tuning run recorded before its ``config.yaml`` stated the pretrained model it fine-tuned (the four
    Table 2 fine-tuning records in ``results/cpu``: ``model.overrides`` is empty there) is read with the model
    of the pretraining run it started from: its ``finetune.checkpoint`` when that still exists, else that
    run's record beside this one (``<records>/<run name>/encoder/``, as ``aot record`` lays them out, or the
    ``encoder.pt`` records made before it kept that folder)."""
    from ..models.registry import import_model_modules

    cfg = ckpt["config"]
    model = built_model(cfg)
    import_model_modules(model.get("imports", ()))  # a user's family, recorded at pretraining: no --import again
    source = (cfg.get("finetune") or {}).get("checkpoint")
    if ckpt.get("trained_as", ckpt.get("kind")) != "finetune" or not source or _fits(model, ckpt):
        return model
    source = Path(source)
    record = Path(path).parent.parent / source.parent.name
    for candidate in (source, record / "encoder", record / "encoder.pt"):
        if (candidate.is_file() or _is_pretrained_folder(candidate)) and candidate.resolve() != Path(path).resolve():
            return {**checkpoint_model(load_checkpoint(candidate), candidate), "compile": model["compile"]}
    return model


def _fits(model: dict, ckpt: dict) -> bool:
    """Whether the encoder ``model`` describes (built on the meta device: no memory, no weights drawn) has the
    checkpoint's weight names and shapes."""
    from ..models.registry import create_model

    state = encoder_state_dict(ckpt)
    try:
        with torch.device("meta"):
            own = create_model(model["name"], num_classes=0, **model["overrides"]).state_dict()
    except (TypeError, ValueError):
        return False
    return own.keys() == state.keys() and all(own[k].shape == state[k].shape for k in own)


# ----------------------------------------------------------------------------- logs and records

def merge_csv_logs(directory: str | os.PathLike) -> Path | None:
    """Join ``logs/version_*/metrics.csv`` into ``metrics.csv``, one row per step: rows of one launch for the
    same step (the loss and a monitor's values, logged apart) are merged; for a step logged by two launches
    (a run resumed from an earlier checkpoint), the later launch wins."""
    directory = Path(directory)
    rows: dict[int, dict] = {}
    keys: list[str] = []
    versions = sorted((directory / "logs").glob("version_*/metrics.csv"), key=lambda p: int(p.parent.name.split("_")[1]))
    for f in versions:
        launch: dict[int, dict] = {}
        with open(f, newline="") as fh:
            for row in csv.DictReader(fh):
                keys += [k for k in row if k not in keys]
                merged = launch.setdefault(int(float(row["step"])), {})
                merged.update({k: v for k, v in row.items() if v not in ("", None) or k not in merged})
        rows.update(launch)
    if not rows:
        return None

    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(rows[k] for k in sorted(rows))

    return atomic_write(directory / "metrics.csv", write, "metrics log", RUN_ELSEWHERE)
