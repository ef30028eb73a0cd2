"""Values of the training loop (aot_lib/training/loop.py), on a toy model whose every step is computed here by hand.

The model is ``y = w.x + c (+ b x_0 on even steps)`` in float64, trained by momentum SGD (no Adam: its
update is not something to recompute) under a LambdaLR schedule; the batches come from the generator the
loop checkpoints. :func:`reference` recomputes the run with analytic gradients, so every weight, loss,
gradient norm, skipped step and checkpointed value of :func:`aot_lib.training.loop.fit` is checked against an
independent computation. ``b`` gets no gradient on odd steps: the loop must leave its gradient ``None``
there (``zero_grad(set_to_none=True)``), or momentum SGD would move it.

Tolerances: weights are float64 on both sides (analytic vs autograd, a few roundings of 1e-16): rel 1e-12.
The loop logs the loss in float32 (``.float()``, one rounding): rel 2.4e-7, two float32 ulps; the gradient norm
is a float32 norm of float32 norms: rel 1e-6.
Resumed and uninterrupted runs are compared bitwise (same set-up, CPU, same operations in the same order).
"""
import csv
import importlib.util
import json
import re
import sys
import types
import warnings

import pytest
import torch
from lightning_fabric import Fabric
from torch import nn
from torch.distributed import ReduceOp

from aot_lib.training import loop
from aot_lib.training import runs
from aot_lib.training.config import load_config
from helpers import raises_exactly

BASE_LR, MU, SEED, BATCH = 0.1, 0.5, 1, 4
W_TRUE, C_TRUE = (1.5, -2.0), 0.5
W0, C0, B0 = (0.2, -0.1), 0.05, 0.25
F64 = dict(rtol=1e-12, atol=1e-14)
F32 = 2.4e-7  # two float32 ulps: the loop logs float32 values


def lam(t):
    """The schedule's factor at step t (LambdaLR): distinct at every step, so a step fed another step's lr shows."""
    return 1.0 / (1 + t)


class Toy(nn.Module):
    def __init__(self, n_in=2):
        super().__init__()
        self.lin = nn.Linear(n_in, 1, dtype=torch.float64)
        self.b = nn.Parameter(torch.tensor([B0], dtype=torch.float64))
        with torch.no_grad():
            self.lin.weight.copy_(torch.tensor([W0[:n_in] + (0.0,) * (n_in - 2)], dtype=torch.float64))
            self.lin.bias.fill_(C0)

    def forward(self, x, use_b):
        y = self.lin(x).squeeze(1)
        return y + self.b * x[:, 0] if use_b else y


class NaNGrad(torch.autograd.Function):
    """Zero in the forward pass (the loss stays finite), NaN gradient in the backward pass."""

    @staticmethod
    def forward(ctx, x):
        return x * 0

    @staticmethod
    def backward(ctx, g):
        return torch.full_like(g, float("nan"))


def batch(gen):
    x = torch.randn(BATCH, 2, generator=gen, dtype=torch.float64)
    return x, x @ torch.tensor(W_TRUE, dtype=torch.float64) + C_TRUE


def reference(total, bad_grad=(), clip=None):
    """The run by hand: analytic gradients of the mean squared error, torch's momentum SGD (first step:
    buffer = gradient; parameters without a gradient untouched), the gradient norm before clipping,
    clipping by ``min(1, clip / (norm + 1e-6))`` (torch's clip_grad_norm_), the step-t update at
    ``BASE_LR * lam(t)``; a step with a non-finite gradient changes no weight and no buffer."""
    gen = torch.Generator().manual_seed(SEED)
    p = {"w": torch.tensor(W0, dtype=torch.float64), "c": torch.tensor(C0, dtype=torch.float64),
         "b": torch.tensor(B0, dtype=torch.float64)}
    bufs, rows, states = {}, [], [dict(p)]
    for t in range(total):
        x, target = batch(gen)
        use_b = t % 2 == 0
        r = x @ p["w"] + p["c"] + (p["b"] * x[:, 0] if use_b else 0) - target
        grads = {"w": 2 / BATCH * x.T @ r, "c": 2 / BATCH * r.sum()}
        if use_b:
            grads["b"] = 2 / BATCH * (r * x[:, 0]).sum()
        norm = float(sum(g.square().sum() for g in grads.values()).sqrt())
        if t in bad_grad:
            norm = float("nan")
        else:
            coef = min(1.0, clip / (norm + 1e-6)) if clip else 1.0
            for k, g in grads.items():
                g = g * coef
                bufs[k] = g.clone() if k not in bufs else MU * bufs[k] + g
                p[k] = p[k] - BASE_LR * lam(t) * bufs[k]
        rows.append({"loss": float(r.square().mean()), "grad_norm": norm})
        states.append(dict(p))
    return states, bufs, rows, gen


