"""Checkpoints and recorded results from before still load with today's code (issue 24), and a fine-tuning run's own
``config.yaml`` rebuilds the network it trained."""
from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
import torch
import yaml

import aot_lib
from aot_lib import create_model, train
from aot_lib.evidence.records import current_result, evaluations
from aot_lib.models.pretrained import save_pretrained
from aot_lib.training import supervised
from aot_lib.training.builders import build_encoder
from aot_lib.training.config import dump_config, load_config
from aot_lib.training.probe import load_encoder
from aot_lib.training.runs import checkpoint_model, load_checkpoint
from helpers import make_imagefolder, raises_exactly, tiny_config

RESULTS = Path(__file__).resolve().parent.parent / "results" / "cpu"


@pytest.mark.parametrize("record,trained_as,name,overrides", [
    ("cpu_aot_admm_cifar10", "pretrain", "aot_admm_tiny", {"img_size": 32, "embed_dim": 192, "depth": 6, "num_heads": 6}),
    # recorded before the fine-tuning's config stated its model (model.overrides: {} there): the model is the
    # pretraining's, read from its record beside this one (results/cpu/cpu_aot_admm_imagenette)
    ("cpu_aot_admm_imagenette_ft_cifar100", "finetune", "aot_admm_base",
     {"img_size": 128, "patch_size": 16, "embed_dim": 192, "depth": 6, "num_heads": 6}),
    ("cpu_vit_tiny_relu_kd", "distill", "vit_tiny_relu", {"img_size": 32, "embed_dim": 192, "depth": 6, "num_heads": 3}),
], ids=["pretraining", "fine-tuning", "distillation"])
def test_a_recorded_encoder_of_each_kind_loads(record, trained_as, name, overrides):
    path = RESULTS / record / "encoder"
    encoder, ckpt = load_encoder(path)
    assert ckpt["trained_as"] == trained_as
    model = checkpoint_model(ckpt, path)
    assert model["name"] == name and model["overrides"] == overrides
    recorded = {k: v for k, v in ckpt["model"].items() if not k.startswith("head.")}
    loaded = encoder.state_dict()
    assert loaded.keys() == recorded.keys()
    assert all(torch.equal(loaded[k], recorded[k]) for k in recorded)  # every weight, bit for bit
    assert encoder.num_features == overrides["embed_dim"] and len(encoder.blocks) == overrides["depth"]
    # the network the run's config.yaml builds is the one config.json names, whose weights users load
    user = aot_lib.from_pretrained(path).state_dict()
    assert all(torch.equal(user[k], loaded[k]) for k in loaded)


RECORDS = sorted(p.parent for p in RESULTS.glob("**/run.json"))


def test_every_recorded_encoder_is_a_folder_its_run_reads():
    """``aot record`` keeps the trained encoder as ``<run>/encoder/`` alone (no ``encoder.pt`` beside it), and each
    reads back as a checkpoint whose run config builds the network its ``config.json`` states."""
    assert len(RECORDS) >= 38
    assert [str(p.relative_to(RESULTS)) for p in RESULTS.glob("**/encoder.pt")] == []
    folders = [r / "encoder" for r in RECORDS if (r / "encoder").is_dir()]
    assert len(folders) >= 25  # the records converted from encoder.pt; new records add theirs
    for folder in folders:
        ckpt = load_checkpoint(folder)  # its sha256 checked
        config = json.loads((folder / "config.json").read_text())
        run = json.loads((folder.parent / "run.json").read_text())
        assert (ckpt["trained_as"], ckpt["step"]) == (config["trained_as"], config["step"]) == (run["kind"], run["step"])
        model = checkpoint_model(ckpt, folder)
        classes = ckpt["model"]["head.fc.weight"].shape[0] if "head.fc.weight" in ckpt["model"] else 0
        assert (model["name"], {**model["overrides"], "num_classes": classes}) == \
            (config["architecture"], config["model_args"]), folder


def test_finetune_records_and_validates_the_model_it_builds(tmp_path, monkeypatch):
    """The pretraining's model (width 24, its image size 16 not stated in its overrides) is fine-tuned by a config
    that names another model and another view size: what finetune validates is the checkpoint's model, and the
    run's config.yaml states it with its image size, so it rebuilds the network whose weights last.ckpt holds."""
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    data, out = make_imagefolder(tmp_path / "data"), tmp_path / "runs"
    pre_overrides = {"embed_dim": 24, "depth": 1, "num_heads": 2, "patch_size": 4}
    train.pretrain(tiny_config(data, out, "run.name=pre", "optim.max_steps=1", f"model.overrides={pre_overrides}"))
    validated = []
    check = supervised.validate_config
    monkeypatch.setattr(supervised, "validate_config", lambda cfg: validated.append(dict(cfg["model"])) or check(cfg))
    train.finetune(tiny_config(data, out, "run.name=ft", "views.global_size=8", "views.local_size=4",
                               f"finetune.checkpoint={out / 'pre' / 'last.ckpt'}"))
    stated = {"name": "aot_admm_tiny", "overrides": {"img_size": 16, **pre_overrides}, "imports": [], "compile": False}
    assert validated == [stated]
    recorded = yaml.safe_load((out / "ft" / "config.yaml").read_text())
    assert recorded["model"] == stated and recorded["views"]["global_size"] == 8
    state = torch.load(out / "ft" / "last.ckpt", weights_only=True)["model"]
    rebuilt = build_encoder(recorded, num_classes=2)
    rebuilt.load_state_dict(state, strict=True)  # every weight, the 4x4 position grid of 16 px included
    encoder, _ = load_encoder(out / "ft" / "last.ckpt")
    assert encoder.stem.pos_embed.shape == (1, 17, 24)


