"""The paper's Tables 1, 2 and 3 at CPU scale (chapters 8 and 9): a row per pretrained cell, the probe's floor under them,
and the paper's own numbers beside, labelled as the paper's.

A cell's runs come from :func:`aot_lib.evidence.cell_runs`; the floor (untrained encoders, raw pixels) from
:func:`aot_lib.evidence.floor_cells`; sizes from the encoders the chapter's configs build.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..evidence import (BASELINES_DIR, TABLE13_CELLS, TABLE13_DATA, TABLE13_NAMES, floor_cells, floor_rows,
                        numerics_label, paper, probe_lr_picks, same_probe, stats)
from ..evidence.records import newest_result, read_json
from ..probe_grid import grid_pick, lr_scores
from .tables import Col, Table

__all__ = ["encoder_size", "encoder_sizes", "table1_cpu", "table3_cpu", "floor_gains_table", "floor_picks",
           "floor_reprobes", "cell_reprobes", "reprobe_table", "split_control", "ControlSplit", "run_label",
           "edge_floor_gains_table", "table2_stages", "FLOOR_NOTE"]

FLOOR_NOTE = (
    "Rows 'untrained' and 'raw pixels' are the floor: the same probe on each seed's "
    "encoder at its initialisation, and on the normalised pixels themselves (3,072 "
    "values); chance is 10 % on CIFAR-10 and 1 % on CIFAR-100.")

# the result and the paper's beside it first: on a phone they show before any scroll
_COLS = [
    Col("model"),
    Col("linear", "linear top-1 (%), mean ± std"),
    Col("paper", "linear top-1 (%), Tiny", ".2f", paper=True),
    Col("data"),
    Col("seeds"),
    Col("params", "params (M)", ".2f"),
    Col("flops", "GFLOPs", ".3f"),
    Col("paper_params", "params (M), Tiny", ".2f", paper=True),
    Col("paper_flops", "GFLOPs, Tiny", ".2f", paper=True),
]


def encoder_size(config: Path, flops: bool = True) -> tuple[float, float | None]:
    """(parameters in M, GFLOPs of one image or None without ``flops``) of the encoder ``config`` builds, without
    the classification head, as the paper counts."""
    from ..models.flops import count_flops
    from ..models.params import count_params
    from ..models.registry import create_model
    from ..training.config import load_config

    cfg = load_config(config)
    model = create_model(cfg["model"]["name"], num_classes=0, **cfg["model"]["overrides"])
    return count_params(model) / 1e6, count_flops(model) / 1e9 if flops else None


def encoder_sizes(root: Path, families=TABLE13_NAMES) -> dict[str, tuple[float, float]]:
    """family -> :func:`encoder_size` of ``configs/cpu/<family>_cifar10.yaml``."""
    return {fam: encoder_size(Path(root) / "configs" / "cpu" / f"{fam}_cifar10.yaml") for fam in families}


def _cell_row(cells: dict, size: dict, fam: str, data: str) -> dict:
    runs = cells[fam, data]
    s = stats.summarize([r.top1 for r in runs])
    return dict(model=TABLE13_NAMES[fam], data=TABLE13_DATA[data], n=s.n, params=size[fam][0], flops=size[fam][1],
                linear=str(s), seeds=", ".join(str(r.seed) for r in runs),
                paper=paper.LINEAR_PROBE_ACC[data].get(f"{fam}_tiny"), paper_params=paper.PARAMS_M.get(f"{fam}_tiny"),
                paper_flops=paper.FLOPS_G.get(f"{fam}_tiny"))


def _floor_rows(results: Path, size: dict, data: str, families) -> list[dict]:
    """The probes' floor on ``data``: each family's encoders at initialisation, then raw pixels (``aot baseline``;
    results/cpu/baselines/), probed as the pretrained runs."""
    rows = []
    for fam in families:
        floor = floor_cells(results, TABLE13_CELLS[fam, data], data)
        for what in ("untrained", "pixels") if fam == families[-1] else ("untrained",):
            runs = floor[what]
            if not runs:
                continue
            s = stats.summarize([r.top1 for r in runs])
            rows.append(dict(
                model=f"{TABLE13_NAMES[fam]}, untrained" if what == "untrained" else "raw pixels",
                data=TABLE13_DATA[data], n=s.n, linear=str(s), seeds=", ".join(str(r.seed) for r in runs),
                params=size[fam][0] if what == "untrained" else None,
                flops=size[fam][1] if what == "untrained" else None))
    return rows


def table1_cpu(results: Path, cells: dict, size: dict) -> Table:
    """Table ``tbl-table1-cpu``: AoT-ADMM and CRATE on CIFAR-10 and CIFAR-100, their floors, the paper's Tiny."""
    return Table(
        [_cell_row(cells, size, f, d) for f, d in TABLE13_CELLS if f != "aot"]
        + [r for d in TABLE13_DATA for r in _floor_rows(results, size, d, ("aot_admm", "crate"))],
        _COLS,
        caption="The paper's Table 1 at CPU scale: LeJEPA pretraining (width 192, "
        "depth 6, 10 epochs), linear probe on the test split",
        name="tbl-table1-cpu",
        notes=["mean ± sample standard deviation over the seeds listed; one seed has no spread.",
               "CIFAR-100's test split is held out of the official training set (the "
               "offline copy has no official test set), so its accuracies are not on the "
               "paper's test images.",
               FLOOR_NOTE])


