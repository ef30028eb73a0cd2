"""aot_lib.book.benchmarks: the recorded benchmarks as tables with units and a figure whose every line is named.

Inputs are hand-made recordings whose pooled values are worked out here by hand; the committed recordings are
checked for what the book must never print again (a dict or list repr in a table cell)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import raises_exactly, require

from aot_lib.book.benchmarks import (cuda_paper_rows, current, device_call_commit, family_speed_rows, family_speed_table,
                                     family_targets, plot_family_ratios, setting_label, trainer_phase_table,
                                     trainer_records_table, pytest_log_summary, suite_runs_table)

ROOT = Path(__file__).resolve().parent.parent
SMALL = {"overrides": {"embed_dim": 32, "depth": 2, "num_heads": 2}, "batch": 8, "name": "smoke"}


def entry(aot_admm: float, crate: float, aot: float, over_aot: float, over_crate: float) -> dict:
    """One (setting, mode) entry as bench_families.py writes it, with its targets of 1.2 (AoT) and 0.5 (CRATE)."""
    step = {"aot_admm": aot_admm, "crate": crate, "aot": aot}
    return {"setting": SMALL, "mode": "eager",
            "results": {f: {"step": {"median_s": s}} for f, s in step.items()},
            "ratio_aot_admm_over_aot": {"median": over_aot},
            "ratio_aot_admm_over_crate": {"median": over_crate},
            "flop_ratio_aot_admm_over_aot": {"encoder_gflops_per_step_forward": 1.0},
            "flop_ratio_aot_admm_over_crate": {"encoder_gflops_per_step_forward": 0.41},
            "targets": {"aot_admm/aot <= 1.2": over_aot <= 1.2, "aot_admm/crate <= 0.5": over_crate <= 0.5}}


# three recordings: AoT-ADMM steps 1.0, 1.2, 1.1 s (median 1.1); ratios over AoT 1.25, 1.20, 1.10 (median 1.20,
# two of three within the 1.2 target); over CRATE 0.50, 0.55, 0.45 (median 0.50, two of three within 0.5)
RECORDINGS = [{"commit": "a" * 40, "hardware": {"machine": "x86_64", "cpu_count": 2, "torch": "2.15"},
               "runs": [entry(*v)]}
              for v in [(1.0, 2.0, 0.8, 1.25, 0.50), (1.2, 2.2, 1.0, 1.20, 0.55), (1.1, 2.4, 0.9, 1.10, 0.45)]]


def test_targets_are_read_from_the_recorded_keys():
    assert family_targets({"targets": {"aot_admm/aot <= 1.3": True, "aot_admm/crate <= 0.7": False}}) == \
        {"aot": 1.3, "crate": 0.7}
    assert family_targets({}) == {}
    with raises_exactly(ValueError, "unreadable target 'speed <= 2': expected 'aot_admm/<family> <= <ratio>'"):
        family_targets({"targets": {"speed <= 2": True}})


def test_setting_label_reads_width_and_depth_from_the_model_it_builds():
    assert setting_label(SMALL) == "width 32, depth 2, batch 8"
    # no overrides: the paper's Tiny (d 384, depth 12; Table 1)
    assert setting_label({"overrides": {}, "batch": 64}) == "width 384, depth 12, batch 64"


def test_family_rows_pool_the_recordings_by_median():
    (row,) = family_speed_rows(RECORDINGS)
    assert row["setting"] == "width 32, depth 2, batch 8" and row["mode"] == "eager" and row["recordings"] == 3
    assert (row["aot_admm_s"], row["crate_s"], row["aot_s"]) == (1.1, 2.2, 0.9)
    assert row["over_aot"] == 1.20 and row["over_aot_range"] == (1.10, 1.25)
    assert row["over_crate"] == 0.50 and row["over_crate_range"] == (0.45, 0.55)
    assert (row["flops_over_aot"], row["flops_over_crate"]) == (1.0, 0.41)
    assert (row["target_aot"], row["met_aot"], row["target_crate"], row["met_crate"]) == (1.2, 2, 0.5, 2)


def test_family_table_cells_are_numbers_with_units():
    table = family_speed_table(RECORDINGS)
    headers = [table.header(c) for c in table.columns]
    assert headers == ["setting", "mode", "AoT-ADMM step (s)", "CRATE step (s)", "AoT step (s)",
                       "AoT-ADMM / AoT, time", "… FLOPs", "… target: met in",
                       "AoT-ADMM / CRATE, time", "… FLOPs", "… target: met in"]
    assert table.text_cells() == [["width 32, depth 2, batch 8", "eager", "1.10", "2.20", "0.90",
                                   "1.20 (1.10–1.25)", "1.00", "≤ 1.20: 2 of 3",
                                   "0.50 (0.45–0.55)", "0.41", "≤ 0.50: 2 of 3"]]
    assert table.caption == "One LeJEPA step per family, 3 recordings of benchmarks/bench_families.py"
    assert table.notes[0] == "Commit aaaaaaaa; x86_64, 2 CPU cores, PyTorch 2.15."


TRAINER = {"commit": "b" * 40, "date": "2026-11-22T18:29:17+0000", "config": "configs/cpu/x.yaml", "overrides": [],
           "step_s": 0.5, "images_per_s": 512.0, "achieved_gflop_per_s": 60.0, "matmul_ceiling_gflop_per_s": 180.0,
           "share_of_ceiling": 1 / 3, "profile_s_per_step": {"forward": 0.2, "backward": 0.3},
           "profile_share": {"forward": 0.4, "backward": 0.6}, "note": "under the profiler"}


def test_trainer_tables():
    older = {**TRAINER, "commit": "c" * 40, "date": "2026-11-21T00:00:00+0000", "overrides": ["model.compile=false"],
             "step_s": 1.0, "images_per_s": 256.0}
    records = trainer_records_table([TRAINER, older])
    assert records.text_cells() == [  # oldest first
        ["cccccccc", "2026-11-21", "configs/cpu/x.yaml", "model.compile=false", "1.00", "256", "60.0", "180", "33"],
        ["bbbbbbbb", "2026-11-22", "configs/cpu/x.yaml", "none", "0.50", "512", "60.0", "180", "33"]]
    phases = trainer_phase_table(TRAINER)
    assert [phases.header(c) for c in phases.columns] == ["phase", "s per step", "share (%)"]
    assert phases.text_cells() == [["forward", "0.200", "40.0"], ["backward", "0.300", "60.0"]]
    assert phases.caption == "Where a step of configs/cpu/x.yaml goes (commit bbbbbbbb)"
    assert phases.notes == ["under the profiler"]


def test_superseded_recordings_are_left_out():
    assert current([{"a": 1}, {"a": 2, "superseded": "re-recorded"}, {"a": 3, "superseded": ""}]) == [{"a": 1},
                                                                                                     {"a": 3, "superseded": ""}]


def test_the_committed_recordings_render_without_a_dict_or_list_in_any_cell():
    """What chapter 5 shows from results/benchmarks/: every cell a number or words (the book once printed whole
    dicts of estimates in table cells)."""
    folder = ROOT / "results" / "benchmarks"
    families = current([json.loads(f.read_text()) for f in sorted(folder.glob("families_run*.json"))])
    trainer = current([json.loads(f.read_text()) for f in sorted(folder.glob("trainer_*.json"))])
    assert families and trainer, "chapter 5 shows these; they must stay recorded"
    tables = [family_speed_table(families), trainer_records_table(trainer)] + [trainer_phase_table(b) for b in trainer]
    cells = [cell for t in tables for row in t.text_cells() for cell in row]
    assert cells and not [c for c in cells if any(ch in c for ch in "{}[]'")]


def test_every_plotted_element_is_named_in_the_legend():
    require("matplotlib", "matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plot_family_ratios(RECORDINGS)
    try:
        for ax, pooled, flops, target, each in zip(fig.axes, (1.20, 0.50), (1.0, 0.41), (1.2, 0.5),
                                                   ([1.25, 1.20, 1.10], [0.50, 0.55, 0.45])):
            _, labels = ax.get_legend_handles_labels()
            assert sorted(labels) == sorted(["step time ratio (median of 3 recordings)", "one recording",
                                             "encoder FLOP ratio", "target (bench_families.py)", "1: equal cost"])
            assert [p.get_height() for p in ax.patches] == [pooled, flops]  # blue bar, grey bar
            lines = {line.get_label(): list(line.get_ydata()) for line in ax.lines}
            assert lines["one recording"] == each
            assert lines["target (bench_families.py)"] == [target, target]
            assert lines["1: equal cost"] == [1.0, 1.0]
    finally:
        plt.close(fig)


def test_kernel_history_pairs_each_change_before_and_after(tmp_path):
    """aot_lib.book.benchmarks.kernel_history_rows on made-up recordings: changes in KERNEL_CHANGES's order,
    before then after, a family a recording did not time left empty; an unknown change refused by name."""
    import json

    from aot_lib.book.benchmarks import KERNEL_CHANGES, kernel_history_rows

    def record(name, commit, steps, over_crate):
        results = {f: {"step": {"median_s": s}} for f, s in steps.items()}
        entry = {"setting": {"name": "w192"}, "mode": "eager", "results": results,
                 "ratio_aot_admm_over_crate": {"median": over_crate}, "targets": {"aot_admm/crate <= 0.7": False}}
        if "aot" in steps:
            entry["ratio_aot_admm_over_aot"] = {"median": steps["aot_admm"] / steps["aot"]}
        (tmp_path / name).write_text(json.dumps({"commit": commit, "repeats": 7, "runs": [entry],
                                                 "hardware": {"machine": "x86_64", "cpu_count": 2}}))

    record("families_w192_sigreg_compiled_1.json", "bbbbbbb1", {"aot_admm": 0.5, "crate": 0.7, "aot": 0.4}, 0.72)
    record("families_w192_sigreg_before_1.json", "aaaaaaa1", {"aot_admm": 0.6, "crate": 0.8, "aot": 0.5}, 0.75)
    record("families_w192_kernel_eager_1.json", "ccccccc1", {"aot_admm": 0.62, "crate": 0.77}, 0.80)
    record("families_run1.json", "ddddddd1", {"aot_admm": 1.0, "crate": 1.0}, 1.0)  # not a kernel change
    record("families_w192_cpp_after_1.json", "fffffff1", {"aot_admm": 0.5, "crate": 0.75}, 0.67)  # the new name
    rows = kernel_history_rows(tmp_path)
    assert [(r["change"], r["side"], r["commit"]) for r in rows] == [
        (KERNEL_CHANGES["kernel"], "before", "ccccccc"), (KERNEL_CHANGES["sigreg"], "before", "aaaaaaa"),
        (KERNEL_CHANGES["sigreg"], "after", "bbbbbbb"), (KERNEL_CHANGES["cpp"], "after", "fffffff")]
    assert rows[0]["aot_ms"] is None and rows[0]["over_aot"] is None
    assert rows[2]["aot_admm_ms"] == pytest.approx(500.0) and rows[2]["over_aot"] == pytest.approx(1.25)
    assert {r["target_crate"] for r in rows} == {0.7} and {r["repeats"] for r in rows} == {7}
    record("families_w192_fusion_before_1.json", "eeeeeee1", {"aot_admm": 0.6, "crate": 0.8}, 0.75)
    with pytest.raises(ValueError, match=r"families_w192_fusion_before_1.json: change 'fusion' is not in "
                                         r"aot_lib.book.benchmarks.KERNEL_CHANGES: add what it changed there$"):
        kernel_history_rows(tmp_path)


def test_cpu_kind_rows_put_the_last_kernel_change_beside_the_other_machines(tmp_path):
    """aot_lib.book.benchmarks.cpu_kind_rows on made-up recordings: the last change's after-recordings (not its
    before ones, not an earlier change's) and every cpu_kinds_w192_<k>.json, sorted by machine then recording, the
    CPU model and instruction set named; a cpu_kinds file named otherwise is refused by name."""
    from aot_lib.book.benchmarks import KERNEL_CHANGES, cpu_kind_rows

    def record(name, commit, cpu, over_crate):
        entry = {"setting": {"name": "w192"}, "mode": "eager", "targets": {"aot_admm/crate <= 0.7": over_crate <= 0.7},
                 "results": {"aot_admm": {"step": {"median_s": 0.5}}, "crate": {"step": {"median_s": 0.5 / over_crate}}},
                 "ratio_aot_admm_over_crate": {"median": over_crate}}
        hw = {"machine": "x86_64", "cpu_model": cpu, "cpu_isa": "AVX2", "cpu_count": 2}
        (tmp_path / name).write_text(json.dumps({"commit": commit, "repeats": 7, "runs": [entry], "hardware": hw}))

    last = list(KERNEL_CHANGES)[-1]
    record(f"families_w192_{last}_before_1.json", "aaaaaaa1", "Xeon", 0.8)
    record(f"families_w192_{last}_after_2.json", "bbbbbbb2", "Xeon", 0.66)
    record(f"families_w192_{last}_after_1.json", "bbbbbbb1", "Xeon", 0.68)
    record(f"families_w192_{list(KERNEL_CHANGES)[0]}_after_1.json", "ccccccc1", "Xeon", 0.9)
    record("cpu_kinds_w192_1.json", "ddddddd1", "EPYC", 0.61)
    rows = cpu_kind_rows(tmp_path)
    assert [(r["commit"], r["recording"], r["over_crate"]) for r in rows] == [
        ("ddddddd", 1, 0.61), ("bbbbbbb", 1, 0.68), ("bbbbbbb", 2, 0.66)]
    assert (rows[0]["machine"], rows[0]["cpu"]) == ("x86_64, EPYC AVX2, 2 CPU cores", "EPYC AVX2")
    assert rows[0]["crate_ms"] == pytest.approx(500 / 0.61)
    assert {r["target_crate"] for r in rows} == {0.7} and "change" not in rows[0]
    record("cpu_kinds_w192_amd.json", "eeeeeee1", "EPYC", 0.6)
    with raises_exactly(ValueError, f"{tmp_path / 'cpu_kinds_w192_amd.json'}: name it cpu_kinds_w192_<k>.json, k the "
                                    "recording's number"):
        cpu_kind_rows(tmp_path)


def test_cuda_paper_rows_extrapolate_the_median_step_to_the_estimates_schedule():
    """Hand-made: a 0.1 s median step on the estimate's schedule of 800 epochs of 50,000 // 256 = 195 steps (the
    trainer's floor) is 800 * 195 * 0.1 / 3600 = 4.333... h, 4.333... / 0.5 = 8.666... times a 0.5 h estimate; a
    config with no estimate gets no hours and no ratio, rather than a made-up one."""
    paper = {"results": {
        "aot_admm": {"config": "table1/aot_admm_base_cifar10", "batch": 256, "step_s_median": 0.1, "step_s_min": 0.08,
                     "step_s_max": 0.3, "timed_steps": 10, "peak_gpu_memory_gb": 3.0},
        "crate": {"config": "table1/crate_base_cifar10", "batch": 256, "step_s_median": 0.2, "step_s_min": 0.2,
                  "step_s_max": 0.2, "timed_steps": 10, "peak_gpu_memory_gb": 3.0}}}
    estimates = {"rows": [{"config": "table1/aot_admm_base_cifar10", "epochs": 800, "images": 50000, "batch": 256,
                           "hours_1xA100": 0.5}]}
    admm, crate = cuda_paper_rows(paper, estimates)
    assert (admm["model"], crate["model"]) == ("AoT-ADMM-Base", "CRATE-Base")
    assert admm["hours"] == pytest.approx(156000 * 0.1 / 3600, rel=1e-12)  # float64 rounding of one product
    assert admm["ratio"] == pytest.approx(8.6666666667, rel=1e-9)  # the literal is rounded at its 11th digit
    assert (admm["step_ms"], admm["fastest_ms"], admm["slowest_ms"]) == pytest.approx((100, 80, 300), rel=1e-12)
    assert (crate["hours"], crate["estimate"], crate["ratio"]) == (None, None, None)


def test_device_call_commit_names_the_one_call_that_wrote_an_output():
    """Hand-made record of calls: an output is matched by its whole name after '->', so cuda_paper.json does not
    match cuda_paper.json.bak, and a folder by its name with the slash; none or two writers are refused."""
    calls = {"calls": [{"source_commit": "a" * 40, "ran": ["bench --part paper -> cuda_paper.json.bak",
                                                             "aot pretrain -> cell/ (run.json, probe.json)"]},
                       {"source_commit": "b" * 40, "ran": ["bench --part paper -> cuda_paper.json"]},
                       {"source_commit": "c" * 40, "ran": ["again -> twice.json"]},
                       {"source_commit": "d" * 40, "ran": ["again -> twice.json"]}]}
    assert device_call_commit(calls, "cuda_paper.json") == "b" * 40
    assert device_call_commit(calls, "cell/") == "a" * 40
    with raises_exactly(ValueError, "nothing.json: 0 device calls say they wrote it; the record of the calls must "
                                    "name one"):
        device_call_commit(calls, "nothing.json")
    with raises_exactly(ValueError, "twice.json: 2 device calls say they wrote it; the record of the calls must "
                                    "name one"):
        device_call_commit(calls, "twice.json")


def test_the_recorded_device_calls_name_the_commits_that_ran():
    """The committed record against this repository's history: f0a2b53 wrote the agreement and trainer parts,
    fdd59bd (the paper part's fix) the paper part and the recipe cell; bench_cuda.py exists at both."""
    calls = json.loads((ROOT / "results" / "benchmarks" / "cuda_device_calls.json").read_text())
    got = {name: device_call_commit(calls, name)[:7]
           for name in ("cuda_agreement.json", "cuda_trainer.json", "cuda_paper.json", "cuda_cell_h100/")}
    assert got == {"cuda_agreement.json": "f0a2b53", "cuda_trainer.json": "f0a2b53", "cuda_paper.json": "fdd59bd",
                   "cuda_cell_h100/": "fdd59bd"}


def test_cuda_check_summary_reads_each_part_and_the_table_sets_checks_side_by_side():
    """Hand-made parts: the largest float32 error is over the families only (the LeJEPA loss's row is not a
    family's features), the bf16 range over both bf16 variants of every family, the steps in milliseconds."""
    from aot_lib.book.benchmarks import cuda_check_summary, cuda_checks_table
    agreement = {"relative_error_vs_cpu_float64": {
        "aot_admm": {"fp32": 2e-7, "bf16": 1e-3, "bf16_compiled": 4e-3},
        "crate": {"fp32": 5e-7, "bf16": 6e-3, "bf16_compiled": 2e-3},
        "lejepa_loss_aot_admm": {"fp32": 9e-6, "bf16": 9e-1}}}
    trainer = {"results": {"fp32_eager": {"images_per_s_after_step_20": 1000.4},
                           "default": {"images_per_s_after_step_20": 2000.6}}}
    paper = {"date": "2026-01-02T03:04:05+0000", "gpu": "G", "hardware": {"torch": "9.9"}, "results": {
        "aot_admm": {"step_s_median": 0.0787, "step_s_min": 0.0682, "step_s_max": 0.1095, "batch": 256,
                     "timed_steps": 10},
        "crate": {"step_s_median": 0.1, "step_s_min": 0.05, "step_s_max": 0.2, "batch": 256, "timed_steps": 10}}}
    s = cuda_check_summary(agreement, trainer, paper, "abc1234")
    assert (s["fp32"], s["bf16"], s["date"]) == (5e-7, (1e-3, 6e-3), "2026-01-02")
    assert s["step_ms"]["AoT-ADMM-Base"] == pytest.approx((78.7, 68.2, 109.5), rel=1e-12)  # float64 of * 1e3
    table = cuda_checks_table([("one", s), ("two", {**s, "commit": "def5678"})])
    rows = {r["what"]: (r["c0"], r["c1"]) for r in table.rows}
    assert rows["commit"] == ("abc1234", "def5678")
    assert rows["features, float32: largest error"] == ("5.0e-07", "5.0e-07")
    assert rows["features, bf16: errors"] == ("1.0e-03–6.0e-03",) * 2
    assert rows["trainer, bf16-mixed, compiled (images/s)"] == ("2,001",) * 2
    assert rows["CRATE-Base step, median (fastest) (ms)"] == ("100.0 (50.0)",) * 2
    assert table.notes[0].startswith("benchmarks/bench_cuda.py's three parts at each check's commit, on G, PyTorch "
                                     "9.9: the errors")  # one GPU named once
    assert table.notes[0].endswith("at batch 256, 10 timed steps a model.")


def test_the_second_device_check_names_its_commit_for_each_part():
    """The second loan's record (results/benchmarks/cuda_h100_03678f8/): one call wrote the three parts, at
    03678f8, and its trainer read 25,000 images (the subset that travelled)."""
    calls = json.loads((ROOT / "results" / "benchmarks" / "cuda_h100_03678f8" / "device_calls.json").read_text())
    assert {device_call_commit(calls, f"cuda_{p}.json")[:7] for p in ("agreement", "trainer", "paper")} == {"03678f8"}
    assert calls["trainer_train_images"] == 25000


_LOG = """\
[gw0] [ 50%] PASSED tests/test_a.py::test_one
[gw1] [100%] FAILED tests/test_b.py::test_two[x]
=========================== short test summary info ============================
FAILED tests/test_b.py::test_two[x] - assert 0.0 == 100.0
FAILED tests/test_b.py::test_three
SKIPPED [1] tests/test_c.py:10: needs bokeh
===== 2 failed, 7 passed, 1 skipped, 3 warnings in 12.50s (0:00:12) =====
rc=1 wall_s=19
"""


def test_pytest_log_summary_reads_the_last_summary_line_and_the_failed_ids():
    got = pytest_log_summary(_LOG)
    assert got == {"passed": 7, "failed": 2, "skipped": 1, "errors": 0, "seconds": 12.5,
                   "failed_tests": ["tests/test_b.py::test_two[x]", "tests/test_b.py::test_three"]}
    errors = pytest_log_summary("==== 3 passed, 1 error in 0.20s ====\n")
    assert (errors["passed"], errors["errors"], errors["failed"]) == (3, 1, 0)
    with raises_exactly(ValueError, "no pytest summary line in this log (cut off before the end?); run pytest to its end"):
        pytest_log_summary("tests/test_a.py ....   [ 68%]\n")


def test_suite_runs_table_counts_failures_per_file_in_each_run():
    first, second = pytest_log_summary(_LOG), pytest_log_summary("==== 9 passed in 1.00s ====\n")
    table = suite_runs_table([("first", first), ("second", second)])
    rows = {r["what"]: (r["c0"], r["c1"]) for r in table.rows}
    assert rows == {"passed": ("7", "9"), "failed": ("2", "0"), "skipped": ("1", "0"),
                    "failed in tests/test_b.py": ("2", "0")}


def test_the_recorded_suite_runs_match_their_record():
    """results/benchmarks/cuda_h200_suite: device_calls.json's counts are the logs' (chapter 12 reads the logs)."""
    folder = ROOT / "results" / "benchmarks" / "cuda_h200_suite"
    record = json.loads((folder / "device_calls.json").read_text())
    for call in record["calls"]:
        got = pytest_log_summary((folder / call["folder"] / "pytest.log").read_text())
        assert {k: got[k] for k in call["counts"]} == call["counts"] and got["failed_tests"] == call["failed"]


def test_precision_table_reads_each_cpus_and_familys_ratio_and_loss_gap():
    """Hand-made bench_precision.py records of two CPU types: the ratio and its range are each record's own (bf16
    over fp32, paired repeat by repeat, as the benchmark computes them), the loss gap the largest step-by-step
    difference (0.5 here, at the second step), each CPU named in its rows and the notes; records of two configs are
    refused."""
    from aot_lib.book.round2 import precision_table

    fam = {"fp32": {"median_s": 0.5, "losses": [4.0, 3.0, 2.0]}, "bf16": {"median_s": 1.0, "losses": [4.0, 3.5, 2.25]},
           "bf16_over_fp32": {"median": 2.0, "min": 1.5, "max": 2.5}}
    bench = {"results": {"aot_admm": fam}, "hardware": {"cpu_model": "AMD EPYC", "cpu_isa": "AVX512"},
             "config": "configs/cpu/cpu30/cpu30_aot_admm_cifar10.yaml", "repeats": 9, "batch": 256, "threads": 2,
             "commit": "8cf998a5" + "0" * 32, "date": "2026-11-28T10:33:59+0000", "cpu_bf16_flags": ["avx512_bf16"]}
    avx2 = {**bench, "hardware": {"cpu_model": "AMD EPYC", "cpu_isa": "AVX2"}, "cpu_bf16_flags": [],
            "results": {"crate": {**fam, "bf16": {"median_s": 8.0, "losses": [4.0, 3.0, 2.0]},
                                  "bf16_over_fp32": {"median": 15.0, "min": 14.0, "max": 17.0}}}}
    table = precision_table([bench, avx2], name="tbl-bf16")
    assert table.rows == [
        dict(cpu="AMD EPYC AVX512", model="AoT-ADMM", fp32=0.5, bf16=1.0, ratio=2.0, spread="1.50–2.50", drift=0.5,
             steps=3),
        dict(cpu="AMD EPYC AVX2", model="CRATE", fp32=0.5, bf16=8.0, ratio=15.0, spread="14.00–17.00", drift=0.0,
             steps=3)]
    assert table.caption == ("bf16-mixed against fp32 on each CPU type measured: one pretraining step of "
                             "cpu30_aot_admm_cifar10.yaml, per family")
    assert ("AMD EPYC AVX512: 9 repeats, batch 256, 2 threads, at commit 8cf998a (2026-11-28), bf16 flags avx512_bf16; "
            "AMD EPYC AVX2: 9 repeats, batch 256, 2 threads, at commit 8cf998a (2026-11-28), bf16 flags none.") \
        in table.notes[0]
    with raises_exactly(ValueError, "precision records of ['a.yaml', 'configs/cpu/cpu30/cpu30_aot_admm_cifar10.yaml']: "
                                    "time one config on every CPU type"):
        precision_table([bench, {**avx2, "config": "a.yaml"}])


def test_bf16_check_table_shows_each_seeds_pair_and_the_plans_reading():
    """Hand-made evidence.bf16_check readings: one row per seed with both precisions; the note gives the commit and
    the eighth addendum's reading in words, or says that a seed still lacks a precision."""
    from aot_lib.book.round2 import bf16_check_table

    pairs = {0: dict(fp32=40.0, bf16=39.5, diff=-0.5, knn_fp32=35.0, knn_bf16=34.5),
             1: dict(fp32=41.0, bf16=40.9, diff=-0.1, knn_fp32=36.0, knn_bf16=36.2)}
    check = dict(pairs=pairs, commit="8c6dce7" + "0" * 33, recorded=4, spread=1.0, mean_diff=-0.3, matches=True)
    table = bf16_check_table(check, name="tbl-bf16-check")
    assert table.rows == [dict(seed=0, **pairs[0]), dict(seed=1, **pairs[1])]
    assert table.notes == ["All runs from commit 8c6dce7, on the CPU; the plan's reading (its eighth addendum, "
                           "written before the runs): the mean difference -0.30 points against the fp32 seed spread "
                           "1.00: bf16 matches fp32 within the seed spread."]
    outside = bf16_check_table({**check, "mean_diff": -1.3, "matches": False})
    assert outside.notes[0].endswith("the mean difference -1.30 points against the fp32 seed spread 1.00: bf16 does "
                                     "not match fp32 within the seed spread.")
    half = bf16_check_table({**check, "pairs": {0: pairs[0]}, "spread": None, "mean_diff": None, "matches": None})
    assert len(half.rows) == 1 and half.notes[0].endswith("not all seeds have both precisions yet.")


def test_cpu_types_table_divides_each_step_by_the_clocks_and_refuses_two_commits():
    """Per candidate and family: the other CPU's median step over the clock CPU's (0.45 / 0.60 = 0.75, ...); one
    measurement means one commit and the same candidates."""
    from aot_lib.book.round2 import cpu_types_table

    def record(commit, isa, steps):
        return {"commit": commit, "date": "2026-11-29T04:15:33+0000", "repeats": 5,
                "hardware": {"cpu_model": "AMD EPYC", "cpu_isa": isa},
                "steps": {c: {f: {"median_s": v} for f, v in zip(("aot_admm", "crate", "aot"), per)}
                          for c, per in steps.items()}}

    clock = record("a" * 40, "AVX512", {"r0": (0.60, 1.00, 0.50), "r1": (0.40, 0.80, 0.25)})
    other = record("a" * 40, "AVX2", {"r0": (0.45, 1.10, 0.50), "r1": (0.30, 0.60, 0.20)})
    table, ratios = cpu_types_table(clock, other, name="tbl-cpu-types")
    assert ratios == pytest.approx([0.75, 1.1, 1.0, 0.75, 0.75, 0.8])
    assert table.rows[0] == {"candidate": "r0", "clock": 0.60, "other": 0.45, "aot_admm": pytest.approx(0.75),
                             "crate": pytest.approx(1.1), "aot": pytest.approx(1.0)}
    with pytest.raises(ValueError, match=r"^step times at aaaaaaa and bbbbbbb \(or of other candidates\) are not one "
                                         r"measurement on two CPUs: time both at one commit$"):
        cpu_types_table(clock, {**other, "commit": "b" * 40})


def test_a_benchmark_record_is_never_written_over(tmp_path):
    """benchmarks/_common.write: the first record stays byte for byte; a second run under the same name is refused
    with the fix before anything is written."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from _common import write

    out = write("x", {"value": 1}, tmp_path / "x.json")
    first = out.read_bytes()
    with pytest.raises(SystemExit) as refused:
        write("x", {"value": 2}, tmp_path / "x.json")
    assert str(refused.value) == (
        f"{tmp_path / 'x.json'} exists: a benchmark record is never written over; give the run another name "
        "(--name where the script has it), AOT_BENCH_DIR=<a folder of its own>, or move the old record to "
        "results/history/<its commit>/ first")
    assert out.read_bytes() == first and sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]
