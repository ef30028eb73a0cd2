"""Recorded benchmarks (``results/benchmarks/*.json``) as the book shows them: tables with units, and the
step-time figure with every line named in its legend.

Two scripts are shown (chapter 5): ``benchmarks/bench_families.py`` (one whole LeJEPA step per encoder
family, eager and compiled, families interleaved repeat by repeat; recorded several times as
``families_run*.json``) and ``benchmarks/bench_trainer.py`` (the trainer's own step on a CPU config, its
time split by phase; ``trainer_*.json``). A file with a ``superseded`` entry is never shown as a result::

    runs = [json.loads(f.read_text()) for f in sorted(folder.glob("families_run*.json"))]
    display(family_speed_table(runs))
    plot_family_ratios(runs)
"""
from __future__ import annotations

import re
import statistics
from typing import Any, Mapping, Sequence

from ..models.registry import list_families
from ..runtime import cpu_label
from .tables import Col, Table
from .plotting import FIGURE_WIDTH_IN

__all__ = ["FAMILY_NAMES", "pretraining_flops", "current", "setting_label", "family_speed_rows", "family_speed_table",
           "family_targets", "KERNEL_CHANGES", "kernel_history_rows", "trainer_records_table", "trainer_phase_table",
           "plot_family_ratios", "cuda_paper_rows", "cuda_paper_table", "cuda_trainer_rows", "cuda_trainer_table",
           "cuda_check_summary", "cuda_checks_table",
           "device_call_commit", "cpu_kind_rows", "step_ratio_cols", "pytest_log_summary", "suite_runs_table"]

#: The white-box families the paper compares in Tables 1 and 3 (from the registry, in its order), by prefix: the
#: families benchmarks/bench_families.py times.
FAMILY_NAMES = {p: f.label for p, f in list_families().items() if {"table1", "table3"} & set(f.tables)}
_TARGET = re.compile(r"^aot_admm/(\w+) <= ([0-9.]+)$")


def current(benchmarks: Sequence[Mapping]) -> list[Mapping]:
    """The benchmarks that carry no ``superseded`` notice: what may be shown as a result."""
    return [b for b in benchmarks if not b.get("superseded")]


def setting_label(setting: Mapping) -> str:
    """``bench_families.py``'s setting as a reader's label, the encoder's width and depth read from the model it
    builds (``aot_admm_tiny`` with the setting's overrides), e.g. ``"width 384, depth 12, batch 64"``."""
    from ..models.registry import create_model

    enc = create_model("aot_admm_tiny", num_classes=0, **setting.get("overrides", {}))
    return f"width {enc.embed_dim}, depth {enc.depth}, batch {setting['batch']}"


def family_targets(run: Mapping) -> dict[str, float]:
    """The step-time targets one ``bench_families.py`` entry was judged against, read from its recorded
    ``targets`` keys (``"aot_admm/aot <= 1.3"`` -> ``{"aot": 1.3}``)."""
    out = {}
    for key in run.get("targets") or {}:
        m = _TARGET.match(key)
        if m is None:
            raise ValueError(f"unreadable target {key!r}: expected 'aot_admm/<family> <= <ratio>'")
        out[m.group(1)] = float(m.group(2))
    return out


def family_speed_rows(runs: Sequence[Mapping]) -> list[dict[str, Any]]:
    """One row per (setting, mode) of ``bench_families.py`` recordings (``runs``: their JSON), pooled over
    the recordings: per family the median of the recordings' median step times (s); AoT-ADMM's step time over
    AoT's and over CRATE's (the median of the recordings' medians of per-repeat ratios, and the smallest and
    largest of those medians); the encoders' forward-FLOP ratio of a step; the target and in how many
    recordings it was met."""
    groups: dict[tuple[str, str], list[Mapping]] = {}
    settings: dict[str, Mapping] = {}
    for rec in runs:
        for entry in rec["runs"]:
            name = entry["setting"]["name"]
            settings.setdefault(name, entry["setting"])
            groups.setdefault((name, entry["mode"]), []).append(entry)
    rows = []
    for (name, mode), entries in groups.items():
        row: dict[str, Any] = {"setting": setting_label(settings[name]), "mode": mode, "recordings": len(entries)}
        for fam in FAMILY_NAMES:
            steps = [e["results"][fam]["step"]["median_s"] for e in entries if fam in e["results"]]
            row[f"{fam}_s"] = statistics.median(steps) if steps else None
        for other in ("aot", "crate"):
            ratios = [e[f"ratio_aot_admm_over_{other}"]["median"] for e in entries
                      if f"ratio_aot_admm_over_{other}" in e]
            if not ratios:
                continue
            row[f"over_{other}"] = statistics.median(ratios)
            row[f"over_{other}_range"] = (min(ratios), max(ratios))
            row[f"flops_over_{other}"] = entries[0][f"flop_ratio_aot_admm_over_{other}"][
                "encoder_gflops_per_step_forward"]
            targets = [family_targets(e).get(other) for e in entries]
            row[f"target_{other}"] = targets[0] if len(set(targets)) == 1 else None
            row[f"met_{other}"] = sum(t is not None and r <= t for r, t in zip(ratios, targets))
        rows.append(row)
    return rows