def table3_cpu(results: Path, cells: dict, size: dict) -> Table:
    """Table ``tbl-table3-cpu``: AoT-ADMM and AoT on CIFAR-10, their floors, the paper's Tiny."""
    return Table(
        [_cell_row(cells, size, f, "cifar10") for f in ("aot_admm", "aot")]
        + _floor_rows(results, size, "cifar10", ("aot_admm", "aot")),
        [c for c in _COLS if c.key != "paper_flops"],
        caption="The paper's Table 3 at CPU scale: AoT-ADMM and AoT, CIFAR-10",
        name="tbl-table3-cpu",
        notes=["The paper's Table 3 prints no FLOPs.", FLOOR_NOTE])


def _gain(d: stats.Difference) -> str:
    return f"{d.mean:+.2f} [{d.low:+.2f}, {d.high:+.2f}]" if d.n > 1 else f"{d.mean:+.2f} (one seed)"


def floor_gains_table(results: Path, cells: dict, caption: str, name: str, baselines: str = BASELINES_DIR,
                      levels: bool = False) -> tuple[Table, list[dict]]:
    """What pretraining adds over the floor (:func:`aot_lib.evidence.floor_rows`, the floors recorded under
    ``results/baselines``): a row per pretrained cell of ``cells`` recorded, the mean of the per-seed differences
    with its 95 % CI over the untrained encoder and over raw pixels. With ``levels``, each side's accuracy too (the
    cell's and each floor's mean ± std over their seeds), for a recipe with no other table of them. Returns the
    table and ``floor_rows``' rows, for the chapter's sentences."""
    floors = floor_rows(results, cells, TABLE13_NAMES, TABLE13_DATA, baselines)
    rows: dict[tuple, dict] = {}
    for f in floors:
        key = f["family"], f["data"]
        row = rows.setdefault(key, dict(model=TABLE13_NAMES[key[0]], data=TABLE13_DATA[key[1]], seeds=f["diff"].n))
        row[f["floor"]] = _gain(f["diff"])
        if levels:
            row.setdefault("trained", str(stats.summarize(list(f["trained"].values()))))
            row[f["floor"] + "_level"] = str(stats.summarize(list(f["floor_top1"].values())))
    cols = [Col("model"), Col("data"), Col("untrained", "over its untrained encoder (points)"),
            Col("pixels", "over raw pixels (points)"), Col("seeds")]
    if levels:
        cols[2:2] = [Col("trained", "pretrained (%)"), Col("untrained_level", "untrained (%)"),
                     Col("pixels_level", "raw pixels (%)")]
    return Table(list(rows.values()), cols, caption=caption, name=name), floors


def floor_picks(results: Path, cells: dict, baselines: str | Sequence[str] = BASELINES_DIR) -> list[dict]:
    """Every floor run under ``cells`` (raw pixels once per data set and seed, however many cells share them), its
    probe's pick as :func:`aot_lib.evidence.probe_lr_picks` reads it, with ``edge_gain`` (how far the validation
    accuracy still climbed at an end of the grid). With several ``baselines`` folders, newest first, the last holding
    every floor, each floor is read as :func:`aot_lib.evidence.floor_cells` reads it: from the first folder that has
    it, so a floor probed again is read from its newest probe."""
    folders = baselines if isinstance(baselines, str) else tuple(baselines)
    runs = {}
    for (_, data), name in cells.items():
        for floor in floor_cells(results, name, data, folders).values():
            runs.update({r.name: r for r in floor or ()})
    return probe_lr_picks(list(runs.values()))


