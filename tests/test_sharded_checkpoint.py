"""A checkpoint written as a folder, as Fabric writes one under FSDP: the swap that replaces the previous
checkpoint folder, and a failed write that leaves it intact.

FSDP itself cannot run here (torch's FSDP refuses a CPU device: "FSDP needs a non-CPU accelerator device", and
Lightning Fabric refuses strategy=fsdp without a GPU), so a stand-in Fabric writes the folder; what is tested is
aot_lib's side of it, the swap in ``save_checkpoint``."""
from __future__ import annotations

import errno
import os

import torch
from helpers import raises_exactly

from aot_lib.files import WriteError
from aot_lib.training.runs import CheckpointError, load_checkpoint, save_checkpoint


class FolderFabric:
    """Rank 0 of two, saving each state as a folder of one file per shard (the layout FSDP's sharded save has);
    ``fail_after`` shards, a full disk."""

    world_size, is_global_zero = 2, True

    def __init__(self, fail_after: int | None = None):
        self.fail_after = fail_after

    def save(self, path, state):
        path.mkdir()
        for i, (k, v) in enumerate(state["model"].items()):
            if self.fail_after is not None and i >= self.fail_after:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            torch.save({k: v}, path / f"shard{i}.pt")

    def barrier(self):
        pass


def shards(folder):
    return {k: v.tolist() for f in sorted(folder.iterdir()) for k, v in torch.load(f, weights_only=True).items()}


def test_a_checkpoint_folder_replaces_the_previous_one_and_nothing_else_is_left(tmp_path):
    path = tmp_path / "last.ckpt"
    save_checkpoint(FolderFabric(), path, {"model": {"w": torch.tensor([1.0]), "b": torch.tensor([2.0])}})
    save_checkpoint(FolderFabric(), path, {"model": {"w": torch.tensor([3.0]), "b": torch.tensor([4.0])}})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]  # no .tmp, no .old folder
    assert shards(path) == {"w": [3.0], "b": [4.0]}
    # a folder is for the trainer to resume from, not for torch.load
    with raises_exactly(CheckpointError, f"checkpoint {path} is a sharded (FSDP) folder; load it through the trainer "
                                         "(resume) or consolidate it with lightning's consolidate_checkpoint first"):
        load_checkpoint(path)


def test_a_failed_folder_write_keeps_the_previous_folder(tmp_path):
    path = tmp_path / "last.ckpt"
    save_checkpoint(FolderFabric(), path, {"model": {"w": torch.tensor([1.0]), "b": torch.tensor([2.0])}})
    with raises_exactly(WriteError, f"writing the checkpoint {path} failed: No space left on device (ENOSPC); the "
                                    "last checkpoint is intact. Free space on that disk, or move the run folder "
                                    "elsewhere and set run.out_dir to match; then run the same command again"):
        save_checkpoint(FolderFabric(fail_after=1), path,
                        {"model": {"w": torch.tensor([3.0]), "b": torch.tensor([4.0])}})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]  # the half-written folder removed
    assert shards(path) == {"w": [1.0], "b": [2.0]}


def test_a_failed_rename_puts_the_previous_folder_back(tmp_path, monkeypatch):
    """The swap renames the old folder aside, then the new one in: if the second rename fails, the old one
    returns to its name."""
    path = tmp_path / "last.ckpt"
    save_checkpoint(FolderFabric(), path, {"model": {"w": torch.tensor([1.0])}})
    real = os.replace

    def replace(src, dst):
        if str(src).endswith(".tmpddp"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with raises_exactly(WriteError, f"writing the checkpoint {path} failed: Input/output error (EIO); the last "
                                    "checkpoint is intact. Fix that, or move the run folder elsewhere and set "
                                    "run.out_dir to match; then run the same command again"):
        save_checkpoint(FolderFabric(), path, {"model": {"w": torch.tensor([3.0])}})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]
    assert shards(path) == {"w": [1.0]}