def _ratio_cell(row: Mapping, other: str) -> str:
    """``"1.18 (1.14–1.19)"``: the pooled ratio and the range of the recordings' ratios."""
    lo, hi = row[f"over_{other}_range"]
    return f"{row[f'over_{other}']:.2f} ({lo:.2f}–{hi:.2f})"


def _target_cell(row: Mapping, other: str) -> str:
    """``"≤ 1.30: 3 of 3"``: the target and in how many recordings the ratio met it."""
    t = row.get(f"target_{other}")
    return "—" if t is None else f"≤ {t:.2f}: {row[f'met_{other}']} of {row['recordings']}"


def family_speed_table(runs: Sequence[Mapping], name: str | None = None) -> Table:
    """:func:`family_speed_rows` as a table with units; ``name``: its label in the book (:class:`Table`)."""
    rows = family_speed_rows(runs)
    for r in rows:
        for other in ("aot", "crate"):
            r[f"ratio_{other}"] = _ratio_cell(r, other)
            r[f"target_cell_{other}"] = _target_cell(r, other)
    commits = sorted({str(b.get("commit", "unknown"))[:8] for b in runs})
    machines = sorted({_machine(b.get("hardware") or {}) for b in runs})
    return Table(
        rows,
        [Col("setting"), Col("mode"),
         *[Col(f"{fam}_s", f"{name} step (s)", ".2f") for fam, name in FAMILY_NAMES.items()],
         Col("ratio_aot", "AoT-ADMM / AoT, time"), Col("flops_over_aot", "… FLOPs", ".2f"),
         Col("target_cell_aot", "… target: met in"),
         Col("ratio_crate", "AoT-ADMM / CRATE, time"), Col("flops_over_crate", "… FLOPs", ".2f"),
         Col("target_cell_crate", "… target: met in")],
        caption=f"One LeJEPA step per family, {len(runs)} recordings of benchmarks/bench_families.py",
        notes=[f"Commit {', '.join(commits)}; {'; '.join(machines)}.",
               "Step (s): the median over recordings of each recording's median step time. A time ratio: the "
               "median over recordings of each recording's median per-repeat ratio, with the smallest and "
               "largest of those in brackets. FLOPs: the encoders' forward FLOPs of the step (matrix products "
               "and attention).",
               "Targets: the ratios benchmarks/bench_families.py judges each recording against (set by this "
               "project, not the paper)."],
        name=name,
    )


#: The CPU kernels' before/after benchmarks (``families_w192_<change>_<side>_<k>.json``: ``bench_families.py`` at
#: width 192, eager mode, each change's two sides interleaved recording by recording on an idle machine), in the
#: order they were made: the change's file name part and what it changed. The side is ``before`` (the first
#: change named it ``eager``) or ``after`` (the first three changes named it ``compiled``).
KERNEL_CHANGES = {
    "kernel": "AoT-ADMM's state update: forward and per-token backward compiled",
    "sigreg": "SIGReg's characteristic function compiled",
    "backward": "the state update's whole backward compiled",
    "tokensums": "the backward's sums over tokens after its kernel; the last layer's backward compiled",
    "cpp": "the state update as a C++ extension, one loop over the tokens each way",
}
_KERNEL_FILE = re.compile(
    r"families_w192_(?P<change>[a-z]+)_(?P<side>eager|before|compiled|after)_(?P<k>\d+)\.json")