def gen_after(steps):
    gen = torch.Generator().manual_seed(SEED)
    for _ in range(steps):
        batch(gen)
    return gen.get_state()


def assert_weights(state_dict, want):
    torch.testing.assert_close(state_dict["lin.weight"], want["w"].reshape(1, 2), **F64)
    torch.testing.assert_close(state_dict["lin.bias"], want["c"].reshape(1), **F64)
    torch.testing.assert_close(state_dict["b"], want["b"].reshape(1), **F64)


class Clock:
    """``loop.time``: each call half a second later, so images/s is exact."""

    def __init__(self):
        self.now = 100.0

    def time(self):
        self.now += 0.5
        return self.now


class Bar:
    """``tqdm.auto.tqdm``: records how the loop drives the progress bar."""

    made = []

    def __init__(self, **kwargs):
        self.kwargs, self.postfix, self.updates, self.closed = kwargs, [], 0, False
        Bar.made.append(self)

    def set_postfix(self, *args, **kwargs):
        self.postfix.append((args, kwargs))

    def update(self):
        self.updates += 1

    def close(self):
        self.closed = True


class Stream:
    """A data source with its own position (like the litdata stream)."""

    def __init__(self):
        self.pos, self.loaded = 0, []

    def next(self):
        self.pos += 1
        return self.pos

    def state_dict(self):
        return {"pos": torch.tensor(self.pos)}

    def load_state_dict(self, state):
        self.loaded.append(int(state["pos"]))
        self.pos = int(state["pos"])


class Probe:
    """A monitor recording what the loop hands it."""

    def __init__(self, every, name):
        self.every, self.name, self.seen = every, name, []

    def __call__(self, ctx):
        self.seen.append((ctx.step, ctx.out, ctx.model))
        return {f"{self.name}/step": 10.0 * ctx.step}


@pytest.fixture
def toy(tmp_path, monkeypatch):
    monkeypatch.setattr(loop, "time", Clock())
    monkeypatch.setattr(runs, "git_commit", lambda: "c0ffee")  # run.json's own values: tests/test_runs_values.py
    Bar.made = []
    monkeypatch.setattr("tqdm.auto.tqdm", Bar)
    saved = []
    real = loop.save_checkpoint

    def save(fabric, path, state):
        saved.append(state["step"])
        real(fabric, path, state)

    monkeypatch.setattr(loop, "save_checkpoint", save)
    return Harness(tmp_path, saved)


