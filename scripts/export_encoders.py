"""Convert recorded encoders made before ``aot record`` kept ``encoder/``: ``<folder>/encoder.pt`` becomes
``<folder>/encoder/`` (``model.safetensors`` + ``config.json``), and ``encoder.pt`` is deleted.

    python scripts/export_encoders.py results/cpu/*/ results/cpu/sweep/*/

For each recorded folder holding ``encoder.pt``, writes ``<folder>/encoder/`` with
:func:`aot_lib.training.recording.export_checkpoint` (written under a temporary name, loaded back and compared tensor by
tensor before it is renamed into place), its ``config.json`` carrying the run's provenance from ``run.json`` (commit,
wall time) and the recorded folder, as ``aot record`` writes it today. Then reads the folder back as the recorded
checkpoint (:func:`aot_lib.training.runs.load_checkpoint`: the sha256 checked, the run's ``config.yaml`` beside it)
and deletes ``encoder.pt`` only if that gives its ``trained_as``, ``step`` and every weight bit for bit (``--keep-pt``
keeps it). A folder that has ``encoder/`` and ``encoder.pt`` both is verified the same way and its ``encoder.pt``
deleted (``--overwrite`` writes ``encoder/`` again from ``encoder.pt`` first); one that has ``encoder/`` and no
``encoder.pt`` is skipped (converted already), and so is one with neither (its encoder was not recorded). Load
the result with ``aot_lib.from_pretrained("<folder>/encoder")``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# this checkout's package, not whichever one the environment's editable install points to (a venv shared
# between clones would otherwise run another commit's code and record that commit)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from aot_lib.training.recording import export_checkpoint
from aot_lib.training.runs import load_checkpoint


class ConversionError(RuntimeError):
    """A recorded folder that cannot be converted as it is."""


def same_encoder(folder: Path) -> None:
    """Refuse unless ``<folder>/encoder/`` read as a checkpoint holds what ``<folder>/encoder.pt`` holds."""
    old, new = load_checkpoint(folder / "encoder.pt"), load_checkpoint(folder / "encoder")
    a, b = old["model"], new["model"]
    differ = [k for k in ("trained_as", "step") if old.get(k) != new.get(k)]
    differ += sorted(a.keys() ^ b.keys())
    differ += [k for k in a if k in b and (a[k].dtype != b[k].dtype or not torch.equal(a[k], b[k]))]
    if differ:
        raise ConversionError(f"{folder / 'encoder'} does not hold what {folder / 'encoder.pt'} holds (differ: "
                              f"{', '.join(differ[:4])}); write it again from encoder.pt with --overwrite")


def convert(folder: Path, overwrite: bool = False, keep_pt: bool = False) -> str:
    """Convert one recorded folder; returns what was done, in a line."""
    pt, out = folder / "encoder.pt", folder / "encoder"
    if not pt.is_file():
        if out.is_dir():
            return f"{folder}: skipped, {out} is there and no encoder.pt (converted already)"
        return f"{folder}: skipped, no encoder.pt (no recorded encoder to convert)"
    done = "verified"
    if overwrite or not out.exists():
        record = json.loads((folder / "run.json").read_text())
        export_checkpoint(pt, out, commit=record.get("commit"), wall_time_s=record.get("wall_time_s"),
                          recorded=str(folder))
        done = "wrote"
    same_encoder(folder)
    if keep_pt:
        return f"{folder}: {done} {out}, the same weights as encoder.pt (kept)"
    pt.unlink()
    return f"{folder}: {done} {out}, the same weights as encoder.pt (deleted)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--overwrite", action="store_true", help="write encoder/ again from encoder.pt when it is there")
    ap.add_argument("--keep-pt", action="store_true", help="keep encoder.pt after the folder is verified")
    args = ap.parse_args()
    for folder in args.folders:
        try:
            print(convert(folder, args.overwrite, args.keep_pt))
        except ConversionError as e:
            raise SystemExit(f"export_encoders: {e}") from None


if __name__ == "__main__":
    from aot_lib.cli import run_script  # a refusal is one line, no traceback (--debug shows it)

    sys.exit(run_script(main, "export_encoders.py"))
