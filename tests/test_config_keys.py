"""Every config key pinned by a test that shows its effect (issue 26).

The operator-level tests elsewhere check what each function computes; the plumbing between a config key and
that computation is checked here: for every key of :data:`aot_lib.training.config.SCHEMA`, the key is changed from the
tiny test config's value to another valid one and the thing it names is observed where the trainer builds it
(the views, the loss on fixed embeddings, the optimiser's groups and schedule, the model, the data read, the
probes' settings, the monitors, Fabric's arguments), with the value the key should produce written out.
Trainers are observed by replacing the shared loop (``fit``) with one that keeps what it is handed: the
data, model, optimiser, schedule and monitors are the trainer's own, nothing is trained. The few keys that only
act inside the loop run one real step. Keys that change no computation by design are listed with the reason;
a key in neither list fails :func:`test_every_key_is_pinned_or_listed_with_a_reason`.

Then: which keys may differ when a run resumes (each key, each section), and the caches: a decoded image entry,
cached probe features and compiled layers are not reused after an input they depend on changes.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np
import aot_lib.training.evaluation
import pytest
import torch
import torch.nn.functional as F
import yaml
from PIL import Image
from torch import nn

import aot_lib.data.augment as A
import aot_lib.training.probe as P
import aot_lib.training.supervised as S
from aot_lib import create_model
from aot_lib.training import runs
from aot_lib.training import pretrain as PT
from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig, prepare_images
from aot_lib.models.compile import compile_blocks
from aot_lib.training.config import SCHEMA, ConfigError, dump_config, flatten
from aot_lib.data.datasets import DATASET_STATS, DataError, load_split
from aot_lib.training.loop import NonFiniteLossError
from aot_lib.training.monitors import OnlineKNN, RankMe, Theorem1Monitor, WhiteBoxAudit
from aot_lib.training.optim import batch_indices
from aot_lib.training.builders import build_encoder, load_data, load_train_test, normalization_for
from aot_lib.training.pretrain import build_lejepa_model
from aot_lib.objectives.sigreg import sample_directions
from helpers import make_imagefolder, raises_exactly, tiny_config, zip_tree

# the tiny config's model (tests/helpers.py: tiny_config), for checkpoints and teachers made here
OVERRIDES = {"embed_dim": 32, "depth": 1, "num_heads": 2, "patch_size": 4}
IMAGENET, CIFAR10 = DATASET_STATS["imagenet"], DATASET_STATS["cifar10"]


# ----------------------------------------------------------------------------- the world: data, checkpoints, observers

@dataclass
class Trainer:
    """What a trainer hands the shared loop, kept instead of trained."""

    fabric: Any
    model: nn.Module  # Fabric's wrapper; .inner is the module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    step_fn: Callable
    total_steps: int
    images_per_step: int
    rng: torch.Generator
    monitors: list

    @property
    def inner(self) -> nn.Module:
        return getattr(self.model, "module", self.model)

    def factor(self, step: int) -> float:
        """The learning-rate multiplier of ``step`` (the LambdaLR's function)."""
        return self.scheduler.lr_lambdas[0](step)

    def initial_lrs(self) -> list[float]:
        return [g["initial_lr"] for g in self.optimizer.param_groups]

    def decays(self) -> list[float]:
        return [g["weight_decay"] for g in self.optimizer.param_groups]


class World:
    """Tiny data (a second tree, a CIFAR-10 folder beside it, an empty root), a pretraining checkpoint and two
    ViT teachers, fixed embeddings and images; observers that remember what they saw for a config."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.data = make_imagefolder(tmp / "data")
        # data.name=cifar10 at the same root reads <root>/cifar10/{train,test}: other images, three classes
        make_imagefolder(tmp / "data" / "cifar10", classes=("bird", "cat", "frog"), n_train=2, n_test=1, seed=3)
        self.other = make_imagefolder(tmp / "other", classes=("ant", "bee", "cow"), n_train=2, n_test=1, seed=1)
        (tmp / "empty").mkdir()
        self.paths = {"tmp": tmp, "data": self.data, "other": self.other, "empty": tmp / "empty"}
        base = self.config()
        torch.manual_seed(7)
        self.ckpt = tmp / "pretrained" / "last.ckpt"
        self.ckpt.parent.mkdir()
        torch.save({"format": 1, "kind": "pretrain", "model": build_lejepa_model(base).state_dict(), "config": base,
                    "step": 3}, self.ckpt)
        teacher_cfg = self.config("model.name=vit_tiny")
        self.teachers = []
        for seed in (1, 2):
            torch.manual_seed(seed)
            path = tmp / f"teacher{seed}" / "last.ckpt"
            path.parent.mkdir()
            vit = create_model("vit_tiny", num_classes=2, img_size=16, **OVERRIDES)
            torch.save({"format": 1, "kind": "finetune", "model": vit.state_dict(), "config": teacher_cfg, "step": 1},
                       path)
            self.teachers.append(path)
        self.paths.update(ckpt=self.ckpt, teacher1=self.teachers[0], teacher2=self.teachers[1])
        g = torch.Generator().manual_seed(0)
        self.embeddings = torch.randn(4, 8, 8, generator=g, dtype=torch.float64)  # (views, batch, dim)
        self.images = load_data(base, "train").images[::4]  # 8 images, both classes
        self._seen: dict = {}

    def fill(self, value):
        return value.format(**self.paths) if isinstance(value, str) else value

    def config(self, *overrides: str) -> dict:
        return tiny_config(self.data, self.tmp / "runs", *(self.fill(o) for o in overrides))

    def _memo(self, what: str, cfg: dict, compute):
        key = (what, dump_config(cfg))
        if key not in self._seen:
            self._seen[key] = compute(copy.deepcopy(cfg))
        return self._seen[key]

    # --- trainers, stopped where the loop would start
    def _capture(self, module, command, cfg) -> Trainer:
        kept = {}

        def keep(fabric, run, model, optimizer, scheduler, step_fn, *, total_steps, rng, images_per_step, kind,
                 monitors=(), **_):
            kept["trainer"] = Trainer(fabric, model, optimizer, scheduler, step_fn, total_steps, images_per_step, rng,
                                      list(monitors))
            return {"paused": True}

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(module, "fit", keep)
            command(cfg)
        return kept["trainer"]

    def pretrain(self, cfg) -> Trainer:
        return self._memo("pretrain", cfg, lambda c: self._capture(PT, PT.pretrain, c))

    def supervised(self, cfg, kind: str) -> SimpleNamespace:
        """The trainer of ``kind`` (finetune | distill) and what its first step did: its input, its logits, its
        loss and the calls to the mixing, RandAugment and distillation functions."""
        def run(c):
            t = self._capture(S, getattr(S, kind), c)
            seen = SimpleNamespace(trainer=t, mix=[], randaugment=[], distill=[])
            real_mix, real_ra, real_hard = S.mix_batch, S._randaugment, S.hard_label_distillation_loss

            def mix(x, y, num_classes, mixup, cutmix, g, smoothing=0.0):
                out = real_mix(x, y, num_classes, mixup, cutmix, g, smoothing)
                seen.mix.append(dict(mixup=mixup, cutmix=cutmix, smoothing=smoothing, target=out[1]))
                return out

            def hook(module, args, output):
                seen.x, seen.logits = args[0].detach().clone(), output.detach().clone()

            handle = t.inner.register_forward_hook(hook)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(S, "mix_batch", mix)
                mp.setattr(S, "_randaugment", lambda images: seen.randaugment.append(images.clone()) or real_ra(images))
                mp.setattr(S, "hard_label_distillation_loss", lambda logits, ce, teacher, alpha: seen.distill.append(
                    dict(teacher=teacher.detach(), alpha=alpha)) or real_hard(logits, ce, teacher, alpha))
                seen.out = t.step_fn(0)
            handle.remove()
            return seen
        return self._memo(kind, cfg, run)

    def fabric_arguments(self, cfg) -> dict:
        """The keyword arguments pretraining constructs Fabric with (the run stops there)."""
        class Stop(Exception):
            pass

        def record(**kw):
            kept.update(kw)
            raise Stop

        kept: dict = {}
        import lightning_fabric

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(lightning_fabric, "Fabric", record)
            with pytest.raises(Stop):
                PT.pretrain(copy.deepcopy(cfg))
        return {k: v for k, v in kept.items() if k != "loggers"}

    # --- builders
    def views(self, cfg) -> SimpleNamespace:
        """The multi-crop views of the fixed images as the trainer builds them; every crop's affine matrix, every
        colour-jitter factor and blur kernel on the way; the views' pixels in [0, 1] (normalisation undone)."""
        def run(c):
            thetas, jitter, kernels = [], [], []
            real_grid, real_jitter, real_conv = F.affine_grid, A.color_jitter, F.conv2d

            def conv(x, weight, **kw):  # the blur's separable passes: keep the first one's per-image kernels
                if weight.shape[-1] == 1:
                    kernels.append(weight[::3].flatten(1).clone())
                return real_conv(x, weight, **kw)

            mean, std = normalization_for(c)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(F, "affine_grid", lambda theta, size, **kw: thetas.append(theta.clone()) or
                           real_grid(theta, size, **kw))
                mp.setattr(A, "color_jitter", lambda x, *f: jitter.append([t.clone() for t in f]) or real_jitter(x, *f))
                mp.setattr(F, "conv2d", conv)
                views = BatchedMultiCrop(MultiCropConfig.from_config(c["views"], mean, std))(
                    self.images, torch.Generator().manual_seed(1))
            m, s = torch.tensor(mean).view(1, 3, 1, 1), torch.tensor(std).view(1, 3, 1, 1)
            return SimpleNamespace(views=views, pixels=[v * s + m for v in views], thetas=thetas, jitter=jitter,
                                   blur_kernels=kernels)
        return self._memo("views", cfg, run)

    def loss_terms(self, cfg) -> torch.Tensor:
        """``(loss, pred_loss, sigreg_loss)`` of the fixed embeddings under the loss the trainer builds."""
        return torch.stack(list(build_lejepa_model(cfg).loss(self.embeddings))[:3])

    def probe(self, cfg) -> SimpleNamespace:
        """What probe() hands the linear and k-NN probes (they are replaced by recorders) and what it reports."""
        def run(c):
            calls: dict[str, list] = {"quick": [], "standard": [], "knn": []}

            def recorder(name, out):
                return lambda *a, **kw: calls[name].append((a, kw)) or dict(out)

            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(P, "select_linear_probe", recorder("quick", {"linear_top1": 1.0}))
                mp.setattr(P, "standard_linear_probe", recorder("standard", {"linear_top1": 2.0}))
                knn = recorder("knn", {"knn_top1": 3.0})
                mp.setattr(P, "knn_probe", knn)  # the test k-NN
                mp.setattr(aot_lib.training.evaluation, "knn_probe", knn)  # the validation k-NN (knn_val_probe's)
                result = P.probe(c, self.ckpt)
            return SimpleNamespace(result=result, **calls)
        return self._memo("probe", cfg, run)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("keys")
    mp = pytest.MonkeyPatch()
    mp.setenv("AOT_CACHE", str(tmp / "cache"))
    for module in (runs, P):  # two git processes per run folder and probe: not what is tested here
        mp.setattr(module, "git_commit", lambda: "c0ffee")
    yield World(tmp)
    mp.undo()


def lejepa_reference(y: torch.Tensor, alpha: float, num_global: int = 2, num_slices: int = 16, t_max: float = 3.0,
                     n_points: int = 17, seed: int = 0, sample: str = "per_view", normalize: bool = False):
    """``(loss, pred, sigreg)`` of Eq. total in float64, written out: every view pulled to the mean of the global
    views; the Epps-Pulley statistic of each sample (each view, or all views pooled) along ``num_slices``
    directions of ``seed`` (the empirical characteristic function evaluated directly, the integral over R as
    twice torch's trapezoid rule on [0, t_max] with the Gaussian weight, times the sample size), averaged."""
    y = y.double()
    pred = (y[:num_global].mean(0) - y).square().mean()
    samples = y if sample == "per_view" else y.reshape(1, -1, y.shape[-1])
    if normalize:  # centred, then mean squared norm = dimension (Appendix A)
        samples = samples - samples.mean(1, keepdim=True)
        samples = samples / (samples.square().sum(-1).mean(-1) / y.shape[-1]).sqrt()[:, None, None]
    u = samples @ sample_directions(y.shape[-1], num_slices, seed).double()  # (samples, N, slices)
    t = torch.linspace(0, t_max, n_points, dtype=torch.float64)
    ut = u[..., None] * t
    gauss = torch.exp(-t.square() / 2)
    err = (torch.cos(ut).mean(1) - gauss).square() + torch.sin(ut).mean(1).square()
    sigreg = (2 * torch.trapezoid(err * gauss, t, dim=-1) * u.shape[1]).mean()
    return torch.stack([pred + alpha * sigreg, pred, sigreg])


TINY_LOSS = dict(alpha=0.05 / 0.95)  # tiny_config: lambda 0.05, 16 slices, the rest at the defaults


def assert_loss_is(world, cfg, **settings):
    # float64 on both sides; the implementation's angle-addition recurrence rounds ~1e-15 per node
    torch.testing.assert_close(world.loss_terms(cfg), lejepa_reference(world.embeddings, **{**TINY_LOSS, **settings}),
                               rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- the keys and their effects

EFFECTS: dict[str, tuple] = {}  # key -> (another valid value, overrides both configs need, check(world, old, new))


def pins(key: str, new, *base: str):
    def register(check):
        EFFECTS[key] = (new, base, check)
        return check
    return register


# keys that change no computation by design: (another valid value, why)
NO_EFFECT: dict[str, tuple] = {
    "description": ("another text", "free text recorded in config.yaml"),
    "run.name": ("other", "names the run folder <run.out_dir>/<run.name>"),
    "run.out_dir": ("{tmp}/elsewhere", "the folder run folders are made in"),
    "run.ckpt_every": (7, "how often last.ckpt is written; a resumed run continues the same trajectory "
                          "(tests/test_loop_values.py)"),
    "run.log_every": (3, "how often the loss is logged (tests/test_loop_values.py)"),
    "run.resume": (False, "whether a launch continues its folder's checkpoint (tests/test_runs_values.py)"),
    "run.overwrite": (True, "with run.resume=false, whether an existing run's results are replaced "
                            "(tests/test_runs_values.py)"),
    "run.stop_after": (2, "how many steps one launch takes before it pauses; the paused run resumes to the same "
                          "trajectory (tests/test_loop_values.py)"),
    "run.progress": (True, "the progress bar"),
    "model.imports": (["json"], "modules imported before the model is built, to register a user's own families "
                                "(tests/test_plugin_family.py); importing one that registers nothing changes nothing"),
}


# --- run.seed and the model

@pins("run.seed", 5)
def _seed(w, old, new):
    for cfg, seed in ((old, 0), (new, 5)):
        t = w.pretrain(cfg)
        torch.manual_seed(seed)  # Fabric seeds the initialisation with run.seed
        want = build_lejepa_model(cfg).state_dict()
        assert all(torch.equal(v, want[k]) for k, v in t.inner.state_dict().items())
        assert torch.equal(t.rng.get_state(), torch.Generator().manual_seed(seed + 1).get_state())  # the views' draws
        loss = copy.deepcopy(t.inner.loss)  # SIGReg counts its training-mode calls: leave the trainer's as it is
        torch.testing.assert_close(torch.stack(list(loss(w.embeddings))[:3]),
                                   lejepa_reference(w.embeddings, **TINY_LOSS, seed=seed), rtol=1e-10, atol=1e-12)


@pins("model.name", "crate_tiny")
def _model_name(w, old, new):
    assert type(w.pretrain(old).inner.encoder).__name__ == "AoTADMM"
    assert type(w.pretrain(new).inner.encoder).__name__ == "CRATE"


@pins("model.compile", True)
def _compile(w, old, new):  # the layers' forward is the compiled one (nothing is run: torch.compile is lazy)
    assert not any("forward" in vars(b) for b in w.pretrain(old).inner.encoder.blocks)
    blocks = w.pretrain(new).inner.encoder.blocks
    compiled = vars(blocks[0])["forward"].__func__  # torch.compile's wrapper of the layer class's forward
    assert compiled._torchdynamo_orig_callable is type(blocks[0]).forward
    assert all(vars(b)["forward"].__func__ is compiled for b in blocks)


# --- data

@pins("data.name", "cifar10")
def _data_name(w, old, new):
    for cfg, folder, classes, stats, key in ((old, w.data, ["cat", "dog"], IMAGENET, "data"),
                                             (new, w.data / "cifar10", ["bird", "cat", "frog"], CIFAR10, "cifar10_folder")):
        train = load_data(cfg, "train")
        assert train.classes == classes and train.provenance.key == key and train.provenance.path == str(folder)
        assert normalization_for(cfg) == stats


@pins("data.root", "{other}")
def _data_root(w, old, new):
    assert load_data(old, "train").classes == ["cat", "dog"]
    train, test = load_train_test(new)
    assert train.classes == ["ant", "bee", "cow"] and train.provenance.path == str(w.other) and len(test) == 3


@pins("data.download", True, "data.name=cifar10", "data.root={empty}")
def _download(w, old, new):
    import torchvision

    asked = []

    class FakeCIFAR10:
        classes = ["a", "b"]

        def __init__(self, root, train, download):
            asked.append(download)
            self.data, self.targets = np.zeros((2, 32, 32, 3), np.uint8), [0, 1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torchvision.datasets, "CIFAR10", FakeCIFAR10)
        with pytest.raises(DataError, match=f"^cifar10 not found under {w.tmp / 'empty'}. "):
            load_data(old, "train")
        assert len(load_data(new, "train")) == 2 and asked == [True]


@pins("data.image_size", 8)
def _image_size(w, old, new):
    assert load_data(old, "train").images.shape == (32, 3, 16, 16)
    assert load_data(new, "train").images.shape == (32, 3, 8, 8)


@pins("data.train_subset", 4)
def _train_subset(w, old, new):
    assert len(load_data(old, "train")) == 32 and load_data(new, "train").labels.tolist() == [0, 0, 1, 1]
    assert len(load_train_test(new)[0]) == 4


@pins("data.test_subset", 2)
def _test_subset(w, old, new):
    assert len(load_data(old, "test")) == 16 and load_data(new, "test").labels.tolist() == [0, 1]
    assert len(load_train_test(new)[1]) == 2


STREAM = ("data.name=stream", "data.root={data}", "data.image_size=null")


def _stream_loader(cfg) -> dict:
    """The keyword arguments pretraining builds its litdata loader with (data.name=stream)."""
    import aot_lib.data.streaming as St

    kept = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(St, "make_stream_loader", lambda path, batch, **kw: kept.update(kw, path=path, batch=batch))
        mp.setattr(St, "StreamBatches", lambda loader, device: SimpleNamespace(n_images=32))
        mp.setattr(St, "stream_provenance", lambda root: {"path": root})
        PT._stream_source(SimpleNamespace(world_size=1, global_rank=0, device=torch.device("cpu")), cfg)
    return kept


def _stream_key(name, new, old_value):
    def check(w, old, new_cfg):
        assert _stream_loader(old)[name] == old_value
        assert _stream_loader(new_cfg)[name] == new
    return check


def _stream_keys():
    from aot_lib.data.streaming import default_stream_workers, working_size_for

    for key, new, arg, old in (
            ("data.stream_workers", 3, "num_workers", default_stream_workers(1)),  # one process: this machine's share
            ("data.stream_working_size", 24, "image_size", working_size_for(16, (0.3, 1.0))),  # no view upsampled
            ("data.stream_fit", "squash", "fit", "crop"),
            ("data.stream_decode_device", "cpu", "decode_device", None)):
        pins(key, new, *STREAM)(_stream_key(arg, new, old))


_stream_keys()


# --- views

@pins("views.n_global", 3)
def _n_global(w, old, new):
    for cfg, n in ((old, 2), (new, 3)):
        assert [v.shape[-1] for v in w.views(cfg).views] == [16] * n + [8] * 2
        assert build_lejepa_model(cfg).loss.num_global == n
        assert_loss_is(w, cfg, num_global=n)


@pins("views.n_local", 3)
def _n_local(w, old, new):
    for cfg, n in ((old, 2), (new, 3)):
        assert [v.shape for v in w.views(cfg).views] == [(8, 3, 16, 16)] * 2 + [(8, 3, 8, 8)] * n


@pins("views.global_size", 12)
def _global_size(w, old, new):
    for cfg, size in ((old, 16), (new, 12)):
        assert [v.shape[-1] for v in w.views(cfg).views] == [size, size, 8, 8]
        assert build_encoder(cfg).img_size == size  # the encoder is built for the global views


@pins("views.local_size", 4)
def _local_size(w, old, new):
    for cfg, size in ((old, 8), (new, 4)):
        assert [v.shape[-1] for v in w.views(cfg).views] == [16, 16, size, size]


def _areas(theta: torch.Tensor) -> torch.Tensor:
    return (theta[:, 0, 0] * theta[:, 1, 1]).abs()  # crop width x height, as fractions of the image


def _scale_key(views: slice, old_range, new_value):
    def check(w, old, new):
        for a in map(_areas, w.views(old).thetas[views]):
            assert ((a >= old_range[0] - 1e-6) & (a <= old_range[1] + 1e-6)).all() and a.max() - a.min() > 0.05
        for a in map(_areas, w.views(new).thetas[views]):
            # every crop has the one area allowed; float32 rounding of sqrt(area * r) * sqrt(area / r)
            torch.testing.assert_close(a, torch.full_like(a, new_value), rtol=1e-6, atol=0)
    return check


pins("views.global_scale", [0.25, 0.25])(_scale_key(slice(0, 2), (0.3, 1.0), 0.25))
pins("views.local_scale", [0.1, 0.1])(_scale_key(slice(2, 4), (0.05, 0.3), 0.1))


@pins("views.flip_p", 1.0)
def _flip(w, old, new):
    signs = torch.cat([t[:, 0, 0].sign() for t in w.views(old).thetas])
    assert (signs > 0).any() and (signs < 0).any()
    assert all((t[:, 0, 0] < 0).all() for t in w.views(new).thetas)  # every crop mirrored


def _jitter_key(factor: int, neutral: float, new_value):
    """brightness, contrast, saturation (factors around 1) or hue (a shift around 0) at one value for all."""
    def check(w, old, new):
        drawn = torch.cat([f[factor] for f in w.views(old).jitter])
        assert (drawn != neutral).any()
        for f in w.views(new).jitter:
            assert (f[factor] == neutral).all()
    return check


pins("views.brightness", 0.0)(_jitter_key(0, 1.0, 0.0))
pins("views.contrast", 0.0)(_jitter_key(1, 1.0, 0.0))
pins("views.saturation", 0.0)(_jitter_key(2, 1.0, 0.0))
pins("views.hue", 0.0)(_jitter_key(3, 0.0, 0.0))


@pins("views.jitter_p", 0.0)
def _jitter_p(w, old, new):
    assert any((f[0] != 1).any() for f in w.views(old).jitter)
    for f in w.views(new).jitter:  # never jittered: the identity's factors for every image and view
        assert all((x == 1).all() for x in f[:3]) and (f[3] == 0).all()


def _gray(pixels: torch.Tensor) -> torch.Tensor:
    """Per image: are the three channels equal (float32 rounding of undoing the normalisation)?"""
    return ((pixels - pixels.mean(1, keepdim=True)).abs() < 1e-5).flatten(1).all(1)


@pins("views.grayscale_p", 1.0)
def _grayscale(w, old, new):
    assert not all(_gray(p).all() for p in w.views(old).pixels)
    assert all(_gray(p).all() for p in w.views(new).pixels)


@pins("views.solarize_p", 1.0)
def _solarize(w, old, new):
    assert max(p.max() for p in w.views(old).pixels) > 0.6
    # values >= 0.5 inverted in every image and view; 1e-5: float32 rounding of undoing the normalisation
    assert max(p.max() for p in w.views(new).pixels) <= 0.5 + 1e-5


@pins("views.blur_p", 1.0)
def _blur(w, old, new):
    def variation(x):  # total variation of each image
        return x.diff(dim=-1).abs().sum((1, 2, 3)) + x.diff(dim=-2).abs().sum((1, 2, 3))

    assert w.views(old).blur_kernels == []
    kernels = w.views(new).blur_kernels
    assert len(kernels) == 4  # every view, each image with a Gaussian of its own sigma, never the identity
    for k in kernels:
        delta = torch.zeros_like(k)
        delta[:, k.shape[1] // 2] = 1
        assert (k != delta).any(1).all() and torch.allclose(k.sum(1), torch.ones(len(k)))
    # blur draws its numbers whether on or not, so both see the same crops and colours: the same views, smoother
    for a, b in zip(w.views(old).pixels, w.views(new).pixels):
        assert variation(b).sum() < variation(a).sum()


# --- projector and loss

def _projector_key(new_layers):
    def check(w, old, new):
        def layers(cfg):
            return [(m.in_features, m.out_features) for m in build_lejepa_model(cfg).projector.modules()
                    if isinstance(m, nn.Linear)]
        assert layers(old) == [(32, 32), (32, 32), (32, 8)]
        assert layers(new) == new_layers
    return check


pins("projector.hidden_dim", 16)(_projector_key([(32, 16), (16, 16), (16, 8)]))
pins("projector.out_dim", 4)(_projector_key([(32, 32), (32, 32), (32, 4)]))
pins("projector.num_layers", 2)(_projector_key([(32, 32), (32, 8)]))


@pins("loss.lejepa_lambda", 0.2)
def _lejepa_lambda(w, old, new):
    # LeJEPA's (1 - lambda) pred + lambda SIGReg is Eq. total with alpha = lambda / (1 - lambda)
    assert build_lejepa_model(old).loss.alpha == 0.05 / 0.95 and build_lejepa_model(new).loss.alpha == 0.2 / 0.8
    assert_loss_is(w, old, alpha=0.05 / 0.95)
    assert_loss_is(w, new, alpha=0.25)


def _loss_key(setting: str, old_value, new_value):
    def check(w, old, new):
        assert_loss_is(w, old, **{setting: old_value})
        assert_loss_is(w, new, **{setting: new_value})
    return check


pins("loss.num_slices", 8)(_loss_key("num_slices", 16, 8))
pins("loss.t_max", 2.0)(_loss_key("t_max", 3.0, 2.0))
pins("loss.n_points", 9)(_loss_key("n_points", 17, 9))
pins("loss.sigreg_sample", "pooled")(_loss_key("sample", "per_view", "pooled"))
pins("loss.sigreg_normalize", True)(_loss_key("normalize", False, True))


# --- pretraining's optimiser and schedule (32 images, batches of 8: 4 steps an epoch)

NO_MAX_STEPS = ("optim.max_steps=null",)


@pins("optim.lr", 1e-3)
def _lr(w, old, new):
    assert w.pretrain(old).initial_lrs() == [5e-4, 5e-4] and w.pretrain(new).initial_lrs() == [1e-3, 1e-3]


@pins("optim.weight_decay", 0.2)
def _weight_decay(w, old, new):  # weight matrices decay, the rest does not
    assert w.pretrain(old).decays() == [0.05, 0.0] and w.pretrain(new).decays() == [0.2, 0.0]


@pins("optim.batch_size", 4, *NO_MAX_STEPS)
def _batch_size(w, old, new):
    for cfg, batch, steps in ((old, 8, 800 * 4), (new, 4, 800 * 8)):
        t = w.pretrain(cfg)
        assert (t.images_per_step, t.total_steps) == (batch, steps)


@pins("optim.epochs", 3, *NO_MAX_STEPS)
def _epochs(w, old, new):
    assert w.pretrain(old).total_steps == 3200 and w.pretrain(new).total_steps == 12


@pins("optim.max_steps", 6)
def _max_steps(w, old, new):
    assert w.pretrain(old).total_steps == 4 and w.pretrain(new).total_steps == 6


@pins("optim.warmup_epochs", 0.5, *NO_MAX_STEPS)
def _warmup(w, old, new):
    t = w.pretrain(old)
    assert [t.factor(s) for s in (0, 39)] == [1 / 40, 1.0]  # 10 epochs of 4 steps
    t = w.pretrain(new)
    assert [t.factor(s) for s in (0, 1, 2)] == [0.5, 1.0, 1.0]  # half an epoch: 2 steps, then the cosine from 1


@pins("optim.min_lr_ratio", 0.25)
def _min_lr(w, old, new):  # the cosine ends at the ratio on the last step
    assert w.pretrain(old).factor(3) == 0.0 and w.pretrain(new).factor(3) == 0.25


# keys that act inside the loop: one real step (two views of four images keep it short)
ONE_STEP = ("optim.max_steps=1", "views.n_local=0", "optim.batch_size=4")


def _real_pretrain(w, cfg, name: str):
    cfg = copy.deepcopy(cfg)
    cfg["run"]["out_dir"] = str(w.tmp / "real" / name)
    return PT.pretrain(cfg)


@pins("optim.grad_clip", 0.5, *ONE_STEP)
def _grad_clip(w, old, new):
    from lightning_fabric import Fabric

    clips = []
    real = Fabric.clip_gradients
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Fabric, "clip_gradients", lambda self, *a, **kw: clips.append(kw["max_norm"]) or real(self, *a, **kw))
        assert _real_pretrain(w, old, "noclip")["step"] == 1 and clips == []
        assert _real_pretrain(w, new, "clip")["step"] == 1 and clips == [0.5]


@pins("optim.max_skipped_steps", 0, *ONE_STEP)
def _max_skipped(w, old, new):
    import aot_lib.training.loop

    with pytest.MonkeyPatch.context() as mp:  # every gradient not finite
        mp.setattr(aot_lib.training.loop, "grad_norm", lambda model: torch.tensor(float("inf")))
        assert _real_pretrain(w, old, "skip10")["skipped_steps"] == 1  # up to 10 in a row are skipped
        with raises_exactly(NonFiniteLossError,
                            "the pretrain gradient was not finite for 1 steps in a row (up to step 0); the weights were "
                            "not updated by them. Lower optim.lr, set optim.grad_clip, or use fabric.precision=32-true, "
                            "then run again"):
            _real_pretrain(w, new, "skip0")


# --- Fabric

def _fabric_key(name, new_value, old_value):
    def check(w, old, new):
        assert w.fabric_arguments(old)[name] == old_value()
        assert w.fabric_arguments(new)[name] == new_value
    return check


def _auto_accelerator():
    return "cuda" if torch.cuda.is_available() else "cpu"


def _auto_precision():
    return "bf16-mixed" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "32-true"


# tiny_config pins the CPU (tests/helpers.py); these two start from the default, auto
pins("fabric.accelerator", "mps", "fabric.accelerator=auto")(_fabric_key("accelerator", "mps", _auto_accelerator))
pins("fabric.devices", 2)(_fabric_key("devices", 2, lambda: 1))
pins("fabric.num_nodes", 2)(_fabric_key("num_nodes", 2, lambda: 1))
pins("fabric.strategy", "ddp")(_fabric_key("strategy", "ddp", lambda: "auto"))
pins("fabric.precision", "bf16-mixed", "fabric.accelerator=auto")(_fabric_key("precision", "bf16-mixed", _auto_precision))


# --- the probes (recorders stand in for them: what reaches them is the effect)

def _quick(p) -> tuple:
    """``(train labels, test features, lr, weight decay, val_fraction, keywords)`` the quick probe was given."""
    (a, kw), = p.quick
    return a[1], a[2], a[4], a[5], a[6], kw


@pins("probe.protocol", "standard")
def _protocol(w, old, new):
    p = w.probe(old)
    assert len(p.quick) == 1 and p.standard == [] and p.result["protocol"] == P.PROTOCOLS["quick"]
    p = w.probe(new)
    (args, kw), = p.standard
    assert p.quick == [] and p.result["protocol"] == P.PROTOCOLS["standard"] and p.result["linear_top1"] == 2.0
    assert args[3:] == (16, *IMAGENET) and (kw["lr"], kw["batch_size"], kw["epochs"]) == (0.1, 256, 5)


def _quick_key(index: int, old_value, new_value):
    def check(w, old, new):
        assert _quick(w.probe(old))[index] == old_value and _quick(w.probe(new))[index] == new_value
    return check


pins("probe.lr", 0.02)(_quick_key(2, [1e-3, 3e-3, 1e-2], 0.02))
pins("probe.weight_decay", [0.0, 0.1])(_quick_key(3, 0.0, [0.0, 0.1]))
_KW = {"epochs": 5, "batch_size": 1024, "seed": 0, "lr_below": None, "lr_above": None}
pins("probe.epochs", 3)(_quick_key(5, _KW, {**_KW, "epochs": 3}))
pins("probe.batch_size", 7)(_quick_key(5, _KW, {**_KW, "batch_size": 7}))
pins("probe.lr_below", [1e-4])(_quick_key(5, _KW, {**_KW, "lr_below": [1e-4]}))
pins("probe.lr_above", [0.1, 0.3])(_quick_key(5, _KW, {**_KW, "lr_above": [0.1, 0.3]}))


@pins("probe.val_fraction", 0.25)
def _val_fraction(w, old, new):
    for cfg, fraction, held_out in ((old, 0.1, 2), (new, 0.25, 4)):  # of 16 images a class: round(16 * fraction)
        p = w.probe(cfg)
        assert _quick(p)[4] == fraction
        (val_args, _), _ = p.knn  # the k-NN validation score: the probe's split (the test one follows)
        assert [len(val_args[0]), len(val_args[2])] == [32 - 2 * held_out, 2 * held_out]


@pins("probe.test", False)
def _test(w, old, new):
    p = w.probe(old)
    assert _quick(p)[1] is not None and len(p.knn) == 2 and p.result["test_images"] == 16
    p = w.probe(new)  # validation only: no test features, no test k-NN
    assert _quick(p)[1] is None and len(p.knn) == 1 and p.result["test_images"] == 0
    assert p.result["data"]["test"] is None


def _standard_key(name, old_value, new_value):
    def check(w, old, new):
        assert w.probe(old).standard[0][1][name] == old_value and w.probe(new).standard[0][1][name] == new_value
    return check


pins("probe.standard_lr", 0.05, "probe.protocol=standard")(_standard_key("lr", 0.1, 0.05))
pins("probe.standard_batch_size", 6, "probe.protocol=standard")(_standard_key("batch_size", 256, 6))


def _knn_key(name, old_value, new_value):
    def check(w, old, new):
        for cfg, value in ((old, old_value), (new, new_value)):
            assert [kw[name] for _, kw in w.probe(cfg).knn] == [value, value]  # validation and test k-NN
    return check


pins("probe.knn_k", 5)(_knn_key("k", 3, 5))
pins("probe.knn_t", 0.5)(_knn_key("temperature", 0.07, 0.5))


# --- monitors (one step of the loop would log them; the trainer's list is what the loop calls)

EVERY = ("monitor.every=1",)


@pins("monitor.every", 5)
def _every(w, old, new):
    assert w.pretrain(old).monitors == []
    monitors = w.pretrain(new).monitors
    assert [type(m) for m in monitors] == [RankMe, Theorem1Monitor, WhiteBoxAudit]
    assert [m.every for m in monitors] == [5, 5, 5]


def _monitor_switch(kind):
    def check(w, old, new):
        types = [type(m) for m in w.pretrain(old).monitors]
        assert types == [RankMe, Theorem1Monitor, WhiteBoxAudit]
        assert [type(m) for m in w.pretrain(new).monitors] == [t for t in types if t is not kind]
    return check


pins("monitor.rankme", False, *EVERY)(_monitor_switch(RankMe))
pins("monitor.theorem1", False, *EVERY)(_monitor_switch(Theorem1Monitor))
pins("monitor.audit", False, *EVERY)(_monitor_switch(WhiteBoxAudit))


@pins("monitor.images", 4, *EVERY)
def _images(w, old, new):
    train = load_data(old, "train")
    for cfg, n in ((old, 32), (new, 4)):  # the first images of the training set, at most monitor.images
        want = prepare_images(train.images[:n], 16, *IMAGENET)
        for m in w.pretrain(cfg).monitors[1:]:
            assert torch.equal(m.images, want)


@pins("monitor.eps", 0.25, *EVERY)
def _eps(w, old, new):
    assert [m.eps for m in w.pretrain(old).monitors[1:]] == [0.5, 0.5]
    assert [m.eps for m in w.pretrain(new).monitors[1:]] == [0.25, 0.25]


@pins("monitor.knn", True, *EVERY)
def _knn(w, old, new):
    assert not any(isinstance(m, OnlineKNN) for m in w.pretrain(old).monitors)
    m = w.pretrain(new).monitors[-1]
    # the probe's split of 32 images (2 of 16 per class held out), the probe's k and temperature
    assert isinstance(m, OnlineKNN) and (len(m.bank_images), len(m.val_images), m.k, m.temperature) == (28, 4, 3, 0.07)


def _knn_size(field_name, old_n, new_n):
    def check(w, old, new):
        assert len(getattr(w.pretrain(old).monitors[-1], field_name)) == old_n
        assert len(getattr(w.pretrain(new).monitors[-1], field_name)) == new_n
    return check


pins("monitor.knn_bank", 6, *EVERY, "monitor.knn=true")(_knn_size("bank_images", 28, 6))
pins("monitor.knn_val", 2, *EVERY, "monitor.knn=true")(_knn_size("val_images", 4, 2))


# --- fine-tuning and distillation (32 images, batches of 8, one epoch: 4 steps)

TEACHER = ("distill.teacher={teacher1}",)


def _labels_of_first_batch(cfg, batch=8):
    return load_data(cfg, "train").labels[batch_indices(0, 0, 0, 32, batch)]


def _supervised_schedule_keys(kind: str, base: tuple, lr: float):
    def lr_check(w, old, new):
        assert w.supervised(old, kind).trainer.initial_lrs() == [lr, lr]
        assert w.supervised(new, kind).trainer.initial_lrs() == [3e-4, 3e-4]

    def decay_check(w, old, new):
        assert w.supervised(old, kind).trainer.decays() == [0.05, 0.0]
        assert w.supervised(new, kind).trainer.decays() == [0.2, 0.0]

    def epochs_check(w, old, new):
        assert w.supervised(old, kind).trainer.total_steps == 4 and w.supervised(new, kind).trainer.total_steps == 8

    def batch_check(w, old, new):
        for cfg, batch, steps in ((old, 8, 4), (new, 4, 8)):
            s = w.supervised(cfg, kind)
            assert (s.trainer.images_per_step, s.trainer.total_steps, len(s.x)) == (batch, steps, batch)

    def warmup_check(w, old, new):
        old_t, new_t = w.supervised(old, kind).trainer, w.supervised(new, kind).trainer
        assert [old_t.factor(s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]  # 5 epochs, cut to the 4 steps
        assert [new_t.factor(s) for s in range(2)] == [0.5, 1.0]  # half an epoch: 2 steps

    pins(f"{kind}.lr", 3e-4, *base)(lr_check)
    pins(f"{kind}.weight_decay", 0.2, *base)(decay_check)
    pins(f"{kind}.epochs", 2, *base)(epochs_check)
    pins(f"{kind}.batch_size", 4, *base)(batch_check)
    pins(f"{kind}.warmup_epochs", 0.5, *base)(warmup_check)


_supervised_schedule_keys("finetune", (), 1e-4)
_supervised_schedule_keys("distill", TEACHER, 5e-4)


def _encoder_weights(ckpt_path) -> dict:
    return runs.encoder_state_dict(torch.load(ckpt_path, weights_only=True))


def _starts_from_checkpoint(kind, *base):
    def check(w, old, new):
        want = _encoder_weights(w.ckpt)
        assert not torch.equal(w.supervised(old, kind).trainer.inner.stem.cls_token, want["stem.cls_token"])
        got = w.supervised(new, kind).trainer.inner.state_dict()
        assert all(torch.equal(got[k], v) for k, v in want.items())  # every encoder weight, the head aside
    return check


pins("finetune.checkpoint", "{ckpt}")(_starts_from_checkpoint("finetune"))
pins("distill.student_init", "{ckpt}", *TEACHER)(_starts_from_checkpoint("distill", *TEACHER))


@pins("finetune.image_size", 8)
def _finetune_size(w, old, new):
    assert w.supervised(old, "finetune").x.shape == (8, 3, 16, 16)
    assert w.supervised(new, "finetune").x.shape == (8, 3, 8, 8)


@pins("finetune.label_smoothing", 0.3)
def _smoothing(w, old, new):
    y = _labels_of_first_batch(old)
    for cfg, eps in ((old, 0.1), (new, 0.3)):
        s = w.supervised(cfg, "finetune")
        # float32 logits; the reference smooths the one-hot target by hand, in float64
        soft = F.one_hot(y, 2).double() * (1 - eps) + eps / 2
        want = -(soft * F.log_softmax(s.logits.double(), 1)).sum(1).mean()
        torch.testing.assert_close(s.out["loss"].double(), want, rtol=1e-6, atol=0)


def _mixing_key(name, value):
    def check(w, old, new):
        assert w.supervised(old, "finetune").mix == []
        s = w.supervised(new, "finetune")
        (call,) = s.mix
        assert (call["mixup"], call["cutmix"], call["smoothing"]) == ((value, 0.0) if name == "mixup" else (0.0, value)) + (0.1,)
        # the loss is the cross-entropy against the mixed soft targets (float32 logits; float64 reference)
        want = -(call["target"].double() * F.log_softmax(s.logits.double(), 1)).sum(1).mean()
        torch.testing.assert_close(s.out["loss"].double(), want, rtol=1e-6, atol=0)
    return check


pins("finetune.mixup", 0.4)(_mixing_key("mixup", 0.4))
pins("finetune.cutmix", 1.0)(_mixing_key("cutmix", 1.0))


@pins("finetune.layer_decay", 0.5)
def _layer_decay(w, old, new):
    assert w.supervised(old, "finetune").trainer.initial_lrs() == [1e-4, 1e-4]
    # a 1-layer encoder: the stem at 0.5^2, the layer at 0.5, the head at the full rate
    got = sorted(w.supervised(new, "finetune").trainer.initial_lrs())
    assert got == pytest.approx(sorted([1e-4 * 0.25, 1e-4 * 0.25, 1e-4 * 0.5, 1e-4 * 0.5, 1e-4, 1e-4]), rel=1e-12)


@pins("finetune.randaugment", True)
def _randaugment(w, old, new):
    assert w.supervised(old, "finetune").randaugment == []
    (images,) = w.supervised(new, "finetune").randaugment
    assert torch.equal(images, load_data(old, "train").images[batch_indices(0, 0, 0, 32, 8)])  # the step's batch


def _teacher(path) -> nn.Module:
    vit = create_model("vit_tiny", num_classes=2, img_size=16, **OVERRIDES)
    vit.load_state_dict(torch.load(path, weights_only=True)["model"])
    return vit.eval()


@pins("distill.teacher", "{teacher2}", *TEACHER)
def _distill_teacher(w, old, new):
    for cfg, path in ((old, w.teachers[0]), (new, w.teachers[1])):
        s = w.supervised(cfg, "distill")
        with torch.no_grad():
            want = _teacher(path)(s.x)
        torch.testing.assert_close(s.distill[0]["teacher"], want, rtol=0, atol=0)


@pins("distill.teacher_model", "crate_tiny", *TEACHER)
def _teacher_model(w, old, new):
    assert len(w.supervised(old, "distill").distill) == 1
    with pytest.raises(runs.CheckpointError, match=f"^teacher checkpoint {w.teachers[0]} does not fit crate_tiny "
                                                   r"with 2 classes \(.*\); check distill.teacher_model$"):
        S.distill(copy.deepcopy(new))


@pins("distill.alpha", 0.25, *TEACHER)
def _alpha(w, old, new):
    y = _labels_of_first_batch(old)
    for cfg, alpha in ((old, 0.5), (new, 0.25)):
        s = w.supervised(cfg, "distill")
        (call,) = s.distill
        logits = s.logits.double()
        # (1 - alpha) CE(label) + alpha CE(teacher's argmax), no label smoothing; float32 logits, float64 reference
        want = ((1 - alpha) * F.cross_entropy(logits, y) + alpha * F.cross_entropy(logits, call["teacher"].argmax(1)))
        assert call["alpha"] == alpha
        torch.testing.assert_close(s.out["loss"].double(), want, rtol=1e-6, atol=0)


# ----------------------------------------------------------------------------- the tests

def _value(world, new) -> str:
    return json.dumps(world.fill(new))  # YAML reads JSON's numbers, lists, strings, true/false and null


def _pair(world, key: str, new, base: tuple, *extra: str) -> tuple[dict, dict]:
    old = world.config(*base, *extra)
    changed = world.config(*base, *extra, f"{key}={_value(world, new)}")
    assert flatten(changed)[key] != flatten(old)[key], f"{key}: the new value is the old one"
    return old, changed


def test_every_key_is_pinned_or_listed_with_a_reason():
    """A key added to the schema fails here until it has an effect test or a reason to have none."""
    keys = set(SCHEMA)
    assert not set(EFFECTS) & set(NO_EFFECT)
    assert sorted(keys - set(EFFECTS) - set(NO_EFFECT)) == [], "config keys with no effect test and no reason"
    assert sorted((set(EFFECTS) | set(NO_EFFECT)) - keys) == [], "entries for keys the schema no longer has"
    assert all(reason for _, reason in NO_EFFECT.values())


@pytest.mark.parametrize("key", sorted(EFFECTS))
def test_changing_a_key_changes_what_it_names(world, key):
    new, base, check = EFFECTS[key]
    check(world, *_pair(world, key, new, base))


def test_model_overrides_reach_the_model(world):
    """model.overrides is free-form (not in the schema): its keyword arguments build the encoder."""
    old, new = world.config(), world.config("model.overrides.depth=2", "model.overrides.eta=0.25")
    assert len(build_encoder(old).blocks) == 1 and len(build_encoder(new).blocks) == 2
    assert all(b.eta == 0.25 for b in world.pretrain(new).inner.encoder.blocks)


# --- resuming: what may differ between the launches of one run

# how and where the run computes, and what is measured beside it: the same trajectory either way
MAY_CHANGE_ON_RESUME = {
    "description", "run.out_dir", "run.ckpt_every", "run.log_every", "run.overwrite", "run.stop_after", "run.progress",
    "model.compile",  # the compiled layers compute what the eager ones do
    "data.root", "data.download",  # where the data is found (a moved copy of the same data)
    *(k for k in SCHEMA if k.startswith(("fabric.", "probe.", "monitor."))),  # devices; evaluation; measurements
}
NOT_RESUMES = {"run.name": "another run.name is another run folder",
               "run.resume": "run.resume=false does not resume (tests/test_runs_values.py: the refusal to replace)"}


def _another_value(key):
    if key in EFFECTS:
        return EFFECTS[key][0], EFFECTS[key][1]
    if key in NO_EFFECT:
        return NO_EFFECT[key][0], ()
    pytest.fail(f"{key} is in neither EFFECTS nor NO_EFFECT (see test_every_key_is_pinned_or_listed_with_a_reason)")


@pytest.mark.parametrize("key", sorted(set(SCHEMA) - set(NOT_RESUMES)))
def test_resume_refuses_every_key_that_changes_the_run_and_accepts_the_others(world, key):
    new, base = _another_value(key)
    old, changed = _pair(world, key, new, base, f"run.out_dir={world.tmp / 'resume' / key}")
    path = runs.run_dir(changed)
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(dump_config(old))  # a run started with `old`, with a checkpoint
    (path / "last.ckpt").write_bytes(b"x")
    if key in MAY_CHANGE_ON_RESUME:
        with runs.RunFolder(changed, "pretrain"):
            pass
        assert (path / "config.yaml").read_text() == dump_config(old)  # the run keeps the config it started with
        assert runs.config_differences(yaml.safe_load(dump_config(old)), changed) == []
    else:
        was = flatten(yaml.safe_load(dump_config(old)))[key]
        with raises_exactly(ConfigError, f"run {path} was started with another config ({key}: {was!r} -> "
                                         f"{flatten(changed)[key]!r}); resume with the same settings, or start a new "
                                         "run (another run.name, or run.resume=false run.overwrite=true)"):
            with runs.RunFolder(changed, "pretrain"):
                pass


# --- caches: not reused after an input they depend on changes

def _entries(root: Path) -> list[Path]:
    return sorted((root / "tensors").glob("*.pt"))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_decoded_cache_notices_a_new_file_size_behind_an_unchanged_mtime(tmp_path, cache):
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1, size=8)
    f = tree / "train" / "dog" / "0001.png"
    before = load_split("imagefolder", "train", root=tree, image_size=8)
    st = f.stat()
    Image.fromarray(np.full((8, 8, 3), 7, np.uint8)).save(f)  # a flat PNG: smaller than the noisy one
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same mtime: only the size tells
    assert f.stat().st_size != st.st_size and f.stat().st_mtime_ns == st.st_mtime_ns
    after = load_split("imagefolder", "train", root=tree, image_size=8)
    assert (after.images[3] == 7).all() and torch.equal(after.images[:3], before.images[:3])
    assert len(_entries(cache)) == 1  # the stale entry was replaced


def test_decoded_cache_notices_an_image_moved_to_another_class(tmp_path, cache):
    tree = make_imagefolder(tmp_path / "tree", n_train=3, n_test=1, size=8)
    for f in sorted((tree / "train" / "dog").iterdir()):
        f.rename(f.with_name("d" + f.name))  # dog's files sort after 0002.png
    before = load_split("imagefolder", "train", root=tree, image_size=8)
    # the last cat image becomes the first dog image under the same name: the same names, sizes and mtimes in the
    # same order; only its class folder changed
    (tree / "train" / "cat" / "0002.png").rename(tree / "train" / "dog" / "0002.png")
    after = load_split("imagefolder", "train", root=tree, image_size=8)
    assert torch.equal(after.images, before.images)
    assert before.labels.tolist() == [0, 0, 0, 1, 1, 1] and after.labels.tolist() == [0, 0, 1, 1, 1, 1]


def test_decoded_cache_is_per_image_size(tmp_path, cache, monkeypatch):
    import aot_lib.data.datasets as D

    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1, size=8)
    eight = load_split("imagefolder", "train", root=tree, image_size=8)
    four = load_split("imagefolder", "train", root=tree, image_size=4)
    assert eight.images.shape[-1] == 8 and four.images.shape[-1] == 4 and len(_entries(cache)) == 2
    monkeypatch.setattr(D, "_decode_folder", lambda *a: pytest.fail("decoded again"))
    assert torch.equal(load_split("imagefolder", "train", root=tree, image_size=8).images, eight.images)
    assert torch.equal(load_split("imagefolder", "train", root=tree, image_size=4).images, four.images)


def test_decoded_cache_notices_a_zip_member_rewritten_with_the_same_size_and_zip_mtime(tmp_path, cache):
    tree = make_imagefolder(tmp_path / "tree", n_train=2, n_test=1, size=8, fmt="bmp")  # BMP: size fixed by shape
    z = zip_tree(tree, tmp_path / "tiny.zip")
    before = load_split("imagefolder", "train", root=z, image_size=8)
    st = z.stat()
    member = tree / "train" / "cat" / "0000.bmp"
    os.utime(member, ns=(0, 10**18))  # keep the member's date in the zip: only its bytes (CRC) change
    Image.fromarray(np.full((8, 8, 3), 9, np.uint8)).save(member)
    os.utime(member, ns=(0, 10**18))
    (tree / "train" / "cat" / "0001.bmp").touch()
    zip_tree(tree, z)
    os.utime(z, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert z.stat().st_size == st.st_size and z.stat().st_mtime_ns == st.st_mtime_ns
    after = load_split("imagefolder", "train", root=z, image_size=8)
    assert (after.images[0] == 9).all() and not torch.equal(after.images[0], before.images[0])


def _probe_copy(world, tmp_path) -> tuple[dict, Path]:
    ckpt = tmp_path / "run" / "last.ckpt"
    ckpt.parent.mkdir()
    shutil.copy(world.ckpt, ckpt)
    data = tmp_path / "data"
    shutil.copytree(world.data / "train", data / "train")
    shutil.copytree(world.data / "test", data / "test")
    return tiny_config(data, tmp_path / "runs", "probe.lr=3e-3", "probe.epochs=1"), ckpt


def test_probe_features_are_extracted_again_for_another_checkpoint(world, tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    cfg, ckpt = _probe_copy(world, tmp_path)
    first = P.probe(cfg, ckpt)["feature_cache"]
    state = torch.load(ckpt, weights_only=True)
    state["model"] = {k: v + 0.01 if v.is_floating_point() else v for k, v in state["model"].items()}
    torch.save(state, ckpt)  # the same path, other weights
    second = P.probe(cfg, ckpt)["feature_cache"]
    assert second != first
    encoder, _ = P.load_encoder(ckpt)
    train, _ = load_train_test(cfg)
    feats = torch.load(ckpt.parent / second, weights_only=True)
    torch.testing.assert_close(feats["train"][0], P.extract_features(encoder, train, 16, *IMAGENET), rtol=0, atol=0)


def test_probe_features_are_not_reused_after_a_label_change(world, tmp_path, monkeypatch):
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    cfg, ckpt = _probe_copy(world, tmp_path)
    first = P.probe(cfg, ckpt)["feature_cache"]
    # the same images in the same order, one label changed (see the decoded-cache test above)
    (tmp_path / "data" / "train" / "cat" / "0015.png").rename(tmp_path / "data" / "train" / "dog" / "+.png")
    second = P.probe(cfg, ckpt)["feature_cache"]
    old, new = (torch.load(ckpt.parent / f, weights_only=True)["train"] for f in (first, second))
    assert second != first and torch.equal(old[0], new[0])
    assert old[1][15] == 0 and new[1][15] == 1 and torch.equal(old[1][:15], new[1][:15])


def test_compiled_layers_are_shared_per_class_and_options_only():
    def compiled(name, **options):
        model = compile_blocks(create_model(name, num_classes=0, **OVERRIDES), **options)
        return vars(model.blocks[0])["forward"].__func__

    a = compiled("aot_admm_tiny", backend="aot_eager", dynamic=False)
    assert compiled("aot_admm_tiny", backend="aot_eager", dynamic=False) is a  # reused
    assert compiled("aot_admm_tiny", backend="aot_eager", dynamic=True) is not a  # other options: compiled anew
    assert compiled("aot_admm_tiny", backend="eager", dynamic=False) is not a
    assert compiled("crate_tiny", backend="aot_eager", dynamic=False) is not a  # another layer class


# --- modes at evaluation time

def test_standard_probe_evaluates_in_evaluation_mode(monkeypatch):
    """The encoder never runs in training mode, and the probe's BatchNorm uses the batch statistics while it trains
    and its running statistics on the test images (a train-mode BatchNorm at test time scores a different model)."""
    from aot_lib.data.datasets import ImageData

    modes = []
    real_bn = nn.BatchNorm1d.forward
    monkeypatch.setattr(nn.BatchNorm1d, "forward", lambda self, x: modes.append((self.training, len(x))) or
                        real_bn(self, x))

    class Encoder(nn.Module):
        num_features = 3

        def __init__(self):
            super().__init__()
            self.seen = []

        def forward_features(self, x):
            self.seen.append(self.training)
            return x.mean((2, 3))

    g = torch.Generator().manual_seed(0)
    data = ImageData(torch.randint(0, 256, (10, 3, 8, 8), dtype=torch.uint8, generator=g), torch.arange(10) % 2,
                     ["a", "b"], "m")
    encoder = Encoder().train()
    P.standard_linear_probe(encoder, data, data, 8, (0.5,) * 3, (0.25,) * 3, epochs=2, batch_size=4)
    assert encoder.seen == [False] * 5  # 2 epochs of 2 steps, then the test images
    assert modes == [(True, 4)] * 4 + [(False, 10)]