class Harness:
    def __init__(self, tmp_path, saved):
        self.out, self.saved = tmp_path, saved
        self.path = tmp_path / "toy"
        self.ckpt = self.path / "last.ckpt"

    def fit(self, *overrides, total=5, kind="pretrain", bad_grad=(), nan_loss=(), interrupt=None, stream=None,
            monitors=(), setup=True, sched_cls=None, n_in=2, all_reduce=None, **kwargs):
        cfg = load_config(None, [f"run.out_dir={self.out}", "run.name=toy", "run.progress=false", "run.log_every=1",
                                 "run.ckpt_every=2", "fabric.accelerator=cpu", *overrides])
        self.cfg, self.calls, self.outs = cfg, [], []
        with runs.RunFolder(cfg, kind) as run:
            fabric = Fabric(accelerator="cpu", devices=1, loggers=loop.make_loggers(run.path))
            if all_reduce is not None:
                fabric.all_reduce = all_reduce
            self.raw = raw = Toy(n_in)
            opt = torch.optim.SGD(raw.parameters(), lr=BASE_LR, momentum=MU)
            model, opt = fabric.setup(raw, opt) if setup else (raw, opt)
            sched = (sched_cls or torch.optim.lr_scheduler.LambdaLR)(opt, lam)
            rng = torch.Generator().manual_seed(SEED)

            def step_fn(step):
                self.calls.append(step)
                if stream is not None:
                    stream.next()
                x, target = batch(rng)
                if interrupt is not None and step == interrupt:  # never on a step of None (a loop bug): TypeError below
                    raise KeyboardInterrupt
                loss = (model(x, step % 2 == 0) - target).square().mean()
                if step in bad_grad:
                    loss = loss + NaNGrad.apply(raw.lin.weight.sum())
                if step in nan_loss:
                    loss = loss * nan_loss[step]
                out = {"loss": loss, "aux": torch.tensor(0.1, dtype=torch.float64), "one": torch.tensor([2.5]),
                       "epoch": step // 2, "rate": 0.75, "flag": True, "vec": torch.ones(3), "name": "toy"}
                self.outs.append(out)
                return out

            return loop.fit(fabric, run, model, opt, sched, step_fn, total_steps=total, rng=rng, images_per_step=BATCH,
                            kind=kind, data_state=stream, monitors=monitors, **kwargs)

    def rows(self):
        with open(self.path / "metrics.csv", newline="") as f:
            return {int(r["step"]): r for r in csv.DictReader(f)}

    def record(self):
        return json.loads((self.path / "run.json").read_text())

    def load(self):
        return runs.load_checkpoint(self.ckpt)


def logged(rows, key):
    return {s: float(r[key]) for s, r in rows.items() if r.get(key)}


# ----------------------------------------------------------------------------- small helpers

def test_scalar_and_is_scalar():
    # logged values are float32 numbers, like the loss: a float64 tensor is rounded to float32, a number is not
    assert loop._scalar(torch.tensor(0.1, dtype=torch.float64)) == float(torch.tensor(0.1, dtype=torch.float32))
    assert loop._scalar(torch.tensor([2.5], requires_grad=True)) == 2.5
    assert loop._scalar(3) == 3.0 and isinstance(loop._scalar(3), float) and loop._scalar(0.1) == 0.1
    yes = [torch.tensor(1.0), torch.tensor([1]), torch.ones(1, 1), 3, 0.5]
    no = [torch.ones(2), torch.ones(0), True, False, "3", None, [1.0]]
    assert [loop._is_scalar(v) for v in yes] == [True] * len(yes)
    assert [loop._is_scalar(v) for v in no] == [False] * len(no)


def test_make_loggers(tmp_path, monkeypatch):
    from lightning_fabric.loggers import CSVLogger

    monkeypatch.setitem(sys.modules, "tensorboard", None)  # not installed: CSV only
    (csv_logger,) = loop.make_loggers(tmp_path)
    assert isinstance(csv_logger, CSVLogger) and csv_logger.root_dir == str(tmp_path) and csv_logger.name == "logs"
    csv_logger.log_metrics({"loss": 1.5}, step=0)  # flushed at once (every step), not at the end
    with open(tmp_path / "logs" / "version_0" / "metrics.csv") as f:
        assert list(csv.DictReader(f)) == [{"loss": "1.5", "step": "0"}]

    class TB:
        def __init__(self, *args, **kwargs):
            self.args, self.kwargs = args, kwargs

    import lightning_fabric.loggers

    monkeypatch.setitem(sys.modules, "tensorboard", types.ModuleType("tensorboard"))
    monkeypatch.setattr(lightning_fabric.loggers, "TensorBoardLogger", TB)
    first, tb = loop.make_loggers(tmp_path / "x")
    assert isinstance(first, CSVLogger) and isinstance(tb, TB)
    assert tb.args == (str(tmp_path / "x"),) and tb.kwargs == {"name": "tensorboard"}


# ----------------------------------------------------------------------------- one run, every value

def test_fit_trains_logs_and_checkpoints_what_the_reference_computes(toy):
    result = toy.fit("optim.grad_clip=3.0", total=5)
    states, bufs, ref, gen = reference(5, clip=3.0)
    assert toy.calls == [0, 1, 2, 3, 4]
    assert any(r["grad_norm"] > 3.0 for r in ref) and any(r["grad_norm"] < 3.0 for r in ref)  # clipping both ways
    assert_weights(toy.raw.state_dict(), states[5])
    rows = toy.rows()
    assert sorted(rows) == [1, 2, 3, 4, 5]
    for step, row in rows.items():
        assert set(row) == {"aux", "one", "epoch", "rate", "loss", "lr", "grad_norm", "skipped_steps", "images_per_s",
                            "step", "wall_s"}
        assert float(row["loss"]) == pytest.approx(ref[step - 1]["loss"], rel=F32)
        # before clipping; float32 norms of float32-rounded gradients: a handful of roundings of 6e-8 each
        assert float(row["grad_norm"]) == pytest.approx(ref[step - 1]["grad_norm"], rel=1e-6)
        assert float(row["epoch"]) == (step - 1) // 2 and float(row["skipped_steps"]) == 0
        assert float(row["images_per_s"]) == BATCH / 0.5
        # the lr of the step whose loss is on this row (step - 1, 0-based), not the next step's
        assert float(row["lr"]) == pytest.approx(BASE_LR * lam(step - 1), rel=1e-15)
    last = {"aux": float(torch.tensor(0.1, dtype=torch.float32)), "one": 2.5, "epoch": 2.0, "rate": 0.75,
            "loss": float(rows[5]["loss"]), "lr": float(rows[5]["lr"]), "grad_norm": float(rows[5]["grad_norm"]),
            "skipped_steps": 0, "images_per_s": BATCH / 0.5}
    assert result == {"step": 5, **last}
    # wall_s, the run's wall clock (run.json's, a real one here): it never runs back, and ends by the record's total
    walls = [float(rows[s]["wall_s"]) for s in sorted(rows)]
    assert walls == sorted(walls) and walls[0] >= 0 and walls[-1] <= toy.record()["wall_time_s"]
    assert toy.saved == [2, 4, 5]
    ckpt = toy.load()
    assert ckpt.keys() == {"format", "kind", "model", "optimizer", "scheduler", "step", "total_steps", "rng", "config",
                           "metrics", "skipped_steps"}
    assert (ckpt["format"], ckpt["kind"], ckpt["step"], ckpt["total_steps"], ckpt["skipped_steps"]) == (1, "pretrain", 5, 5, 0)
    assert ckpt["config"] == toy.cfg and ckpt["metrics"] == last
    assert torch.equal(ckpt["rng"], gen.get_state())
    assert ckpt["scheduler"]["last_epoch"] == 5
    assert_weights(ckpt["model"], states[5])
    # the optimizer's parameter order is Toy.parameters(): its own b first, then lin.weight, lin.bias
    mom = {i: s["momentum_buffer"] for i, s in ckpt["optimizer"]["state"].items()}
    torch.testing.assert_close(mom[0], bufs["b"].reshape(1), **F64)
    torch.testing.assert_close(mom[1], bufs["w"].reshape(1, 2), **F64)
    torch.testing.assert_close(mom[2], bufs["c"].reshape(1), **F64)
    record = toy.record()
    assert (record["total_steps"], record["resumed_from"], record["step"], record["skipped_steps"]) == (5, 0, 5, 0)
    assert record["last_metrics"] == last
    tensorboard = ["tensorboard"] if importlib.util.find_spec("tensorboard") else []  # loop.make_loggers: if installed
    assert sorted(p.name for p in toy.path.iterdir()) == [".lock", "config.yaml", "last.ckpt", "logs", "metrics.csv",
                                                          "run.json", *tensorboard]
    (bar,) = Bar.made
    assert bar.kwargs == {"total": 5, "initial": 0, "desc": "pretrain toy", "dynamic_ncols": True, "disable": True}
    assert bar.updates == 5 and bar.closed
    assert bar.postfix[-1] == (({"loss": f"{last['loss']:.4g}", "lr": f"{last['lr']:.4g}"},), {"refresh": False})
    assert len(bar.postfix) == 5


def test_log_every_and_images_per_second(toy):
    result = toy.fit("run.log_every=2", "run.ckpt_every=100", total=5)
    rows = toy.rows()
    assert sorted(rows) == [2, 4, 5]  # every second step, and the last
    # the clock moves 0.5 s between readings: two steps of 4 images, then one
    assert [float(rows[s]["images_per_s"]) for s in (2, 4, 5)] == [16.0, 16.0, 8.0]
    assert result["images_per_s"] == 8.0 and toy.saved == [5]
    assert len(Bar.made[0].postfix) == 3 and Bar.made[0].updates == 5


def test_progress_bar_on_and_a_one_step_schedule(toy):
    result = toy.fit("run.progress=true", total=1, desc="custom")
    assert Bar.made[0].kwargs == {"total": 1, "initial": 0, "desc": "custom", "dynamic_ncols": True, "disable": False}
    assert result["step"] == 1 and toy.saved == [1]


def test_a_schedule_without_steps_is_refused(toy):
    with pytest.raises(ValueError, match=r"^finetune: the schedule has 0 steps; raise the epochs or lower the batch "
                                         r"size$"):
        toy.fit(total=0, kind="finetune")
    assert not toy.ckpt.exists() and toy.calls == []


def test_profiler_sees_the_named_scopes(toy):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        toy.fit(total=1, monitors=[Probe(1, "p")])
    names = {e.name for e in prof.events()}
    assert {"step_fn", "backward", "optimizer", "monitors"} <= names


# ----------------------------------------------------------------------------- monitors

@pytest.mark.parametrize("setup", [True, False])
def test_monitors_run_on_their_steps_with_the_step_dict_and_the_bare_model(toy, setup):
    a, b = Probe(2, "a"), Probe(3, "b")
    result = toy.fit(total=5, monitors=[a, b], setup=setup)
    assert [s for s, _, _ in a.seen] == [2, 4, 5] and [s for s, _, _ in b.seen] == [3, 5]  # and the last step
    assert all(out is toy.outs[s - 1] for s, out, _ in a.seen + b.seen)
    assert all(model is toy.raw for _, _, model in a.seen + b.seen)  # unwrapped from Fabric
    assert result["monitors"] == {"a/step": 50.0, "b/step": 50.0}
    rows = toy.rows()
    assert logged(rows, "a/step") == {2: 20.0, 4: 40.0, 5: 50.0} and logged(rows, "b/step") == {3: 30.0, 5: 50.0}


# ----------------------------------------------------------------------------- resume

def test_paused_launches_resume_to_the_uninterrupted_run_bitwise(toy, tmp_path, capsys):
    full = Harness(tmp_path / "full", toy.saved)
    full.fit("run.ckpt_every=100", total=6)
    assert toy.saved == [6]
    toy.saved.clear()
    first = toy.fit("run.ckpt_every=100", "run.stop_after=2", total=6)
    assert first.keys() == {"step", "paused", "aux", "one", "epoch", "rate", "loss", "lr", "grad_norm", "skipped_steps",
                            "images_per_s"}
    assert first["step"] == 2 and first["paused"] is True and first["epoch"] == 0.0
    assert first["loss"] == float(toy.rows()[2]["loss"])
    assert toy.calls == [0, 1] and toy.saved == [2] and toy.record()["status"] == "paused at step 2"
    assert "stopped after 2 steps at step 2; run again to resume" in capsys.readouterr().out
    second = toy.fit("run.ckpt_every=100", "run.stop_after=2", total=6)
    assert second["step"] == 4 and second["paused"] is True and toy.calls == [2, 3] and toy.saved == [2, 4]
    assert f"resumed from {toy.ckpt} at step 2" in capsys.readouterr().out
    assert Bar.made[-1].kwargs["initial"] == 2
    assert toy.record()["resumed_from"] == 2
    third = toy.fit("run.ckpt_every=100", "run.stop_after=2", total=6)  # reaches the end: finished, not paused
    assert toy.calls == [4, 5] and toy.saved == [2, 4, 6] and "paused" not in third and third["step"] == 6
    a, b = full.load(), toy.load()
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    assert torch.equal(a["rng"], b["rng"]) and a["scheduler"] == b["scheduler"]
    assert {s: r["loss"] for s, r in full.rows().items()} == {s: r["loss"] for s, r in toy.rows().items()}
    states, _, _, _ = reference(6)
    assert_weights(b["model"], states[6])
    # a finished run: nothing to do, the checkpoint untouched, its metrics returned
    blob = toy.ckpt.read_bytes()
    again = toy.fit(total=6)
    assert again == {"step": 6, "already_finished": True, **b["metrics"]} and toy.calls == []
    assert f"{toy.path} already finished at step 6; nothing to do" in capsys.readouterr().out
    assert toy.ckpt.read_bytes() == blob


def test_stop_after_counts_the_steps_of_this_launch_and_saves_there(toy):
    toy.fit("run.ckpt_every=4", "run.stop_after=3", total=6)
    assert toy.saved == [3]
    assert toy.fit("run.ckpt_every=4", "run.stop_after=3", total=6)["step"] == 6
    assert toy.saved == [3, 4, 6] and toy.record()["resumed_from"] == 3


def test_a_launch_paused_before_its_first_log_returns_and_saves_no_metrics(toy):
    assert toy.fit("run.log_every=5", "run.stop_after=1", total=3) == {"step": 1, "paused": True}
    assert toy.load()["metrics"] == {} and toy.record()["last_metrics"] == {} and toy.saved == [1]


def test_old_checkpoints_without_kind_skipped_steps_or_metrics(toy):
    toy.fit("run.stop_after=2", total=4)
    ckpt = toy.load()
    for key in ("kind", "skipped_steps"):
        del ckpt[key]
    torch.save(ckpt, toy.ckpt)
    result = toy.fit(total=4)  # a checkpoint without a kind is a pretraining one
    assert result["skipped_steps"] == 0 and result["step"] == 4 and toy.calls == [2, 3]
    ckpt = toy.load()
    del ckpt["metrics"]
    torch.save(ckpt, toy.ckpt)
    assert toy.fit(total=4) == {"step": 4, "already_finished": True}


def test_checkpoint_of_another_kind_is_refused(toy):
    toy.fit("run.stop_after=1", total=3, kind="finetune")
    blob = toy.ckpt.read_bytes()
    for kind in ("distill", "pretrain"):
        with raises_exactly(runs.CheckpointError,
                f"{toy.ckpt} is a finetune checkpoint, not {kind}; use another run.name"):
            toy.fit(total=3, kind=kind)
        assert toy.calls == []
    assert toy.ckpt.read_bytes() == blob


def test_checkpoint_without_kind_is_a_pretraining_one_for_every_other_command(toy):
    toy.fit("run.stop_after=1", total=3)
    ckpt = toy.load()
    del ckpt["kind"]  # written before checkpoints named their command
    torch.save(ckpt, toy.ckpt)
    for kind in ("finetune", "distill"):
        with raises_exactly(runs.CheckpointError,
                f"{toy.ckpt} is a pretrain checkpoint, not {kind}; use another run.name"):
            toy.fit(total=3, kind=kind)
        assert toy.calls == []


def test_checkpoint_of_another_model_is_refused(toy):
    toy.fit("run.stop_after=1", total=3)
    try:  # torch's own words for the mismatch, whose first line the refusal quotes
        Toy(3).load_state_dict(toy.load()["model"])
    except RuntimeError as e:
        first = str(e).splitlines()[0]
    with raises_exactly(runs.CheckpointError,
            f"{toy.ckpt} does not fit this model ({first}); resume with the config it was made with, or start a new "
            "run"):
        toy.fit(total=3, n_in=3)


# ----------------------------------------------------------------------------- non-finite values

def test_skipped_steps_leave_weights_and_count_across_launches(toy):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        toy.fit("optim.max_skipped_steps=1", "run.stop_after=3", total=6, bad_grad={0, 2})
    assert not [w for w in caught if "lr_scheduler.step()" in str(w.message)]  # a skipped first step is fine
    assert toy.load()["skipped_steps"] == 2 and toy.record()["skipped_steps"] == 2
    result = toy.fit("optim.max_skipped_steps=1", total=6, bad_grad={4})
    states, _, ref, _ = reference(6, bad_grad={0, 2, 4})
    assert_weights(toy.raw.state_dict(), states[6])
    assert result["skipped_steps"] == 3 and toy.load()["skipped_steps"] == 3
    rows = toy.rows()
    assert [float(rows[s]["skipped_steps"]) for s in range(1, 7)] == [1, 1, 2, 2, 3, 3]
    assert [s for s in rows if rows[s]["grad_norm"] == "nan"] == [1, 3, 5]


def test_only_the_skipped_step_warning_is_silenced(toy):
    class Noisy(torch.optim.lr_scheduler.LambdaLR):
        def step(self, *args):
            if self.last_epoch >= 0:  # not the step the constructor takes
                warnings.warn("a scheduler's own warning", UserWarning, stacklevel=2)
            super().step(*args)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        toy.fit(total=1, sched_cls=Noisy)
    assert [str(w.message) for w in caught if "scheduler" in str(w.message)] == ["a scheduler's own warning"]


def test_gradient_not_finite_too_often_in_a_row_stops(toy):
    with pytest.raises(loop.NonFiniteLossError, match=r"^the pretrain gradient was not finite for 2 steps in a row "
                       r"\(up to step 2\); the weights were not updated by them\. Lower optim\.lr, set optim\.grad_clip, "
                       r"or use fabric\.precision=32-true, then run again$"):
        toy.fit("optim.max_skipped_steps=1", total=5, bad_grad={1, 2})
    states, _, _, _ = reference(2, bad_grad={1})
    assert toy.saved == [2]
    assert_weights(toy.load()["model"], states[2])


def test_nan_loss_stops_before_the_update_and_keeps_the_checkpoint(toy):
    with pytest.raises(loop.NonFiniteLossError) as err:
        toy.fit(total=5, nan_loss={3: float("nan")})
    assert re.fullmatch(re.escape(f"the pretrain loss became nan at step 3; the last good checkpoint {toy.ckpt} is "
                                  "untouched. Lower optim.lr, set optim.grad_clip, or use fabric.precision=32-true, then "
                                  "run again"), str(err.value))
    states, _, _, _ = reference(3)
    assert toy.saved == [2] and toy.load()["step"] == 2
    assert_weights(toy.raw.state_dict(), states[3])  # step 3 (index 3) applied nothing
    assert toy.record()["status"] == f"failed: NonFiniteLossError: {err.value}"
    with pytest.raises(loop.NonFiniteLossError, match=r"^the distill loss became inf at step 0; no checkpoint had been "
                                                      r"written yet\. Lower optim\.lr"):
        Harness(toy.out / "other", toy.saved).fit(total=5, kind="distill", nan_loss={0: float("inf")})


class TwoRanks:
    """``fabric.all_reduce`` of a run on two processes, seen from rank 0 (one process here): the other rank's
    loss is this rank's + 1, and its gradient is not finite on ``other_bad`` steps. The op is resolved as
    Lightning's ``_sync_ddp`` resolves it (``"mean"`` -> AVG, another string -> ``ReduceOp.<NAME.upper()>``, a
    ``ReduceOp`` as it is; None reaches torch.distributed, which refuses it), so a wrong op fails here as it
    would on two processes."""

    REDUCE = {ReduceOp.SUM: torch.sum, ReduceOp.AVG: torch.mean, ReduceOp.MIN: torch.amin, ReduceOp.MAX: torch.amax}

    def __init__(self, other_bad=()):
        self.other_bad, self.calls = set(other_bad), []

    def __call__(self, data, group=None, reduce_op="mean"):  # Fabric.all_reduce's signature and default
        if reduce_op is None:  # what torch.distributed.all_reduce makes of op=None (AllreduceOptions.reduceOp)
            raise TypeError("reduceOp: incompatible type None")
        if isinstance(reduce_op, str):
            op = getattr(ReduceOp, ("avg" if reduce_op == "mean" else reduce_op).upper())
        else:
            op = reduce_op
        step, second = divmod(len(self.calls), 2)  # each step: the loss, then the finiteness flag
        if not second:
            self.calls.append("loss")
            other = data + 1.0
        else:  # the finiteness flag of this step's gradient norm
            self.calls.append("finite")
            other = torch.zeros_like(data) if step in self.other_bad else torch.ones_like(data)
        return self.REDUCE[op](torch.stack([data, other]))


def test_two_ranks_log_the_mean_loss_and_skip_a_step_any_rank_cannot_take(toy):
    ranks = TwoRanks(other_bad={1, 3})
    result = toy.fit("optim.max_skipped_steps=2", total=5, all_reduce=ranks)
    assert ranks.calls == ["loss", "finite"] * 5
    states, _, ref, _ = reference(5, bad_grad={1, 3})
    assert_weights(toy.raw.state_dict(), states[5])  # steps 1 and 3 skipped on this rank too
    rows = toy.rows()
    # the logged loss is the mean of the two ranks' float32 losses, this rank's + 0.5: the float32 cast of the
    # float64 loss, then fl32(l + 1) and the float32 sum (halving is exact), each within 2^-24 relative of
    # l + 0.5 or better: well inside 2 * F32 (4.8e-7)
    for step in range(1, 6):
        assert float(rows[step]["loss"]) == pytest.approx(ref[step - 1]["loss"] + 0.5, rel=2 * F32)
    assert [float(rows[s]["skipped_steps"]) for s in range(1, 6)] == [0, 1, 1, 2, 2]
    assert result["skipped_steps"] == 2


# ----------------------------------------------------------------------------- Ctrl-C

def test_ctrl_c_in_a_step_saves_the_completed_steps_and_the_stream_position(toy, capsys):
    stream = Stream()
    with pytest.raises(KeyboardInterrupt):
        toy.fit("run.ckpt_every=100", total=6, interrupt=3, stream=stream)
    ckpt = toy.load()
    states, _, _, _ = reference(3)
    assert ckpt["step"] == 3 and toy.saved == [3]
    assert torch.equal(ckpt["rng"], gen_after(3))  # the generator after step 3, not after step 4's draw
    assert int(ckpt["data_stream"]["pos"]) == 3 and stream.pos == 4
    assert ckpt["metrics"]["loss"] == float(toy.rows()[3]["loss"]) and ckpt["metrics"]["epoch"] == 1.0
    assert_weights(ckpt["model"], states[3])
    assert toy.record()["status"] == "interrupted at step 3" and toy.record()["step"] == 3
    assert "\ninterrupted: checkpoint saved at step 3; run the same command again to resume" in capsys.readouterr().out
    stream = Stream()
    result = toy.fit("run.ckpt_every=100", total=6, stream=stream)
    assert stream.loaded == [3] and stream.pos == 6 and toy.calls == [3, 4, 5] and result["step"] == 6
    assert int(toy.load()["data_stream"]["pos"]) == 6
    assert_weights(toy.load()["model"], reference(6)[0][6])
    del ckpt["data_stream"]
    torch.save(ckpt, toy.ckpt)
    with raises_exactly(runs.CheckpointError,
            f"{toy.ckpt} has no data-stream position; resume with the data it was made with"):
        toy.fit(total=6, stream=Stream())


def test_ctrl_c_in_the_first_step_writes_nothing(toy, capsys):
    with pytest.raises(KeyboardInterrupt):
        toy.fit(total=4, interrupt=0)
    assert not toy.ckpt.exists() and toy.saved == []
    assert toy.record()["status"] == "interrupted at step 0"
    assert "\ninterrupted at step 0; the last checkpoint is kept; run again to resume" in capsys.readouterr().out


def test_ctrl_c_during_the_update_keeps_the_last_checkpoint(toy, capsys):
    class Interrupting(torch.optim.lr_scheduler.LambdaLR):
        def step(self, *args):
            if self.last_epoch == 2:  # the third step's schedule step: its weights are already updated
                raise KeyboardInterrupt
            super().step(*args)

    toy.fit("run.stop_after=1", total=4)  # a checkpoint at step 1, resumed below
    with pytest.raises(KeyboardInterrupt):
        toy.fit(total=4, sched_cls=Interrupting)
    states, _, _, _ = reference(2)
    assert toy.saved == [1, 2] and toy.load()["step"] == 2
    assert_weights(toy.load()["model"], states[2])
    assert toy.record()["status"] == "interrupted at step 2"
    assert "\ninterrupted at step 2; the last checkpoint is kept; run again to resume" in capsys.readouterr().out