def floor_reprobes(results: Path, cells: dict, first: str, again: str) -> list[dict]:
    """Every floor under ``cells`` recorded in ``results/first`` and probed again into ``results/again`` (e.g. its
    grid extended at an edge), raw pixels once per data set and seed: ``{"run", "first", "again", "shared_diff",
    "same"}``. Each side is :func:`aot_lib.probe_grid.grid_pick`'s reading plus ``"val"`` (its best validation
    top-1 at its pick), ``"top1"`` (test), ``"scores"`` (best validation top-1 by rate) and ``"numerics"``
    (:func:`aot_lib.evidence.numerics_label`); ``"shared_diff"`` is the largest difference in validation top-1 at a
    rate both tried (points), ``"same"`` :func:`aot_lib.evidence.same_probe`. A floor not probed again is left
    out; one probed again but not first is refused."""
    pairs: dict[str, tuple] = {}
    for (_, data), name in cells.items():
        firsts = {r.name: r for f in floor_cells(results, name, data, first).values() for r in f or ()}
        for r in (r for f in floor_cells(results, name, data, again).values() for r in f or ()):
            if r.name not in firsts:
                raise ValueError(f"{r.folder} has no first record in {Path(results) / first}: a floor is probed "
                                 f"again only beside its first record; move the folder out of {r.folder.parent}")
            pairs[r.name] = firsts[r.name], r
    return [_reprobe_row(run_name, [newest_result(run.folder, run.kind)[1] for run in runs],  # as floor_picks reads
                         [numerics_label(run) for run in runs]) for run_name, runs in sorted(pairs.items())]


def cell_reprobes(results: Path, first: str | None, again: str, runs: Iterable[str] | None = None) -> list[dict]:
    """Every pretraining run probed again into ``results/again/<run>/probe.json`` (``scripts/reprobe.py --dest``, e.g.
    the 30-minute cells' wider grid extended at its top) beside its probe in ``results/first/<run>/`` (``first``
    None: the run's own newest recorded probe, as the tables read it): the rows of :func:`floor_reprobes`, each
    side's ``numerics`` read from the probe file it comes from (a re-probe ran on its own machine, not the
    training run's). With ``runs``, only those run names (one recipe's). Refuses a run with no first probe, and
    two probes of different encoders."""
    out = []
    keep = None if runs is None else set(runs)
    for path in sorted((Path(results) / again).glob("*/probe.json")):
        if keep is not None and path.parent.name not in keep:
            continue
        if first is None:
            first_path, first_probe = newest_result(Path(results) / path.parent.name, "pretrain")
        else:
            first_path = Path(results) / first / path.parent.name / "probe.json"
            if not first_path.is_file():
                raise ValueError(f"{path.parent} has no first probe in {first_path.parent.parent}: a run is probed "
                                 f"again only beside its first probe; move the folder out of {path.parent.parent}")
            first_probe = read_json(first_path)
        probes = [first_probe, read_json(path)]
        if probes[0].get("pretrain_step") != probes[1].get("pretrain_step"):
            raise ValueError(f"{path}: probed the encoder of step {probes[1].get('pretrain_step')}, {first_path} that "
                             f"of step {probes[0].get('pretrain_step')}: probe the same recorded encoder again")
        out.append(_reprobe_row(path.parent.name, probes, [numerics_label(p) for p in probes]))
    return out


def _reprobe_row(run_name: str, probes: list[dict], numerics: list[str]) -> dict:
    sides = []
    for probe, label in zip(probes, numerics):
        pick, scores = grid_pick(probe), lr_scores(probe["linear_val_top1"])
        sides.append(dict(pick, val=scores[pick["lr"]], top1=probe["linear_top1"], scores=scores, numerics=label))
    shared = set(sides[0]["scores"]) & set(sides[1]["scores"])
    if not set(sides[0]["scores"]) <= set(sides[1]["scores"]):
        raise ValueError(f"{run_name}: probed again on rates {sorted(sides[1]['scores'])} that leave out some of the "
                         f"first probe's {sorted(sides[0]['scores'])}: probe it again on a grid that holds them")
    return dict(run=run_name, first=sides[0], again=sides[1], same=same_probe(*probes),
                shared_diff=max(abs(sides[0]["scores"][lr] - sides[1]["scores"][lr]) for lr in shared))


@dataclass(frozen=True)
class ControlSplit:
    """A post-hoc re-probe group read against its control (the run whose pick was inside, probed again to see what
    the machine alone moves): ``control`` and ``others`` are :func:`floor_reprobes` / :func:`cell_reprobes` rows,
    ``moved`` each other run's test top-1 again minus first (points), ``numerics_first`` / ``numerics_again`` the
    machines of each side (:func:`aot_lib.evidence.numerics_label`, sorted; one where a side ran on one machine),
    ``control_rates`` the rates at which the control's validation top-1 changed."""

    control: dict
    others: list[dict]
    moved: list[float]
    numerics_first: tuple[str, ...]
    numerics_again: tuple[str, ...]
    control_rates: list[float]