# ----------------------------------------------------------------------------- records made before encoder/

_spec = importlib.util.spec_from_file_location("export_encoders", RESULTS.parent.parent / "scripts" / "export_encoders.py")
export_encoders = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(export_encoders)
TINY = {"img_size": 16, "patch_size": 4, "embed_dim": 8, "depth": 1, "num_heads": 2}


def _weights(num_classes=3):
    torch.manual_seed(0)
    return {k: v.clone() for k, v in create_model("aot_admm_tiny", num_classes=num_classes, **TINY).state_dict().items()}


def _old_record(root):
    """A folder ``aot record`` wrote before it kept ``encoder/``: ``encoder.pt`` beside the run's files."""
    rec = root / "rec"
    rec.mkdir()
    cfg = load_config(None, [f"run.out_dir={root}", "run.name=rec", "model.name=aot_admm_tiny",
                             "model.overrides={patch_size: 4, embed_dim: 8, depth: 1, num_heads: 2}",
                             "views.global_size=16", "views.local_size=8"])
    (rec / "config.yaml").write_text(dump_config(cfg))
    (rec / "run.json").write_text(json.dumps({"status": "finished", "commit": "abc", "wall_time_s": 9.5}))
    torch.save({"format": 1, "kind": "encoder", "trained_as": "finetune", "step": 7, "config": cfg,
                "model": _weights()}, rec / "encoder.pt")
    return rec


def _same(got, want):
    return got.keys() == want.keys() and all(got[k].dtype == want[k].dtype and torch.equal(got[k], want[k]) for k in want)


def test_the_converter_replaces_encoder_pt_by_the_folder(tmp_path):
    rec = _old_record(tmp_path)
    assert export_encoders.convert(rec) == f"{rec}: wrote {rec / 'encoder'}, the same weights as encoder.pt (deleted)"
    assert sorted(p.name for p in rec.iterdir()) == ["config.yaml", "encoder", "run.json"]
    ckpt = load_checkpoint(rec / "encoder")
    assert (ckpt["kind"], ckpt["trained_as"], ckpt["step"]) == ("encoder", "finetune", 7)
    assert _same(ckpt["model"], _weights())  # the weights encoder.pt held, bit for bit
    assert _same(aot_lib.from_pretrained(rec / "encoder").state_dict(), _weights())
    config = json.loads((rec / "encoder" / "config.json").read_text())
    assert {k: config[k] for k in ("architecture", "model_args", "trained_as", "step", "seed", "run", "source", "commit",
                                   "wall_time_s", "recorded")} == {
        "architecture": "aot_admm_tiny", "model_args": {**TINY, "num_classes": 3}, "trained_as": "finetune", "step": 7,
        "seed": 0, "run": "rec", "source": str(rec / "encoder.pt"), "commit": "abc", "wall_time_s": 9.5,
        "recorded": str(rec)}
    assert export_encoders.convert(rec) == f"{rec}: skipped, {rec / 'encoder'} is there and no encoder.pt (converted already)"
    assert export_encoders.convert(tmp_path) == f"{tmp_path}: skipped, no encoder.pt (no recorded encoder to convert)"


def test_the_converter_keeps_encoder_pt_when_asked_and_verifies_an_existing_folder(tmp_path):
    rec = _old_record(tmp_path)
    assert export_encoders.convert(rec, keep_pt=True) == \
        f"{rec}: wrote {rec / 'encoder'}, the same weights as encoder.pt (kept)"
    written = (rec / "encoder" / "model.safetensors").read_bytes()
    # encoder/ and encoder.pt both (an export made beside the record): verified, not written again, then deleted
    assert export_encoders.convert(rec) == f"{rec}: verified {rec / 'encoder'}, the same weights as encoder.pt (deleted)"
    assert not (rec / "encoder.pt").exists() and (rec / "encoder" / "model.safetensors").read_bytes() == written


