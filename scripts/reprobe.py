"""Probe recorded runs again with today's probe protocol, so that every run a table compares was probed alike.

    python scripts/reprobe.py results/cpu/cpu_aot_admm_cifar10 results/cpu/sweep/sweep_r2_lr2e-3_proj64 ...

For each recorded folder (one with ``config.yaml`` and the trained ``encoder/``): the run's own config with its
``probe`` section replaced by today's defaults (:data:`aot_lib.training.config.DEFAULTS`), and ``probe.test=false`` for a
sweep run (a folder under ``sweep/``: its score is read on validation data only), probes a scratch copy of the
encoder (``encoder/`` with the run's ``config.yaml`` beside it, so the features cached beside it stay out of the
recorded folder) under ``runs/reprobe/`` and writes the new probe beside the recorded ones, never over them:
``<folder>/reprobes/<k>.json``, the next number (:data:`aot_lib.evidence.records.REPROBES`; its ``commit`` is the commit
that probed, ``run.json`` keeps the commit that trained). The book reads a run's newest probe and can show every one.
Run it from a clean checkout, with AOT_DATA set.

With ``--dest DIR`` the new probe goes to ``DIR/<folder>/probe.json`` instead, leaving the checkout's
tracked files untouched: a checkout that goes on training after re-probing stays clean (a run started in a
checkout with changed tracked files is recorded ``+dirty`` and cannot be recorded).

``--set probe.KEY=VALUE`` (repeatable) changes today's probe settings for this re-probe, e.g. a wider learning-rate
grid to check that the recorded picks are not cut off by the grid's edge (give ``--dest`` with it: such a probe is a
check beside the recorded one, not a replacement):

    python scripts/reprobe.py --dest runs/probe_wide --set 'probe.lr=[0.001,0.003,0.01,0.03]' results/cpu/cpu_crate_cifar10
"""
from __future__ import annotations

import argparse
import copy
import shutil
import sys
from pathlib import Path

# this checkout's package, not whichever one the environment's editable install points to (a venv shared
# between clones would otherwise run another commit's code and record that commit)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from aot_lib import train
from aot_lib.training.config import DEFAULTS, apply_overrides, refuse_repeated, validate_config
from aot_lib.evidence.records import next_reprobe
from aot_lib.files import atomic_write, load_yaml


def checked_target(folder: Path, dest: Path | None = None, settings: list[str] = (), ranked: bool = False) -> Path:
    """Where the re-probe of ``folder`` goes, after every check that needs no probing (so a refusal comes before the
    minutes of feature extraction, for every folder before the first is probed): a recorded run (config.yaml and
    encoder/), only probe.* settings, settings only with ``dest`` (unless ``ranked``), a screening run of a recipe
    search only through ``recipe_search2.py widen`` (its probe is the round's protocol), and a ``dest`` target that
    stays inside ``dest`` and outside the recorded folder."""
    if not (folder / "config.yaml").is_file() or not (folder / "encoder").is_dir():
        raise FileNotFoundError(f"{folder} is not a recorded run (it needs config.yaml and encoder/): give a folder "
                                "under results/cpu that aot record wrote")
    if folder.is_absolute() and dest is not None:
        raise SystemExit(f"{folder}: give the recorded folder as a path relative to the checkout; --dest writes "
                         "DEST/<folder>/probe.json, which an absolute folder would turn into the recorded one")
    refuse_repeated(list(settings))  # --set probe.lr=... twice: only the last would count
    outside = [s for s in settings if not s.startswith("probe.")]
    if outside:
        raise SystemExit(f"--set {outside[0]!r}: a re-probe changes only probe.* settings (the encoder is trained)")
    if settings and dest is None and not ranked:
        raise SystemExit("--set needs --dest: a probe with other settings is a check beside the recorded probe.json, "
                         "never written over it")
    if any(p.startswith("search") for p in folder.parts) and dest is None and not ranked:
        raise SystemExit(f"{folder} is a recipe search's screening run: its ranked probe is the round's protocol "
                         "(validation only, the round's grid); probe it with scripts/recipe_search2.py widen, or give "
                         "--dest for a check beside it")
    if dest is None:
        return next_reprobe(folder)  # refuses a run whose first probe is missing, or re-probes out of sequence
    out = (dest / folder / "probe.json").resolve()
    if not out.is_relative_to(dest.resolve()) or out.is_relative_to(folder.resolve()):
        raise SystemExit(f"--dest {dest} with {folder} would write {out}, outside {dest} or into the recorded "
                         "folder: give a --dest folder of its own (e.g. runs/probe_wide)")
    return out


def reprobe(folder: Path, scratch: Path, dest: Path | None = None, settings: list[str] = (),
            ranked: bool = False) -> dict:
    """Probe ``folder``'s recorded encoder again (see the module docstring). ``ranked``: ``settings`` are the
    protocol the record is ranked by (round 2's widened grid, scripts/recipe_search2.py widen), so the probe is
    written as the folder's next ``reprobes/<k>.json`` without ``dest``."""
    out = checked_target(folder, dest, settings, ranked)
    cfg = load_yaml((folder / "config.yaml").read_text(), folder / "config.yaml")
    cfg["probe"] = copy.deepcopy(DEFAULTS["probe"])
    cfg["probe"]["test"] = not any(p == "sweep" or p.startswith("search") for p in folder.parts)
    apply_overrides(cfg, list(settings))
    for section, keys in DEFAULTS.items():  # keys added since the run was recorded take their defaults
        if isinstance(keys, dict):
            cfg[section] = {**copy.deepcopy(keys), **cfg.get(section, {})}
    cfg = validate_config(cfg, check_model=False)
    work = scratch / folder.name
    work.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / "config.yaml", work / "config.yaml")  # the run's settings, read with the encoder
    shutil.rmtree(work / "encoder", ignore_errors=True)
    shutil.copytree(folder / "encoder", work / "encoder")
    result = train.probe(cfg, work / "encoder")
    data = (work / "probe.json").read_bytes()
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, lambda tmp: tmp.write_bytes(data))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--scratch", type=Path, default=Path("runs/reprobe"))
    ap.add_argument("--dest", type=Path, default=None,
                    help="write DEST/<folder>/probe.json instead of the recorded folder's next reprobes/<k>.json")
    ap.add_argument("--set", dest="settings", action="append", default=[], metavar="probe.KEY=VALUE",
                    help="a probe setting other than today's default (needs --dest)")
    args = ap.parse_args()
    for folder in args.folders:  # every folder checked before the first is probed
        checked_target(folder, args.dest, args.settings)
    for folder in args.folders:
        r = reprobe(folder, args.scratch, args.dest, args.settings)
        test = f"test {r['linear_top1']:.2f} / k-NN {r['knn_top1']:.2f}" if "linear_top1" in r else "no test"
        print(f"{folder}: val {r['linear_val_best']:.2f} (lr {r['linear_lr']:g}), k-NN val {r['knn_val_top1']:.2f}, {test}")


if __name__ == "__main__":
    from aot_lib.cli import run_script  # a refusal is one line, no traceback (--debug shows it)

    sys.exit(run_script(main, "reprobe.py"))