def split_control(reprobes: list[dict], control: str) -> ControlSplit:
    """Split re-probe rows into the control named ``control`` and the rest (see :class:`ControlSplit`). Refuses a
    group without its control."""
    found = [r for r in reprobes if r["run"] == control]
    if not found:
        raise ValueError(f"{control} is not among the runs probed again ({', '.join(r['run'] for r in reprobes)}): "
                         "probe the control again beside them, or name the control the group was run with")
    first, again = (tuple(sorted({r[side]["numerics"] for r in reprobes})) for side in ("first", "again"))
    scores0, scores1 = found[0]["first"]["scores"], found[0]["again"]["scores"]
    others = [r for r in reprobes if r["run"] != control]
    return ControlSplit(found[0], others, [r["again"]["top1"] - r["first"]["top1"] for r in others],
                        first, again,
                        [lr for lr in scores0 if scores0[lr] != scores1[lr]])


def edge_floor_gains_table(results: Path, cells: dict, first: str, again: str, caption: str,
                           name: str) -> tuple[Table, list[dict]]:
    """What pretraining adds over a floor probed again (``results/again``) beside what it adds over its first record
    (``results/first``), for the floors whose every seed was probed again: a floor mixing the two probes' machines is
    left out, as is a floor with a seed not yet probed again. Returns the table and its rows (``first`` and ``again``
    being :func:`aot_lib.evidence.floor_rows` rows)."""
    firsts = {(f["family"], f["data"], f["floor"]): f for f in floor_rows(results, cells, TABLE13_NAMES, TABLE13_DATA,
                                                                           first)}
    rows = []
    for f in floor_rows(results, cells, TABLE13_NAMES, TABLE13_DATA, again):
        old = firsts[f["family"], f["data"], f["floor"]]
        if set(f["floor_top1"]) == set(old["floor_top1"]):
            rows.append(dict(model=TABLE13_NAMES[f["family"]], data=TABLE13_DATA[f["data"]],
                             floor="untrained encoder" if f["floor"] == "untrained" else "raw pixels",
                             gain0=_gain(old["diff"]), gain=_gain(f["diff"]), moved=f["diff"].mean - old["diff"].mean,
                             seeds=f["diff"].n, first=old, again=f))
    return Table(rows, [Col("model"), Col("data"), Col("floor"), Col("gain0", "over the first floor (points)"),
                        Col("gain", "over the floor probed again (points)"),
                        Col("moved", "gain moved (points)", "+.2f"), Col("seeds")],
                 caption=caption, name=name,
                 notes=["Each gain: the mean of the per-seed differences with its 95 % t interval. Only floors whose "
                        "every seed was probed again are shown, so that no floor mixes two machines' probes"
                        + ("" if rows else "; none is complete yet") + "."]), rows


def _pick(side: dict) -> str:
    end = " (top)" if side["at_top"] else " (bottom)" if side["at_bottom"] else ""
    return f"{side['lr']:g}{end} of {side['grid'][0]:g} … {side['grid'][-1]:g}"


def run_label(run: str) -> str:
    """A floor's or a Tables 1/3 run's name in words: ``baseline_init_cpu30_aot_cifar10_seed2`` -> ``"untrained AoT,
    CIFAR-10, seed 2"``, ``baseline_pixels_cifar100_seed0`` -> ``"raw pixels, CIFAR-100, seed 0"``,
    ``cpu30_aot_admm_cifar10_seed4`` -> ``"AoT-ADMM, CIFAR-10, seed 4"``. Refuses any other name."""
    data, families = "|".join(TABLE13_DATA), "|".join(TABLE13_NAMES)
    m = re.fullmatch(rf"(?:baseline_(?:init_[a-z0-9]+?_(?P<family>{families})|(?P<pixels>pixels))|[a-z0-9]+?_"
                     rf"(?P<trained>{families}))_(?P<data>{data})(?:_seed(?P<seed>\d+))?", run)
    if m is None:
        raise ValueError(f"{run!r} is not a floor's or a Tables 1/3 run's name (baseline_init_<recipe>_<family>_<data>"
                         "[_seed<k>], baseline_pixels_<data>_seed<k> or <recipe>_<family>_<data>[_seed<k>])")
    what = ("raw pixels" if m["pixels"] else f"untrained {TABLE13_NAMES[m['family']]}" if m["family"]
            else TABLE13_NAMES[m["trained"]])
    return f"{what}, {TABLE13_DATA[m['data']]}, seed {m['seed'] or 0}"


