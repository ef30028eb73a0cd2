"""A record is never rewritten (issue 36): every version a file under results/ was ever committed with is still in
the tree, at its own path (the same bytes, or a JSON file that only added to it) or kept verbatim elsewhere under
results/ (a pretraining run's later probes in ``reprobes/``; a run trained again under its name, a deleted record or a
rerun benchmark under ``results/history/<commit>/``). Two kinds are exempt from byte identity, and say why:
results/mutation (scripts/mutation.py regenerates its summaries whole, each naming the commit it mutated), and the
encoders first recorded as ``encoder.pt`` and converted to safetensors, whose tensors are checked bit for bit."""
import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from aot_lib import evidence
from aot_lib.evidence.plan import load_plan
from aot_lib.evidence.records import evaluations, read_test_set

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"


def _git(*args: str, text: bool = True):
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=text).stdout


def _exempt(path: str) -> bool:
    """results/mutation (regenerated whole), and the encoders first recorded as ``encoder.pt``: converted to
    ``encoder/model.safetensors`` (loadable without running pickled code), their tensors bit-identical
    (:func:`test_every_converted_encoder_keeps_its_tensors_bit_for_bit`)."""
    return path.startswith("results/mutation/") or path.endswith("/encoder.pt")


def _adds_to(new, old) -> bool:
    """``new`` holds everything ``old`` does, with the same values (JSON: keys may only be added)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and all(k in new and _adds_to(new[k], v) for k, v in old.items())
    return new == old


def test_every_committed_version_of_a_result_is_still_in_the_tree():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (or no git): the records' history cannot be read; CI runs on a clone")
    if _git("rev-parse", "--is-shallow-repository").strip() == "true":
        pytest.skip("a shallow clone has no history to check the records against: git fetch --unshallow")
    present = {hashlib.sha1(p.read_bytes()).hexdigest() for p in RESULTS.rglob("*") if p.is_file()}
    lost = []
    # each change to a file under results/: the commit and the blob it left (--raw: ":mode mode old new status path")
    commit = None
    for line in _git("log", "--format=C %H", "--raw", "--no-abbrev", "--no-renames", "--", "results").splitlines():
        if line.startswith("C "):
            commit = line[2:]
            continue
        if not line.startswith(":"):
            continue
        meta, path = line.split("\t", 1)
        blob = meta.split()[3]
        if _exempt(path) or set(blob) == {"0"}:  # exempt, or the change deleted it
            continue
        data = _git("cat-file", "blob", blob, text=False)
        if hashlib.sha1(data).hexdigest() in present:
            continue
        now = ROOT / path
        if now.exists() and path.endswith(".json") and _adds_to(json.loads(now.read_text()), json.loads(data)):
            continue
        lost.append(f"{path} as of {commit[:7]}")
    assert lost == [], f"{len(lost)} recorded versions are no longer in the tree (restore them under results/history)"


def test_every_converted_encoder_keeps_its_tensors_bit_for_bit():
    """The one kind of record converted rather than kept byte for byte (issue 55, item 5): each ``encoder.pt`` ever
    committed under results/ is now its run's ``encoder/model.safetensors``, with the same tensor names, dtypes,
    shapes and bits."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (or no git): the records' history cannot be read; CI runs on a clone")
    if _git("rev-parse", "--is-shallow-repository").strip() == "true":
        pytest.skip("a shallow clone has no history to check the records against: git fetch --unshallow")
    import io

    import torch
    from safetensors.torch import load_file

    checked = 0
    for line in _git("log", "--format=", "--raw", "--no-abbrev", "--no-renames", "--", "results").splitlines():
        meta, _, path = line.partition("\t")
        blob = meta.split()[3] if meta.startswith(":") else "0"
        if not path.endswith("/encoder.pt") or set(blob) == {"0"}:
            continue
        old = torch.load(io.BytesIO(_git("cat-file", "blob", blob, text=False)), map_location="cpu",
                         weights_only=True)["model"]
        new = load_file(ROOT / Path(path).parent / "encoder" / "model.safetensors")
        assert set(old) == set(new), path
        for name, tensor in old.items():
            assert tensor.dtype == new[name].dtype and tensor.shape == new[name].shape, (path, name)
            assert torch.equal(tensor.view(torch.uint8) if tensor.numel() else tensor,
                               new[name].view(torch.uint8) if tensor.numel() else new[name]), (path, name)
        checked += 1
    assert checked == 25  # the encoder.pt versions recorded before the conversion (git log -- 'results/*/encoder.pt')