def test_the_converter_keeps_encoder_pt_when_the_folder_differs(tmp_path):
    rec = _old_record(tmp_path)
    other = _weights()
    other["head.fc.bias"] = other["head.fc.bias"] + 1
    save_pretrained(other, rec / "encoder", "aot_admm_tiny", {**TINY, "num_classes": 3}, trained_as="finetune", step=7)
    with pytest.raises(export_encoders.ConversionError, match="^" + re.escape(
            f"{rec / 'encoder'} does not hold what {rec / 'encoder.pt'} holds (differ: head.fc.bias); write it again "
            "from encoder.pt with --overwrite") + "$"):
        export_encoders.convert(rec)
    assert (rec / "encoder.pt").exists()
    assert export_encoders.convert(rec, overwrite=True) == \
        f"{rec}: wrote {rec / 'encoder'}, the same weights as encoder.pt (deleted)"
    assert _same(load_checkpoint(rec / "encoder")["model"], _weights())


def test_reprobe_probes_a_copy_of_the_recorded_folder(tmp_path, monkeypatch):
    """scripts/reprobe.py probes ``encoder/`` copied with the run's config.yaml into its scratch folder: the features
    are the trained encoder's, bit for bit, and the recorded folder gains nothing but the new probe, written beside the
    recorded ones (reprobes/1.json, then 2.json), never over them; the book reads the newest."""
    spec = importlib.util.spec_from_file_location("reprobe", RESULTS.parent.parent / "scripts" / "reprobe.py")
    reprobe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reprobe)
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    cfg = tiny_config(make_imagefolder(tmp_path / "data"), tmp_path / "runs", "optim.max_steps=1")
    train.pretrain(cfg)
    train.probe(cfg)
    run, rec, scratch = tmp_path / "runs" / "tiny", tmp_path / "results" / "tiny", tmp_path / "scratch"
    train.record_run(run, rec, allow_dirty=True)
    before = {p.name: p.read_bytes() for p in rec.iterdir() if p.is_file()}
    result = reprobe.reprobe(rec, scratch)
    assert sorted(p.name for p in rec.iterdir()) == ["config.yaml", "encoder", "metrics.csv", "metrics.json",
                                                     "probe.json", "reprobes", "run.json"]
    assert {p.name: p.read_bytes() for p in rec.iterdir() if p.is_file()} == before  # nothing rewritten
    written = json.loads((rec / "reprobes" / "1.json").read_text())
    assert written["checkpoint"] == result["checkpoint"] == str(scratch / "tiny" / "encoder")
    assert written["pretrain_step"] == 1 and written["probe"]["epochs"] != cfg["probe"]["epochs"]  # today's defaults
    assert current_result(rec) == written and evaluations(rec) == [rec / "probe.json", rec / "reprobes" / "1.json"]
    reprobe.reprobe(rec, scratch)
    assert evaluations(rec)[-1] == rec / "reprobes" / "2.json" and (rec / "reprobes" / "1.json").exists()
    (rec / "reprobes" / "1.json").unlink()  # a lost re-probe: the gap is refused, not read past
    with raises_exactly(ValueError, f"{rec / 'reprobes'} holds ['2.json'], not 1.json, 2.json, … in sequence: "
                                    "restore the missing probe from git (a record is never rewritten)"):
        current_result(rec)
    (trained,), (copied,) = run.glob("features-*.pt"), (scratch / "tiny").glob("features-*.pt")
    for split in ("train", "test"):
        assert torch.equal(torch.load(trained)[split][0], torch.load(copied)[split][0])

    # --set: other probe settings, written beside the recorded probes (under --dest), never over them
    monkeypatch.chdir(tmp_path)
    recorded = (rec / "probe.json").read_bytes()
    wide = reprobe.reprobe(Path("results/tiny"), scratch, Path("wide"), ["probe.lr=[0.01, 0.03]"])
    assert json.loads((tmp_path / "wide/results/tiny/probe.json").read_text())["probe"]["lr"] == [0.01, 0.03]
    assert wide["linear_lr"] in (0.01, 0.03) and (rec / "probe.json").read_bytes() == recorded
    with raises_exactly(SystemExit, "--set needs --dest: a probe with other settings is a check beside the "
                                    "recorded probe.json, never written over it"):
        reprobe.reprobe(Path("results/tiny"), scratch, None, ["probe.lr=[0.01]"])
    with raises_exactly(SystemExit, "--set 'optim.lr=0.1': a re-probe changes only probe.* settings (the encoder "
                                    "is trained)"):
        reprobe.reprobe(Path("results/tiny"), scratch, Path("wide"), ["optim.lr=0.1"])
    with raises_exactly(SystemExit, f"{rec}: give the recorded folder as a path relative to the checkout; --dest "
                                    "writes DEST/<folder>/probe.json, which an absolute folder would turn into the "
                                    "recorded one"):
        reprobe.reprobe(rec, scratch, Path("wide"))
    assert (rec / "probe.json").read_bytes() == recorded