def kernel_history_rows(folder) -> list[dict[str, Any]]:
    """One row per recording of :data:`KERNEL_CHANGES` under ``folder`` (``results/benchmarks``), change by
    change, before then after: its commit, the families' median step times (ms) and AoT-ADMM's step over
    CRATE's and AoT's (the median of the per-repeat ratios), and the target against CRATE. A file whose change
    is not in :data:`KERNEL_CHANGES` is refused by name (the table would not say what it measured)."""
    import json
    from pathlib import Path

    rows = []
    for f in sorted(Path(folder).glob("families_w192_*.json")):
        m = _KERNEL_FILE.fullmatch(f.name)
        if m is None:
            continue
        if m["change"] not in KERNEL_CHANGES:
            raise ValueError(f"{f}: change {m['change']!r} is not in aot_lib.book.benchmarks.KERNEL_CHANGES: add "
                             "what it changed there")
        rows.append({"change": KERNEL_CHANGES[m["change"]], "side": "after" if m["side"] in ("compiled", "after") else "before",
                     **_w192_eager_row(json.loads(f.read_text()), int(m["k"]))})
    order = list(KERNEL_CHANGES.values())
    return sorted(rows, key=lambda r: (order.index(r["change"]), r["side"] == "after", r["recording"]))


def step_ratio_cols() -> list[Col]:
    """The columns of a :func:`kernel_history_rows` or :func:`cpu_kind_rows` row that one recording measured:
    AoT-ADMM's step over CRATE's and AoT's, then each family's median step (ms)."""
    return [Col("over_crate", "AoT-ADMM / CRATE", ".3f"), Col("over_aot", "AoT-ADMM / AoT", ".3f"),
            *[Col(f"{fam}_ms", f"{name} (ms)", ".0f") for fam, name in FAMILY_NAMES.items()]]


def _w192_eager_row(rec: Mapping, recording: int) -> dict[str, Any]:
    # one bench_families.py recording's width-192 eager entry: commit, machine, step times (ms), ratios, target
    (entry,) = [e for e in rec["runs"] if e["setting"]["name"] == "w192" and e["mode"] == "eager"]
    return {"recording": recording, "commit": str(rec.get("commit", ""))[:7],
            "machine": _machine(rec.get("hardware") or {}), "cpu": cpu_label(rec.get("hardware")),
            "repeats": rec.get("repeats"),
            # a family the recording did not time (--families) stays empty
            **{f"{fam}_ms": 1e3 * entry["results"][fam]["step"]["median_s"] if fam in entry["results"]
               else None for fam in FAMILY_NAMES},
            **{f"over_{o}": entry[f"ratio_aot_admm_over_{o}"]["median"]
               if f"ratio_aot_admm_over_{o}" in entry else None for o in ("crate", "aot")},
            "target_crate": family_targets(entry).get("crate")}


_CPU_KIND_FILE = re.compile(r"cpu_kinds_w192_(?P<k>\d+)\.json")


def cpu_kind_rows(folder) -> list[dict[str, Any]]:
    """The eager width-192 step on each kind of CPU measured (under ``folder``, ``results/benchmarks``): the last
    kernel change's ``after`` recordings (the machine it was made on) and the ``cpu_kinds_w192_<k>.json``
    recordings (``bench_families.py --settings w192 --modes eager`` on another machine, idle), one row each, by
    machine then recording; the keys of :func:`kernel_history_rows` less ``change`` and ``side``, plus ``cpu`` (the
    CPU model and instruction set alone)."""
    import json
    from pathlib import Path

    last = list(KERNEL_CHANGES.values())[-1]
    rows = [{k: v for k, v in r.items() if k not in ("change", "side")}
            for r in kernel_history_rows(folder) if r["change"] == last and r["side"] == "after"]
    for f in sorted(Path(folder).glob("cpu_kinds_w192_*.json")):
        m = _CPU_KIND_FILE.fullmatch(f.name)
        if m is None:
            raise ValueError(f"{f}: name it cpu_kinds_w192_<k>.json, k the recording's number")
        rows.append(_w192_eager_row(json.loads(f.read_text()), int(m["k"])))
    return sorted(rows, key=lambda r: (r["machine"], r["recording"]))


def _machine(hw: Mapping) -> str:
    parts = [hw.get("machine"), cpu_label(hw), hw.get("cpu_count") and f"{hw['cpu_count']} CPU cores",
             hw.get("torch") and f"PyTorch {hw['torch']}"]
    return ", ".join(str(p) for p in parts if p)


