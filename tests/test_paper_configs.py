"""Every config in configs/paper/ runs through the trainer for one optimisation step on a tiny batch, on CPU.

Only the data (a tiny ImageFolder made here), the batch size, the number of steps and the output folder are
overridden; the model, views, projector, loss and optimiser are the paper config's own, so a config that the
code no longer accepts, or that builds a model the step cannot train, fails here rather than on a GPU.
Fine-tuning and distillation configs run after the runs they load (pretraining, the ViT-T teacher), with
their checkpoint paths pointed at this test's folder.
"""
import functools
import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from aot_lib import train
from aot_lib.training.config import config_stage, load_config
from helpers import make_imagefolder, top1_from_run

ROOT = Path(__file__).resolve().parent.parent
PAPER = sorted((ROOT / "configs" / "paper").glob("*/*.yaml"))


def _kind(path: Path) -> str:
    return config_stage(path)


def test_every_paper_config_is_covered():
    kinds = {p.relative_to(ROOT).as_posix(): _kind(p) for p in PAPER}
    assert len(kinds) == 28  # Tables 1 (12), 2 (6), 3 (6), 4 (4)
    assert sum(k == "pretrain" for k in kinds.values()) == 20
    assert kinds["configs/paper/table4/vit_small_relu_kd_cifar10.yaml"] == "distill"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    base = tmp_path_factory.mktemp("paper")
    yield make_imagefolder(base / "data", n_train=4, n_test=2), base / "runs"
    # the paper-size checkpoints are 0.1-0.3 GB each (5 GB in all), and pytest keeps its last three sessions' folders:
    # CI once ran out of disk on them
    shutil.rmtree(base, ignore_errors=True)


def _config(path: Path, data: Path, out: Path, *extra: str) -> dict:
    kind = _kind(path)
    common = ["data.name=imagefolder", f"data.root={data}", "data.image_size=null", "data.download=false",
              f"run.out_dir={out}", "run.progress=false", "run.ckpt_every=1000", "model.compile=false"]
    if kind == "pretrain":
        common += ["optim.batch_size=4", "optim.max_steps=1"]
    else:  # 8 images, batch 4, one epoch: two steps
        common += [f"{kind}.batch_size=4", f"{kind}.epochs=1"]
    return load_config(path, [*common, *extra])


def _run(path: Path, data: Path, out: Path, *extra: str) -> Path:
    """The run folder of ``path`` under ``out``, trained (once) with this test's overrides."""
    cfg = _config(path, data, out, *extra)
    run = out / cfg["run"]["name"]
    if not (run / "last.ckpt").exists():  # else it already ran, unchanged, as another config's prerequisite
        torch.manual_seed(0)
        getattr(train, _kind(path))(cfg)
    return run


def _after(tiny, name: str) -> Path:
    """The checkpoint of the paper config whose run is ``name`` (a teacher, a pretraining), trained here."""
    data, out = tiny
    matches = [p for p in PAPER if load_config(p)["run"]["name"] == name]
    assert len(matches) == 1, name
    return _run(matches[0], data, out) / "last.ckpt"


def _chain_root(path: Path) -> str:
    """The run a paper config's chain starts from: its own, or the pretraining or teacher run it loads."""
    cfg = load_config(path)
    start = (cfg.get("finetune") or {}).get("checkpoint") if _kind(path) == "finetune" else \
        (cfg.get("distill") or {}).get("teacher") if _kind(path) == "distill" else None
    return Path(start).parent.name if start else cfg["run"]["name"]


# the runs another paper config starts from (fine-tuning's checkpoint, distillation's teacher)
_LOADED = frozenset(_chain_root(p) for p in PAPER if _chain_root(p) != load_config(p)["run"]["name"])

# a chain on one xdist worker (--dist loadgroup, pyproject.toml): its pretraining or teacher is trained there once,
# not once on every worker that runs one of its stages
CHAINED = [pytest.param(p, marks=pytest.mark.xdist_group(_chain_root(p))) for p in PAPER]