def test_a_recorded_probe_is_never_overwritten_and_the_book_reads_the_newest():
    """The sweep's r2 and r4 were first probed with the test split in view (0a9143d: 42.58 and 42.02 %), then probed
    again on validation only; both probes are in the record, and the sweep table reads the newest."""
    sweep = RESULTS / "cpu" / "sweep"
    for name, first_test, newest in (("sweep_r2_lr2e-3_proj64", 42.58, 1), ("sweep_r4_lr4e-3", 42.02, 2)):
        found = evaluations(sweep / name)
        assert [p.relative_to(sweep / name).as_posix() for p in found] == \
            ["probe.json"] + [f"reprobes/{k}.json" for k in range(1, newest + 1)]
        first, last = (json.loads(p.read_text()) for p in (found[0], found[-1]))
        assert round(first["linear_top1"], 2) == first_test and first["test_images"] == 10000
        assert last["test_images"] == 0 and "linear_top1" not in last  # validation only
        assert read_test_set(sweep / name)  # over the run's whole history, it did read the test set
    rows = {r["folder"]: r for r in evidence.sweep_rows(RESULTS / "cpu")}
    r4 = json.loads((sweep / "sweep_r4_lr4e-3" / "reprobes" / "2.json").read_text())
    assert rows["sweep/sweep_r4_lr4e-3"]["val"] == r4["linear_val_best"]


def test_the_sweep_tables_name_every_point_whose_history_read_the_test_split():
    """The sweeps are scored on validation, but four of their points were first probed with the test split read
    (the recipe sweep's r2 and r4, which are AoT-ADMM's 2e-3 and 4e-3 points; Table 2's two 2e-3 pretrainings): the
    tables' notes say so, from the records, and no chapter says in prose that a sweep never read the test set."""
    rows = evidence.sweep_rows(RESULTS / "cpu")
    assert sorted(r["folder"] for r in rows if r["read_test"]) == [
        "cpu_aot_admm_imagenette", "cpu_crate_imagenette", "sweep/sweep_r2_lr2e-3_proj64", "sweep/sweep_r4_lr4e-3"]
    for r in rows:  # read_test is the records' own history: some probe of the run has test images
        probes = [json.loads(p.read_text()) for p in evaluations(RESULTS / "cpu" / r["folder"])]
        assert r["read_test"] == any(p.get("test_images", 0) > 0 for p in probes), r["folder"]
    import jupytext

    claims = ("never read the test", "never reads the test", "no test image is read", "no test image read")
    for chapter in sorted((ROOT / "notebooks").glob("*.py")):
        prose = "\n".join(c.source for c in jupytext.read(chapter).cells if c.cell_type == "markdown").lower()
        assert not [c for c in claims if c in " ".join(prose.replace("#", " ").split())], chapter.name


def test_paired_runs_trained_with_different_numerics_are_flagged_in_their_sentence():
    """Float results differ between torch versions and CPU kinds: the claims whose paired seeds mix them say so
    (Table 3's seed 1 and Table 2's seed 0 paired torch 2.15.0 runs with 2.14.1 ones), from the runs' run.json."""
    rows = {r["claim"].key: r for r in evidence.claim_rows(RESULTS / "cpu")}
    flagged = {k for k, r in rows.items() if "flagged: paired runs trained with different numerics" in r["sentence"]}
    assert flagged == {"t3_cifar10", "t2_cifar10", "t2_cifar100", "t2_control_aot_admm_cifar10",
                       "t2_control_aot_admm_cifar100"}
    assert rows["t3_cifar10"]["sentence"].endswith(
        "; flagged: paired runs trained with different numerics (seed 1: torch 2.14.1+cu130 vs 2.15.0+cu132).")
    # the chapters' one-line verdicts carry the same flag, in their table's note
    from aot_lib.book.tables import verdict_table

    note = verdict_table(evidence.verdict_rows([rows["t3_cifar10"], rows["t1_cifar10"]]), caption="c").notes[0]
    assert note == ("Flagged, paired runs trained with different numerics: AoT-ADMM − AoT, linear probe on "
                    "CIFAR-10 (Table 3): seed 1: torch 2.14.1+cu130 vs 2.15.0+cu132.")
    for key, r in rows.items():  # each flag is what the two runs' run.json say, and only that
        a = evidence.cell_runs(RESULTS / "cpu", r["claim"].a)
        b = {x.seed: x for x in evidence.cell_runs(RESULTS / "cpu", r["claim"].b)}
        differ = [x.seed for x in a if x.seed in b and
                  json.loads((x.folder / "run.json").read_text())["hardware"]["torch"]
                  != json.loads((b[x.seed].folder / "run.json").read_text())["hardware"]["torch"]]
        assert (key in flagged) == bool(differ), key


def test_the_margin_sensitivity_reads_each_parity_interval_against_other_margins():
    """Table 2 CIFAR-100's interval [-0.08, +0.81] lies inside ±1 but not ±0.5; Table 1 CIFAR-100's [+0.80, +2.45]
    lies wholly beyond ±0.5 (AoT-ADMM ahead by more): each reading is the interval against that margin. The
    relative margin is the plan's times our CRATE mean over the paper's CRATE accuracy (Tiny, CIFAR-10: 85.61)."""
    rows = evidence.claim_rows(RESULTS / "cpu")
    got = {r["key"]: r for r in evidence.margin_sensitivity(rows)}
    assert set(got) == {"t1_cifar10", "t1_cifar100", "t2_cifar10", "t2_cifar100", "t4_teacher"}
    assert (got["t2_cifar100"]["m0.5"], got["t2_cifar100"]["m1"]) == ("not settled", "reproduced")
    assert got["t1_cifar100"]["m0.5"] == "contradicted" and got["t1_cifar100"]["m2"] == "not settled"
    crate = [json.loads(p.read_text())["linear_top1"] for p in
             (evaluations(RESULTS / "cpu" / n)[-1] for n in ("cpu_crate_cifar10", "cpu_crate_cifar10_seed1",
                                                               "cpu_crate_cifar10_seed2"))]
    assert got["t1_cifar10"]["relative"] == pytest.approx(1.5 * sum(crate) / 3 / 85.61, rel=1e-12)


