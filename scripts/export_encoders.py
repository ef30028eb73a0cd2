"""Keep recorded encoders as a pretrained folder users load in one line: ``model.safetensors`` + ``config.json``.

    python scripts/export_encoders.py results/cpu/cpu_aot_admm_cifar10 results/cpu/cpu_crate_cifar10 ...

For each recorded folder holding ``encoder.pt`` (what ``aot record`` keeps), writes ``<folder>/encoder/`` with
:func:`aot_lib.training.runs.export_checkpoint` (the weights loaded back and compared tensor by tensor before it
returns), its ``config.json`` carrying the run's provenance from ``run.json`` (commit, seed, wall time). Load it with
``aot_lib.from_pretrained("<folder>/encoder")``; the sha256 in ``config.json`` is checked before the weights are read.
A folder that already has ``encoder/`` is refused unless ``--overwrite``.
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from aot_lib.training.runs import export_checkpoint


def export(folder: Path, overwrite: bool = False) -> Path:
    out = folder / "encoder"
    if out.exists() and not overwrite:
        raise SystemExit(f"{out} exists; pass --overwrite to write it again")
    record = json.loads((folder / "run.json").read_text())
    tmp = folder / "encoder.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    export_checkpoint(folder / "encoder.pt", tmp, commit=record.get("commit"), wall_time_s=record.get("wall_time_s"),
                      recorded=str(folder))
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)  # the folder appears whole or not at all
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--overwrite", action="store_true")
    args = ap.parse_args()
    for folder in args.folders:
        print(export(folder, args.overwrite))


if __name__ == "__main__":
    main()
