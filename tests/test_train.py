"""The trainer end to end on a tiny ImageFolder made here: runs, resumes, fails cleanly, distributes."""
import json

import pytest
import torch

from aot_lib import train
from aot_lib.cli import main as cli
from aot_lib.training.config import ConfigError, load_config
from helpers import make_imagefolder, tiny_config, top1_from_run


@pytest.fixture
def setup(tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    data = make_imagefolder(tmp_path / "data")
    return data, tmp_path / "runs"


def _losses(run, key="loss"):
    import csv

    with open(run / "metrics.csv") as f:
        return {int(r["step"]): float(r[key]) for r in csv.DictReader(f) if r.get(key)}


def test_pretrain_checkpoint_probe_smoke(setup):
    data, out = setup
    # a head that learns: tiny_config's probe (5 steps at lr 1e-3) stays near its random start, which on 2 separable
    # classes reads 0 or 100 % by the start's luck (torch 2.11 read 0.0 on an H200's host, 2.14.1 100 here)
    cfg = tiny_config(data, out, "probe.epochs=50", "probe.lr=0.1")
    metrics = train.pretrain(cfg)
    run = out / "tiny"
    for f in ("config.yaml", "run.json", "metrics.csv", "metrics.json", "last.ckpt"):
        assert (run / f).exists(), f
    assert metrics["step"] == 4 and torch.isfinite(torch.tensor(metrics["loss"]))
    record = json.loads((run / "run.json").read_text())
    assert record["status"] == "finished" and record["seed"] == 0 and "commit" in record and record["wall_time_s"] > 0
    assert sorted(_losses(run)) == [1, 2, 3, 4]
    ckpt = train.load_checkpoint(run / "last.ckpt")
    assert ckpt["step"] == 4 and ckpt["model"]["loss.sigreg.step"].item() == 4
    result = train.probe(cfg)
    # class k is noise around a pure colour (helpers.make_imagefolder): separable, so both probes must be perfect
    # on the held-out images (the probes' own values against references: tests/test_probe.py)
    assert result["linear_top1"] == result["knn_top1"] == 100.0
    assert result["test_images"] == 16 and (run / "probe.json").exists()
    assert len(list(run.glob("features-*.pt"))) == 1  # features extracted once, cached
    kept = train.record_run(run, out / "record", allow_dirty=True)
    assert {p.name for p in kept} == {"config.yaml", "run.json", "metrics.csv", "metrics.json", "probe.json", "encoder"}
    # the recorded encoder is the trained one: the same features as from the full checkpoint
    import aot_lib
    from aot_lib.training.probe import load_encoder

    x = torch.randn(3, 3, 16, 16)
    (a, _), (b, rec) = load_encoder(run / "last.ckpt"), load_encoder(out / "record" / "encoder")
    assert rec["kind"] == "encoder" and rec["trained_as"] == "pretrain" and rec["step"] == 4
    assert torch.equal(a.eval().forward_features(x), b.eval().forward_features(x))
    assert torch.equal(a.forward_features(x), aot_lib.from_pretrained(out / "record" / "encoder").eval().forward_features(x))
    # and it probes as the checkpoint did: the same cached features, bit for bit, probe.json in the record's folder
    again = train.probe(cfg, out / "record" / "encoder")
    assert again["checkpoint"] == str(out / "record" / "encoder") and again["pretrain_step"] == 4
    assert again["linear_top1"] == again["knn_top1"] == 100.0 and (out / "record" / "probe.json").exists()
    (cached,), (recorded,) = run.glob("features-*.pt"), (out / "record").glob("features-*.pt")
    for split in ("train", "test"):
        assert torch.equal(torch.load(cached)[split][0], torch.load(recorded)[split][0])


def test_relaunching_a_finished_run_leaves_it_finished_and_recordable(setup, capsys):
    """A second launch of a finished pretraining run does nothing, and run.json says finished as before (with
    the launch counted), so aot record still takes it; it used to stay "running" and be refused."""
    data, out = setup
    cfg = tiny_config(data, out, "optim.max_steps=2")
    first = train.pretrain(cfg)
    before = json.loads((out / "tiny" / "run.json").read_text())
    assert train.pretrain(cfg) == json.loads(json.dumps(first))
    assert f"{out / 'tiny'} already finished at step 2; nothing to do" in capsys.readouterr().out
    after = json.loads((out / "tiny" / "run.json").read_text())
    assert after["status"] == "finished" and after["finished"] == before["finished"] and after["launches"] == 2
    assert after["started"] == before["started"] and after["wall_time_s"] >= before["wall_time_s"]
    # what the first launch recorded of the run itself is kept: the relaunch trained nothing to replace it (it used
    # to be dropped, leaving a record without its step, which the recorded-encoder test then refused)
    launch = {"commit", "launch_commits", "hardware", "fabric", "launches", "wall_time_s_before", "wall_time_s",
              "updated", "other_cpu_s", "other_cpu_wall_s", "other_cores"}
    assert {k: v for k, v in after.items() if k not in launch} == {k: v for k, v in before.items() if k not in launch}
    assert after["step"] == 2 and after["last_metrics"] == before["last_metrics"]
    assert {p.name for p in train.record_run(out / "tiny", out / "record", allow_dirty=True)} >= {"run.json"}


def test_resume_equals_uninterrupted(setup):
    data, out = setup
    full = tiny_config(data, out, "run.name=full", "optim.max_steps=6", "run.ckpt_every=100")
    train.pretrain(full)
    part = tiny_config(data, out, "run.name=part", "optim.max_steps=6", "run.ckpt_every=100", "run.stop_after=3")
    assert train.pretrain(part)["paused"]
    assert train.load_checkpoint(out / "part" / "last.ckpt")["step"] == 3
    train.pretrain(part)  # resumes at step 3, runs to 6
    a, b = _losses(out / "full"), _losses(out / "part")
    assert sorted(b) == list(range(1, 7))
    for step in a:
        assert b[step] == pytest.approx(a[step], rel=1e-6, abs=1e-7), step
    pa = train.load_checkpoint(out / "full" / "last.ckpt")["model"]
    pb = train.load_checkpoint(out / "part" / "last.ckpt")["model"]
    for k in pa:
        torch.testing.assert_close(pa[k], pb[k], rtol=1e-5, atol=1e-6)


def test_nan_loss_stops_and_keeps_the_checkpoint(setup, monkeypatch):
    data, out = setup
    cfg = tiny_config(data, out, "optim.max_steps=6", "run.ckpt_every=2")
    from aot_lib.objectives.lejepa import LeJEPALoss

    calls = {"n": 0}
    real = LeJEPALoss.forward

    def poisoned(self, y):
        calls["n"] += 1
        out_ = real(self, y)
        if calls["n"] >= 3:  # step 3 goes bad, after the checkpoint of step 2
            return out_._replace(loss=out_.loss * float("nan"))
        return out_

    monkeypatch.setattr(LeJEPALoss, "forward", poisoned)
    ckpt = out / "tiny" / "last.ckpt"
    with pytest.raises(train.NonFiniteLossError, match=r"loss became nan at step 2.*last good checkpoint .* is untouched"):
        train.pretrain(cfg)
    saved = train.load_checkpoint(ckpt)
    assert saved["step"] == 2
    assert all(torch.isfinite(v).all() for v in saved["model"].values() if v.is_floating_point())
    assert json.loads((out / "tiny" / "run.json").read_text())["status"].startswith("failed: NonFiniteLossError")


def test_corrupt_checkpoint_is_a_clear_error_and_is_kept(setup):
    data, out = setup
    cfg = tiny_config(data, out)
    (out / "tiny").mkdir(parents=True)
    bad = out / "tiny" / "last.ckpt"
    bad.write_bytes(b"\x00not a checkpoint")
    with pytest.raises(train.CheckpointError, match="corrupt or not a torch checkpoint.*delete it to start over"):
        train.pretrain(cfg)
    assert bad.read_bytes() == b"\x00not a checkpoint"
    with pytest.raises(train.CheckpointError, match="corrupt"):
        train.probe(cfg)
    with pytest.raises(train.CheckpointError, match="does not exist"):
        train.probe(cfg, checkpoint=out / "nowhere.ckpt")


def test_unknown_config_key(tmp_path, capsys):
    with pytest.raises(ConfigError, match=r"unknown config key 'optim.lrr'\. Did you mean 'optim.lr', "):
        load_config(None, ["optim.lrr=1"])
    cfg = tmp_path / "c.yaml"
    cfg.write_text("optim: {batchsize: 3}\n")
    with pytest.raises(ConfigError, match="unknown config key 'optim.batchsize'. Did you mean 'optim.batch_size'"):
        load_config(cfg)
    assert cli(["pretrain", "-c", str(cfg)]) == 2
    assert "unknown config key" in capsys.readouterr().err


def test_config_inheritance_and_numbers(tmp_path):
    (tmp_path / "base.yaml").write_text("optim: {lr: 5e-4, epochs: 3}\n")
    (tmp_path / "child.yaml").write_text("inherit: base.yaml\noptim: {epochs: 7}\n")
    cfg = load_config(tmp_path / "child.yaml", ["model.overrides.depth=2"])
    assert cfg["optim"]["lr"] == 5e-4 and isinstance(cfg["optim"]["lr"], float)
    assert cfg["optim"]["epochs"] == 7 and cfg["model"]["overrides"] == {"depth": 2}


def test_shipped_configs_load():
    from pathlib import Path

    files = sorted(Path(__file__).resolve().parent.parent.glob("configs/**/*.yaml"))
    assert len(files) > 30
    for f in files:
        cfg = load_config(f)
        assert cfg["model"]["name"]


def test_finetune_and_distill(setup):
    data, out = setup
    pre = tiny_config(data, out, "run.name=pre", "optim.max_steps=2")
    train.pretrain(pre)
    ft = train.finetune(tiny_config(data, out, "run.name=ft", f"finetune.checkpoint={out / 'pre' / 'last.ckpt'}"))
    # the reported accuracy is that of the saved weights on the test images, recomputed here from the files
    assert ft["top1"] == top1_from_run(out / "ft", data)
    assert json.loads((out / "ft" / "finetune.json").read_text())["top1"] == ft["top1"]
    vit = "model.overrides={depth: 1, embed_dim: 24, num_heads: 2, patch_size: 4}"
    # three epochs at lr 3e-3 are enough on the separable colour classes: a perfect teacher
    fit = ["finetune.epochs=3", "finetune.lr=3e-3", "distill.epochs=3", "distill.lr=3e-3"]
    teacher = train.finetune(tiny_config(data, out, "run.name=teacher", "model.name=vit_tiny", vit, *fit))
    assert teacher["top1"] == top1_from_run(out / "teacher", data) == 100.0
    student = train.distill(tiny_config(data, out, "run.name=student", "model.name=vit_tiny_relu", vit, *fit,
                                        f"distill.teacher={out / 'teacher' / 'last.ckpt'}"))
    assert student["top1"] == top1_from_run(out / "student", data) == 100.0
    with pytest.raises(train.CheckpointError, match="distill.teacher is not set"):
        train.distill(tiny_config(data, out, "run.name=s2", "model.name=vit_tiny_relu", vit))


def test_table4_chain_pretrained_vit_teacher_and_students(setup):
    """Table 4's chain at toy size: a LeJEPA-pretrained ViT (depth 2, not the registry's 12) is fine-tuned into
    a teacher, which is rebuilt at depth 2 from the fine-tuning's own config; the ReLU student starts from
    the pretrained weights with distillation (alpha 0.5) or on labels alone (alpha 0), and the latter is
    exactly a fine-tuning of the same init with the same schedule."""
    data, out = setup
    vit = "model.overrides={depth: 2, embed_dim: 24, num_heads: 2, patch_size: 4}"
    train.pretrain(tiny_config(data, out, "run.name=vpre", "model.name=vit_tiny", vit, "optim.max_steps=2"))
    pre = out / "vpre" / "last.ckpt"
    # the fine-tuning config names no model: the checkpoint's is used, and recorded as the run's
    train.finetune(tiny_config(data, out, "run.name=vteacher", f"finetune.checkpoint={pre}"))
    recorded = load_config(out / "vteacher" / "config.yaml")["model"]
    assert recorded["name"] == "vit_tiny" and recorded["overrides"]["depth"] == 2
    relu = ["model.name=vit_tiny_relu", vit, f"distill.student_init={pre}"]
    kd = train.distill(tiny_config(data, out, "run.name=vkd", *relu, f"distill.teacher={out / 'vteacher' / 'last.ckpt'}"))
    nokd = train.distill(tiny_config(data, out, "run.name=vnokd", *relu, "distill.alpha=0"))
    assert kd["top1"] == top1_from_run(out / "vkd", data) and _losses(out / "vkd", "ce_label")  # it logs its label term
    # alpha 0 = plain supervised training: the same steps as fine-tuning the same model from the same init
    from aot_lib.training.builders import build_encoder, load_train_test
    from aot_lib.training.supervised import _load_into, _supervised, normalization_for

    cfg = tiny_config(data, out, "run.name=vplain", *relu, "distill.alpha=0")
    torch.manual_seed(cfg["run"]["seed"])  # as distill() does: the new head's initial weights follow run.seed
    student = build_encoder(cfg, num_classes=2)
    info = _load_into(student, train.load_checkpoint(pre), pre, "distill.student_init")
    plain = _supervised(cfg, "distill", student, None, *normalization_for(info["checkpoint_config"]), info,
                        *load_train_test(cfg))
    assert plain["top1"] == nokd["top1"] and _losses(out / "vplain") == _losses(out / "vnokd")
    assert not _losses(out / "vnokd", "ce_label")
    with pytest.raises(ValueError, match="distill.alpha is 0.*set distill.teacher=null"):
        train.distill(tiny_config(data, out, "run.name=vbad", *relu, "distill.alpha=0",
                                  f"distill.teacher={out / 'vteacher' / 'last.ckpt'}"))
    with pytest.raises(ValueError, match="distill.alpha"):
        tiny_config(data, out, "run.name=vbad", *relu, "distill.alpha=1.5")


def test_cli_pretrain_and_probe(setup, capsys):
    data, out = setup
    args = [f"data.root={data}", "data.name=imagefolder", "data.image_size=16", f"run.out_dir={out}", "run.name=cli",
            "run.progress=false", "model.overrides={embed_dim: 32, depth: 1, num_heads: 2, patch_size: 4}",
            "views.global_size=16", "views.local_size=8", "views.n_local=2", "projector.hidden_dim=32",
            "projector.out_dim=8", "loss.num_slices=16", "optim.batch_size=8", "optim.max_steps=2", "probe.epochs=2"]
    config = data.parent / "mine.yaml"  # a config the user names (an empty one: the overrides say the rest)
    config.write_text("description: the CLI test's own config\n")
    assert cli(["pretrain", "-c", str(config), *args]) == 0
    assert cli(["probe", "-c", str(config), *args]) == 0
    assert '"linear_top1"' in capsys.readouterr().out


@pytest.mark.parametrize("normalize", [False, True])
def test_ddp_two_processes_match_one(setup, tmp_path, normalize):
    """gloo on CPU, before any optimiser step: the global loss (SIGReg over the global batch), every
    gradient and the projector's global BatchNorm statistics of 2 processes equal those of 1 process
    on the same global batch and views. (Comparing weights after AdamW steps cannot be tight: Adam turns
    rounding noise in exactly-zero gradients, e.g. a bias in front of a BatchNorm, into steps of size lr.)"""
    from lightning_fabric import Fabric

    from helpers import ddp_first_step

    data, out = setup
    cfg = tiny_config(data, out, "optim.batch_size=8", f"loss.sigreg_normalize={str(normalize).lower()}")
    images = torch.randint(0, 256, (8, 3, 16, 16), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    Fabric(accelerator="cpu", devices=1).launch(ddp_first_step, cfg, images, str(tmp_path / "one.pt"))
    Fabric(accelerator="cpu", devices=2, strategy="ddp_spawn").launch(ddp_first_step, cfg, images, str(tmp_path / "two.pt"))
    one, two = torch.load(tmp_path / "one.pt"), torch.load(tmp_path / "two.pt")
    # float32 sums over a batch taken in another order: relative error ~1e-6; 1e-5 leaves a margin
    torch.testing.assert_close(two["loss"], one["loss"], rtol=1e-5, atol=0)
    # Gradients pass backwards through BatchNorm, computed by two formulas (PyTorch's fused kernel in one
    # process, autograd through the all-reduced two-pass statistics in two); its cancellations leave the
    # float32 rounding (1.2e-7) of terms up to ~1e2-1e3 times the result: 1e-4 of the largest gradient.
    scale = max(g.abs().max().item() for g in one["grads"].values())
    assert scale > 0
    assert one["grads"].keys() == two["grads"].keys()
    for k in one["grads"]:
        torch.testing.assert_close(two["grads"][k], one["grads"][k], rtol=1e-4, atol=1e-4 * scale, msg=k)
    assert one["buffers"] and one["buffers"].keys() == two["buffers"].keys()
    for k in one["buffers"]:
        torch.testing.assert_close(two["buffers"][k], one["buffers"][k], rtol=1e-5, atol=1e-6, msg=k)


def test_ddp_trainer_runs_and_logs_the_same_first_step(setup):
    """The trainer under ddp_spawn: same data order and views as one process, so the first logged loss
    and gradient norm (computed at the initial weights, before any optimiser step) agree."""
    data, out = setup
    common = ["optim.max_steps=2", "run.ckpt_every=100", "optim.batch_size=8"]
    train.pretrain(tiny_config(data, out, "run.name=single", *common))
    train.pretrain(tiny_config(data, out, "run.name=ddp", *common, "fabric.strategy=ddp_spawn", "fabric.devices=2",
                               "fabric.accelerator=cpu"))
    a, b = _losses(out / "single"), _losses(out / "ddp")
    assert sorted(a) == sorted(b) == [1, 2]
    assert b[1] == pytest.approx(a[1], rel=1e-5)  # float32 summation order only
    assert _losses(out / "ddp", "grad_norm")[1] == pytest.approx(_losses(out / "single", "grad_norm")[1], rel=1e-4)
    assert all(torch.isfinite(torch.tensor(v)) for v in b.values())


@pytest.mark.parametrize("kind", ["finetune", "distill"])
def test_ddp_supervised_runs_and_logs_the_same_first_step(setup, kind):
    """Fine-tuning and distillation under ddp_spawn (two CPU processes): Fabric must be launched, and the first
    logged loss (at the initial weights, before any optimiser step) agrees with one process, since each process
    takes its rank's share of the same global batch."""
    data, out = setup
    vit = "model.overrides={depth: 1, embed_dim: 24, num_heads: 2, patch_size: 4}"
    extra = ["model.name=vit_tiny"]
    if kind == "distill":
        train.finetune(tiny_config(data, out, f"run.name=teacher_{kind}", "model.name=vit_tiny", vit))
        extra = [f"distill.teacher={out / f'teacher_{kind}' / 'last.ckpt'}", "model.name=vit_tiny_relu"]
    common = [vit, *extra, "run.ckpt_every=100"]
    fn = getattr(train, kind)
    one = fn(tiny_config(data, out, f"run.name={kind}_one", *common))
    two = fn(tiny_config(data, out, f"run.name={kind}_two", *common, "fabric.strategy=ddp_spawn",
                         "fabric.devices=2", "fabric.accelerator=cpu"))
    a, b = _losses(out / f"{kind}_one"), _losses(out / f"{kind}_two")
    assert sorted(a) == sorted(b) == list(range(1, one["steps"] + 1))
    assert b[1] == pytest.approx(a[1], rel=1e-5)  # float32 summation order only
    assert two["steps"] == one["steps"] and two["test_images"] == one["test_images"]


@pytest.mark.parametrize("kind", ["finetune", "distill"])
def test_supervised_runs_resume_to_the_uninterrupted_result(setup, kind):
    """Fine-tuning and distillation share the pretraining loop and checkpoint layout: paused and resumed
    equals uninterrupted (same batches, augmentations and weights)."""
    data, out = setup
    vit = "model.overrides={depth: 1, embed_dim: 24, num_heads: 2, patch_size: 4}"
    extra = []
    if kind == "distill":
        train.finetune(tiny_config(data, out, "run.name=teacher", "model.name=vit_tiny", vit))
        extra = [f"distill.teacher={out / 'teacher' / 'last.ckpt'}", "model.name=vit_tiny_relu"]
    else:
        extra = ["model.name=vit_tiny"]
    common = [vit, *extra, f"{kind}.epochs=2", "run.ckpt_every=100"]
    fn = getattr(train, kind)
    full = fn(tiny_config(data, out, "run.name=full", *common))
    assert fn(tiny_config(data, out, "run.name=part", *common, "run.stop_after=3"))["paused"]
    assert train.load_checkpoint(out / "part" / "last.ckpt")["kind"] == kind
    part = fn(tiny_config(data, out, "run.name=part", *common))
    a, b = _losses(out / "full"), _losses(out / "part")
    assert sorted(a) == sorted(b) == list(range(1, full["steps"] + 1))
    for step in a:  # same data, augmentations and weights: equal up to float32 run-to-run determinism
        assert b[step] == pytest.approx(a[step], rel=1e-6, abs=1e-7), step
    assert part["top1"] == full["top1"]


@pytest.mark.parametrize("kind", ["finetune", "distill"])
def test_supervised_initial_weights_follow_run_seed_alone(setup, kind):
    """The same config twice, after different draws from the caller's global RNG: the same first loss (the
    initial weights come from run.seed, not from whatever ran before in the process); another run.seed: another
    initialisation, another first loss."""
    data, out = setup
    common = ["model.name=vit_tiny", "model.overrides={depth: 1, embed_dim: 24, num_heads: 2, patch_size: 4}",
              f"{kind}.epochs=1", "distill.alpha=0"]
    fn = getattr(train, kind)
    for name, global_seed, run_seed in (("a", 0, 0), ("b", 123, 0), ("c", 0, 1)):
        torch.manual_seed(global_seed)
        fn(tiny_config(data, out, f"run.name={name}", f"run.seed={run_seed}", *common))
    a, b, c = (_losses(out / name)[1] for name in "abc")
    assert a == b and c != a


def test_student_starts_from_its_own_init_checkpoint_never_the_teacher_head(setup):
    from aot_lib.training.builders import build_encoder
    from aot_lib.training.supervised import _load_into

    data, out = setup
    vit = "model.overrides={depth: 1, embed_dim: 24, num_heads: 2, patch_size: 4}"
    train.finetune(tiny_config(data, out, "run.name=init", "model.name=vit_tiny", vit))
    init = train.load_checkpoint(out / "init" / "last.ckpt")["model"]
    cfg = tiny_config(data, out, "run.name=s", "model.name=vit_tiny_relu", vit)
    student = build_encoder(cfg, num_classes=2)
    head_before = student.head.fc.weight.clone()
    path = out / "init" / "last.ckpt"
    info = _load_into(student, train.load_checkpoint(path), path, "distill.student_init")
    own = student.state_dict()
    for k, v in own.items():
        if not k.startswith("head."):
            torch.testing.assert_close(v, init[k], rtol=0, atol=0, msg=k)  # copied exactly
    assert torch.equal(student.head.fc.weight, head_before)  # the classifier is not inherited
    assert any(".mlp.fc1." in k for k in info["left_out"])  # the MLPs the ReLU student lacks are reported


def test_model_compile_switch_trains_like_eager(setup, monkeypatch):
    """model.compile=true goes through aot_lib.models.compile.compile_blocks (here with the aot_eager backend, which
    traces the layer into one graph without code generation, to keep the test fast): the same first loss as
    eager, and no recompilation after the first step of each view size."""
    import functools

    import torch._dynamo

    import aot_lib.models.compile

    data, out = setup
    real = aot_lib.models.compile.compile_blocks
    monkeypatch.setattr(aot_lib.models.compile, "compile_blocks", functools.partial(real, backend="aot_eager"))
    eager = train.pretrain(tiny_config(data, out, "run.name=eager", "optim.max_steps=1", "model.overrides={embed_dim: 32, "
                                       "depth: 2, num_heads: 2, patch_size: 4}"))
    torch._dynamo.reset()
    from torch._dynamo.utils import counters

    counters.clear()
    compiled = train.pretrain(tiny_config(data, out, "run.name=compiled", "optim.max_steps=3", "model.compile=true",
                                          "model.overrides={embed_dim: 32, depth: 2, num_heads: 2, patch_size: 4}"))
    first = _losses(out / "compiled")[1]
    # aot_eager runs the same aten ops as eager; decompositions may reorder a reduction: float32 rounding
    assert first == pytest.approx(eager["loss"], rel=1e-5)
    assert compiled["step"] == 3
    # one graph per view size (16 px global, 8 px local here), traced in step 1; steps 2-3 compile nothing
    assert counters["stats"]["unique_graphs"] == 2


def test_model_compile_auto_means_gpu_only_and_bad_values_are_refused(tmp_path):
    from aot_lib.runtime import compile_enabled

    assert load_config(None)["model"]["compile"] == "auto"
    assert compile_enabled("auto", "cuda") and compile_enabled("auto", torch.device("cuda", 1))
    assert not compile_enabled("auto", "cpu") and not compile_enabled(False, "cuda") and compile_enabled(True, "cpu")
    for bad in ("sometimes", 1, None):
        with pytest.raises(ConfigError, match=r"^model.compile must be true, false or auto, got "):
            load_config(None, [f"model.compile={'null' if bad is None else bad}"])
