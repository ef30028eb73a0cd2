"""The 30-minute CPU recipe search (issue 37): candidates, their measured cost, and the configs that screen them.

    .venv/bin/python scripts/recipe_search.py time        # step times of every candidate x family, interleaved
    .venv/bin/python scripts/recipe_search.py configs     # configs/cpu/search/*.yaml from the recorded step times
    nice -n 10 scripts/evidence_runs.sh search            # the screening runs, one at a time (resumable)
    .venv/bin/python scripts/recipe_search.py finalists   # rank the screened candidates; configs/cpu/search/final/
    nice -n 10 scripts/evidence_runs.sh finalists         # the two finalists at full length, every family
    .venv/bin/python scripts/recipe_search.py recipe      # the better finalist: configs/cpu/cpu30/ (commit them)
    nice -n 10 scripts/evidence_runs.sh cpu30             # Tables 1/3 at the recipe, the plan's seeds

**The rule, fixed before any screening run.** Every candidate is tried on all three families of Tables 1 and 3
(AoT-ADMM, CRATE, AoT): one screening run each, the same budget for every family. A candidate changes scale or
views, never a family's architecture (Algorithm 1, the heads and the pooling the probe reads stay), and applies to
every family alike. Each candidate's nominal full length is the number of epochs AoT-ADMM's training steps fill
30 minutes with on this machine, from its measured step time (``time``: one whole LeJEPA step, augmentation
included, the candidates and families interleaved repeat by repeat on an idle machine); its screening run is that
schedule compressed to ``PROXY_FRACTION`` of those epochs (warm-up and cosine included), about 9 minutes of steps for
AoT-ADMM. A run also spends time outside the steps (monitors, checkpoints, the probe), so the full-length configs of
the two finalists take their epochs from the screening runs' recorded seconds per step instead, which include it. A screening run reads
no test image (``probe.test=false``): it is scored by the linear probe's validation accuracy (10 % of the training
set) and the online k-NN on validation images. The candidate picked is the one with the best mean validation linear
probe over the three families (equal weights); the top two are then trained at full length for every family, which
says how well the screening predicted the full run, and the better of those at full length becomes the recipe of
the ``cpu30_*`` cells (results/cpu/plan.yaml).

**One change to the rule, made after the screening runs and before any full-length run** (2026-11-26): the
finalists' epochs come from the interleaved step times of ``time`` (as each candidate's nominal full length
does), not from the screening runs' recorded seconds per step. Every screening run shared the machine with a
session's tests, book builds or CI, so its seconds per step measured the sharing: c0's three runs took 1.32 to
4.31 s of wall time a step, against 0.49 to 0.78 s measured idle and interleaved, while their fastest logged
intervals came within 15 % of the idle figures (the loop is the one measured). The 30 minutes are therefore 30
minutes of training steps on an idle machine; what a run spends outside its steps (the online k-NN monitor each
epoch, checkpoints; the probe comes after pretraining) is instrumentation, reported apart.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import yaml  # noqa: E402

from aot_lib.files import write_json  # noqa: E402
from aot_lib.runtime import git_commit, hardware_summary  # noqa: E402

FAMILIES = {"aot_admm": "aot_admm_tiny", "crate": "crate_tiny", "aot": "aot_tiny"}
BUDGET_S = 30 * 60  # AoT-ADMM's pretraining time at full length, on this project's 2-core machines
PROXY_FRACTION = 0.3  # a screening run: the full schedule compressed to this share of the epochs
TRAIN_IMAGES = 50_000  # CIFAR-10's training set, all of it pretrained on
OUT = ROOT / "configs" / "cpu" / "search"
TIMES = ROOT / "results" / "cpu" / "search" / "step_times.json"

#: Candidates: overrides of configs/cpu/recipe.yaml (lr 2e-3, batch 256, projector 1024-1024-64, 256 slices). c0 is
#: the first recipe itself (width 192, depth 6, patch 8, 2 global 32 px + 6 local 16 px views).
CANDIDATES = {
    "c0_base": {},
    "c1_local2": {"views": {"n_local": 2}},
    "c2_w128": {"model": {"overrides": {"embed_dim": 128, "num_heads": 4}}},
    "c3_w128_d4": {"model": {"overrides": {"embed_dim": 128, "depth": 4, "num_heads": 4}}},
    "c4_w128_local2": {"model": {"overrides": {"embed_dim": 128, "num_heads": 4}}, "views": {"n_local": 2}},
    "c5_w128_patch4_local2": {"model": {"overrides": {"embed_dim": 128, "num_heads": 4, "patch_size": 4}},
                              "views": {"n_local": 2}},
}


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def candidate_config(cand: str, family: str) -> dict:
    from aot_lib.training.config import load_config

    base = load_config(ROOT / "configs" / "cpu" / "recipe.yaml")
    return _merge(_merge(base, CANDIDATES[cand]), {"model": {"name": FAMILIES[family]}})


def time_steps(repeats: int, warmup: int, candidates: dict = CANDIDATES, config_of=None, params=None) -> dict:
    """Median seconds of one pretraining step per candidate and family, interleaved repeat by repeat.
    ``config_of(cand, family)``: a candidate's config (default :func:`candidate_config`); ``params(model, cfg)``: what
    AdamW optimises (default ``model.parameters()``, as round 1 measured; round 2 passes the trainer's groups)."""
    from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig
    from aot_lib.training.builders import normalization_for
    from aot_lib.training.pretrain import build_lejepa_model

    config_of = config_of or candidate_config
    built = {}
    for cand in candidates:
        for fam in FAMILIES:
            cfg = config_of(cand, fam)
            torch.manual_seed(0)
            model = build_lejepa_model(cfg)
            opt = torch.optim.AdamW(params(model, cfg) if params else model.parameters(), lr=cfg["optim"]["lr"])
            aug = BatchedMultiCrop(MultiCropConfig.from_config(cfg["views"], *normalization_for(cfg)))
            built[cand, fam] = (model, opt, aug, cfg["optim"]["batch_size"])
    images = torch.randint(0, 256, (256, 3, 32, 32), dtype=torch.uint8)
    times: dict = {k: [] for k in built}
    keys = list(built)
    for r in range(warmup + repeats):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:  # the order rotates: a drift hits every one alike
            model, opt, aug, batch = built[k]
            t = time.perf_counter()
            views = aug(images[:batch], torch.Generator().manual_seed(r))
            out = model(views)
            out.loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if r >= warmup:
                times[k].append(time.perf_counter() - t)
        print(f"repeat {r + 1}/{warmup + repeats}", flush=True)
    return {cand: {fam: {"median_s": statistics.median(times[cand, fam]), "min_s": min(times[cand, fam]),
                         "max_s": max(times[cand, fam])} for fam in FAMILIES} for cand in candidates}


def full_epochs(step_s: float, batch: int) -> int:
    """Whole epochs AoT-ADMM trains in BUDGET_S at ``step_s`` seconds a step (at least 1)."""
    return max(1, int(BUDGET_S / (step_s * (TRAIN_IMAGES // batch))))


def _run_config(cand: str, fam: str, epochs: int, description: str, inherit: str, name: str) -> dict:
    """A search run's config: the candidate's overrides on the recipe, ``epochs`` of the whole schedule, validation
    only, the k-NN monitor each epoch."""
    batch = _merge({"optim": {"batch_size": 256}}, CANDIDATES[cand])["optim"]["batch_size"]
    return _merge(CANDIDATES[cand], {
        "description": description, "inherit": inherit, "model": {"name": FAMILIES[fam]}, "run": {"name": name},
        # the whole schedule, warm-up a tenth of the run, as in the first recipe
        "optim": {"epochs": epochs, "warmup_epochs": round(epochs / 10, 2)},
        "probe": {"test": False},  # validation only: the test split is read by the final runs alone
        "monitor": {"every": TRAIN_IMAGES // batch, "knn": True}})


def _write_config(path: Path, head: str, body: dict) -> Path:
    path.write_text(head + yaml.safe_dump(body, sort_keys=False, width=110))
    return path


def write_configs(times: dict) -> list[Path]:
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    for cand, over in CANDIDATES.items():
        batch = _merge({"optim": {"batch_size": 256}}, over)["optim"]["batch_size"]
        epochs = full_epochs(times["steps"][cand]["aot_admm"]["median_s"], batch)
        proxy = max(1, round(PROXY_FRACTION * epochs))  # the full schedule, compressed
        for fam in FAMILIES:
            body = _run_config(cand, fam, proxy, f"recipe search {cand}: {fam} screening run ({proxy} of {epochs} "
                               "epochs)", "../recipe.yaml", f"search_{cand}_{fam}")
            head = (f"# Generated by scripts/recipe_search.py from {TIMES.relative_to(ROOT)} (AoT-ADMM "
                    f"{times['steps'][cand]['aot_admm']['median_s']:.3f} s a step -> {epochs} epochs in "
                    f"{BUDGET_S // 60} min; this screening run: {proxy}). The rule: the script's docstring.\n")
            written.append(_write_config(OUT / f"{cand}_{fam}.yaml", head, body))
    return written


RESULTS = ROOT / "results" / "cpu" / "search"
FINAL = OUT / "final"
N_FINALISTS = 2


def screening_scores(results: Path = RESULTS) -> dict[str, dict[str, float]]:
    """``candidate -> family -> validation linear top-1`` of every recorded screening run; refuses a candidate
    that is not screened on every family (the rule compares candidates over all three)."""
    from aot_lib.evidence import validation_scores

    scores: dict[str, dict[str, float]] = {}
    for cand in CANDIDATES:
        for fam in FAMILIES:
            folder = results / f"search_{cand}_{fam}"
            got = validation_scores(folder)
            if got is None:
                probe = folder / "probe.json"
                shown = probe.relative_to(ROOT) if probe.is_relative_to(ROOT) else probe
                raise SystemExit(f"recipe_search: {cand} is not screened on {fam} ({shown} is "
                                 "missing): run nice -n 10 scripts/evidence_runs.sh search, record it, then rank")
            scores.setdefault(cand, {})[fam] = got["linear"]
    return scores


def rank(scores: dict[str, dict[str, float]]) -> list[tuple[str, float]]:
    """Candidates by the rule's score, the mean over the three families with equal weights, best first (a tie
    keeps the candidates' order)."""
    means = [(cand, statistics.fmean(per.values())) for cand, per in scores.items()]
    return sorted(means, key=lambda cm: -cm[1])


def write_finalists(scores: dict, times: dict, out: Path = FINAL) -> list[Path]:
    """The top ``N_FINALISTS`` candidates at their nominal full length, for every family: the screening config
    with the whole schedule (warm-up a tenth of it), validation only, the k-NN monitor each epoch."""
    out.mkdir(parents=True, exist_ok=True)
    ranked = rank(scores)
    written = []
    for place, (cand, mean) in enumerate(ranked[:N_FINALISTS], 1):
        batch = _merge({"optim": {"batch_size": 256}}, CANDIDATES[cand])["optim"]["batch_size"]
        step_s = times["steps"][cand]["aot_admm"]["median_s"]
        epochs = full_epochs(step_s, batch)
        for fam in FAMILIES:
            body = _run_config(cand, fam, epochs, f"recipe search finalist {place} ({cand}): {fam} at full length "
                               f"({epochs} epochs)", "../../recipe.yaml", f"final_{cand}_{fam}")
            head = (f"# Generated by scripts/recipe_search.py finalists: place {place} of {len(ranked)} by mean "
                    f"validation linear {mean:.2f} % over the three families' screening runs; AoT-ADMM "
                    f"{step_s:.3f} s a step (interleaved, idle) -> {epochs} epochs in {BUDGET_S // 60} min.\n")
            written.append(_write_config(out / f"{cand}_{fam}.yaml", head, body))
    return written


CPU30 = ROOT / "configs" / "cpu" / "cpu30"
#: The plan's seeds of the 30-minute cells (results/cpu/plan.yaml: t1_/t3_cifar10_30min, t1_/t3_cifar100_30min).
CPU30_SEEDS = {"cifar10": 5, "cifar100": 3}
#: The plan's probe for those cells: the learning-rate grid widened by one step, the test split read once.
CPU30_PROBE = {"lr": [1e-3, 3e-3, 1e-2, 3e-2], "weight_decay": 0.0, "test": True}


def write_recipe(root: Path = ROOT, out: Path = CPU30) -> list[Path]:
    """The 30-minute recipe and its cells, once every finalist is recorded on every family: ``recipe.yaml`` (the
    finalist with the best mean validation linear top-1 at full length, :func:`aot_lib.evidence.recipe_pick`,
    with the plan's probe) and ``cpu30_<family>_<data>[_seed<k>].yaml`` for every family, seeds 0..4 on CIFAR-10
    and 0..2 on CIFAR-100 (seed 0 without a suffix), each with the online k-NN monitor."""
    return write_cells(root, out, 1, CANDIDATES, "cpu30", CPU30_PROBE, "../recipe.yaml", "recipe_search.py",
                       "the 30-minute CPU recipe", "30-minute", "finalists")


def write_cells(root: Path, out: Path, search_round: int, candidates: dict, prefix: str, probe: dict, inherit: str,
                script: str, what: str, claims: str, group: str) -> list[Path]:
    """A search round's recipe and its cells (:func:`write_recipe`; round 2's ``recipe_search2.py recipe``):
    ``recipe.yaml``, the picked finalist (:func:`aot_lib.evidence.recipe_pick` of ``search_round``) at full length on
    ``inherit`` with ``probe``, and ``<prefix>_<family>_<data>[_seed<k>].yaml``, :data:`CPU30_SEEDS` of each.
    Refuses, naming them, while a finalist is not recorded on every family (``group`` runs them)."""
    from aot_lib.evidence import TRAIN_IMAGES as DATA_IMAGES, finalist_rows, recipe_pick

    pick = recipe_pick(root, search_round)
    if pick is None:
        missing = [f"{r['candidate']} on {f}" for r in finalist_rows(root, search_round) for f in FAMILIES if r[f] is None]
        raise SystemExit(f"{script.removesuffix('.py')}: the finalists are not all recorded ("
                         + (", ".join(missing) or "none chosen")
                         + f"): run nice -n 10 scripts/evidence_runs.sh {group}, record them, then pick")
    cand, epochs = pick["candidate"], pick["epochs"]
    batch = _merge({"optim": {"batch_size": 256}}, candidates[cand])["optim"]["batch_size"]
    others = ", ".join(f"{r['candidate']} {r['mean']:.2f} %" for r in finalist_rows(root, search_round)
                       if r["candidate"] != cand)
    out.mkdir(parents=True, exist_ok=True)
    body = _merge(candidates[cand], {
        "description": f"{what}: search candidate {cand} at full length ({epochs} epochs)",
        "inherit": inherit,
        "optim": {"epochs": epochs, "warmup_epochs": round(epochs / 10, 2)},
        "probe": probe, "monitor": {"knn": True}})
    head = (f"# Generated by scripts/{script} recipe: the recipe search's pick (its rule: the script's "
            f"docstring). Finalist {cand} had the best mean validation linear top-1 over AoT-ADMM, CRATE and AoT "
            f"at full length, {pick['mean']:.2f} % (against {others}). The probe is the plan's for the {prefix} "
            "cells (results/cpu/plan.yaml).\n")
    written = [_write_config(out / "recipe.yaml", head, body)]
    for data, n in CPU30_SEEDS.items():
        for fam, model in FAMILIES.items():
            for seed in range(n):
                name = f"{prefix}_{fam}_{data}" + (f"_seed{seed}" if seed else "")
                cell = {"description": f"{what} ({cand}, {epochs} epochs): {fam} on {data}, seed {seed}",
                        "inherit": "recipe.yaml", "model": {"name": model}, "data": {"name": data},
                        "run": {"name": name, "seed": seed},
                        # the monitor once an epoch, whatever the dataset's size
                        "monitor": {"every": DATA_IMAGES[data] // batch}}
                written.append(_write_config(out / f"{name}.yaml", f"# Generated by scripts/{script} recipe: a "
                                             f"cell of the plan's {claims} claims.\n", cell))
    return written


def record_step_times(out: Path, repeats: int, warmup: int, timer, script: str, **extra) -> dict:
    """``time``'s record: ``timer(repeats, warmup)``'s step times written to ``out`` with the commit, the hardware and
    the date (``extra`` keys beside them), and printed. A record is never rewritten: refuses an ``out`` that exists
    before anything is timed."""
    if out.exists():  # a new measurement goes beside the recorded one
        raise SystemExit(f"{script}: {out} exists (a recorded measurement): pass --out with a new path")
    steps = timer(repeats, warmup)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, {"commit": git_commit(), "hardware": hardware_summary(),
                     "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "repeats": repeats, "steps": steps, **extra})
    print(json.dumps(steps, indent=1))
    return steps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["time", "configs", "finalists", "recipe"])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--out", type=Path, default=TIMES, help=f"where time writes (default {TIMES.relative_to(ROOT)})")
    a = p.parse_args()
    if a.what == "time":
        record_step_times(a.out, a.repeats, a.warmup, time_steps, "recipe_search")
    elif a.what == "configs":
        for path in write_configs(json.loads(TIMES.read_text())):
            print(path.relative_to(ROOT))
    elif a.what == "recipe":
        for path in write_recipe():
            print(path.relative_to(ROOT))
    else:
        scores = screening_scores()
        for cand, mean in rank(scores):
            print(f"{cand:24s} mean {mean:6.2f}  " + "  ".join(f"{f} {v:6.2f}" for f, v in scores[cand].items()))
        for path in write_finalists(scores, json.loads(TIMES.read_text())):
            print(path.relative_to(ROOT))


if __name__ == "__main__":
    from aot_lib.cli import run_script  # a refusal is one line, no traceback (--debug shows it)

    sys.exit(run_script(main, "recipe_search.py"))