def trainer_records_table(records: Sequence[Mapping], name: str | None = None) -> Table:
    """``bench_trainer.py`` recordings, one row each, oldest first: commit, date, config and its overrides,
    step time, throughput, and the share of the CPU's measured matrix-product ceiling the step reaches."""
    rows = []
    for b in sorted(records, key=lambda b: b.get("date", "")):
        rows.append(dict(commit=str(b.get("commit", "unknown"))[:8], date=str(b.get("date", ""))[:10],
                         config=b["config"], overrides=" ".join(b.get("overrides") or []) or "none",
                         step=b["step_s"], images=b["images_per_s"], gflops=b["achieved_gflop_per_s"],
                         ceiling=b["matmul_ceiling_gflop_per_s"], share=100 * b["share_of_ceiling"]))
    return Table(
        rows,
        [Col("commit"), Col("date"), Col("config"), Col("overrides"),
         Col("step", "step (s)", ".2f"), Col("images", "images/s", ".0f"),
         Col("gflops", "achieved GFLOP/s", ".1f"), Col("ceiling", "matmul ceiling (GFLOP/s)", ".0f"),
         Col("share", "share of ceiling (%)", ".0f")],
        caption="The trainer's step on a CPU config, recorded by benchmarks/bench_trainer.py",
        notes=["Step (s): the wall time of the measured steps over their number, under the profiler (a few % "
               "slower than without); images/s: the batch over that. Achieved GFLOP/s: the step's counted FLOPs "
               "(forward and backward, every view) per second; the ceiling: the fastest of several timings of a "
               "large fp32 matrix product on the same machine."],
        name=name,
    )


def trainer_phase_table(b: Mapping, name: str | None = None) -> Table:
    """Where one ``bench_trainer.py`` step goes: seconds per step and share, phase by phase (the trainer's
    profiler scopes)."""
    secs, share = b["profile_s_per_step"], b["profile_share"]
    return Table(
        [dict(phase=k, s=secs[k], share=100 * share[k]) for k in secs],
        [Col("phase"), Col("s", "s per step", ".3f"), Col("share", "share (%)", ".1f")],
        caption=f"Where a step of {b['config']} goes (commit {str(b.get('commit', 'unknown'))[:8]})",
        notes=[b["note"]] if b.get("note") else [],
        name=name,
    )


def plot_family_ratios(runs: Sequence[Mapping]):
    """Two panels (AoT-ADMM / AoT and AoT-ADMM / CRATE), one group of bars per (setting, mode): the measured
    step-time ratio (pooled as :func:`family_speed_rows` pools it; each recording's ratio as a dot), the
    encoders' FLOP ratio, the recorded target, and 1 (equal cost). Every element is named in the legend."""
    import matplotlib.pyplot as plt
    import numpy as np

    rows = family_speed_rows(runs)
    per_rec: dict[tuple[str, str], dict[str, list[float]]] = {}
    for rec in runs:
        for e in rec["runs"]:
            d = per_rec.setdefault((setting_label(e["setting"]), e["mode"]), {"aot": [], "crate": []})
            for other in d:
                d[other].append(e[f"ratio_aot_admm_over_{other}"]["median"])
    fig, axes = plt.subplots(1, 2, figsize=(FIGURE_WIDTH_IN, 4.6))
    x = np.arange(len(rows))
    labels = [f"{r['setting'].replace(', batch', chr(10) + 'batch')}, {r['mode']}" for r in rows]
    for ax, other in zip(axes, ("aot", "crate")):
        ax.bar(x - 0.18, [r[f"over_{other}"] for r in rows], 0.36, color="tab:blue",
               label=f"step time ratio (median of {len(runs)} recordings)")
        for xi, r in zip(x, rows):
            dots = per_rec[r["setting"], r["mode"]][other]
            ax.plot([xi - 0.18] * len(dots), dots, "k.", ms=4, label="one recording" if xi == 0 else None)
        ax.bar(x + 0.18, [r[f"flops_over_{other}"] for r in rows], 0.36, color="tab:gray",
               label="encoder FLOP ratio")
        for xi, r in zip(x, rows):
            t = r.get(f"target_{other}")
            if t is not None:
                ax.plot([xi - 0.4, xi + 0.4], [t, t], "r--", lw=1,
                        label="target (bench_families.py)" if xi == 0 else None)
        ax.axhline(1.0, color="k", lw=0.6, label="1: equal cost")
        ax.set_xticks(x, labels, fontsize=8, rotation=30, ha="right")
        ax.set_title(f"AoT-ADMM / {FAMILY_NAMES[other]}", fontsize=10)
        ax.set_ylabel("ratio (lower: AoT-ADMM cheaper)")
        ax.set_ylim(0, 1.15 * max(1.0, *(max(d[other]) for d in per_rec.values()),
                                  *(r.get(f"target_{other}") or 0 for r in rows)))
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