def test_the_forest_plot_has_a_row_per_claim_and_marks_the_post_hoc_ones():
    import matplotlib

    matplotlib.use("Agg")
    from aot_lib.book.plotting import plot_claims_forest

    rows = evidence.claim_rows(RESULTS / "cpu")
    fig = plot_claims_forest(rows)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    # the paper's claims on top, our controls below, each post-hoc claim marked
    assert labels[::-1] == [r["claim"].key + " †" for r in rows if r["claim"].paper_gap is not None] + \
        [r["claim"].key + " †" for r in rows if r["claim"].paper_gap is None]


def test_chapter_7_says_truly_that_table_3s_cifar100_half_was_not_tested_with_the_first_recipe():
    import jupytext

    prose = " ".join(c.source for c in jupytext.read(ROOT / "notebooks" / "08_tables_1_3.py").cells
                     if c.cell_type == "markdown")
    assert "no AoT run on CIFAR-100 was recorded" in " ".join(prose.replace("#", " ").split())
    assert not list((RESULTS / "cpu").glob("cpu_aot_cifar100*"))  # true of the records
    assert "t3_cifar100_30min" in load_plan(RESULTS / "cpu" / "plan.yaml")  # and the plan includes it next


def test_table2_lr_sensitivity_reads_the_superseded_chain_as_recorded():
    """Issue 36: the switch to 4e-3 rested on 2 of 300 validation images and moved the seed-0 gaps from -0.01 / +0.26
    to +0.88 / +0.40 (read here from the result files themselves)."""
    got = evidence.table2_lr_sensitivity(RESULTS / "cpu")

    def top1(name):
        return json.loads((RESULTS / "cpu" / name / "finetune.json").read_text())["top1"]

    assert got["val_images"] == 300 and got["images_apart"] == 2
    for r, data in zip(got["rows"], ("cifar10", "cifar100")):
        assert r["data"] == data
        assert r["gap_superseded"] == top1(f"cpu_aot_admm_imagenette_ft_{data}") - top1(f"cpu_crate_imagenette_ft_{data}")
        assert r["gap_picked"] == top1(f"cpu_aot_admm_imagenette_lr4e-3_ft_{data}") - top1(f"cpu_crate_imagenette_ft_{data}")
    assert [round(r["gap_superseded"], 2) for r in got["rows"]] == [-0.01, 0.26]
    assert [round(r["gap_picked"], 2) for r in got["rows"]] == [0.88, 0.40]


def test_the_floor_is_recorded_for_every_table_1_3_cell_and_paired_by_seed():
    """Issue 36, item 4: every pretrained cell of Tables 1/3 has its untrained-encoder and raw-pixel probes recorded
    at each of its seeds (results/cpu/baselines/), and what pretraining adds is the mean of the per-seed differences
    read here straight from the probe files (the pretrained run's newest probe, the baseline's only one)."""
    import statistics

    cpu = RESULTS / "cpu"
    rows = evidence.floor_rows(cpu, evidence.TABLE13_CELLS, evidence.TABLE13_NAMES, evidence.TABLE13_DATA)
    assert len(rows) == 2 * len(evidence.TABLE13_CELLS)
    for r in rows:
        name = evidence.TABLE13_CELLS[r["family"], r["data"]]
        diffs = []
        for seed in (0, 1, 2):
            trained = cpu / (name if seed == 0 else f"{name}_seed{seed}")
            if not trained.exists():
                continue
            base = cpu / "baselines" / (f"baseline_init_{trained.name}" if r["floor"] == "untrained"
                                        else f"baseline_pixels_{r['data']}_seed{seed}")
            floor = json.loads((base / "probe.json").read_text())
            assert json.loads((base / "run.json").read_text())["seed"] == seed and floor["test_images"] > 0
            diffs.append(json.loads(evaluations(trained)[-1].read_text())["linear_top1"] - floor["linear_top1"])
        assert r["diff"].n == len(diffs) >= 2
        assert r["diff"].mean == pytest.approx(statistics.mean(diffs), abs=1e-9)


def test_the_forest_plot_draws_the_floor_in_a_panel_of_its_own():
    import matplotlib

    matplotlib.use("Agg")
    from aot_lib.book.plotting import plot_claims_forest

    cpu = RESULTS / "cpu"
    floors = evidence.floor_rows(cpu, evidence.TABLE13_CELLS, evidence.TABLE13_NAMES, evidence.TABLE13_DATA)
    fig = plot_claims_forest(evidence.claim_rows(cpu), floors)
    assert len(fig.axes) == 2
    assert [t.get_text() for t in fig.axes[1].get_yticklabels()][::-1] == [f["label"] for f in floors]