@pytest.mark.parametrize("path", CHAINED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_paper_config_trains_one_step(path, tiny):
    data, out = tiny
    cfg = load_config(path)
    kind = _kind(path)
    extra = []
    if kind == "finetune" and cfg["finetune"]["checkpoint"]:
        extra.append(f"finetune.checkpoint={_after(tiny, Path(cfg['finetune']['checkpoint']).parent.name)}")
    if kind == "distill":
        extra.append(f"distill.teacher={_after(tiny, Path(cfg['distill']['teacher']).parent.name)}")
    run = _run(path, data, out, *extra)
    ckpt = train.load_checkpoint(run / "last.ckpt")
    assert ckpt["kind"] == kind and ckpt["step"] == (1 if kind == "pretrain" else 2)
    assert all(torch.isfinite(v).all() for v in ckpt["model"].values() if v.is_floating_point())
    result = json.loads((run / ("metrics.json" if kind == "pretrain" else f"{kind}.json")).read_text())
    if kind == "pretrain":
        assert math.isfinite(result["loss"]) and result["step"] == 1
    else:
        # the reported accuracy is the saved weights' on the 4 test images, recomputed here from the files
        assert result["top1"] == top1_from_run(run, data) and result["steps"] == 2
    if cfg["run"]["name"] not in _LOADED:  # no later stage loads it: its checkpoint need not outlive the test
        shutil.rmtree(run)


CPU = sorted((ROOT / "configs" / "cpu").rglob("*.yaml"))


@functools.lru_cache(maxsize=1)
def _cpu_run_names() -> frozenset:
    """Every CPU config's run name, read once per process (each case read them all again: quadratic in configs)."""
    return frozenset(load_config(p)["run"]["name"] for p in CPU)


@functools.lru_cache(maxsize=1)
def _cpu_bases() -> frozenset:
    """The CPU configs another one inherits from (bases, not runs), read once per process."""
    import yaml

    docs = {q: yaml.safe_load(q.read_text()) for q in CPU}
    return frozenset((q.parent / d["inherit"]).resolve() for q, d in docs.items() if "inherit" in d)


@pytest.mark.parametrize("path", CPU, ids=lambda p: p.relative_to(ROOT / "configs" / "cpu").as_posix())
def test_every_cpu_config_is_valid_and_starts_from_a_run_this_folder_makes(path):
    """The CPU configs the book's recorded runs come from: each passes the config checks, and a fine-tuning or
    distillation config starts from the run of a pretraining or teacher config in configs/cpu/."""
    from aot_lib.training.config import validate_config

    cfg = validate_config(load_config(path))
    stage = config_stage(path)
    starts = {"finetune": [cfg["finetune"]["checkpoint"]],
              "distill": [cfg["distill"]["teacher"], cfg["distill"]["student_init"]]}.get(stage, [])
    for start in filter(None, starts):
        assert Path(start).parts[-2] in _cpu_run_names() and Path(start).name == "last.ckpt", start
    if stage == "distill" and path.resolve() not in _cpu_bases():  # a run: a teacher unless it trains on labels alone
        assert bool(cfg["distill"]["teacher"]) == (cfg["distill"]["alpha"] > 0)


def test_every_run_name_under_configs_is_unique():
    """Two configs with one run.name share <run.out_dir>/<run.name> and results/<...>/<run.name>: the second run
    would resume or overwrite the first, and its record replace the first's."""
    import yaml

    from aot_lib.training.config import _read_yaml

    every = sorted((ROOT / "configs").rglob("*.yaml"))
    bases = {(q.parent / yaml.safe_load(q.read_text())["inherit"]).resolve() for q in every
             if "inherit" in (yaml.safe_load(q.read_text()) or {})}
    # A template (a file others inherit from that sets no run.name, e.g. configs/cpu/recipe.yaml) is never run
    # itself: its name is only the default <model>_<dataset>. A base that names its run (configs/cpu/aot_admm_cifar10.yaml,
    # which its seed-1 variant inherits) is a run, and stays in: a variant that forgot its own name would overwrite it.
    runs = [p for p in every if p.resolve() not in bases or (_read_yaml(p).get("run") or {}).get("name") is not None]
    by_name: dict[str, list[str]] = {}
    for p in runs:
        by_name.setdefault(load_config(p)["run"]["name"], []).append(p.relative_to(ROOT).as_posix())
    assert {n: ps for n, ps in by_name.items() if len(ps) > 1} == {}
    templates = [p.relative_to(ROOT / "configs").as_posix() for p in every if p not in runs]
    assert templates == ["base/cifar.yaml", "base/imagenet.yaml", "cpu/cpu30/recipe.yaml", "cpu/cpu30b/recipe.yaml",
                         "cpu/recipe.yaml",
                         "cpu/table2/finetune.yaml", "cpu/table2/recipe.yaml", "cpu/table4/finetune.yaml"]