def reprobe_table(reprobes: list[dict], name: str, caption: str, what: str = "floor") -> Table:
    """Table of :func:`floor_reprobes` or :func:`cell_reprobes` (``what``: "run"): each first probe and the probe
    again side by side."""
    rows = [dict(run=run_label(r["run"]), pick0=_pick(r["first"]), val0=r["first"]["val"], top0=r["first"]["top1"],
                 pick=_pick(r["again"]), val=r["again"]["val"], top=r["again"]["top1"],
                 moved=r["again"]["top1"] - r["first"]["top1"], shared=r["shared_diff"]) for r in reprobes]
    return Table(rows, [Col("run", what), Col("pick0", "first pick (lr, of the grid)"),
                        Col("val0", "first val (%)", ".2f"), Col("top0", "first test (%)", ".2f"),
                        Col("pick", "pick again"), Col("val", "val again (%)", ".2f"),
                        Col("top", "test again (%)", ".2f"), Col("moved", "test moved (points)", "+.2f"),
                        Col("shared", "largest val change (points)", ".2f")],
                 caption=caption, name=name,
                 notes=["val: validation top-1 at the pick; test: test top-1. Largest val change: the largest "
                        "difference in validation top-1 between the two probes at a rate both tried, what the other "
                        "machine and commit change with the grid held fixed."])


def _views(c: dict) -> str:
    v = c["views"]
    return f"{v['n_global']} × {v['global_size']} px + {v['n_local']} × {v['local_size']} px"


def _width(c: dict) -> str:
    o = c["model"]["overrides"]
    return "Base" if "embed_dim" not in o else f"{o['embed_dim']} × {o['depth']} layers"


#: Table 2's settings in the order the table shows them: (label, stage, how to read it, stated in the paper?).
_TABLE2_SETTINGS = [
    ("pretraining: views", "pre", _views, True),
    ("pretraining: patch", "pre", lambda c: c["model"]["overrides"]["patch_size"], True),
    ("pretraining: blur probability", "pre", lambda c: " / ".join(map(str, c["views"]["blur_p"])), False),
    ("pretraining: solarisation probability", "pre", lambda c: " / ".join(map(str, c["views"]["solarize_p"])), False),
    ("pretraining: epochs", "pre", lambda c: c["optim"]["epochs"], True),
    ("pretraining: learning rate", "pre", lambda c: c["optim"]["lr"], True),
    ("pretraining: batch", "pre", lambda c: c["optim"]["batch_size"], True),
    ("encoder width × depth", "pre", _width, True),
    ("fine-tuning: image size (px)", "ft", lambda c: c["finetune"]["image_size"], False),
    ("fine-tuning: epochs", "ft", lambda c: c["finetune"]["epochs"], False),
    ("fine-tuning: learning rate", "ft", lambda c: c["finetune"]["lr"], False),
    ("fine-tuning: label smoothing", "ft", lambda c: c["finetune"]["label_smoothing"], False),
    ("fine-tuning: weight decay", "ft", lambda c: c["finetune"]["weight_decay"], False),
]


def table2_stages(root: Path) -> Table:
    """Table ``tbl-transfer-stages``: AoT-ADMM's Table 2 settings in ``configs/paper/table2`` and
    ``configs/cpu/table2`` side by side, each marked stated in the paper or assumed."""
    from ..training.config import load_config

    paper_dir, cpu_dir = Path(root) / "configs" / "paper" / "table2", Path(root) / "configs" / "cpu" / "table2"
    stage = {"pre": (load_config(paper_dir / "aot_admm_base_in1k.yaml"),
                     load_config(cpu_dir / "aot_admm_imagenette.yaml")),
             "ft": (load_config(paper_dir / "aot_admm_base_in1k_finetune_cifar10.yaml"),
                    load_config(cpu_dir / "aot_admm_imagenette_ft_cifar10.yaml"))}
    return Table(
        [dict(what=what, paper=get(stage[st][0]), cpu=get(stage[st][1]), stated="yes" if stated else "no (assumed)")
         for what, st, get, stated in _TABLE2_SETTINGS],
        [Col("what", "setting"), Col("paper", "configs/paper/table2"), Col("cpu", "configs/cpu/table2"),
         Col("stated", "stated in the paper")],
        caption="The paper's Table 2 in two stages: the paper-scale and CPU-scale configs "
        "(AoT-ADMM; CRATE's differ in the model and in the pretraining learning rate, "
        "each family's own pick of one sweep)",
        name="tbl-transfer-stages",
        notes=["Blur and solarisation probabilities: first global view / other global views / local views."])