# ----------------------------------------------------------------------------- benchmarks/bench_cuda.py on a GPU

_WROTE = re.compile(r"-> (\S+)")


def device_call_commit(calls: Mapping, written: str) -> str:
    """The commit whose code wrote ``written`` (a file, or a folder ending in ``/``) on a device machine, from the
    record of the calls (``results/benchmarks/cuda_device_calls.json``: each call's ``source_commit`` and what it
    ``ran``, each output named as ``-> NAME``). The outputs' own ``commit`` may not say it: the device's copy of
    ``.git`` can stand at another commit than its files."""
    found = [c["source_commit"] for c in calls["calls"]
             if any(written in _WROTE.findall(r) for r in c["ran"])]
    if len(found) != 1:
        raise ValueError(f"{written}: {len(found)} device calls say they wrote it; the record of the calls must "
                         "name one")
    return found[0]


def _gpu_label(b: Mapping) -> str:
    hw = b.get("hardware", {})
    return f"{b.get('gpu') or 'no GPU'}, PyTorch {hw.get('torch', '?')}"


def cuda_paper_rows(paper: Mapping, estimates: Mapping) -> list[dict[str, Any]]:
    """``bench_cuda.py --part paper`` beside ``estimates_a100.json``: per family, the Base step's median and
    range, and the hours the estimate's schedule (its ``epochs`` of ``images // batch`` steps, as the trainer
    counts them) takes at the median step, over the estimate's A100 hours. Extrapolated from the step alone: data
    loading and the trainer's logging are not in it."""
    est_rows = {r["config"]: r for r in estimates["rows"]}
    rows = []
    for fam, r in paper["results"].items():
        est = est_rows.get(r["config"])
        hours = est["epochs"] * (est["images"] // est["batch"]) * r["step_s_median"] / 3600 if est else None
        rows.append(dict(model=f"{FAMILY_NAMES.get(fam, fam)}-Base", config=r["config"], batch=r["batch"],
                         step_ms=1e3 * r["step_s_median"], fastest_ms=1e3 * r["step_s_min"],
                         slowest_ms=1e3 * r["step_s_max"], timed=r["timed_steps"], hours=hours,
                         estimate=est and est["hours_1xA100"], ratio=hours / est["hours_1xA100"] if est else None,
                         memory_gb=r["peak_gpu_memory_gb"]))
    return rows


def cuda_paper_table(paper: Mapping, estimates: Mapping, name: str | None = None, commit: str | None = None) -> Table:
    rows = cuda_paper_rows(paper, estimates)
    return Table(
        rows,
        [Col("model"), Col("step_ms", "median (ms)", ".1f"), Col("fastest_ms", "fastest (ms)", ".1f"),
         Col("slowest_ms", "slowest (ms)", ".1f"), Col("hours", "800 ep. (h)", ".2f"),
         Col("estimate", "A100 est. (h)", ".2f"), Col("ratio", "× est.", ".1f"),
         Col("memory_gb", "memory (GB)", ".1f")],
        caption=f"The paper's Base configs' step on one GPU ({_gpu_label(paper)}), batch "
                + ", ".join(sorted({str(r["batch"]) for r in rows})),
        notes=[f"benchmarks/bench_cuda.py --part paper, commit {(commit or paper.get('source_commit', '?'))[:8]}, "
               f"{str(paper.get('date', ''))[:10]}: {', '.join(sorted({str(r['timed']) for r in rows}))} timed "
               "LeJEPA steps per model (views, encoder, projector, loss, backward, AdamW) after untimed ones that "
               "compile, on random images; configs under configs/paper/: "
               + ", ".join(f"{r['config']}.yaml" for r in rows) + ". 800 ep.: the median step times the "
               "estimate's schedule (data loading and logging not in it), beside the A100 estimate of "
               "estimates_a100.json and their ratio; an A100 is a slower GPU than an H100. Memory: peak GPU memory."],
        name=name,
    )


def cuda_trainer_rows(trainer: Mapping, recipe_steps: int, batch: int) -> list[dict[str, Any]]:
    """``bench_cuda.py --part trainer``: the trainer's own images/s on the recipe config, per variant, and the
    minutes the recipe's ``recipe_steps`` steps of ``batch`` images take at that rate."""
    labels = {"fp32_eager": "float32, eager layers", "default": "the GPU default: bf16-mixed, compiled layers"}
    return [dict(variant=labels.get(k, k), precision=v["precision"], steps=v["steps"],
                 images_per_s=v["images_per_s_after_step_20"],
                 recipe_minutes=recipe_steps * batch / v["images_per_s_after_step_20"] / 60,
                 final_loss=v["final_loss"]) for k, v in trainer["results"].items()]


def cuda_trainer_table(trainer: Mapping, recipe_steps: int, batch: int, name: str | None = None,
                       commit: str | None = None) -> Table:
    return Table(
        cuda_trainer_rows(trainer, recipe_steps, batch),
        [Col("variant"), Col("precision"), Col("steps"), Col("images_per_s", "images/s after step 20", ".0f"),
         Col("recipe_minutes", f"the recipe's {recipe_steps:,} steps at that rate (min)", ".1f"),
         Col("final_loss", "loss at the last step", ".3f")],
        caption=f"The trainer on the 30-minute recipe's config, on one GPU ({_gpu_label(trainer)})",
        notes=[f"benchmarks/bench_cuda.py --part trainer, commit {(commit or trainer.get('source_commit', '?'))[:8]}: "
               f"aot_lib.training.pretrain on {trainer['config']} with optim.max_steps (so a shorter schedule than "
               "the recipe's) and the monitors off; images/s is the trainer's own log."],
        name=name,
    )


def cuda_check_summary(agreement: Mapping, trainer: Mapping, paper: Mapping, commit: str) -> dict[str, Any]:
    """One device check's headline numbers (``commit``: the commit or commits that ran it, as the table shows
    them), from ``bench_cuda.py``'s three parts: the largest float32 error of
    the families' features against float64, the range of their bf16 errors (eager and compiled), the trainer's
    images/s per variant, and each Base model's median and fastest step (ms)."""
    errs = agreement["relative_error_vs_cpu_float64"]
    fams = [k for k in errs if not k.startswith("lejepa")]
    bf16 = [errs[k][v] for k in fams for v in ("bf16", "bf16_compiled")]
    steps = {f"{FAMILY_NAMES.get(f, f)}-Base": (1e3 * r["step_s_median"], 1e3 * r["step_s_min"], 1e3 * r["step_s_max"])
             for f, r in paper["results"].items()}
    return dict(commit=commit, date=str(paper["date"])[:10], gpu=_gpu_label(paper), errors=errs, fp32=max(errs[k]["fp32"] for k in fams),
                bf16=(min(bf16), max(bf16)),
                images_per_s={k: v["images_per_s_after_step_20"] for k, v in trainer["results"].items()},
                step_ms=steps, batch=sorted({r["batch"] for r in paper["results"].values()}),
                timed=sorted({r["timed_steps"] for r in paper["results"].values()}))


def cuda_checks_table(checks: Sequence[tuple[str, Mapping]], name: str | None = None) -> Table:
    """The device checks side by side (a column each, labelled as given), one measurement a row."""
    def row(what: str, value) -> dict[str, Any]:
        return {"what": what, **{f"c{i}": value(s) for i, (_, s) in enumerate(checks)}}
    variants = {"fp32_eager": "float32, eager", "default": "bf16-mixed, compiled"}
    rows = [row("commit", lambda s: s["commit"]), row("date", lambda s: s["date"]),
            row("features, float32: largest error", lambda s: f"{s['fp32']:.1e}"),
            row("features, bf16: errors", lambda s: f"{s['bf16'][0]:.1e}–{s['bf16'][1]:.1e}")]
    rows += [row(f"trainer, {label} (images/s)", lambda s, k=k: f"{s['images_per_s'][k]:,.0f}")
             for k, label in variants.items()]
    rows += [row(f"{model} step, median (fastest) (ms)",
                 lambda s, m=model: f"{s['step_ms'][m][0]:.1f} ({s['step_ms'][m][1]:.1f})")
             for model in checks[0][1]["step_ms"]]
    return Table(rows, [Col("what", "measurement"), *(Col(f"c{i}", label) for i, (label, _) in enumerate(checks))],
                 caption="The device checks side by side", name=name,
                 notes=["benchmarks/bench_cuda.py's three parts at each check's commit, on "
                        + " and ".join(dict.fromkeys(s["gpu"] for _, s in checks)) + ": the "
                        "errors are relative, against the same encoder in float64 on the CPU; the trainer's images/s "
                        "are its own log after step 20; the steps are the paper's Base configs at batch "
                        + " or ".join(dict.fromkeys(str(b) for _, s in checks for b in s["batch"])) + ", "
                        + " or ".join(dict.fromkeys(str(t) for _, s in checks for t in s["timed"]))
                        + " timed steps a model."])


_PYTEST_SUMMARY = re.compile(r"^=+ (.*?) in ([0-9.]+)s\b.*=+$", re.M)


def pytest_log_summary(log: str) -> dict[str, Any]:
    """What a ``pytest -rf`` log says at its end: the counts of its last summary line (``passed``, ``failed``,
    ``skipped``, ``errors``; those it does not name are 0), its seconds, and the failed tests' ids from the short
    summary (``FAILED tests/x.py::name - message``: the id only). Refuses a log without a summary line (a run cut off
    before pytest wrote one is no result)."""
    summaries = _PYTEST_SUMMARY.findall(log)
    if not summaries:
        raise ValueError("no pytest summary line in this log (cut off before the end?); run pytest to its end")
    text, seconds = summaries[-1]
    counts = {k: 0 for k in ("passed", "failed", "skipped", "errors")}
    for n, kind in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", text):
        counts["errors" if kind.startswith("error") else kind] = int(n)
    failed = re.findall(r"^FAILED (\S+)", log, re.M)
    return {**counts, "seconds": float(seconds), "failed_tests": failed}


def suite_runs_table(runs: Sequence[tuple[str, Mapping]], name: str | None = None) -> Table:
    """Whole-suite runs side by side (``(label, pytest_log_summary)``, a column each): the counts, then each test
    file with a failure in any run and how many of its tests failed in each."""
    files = sorted({t.split("::")[0] for _, r in runs for t in r["failed_tests"]})
    rows = [{"what": k, **{f"c{i}": f"{r[k]:,}" for i, (_, r) in enumerate(runs)}} for k in ("passed", "failed", "skipped")]
    rows += [{"what": f"failed in {f}",
              **{f"c{i}": str(sum(t.split("::")[0] == f for t in r["failed_tests"])) for i, (_, r) in enumerate(runs)}}
             for f in files]
    return Table(rows, [Col("what", "tests"), *(Col(f"c{i}", label) for i, (label, _) in enumerate(runs))],
                 caption="The test suite on a machine with a GPU", name=name,
                 notes=["Counted from each run's pytest log (its last summary line and its FAILED lines)."])


def pretraining_flops(cfg: Mapping) -> dict:
    """What a LeJEPA pretraining run of ``cfg`` costs in FLOPs, so a reader on another machine can scale its
    minutes: ``forward_per_image`` (encoder on every view, projector and loss, counted by
    ``torch.utils.flop_counter`` over one whole batch of the config's size, per image; a multiply-add is 2 FLOPs,
    and only matrix products and attention count, as in :func:`aot_lib.count_flops`), ``steps`` (the config's
    epochs over its training images) and ``total``: 3 x forward per image x images seen, the usual estimate of a
    training step as a forward and a backward twice its cost."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from ..data.augment import BatchedMultiCrop, MultiCropConfig
    from ..models.flops import _CPU_ATTENTION
    from ..training.builders import normalization_for
    from ..training.pretrain import build_lejepa_model
    from ..evidence import TRAIN_IMAGES

    batch = cfg["optim"]["batch_size"]
    model = build_lejepa_model(dict(cfg))
    aug = BatchedMultiCrop(MultiCropConfig.from_config(cfg["views"], *normalization_for(cfg)))
    size = cfg["data"].get("image_size") or 32
    images = torch.zeros(batch, 3, size, size, dtype=torch.uint8)
    with torch.no_grad(), FlopCounterMode(display=False, custom_mapping=_CPU_ATTENTION) as counter:
        model(aug(images, torch.Generator().manual_seed(0)))
    per_image = counter.get_total_flops() / batch
    train_images = TRAIN_IMAGES[cfg["data"]["name"]]
    steps = cfg["optim"]["epochs"] * (train_images // batch)
    return {"forward_per_image": per_image, "steps": steps, "total": 3 * per_image * steps * batch}
