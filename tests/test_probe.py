"""The probes by value: near 100 % on separable features, chance when the labels are permuted relative to
the features, and the k-NN vote weighted as DINO's ``exp(sim / T)``, against a hand computation."""
import math

import numpy as np
import pytest
import torch
from torch import nn

from aot_lib.training.probe import knn_probe, linear_probe


def blobs(n_per: int, classes: int = 4, dim: int = 16, seed: int = 0, spread: float = 1.0):
    """Gaussian classes around means 8 apart (separable), in a random order of samples."""
    g = torch.Generator().manual_seed(0)
    means = 8 * torch.randn(classes, dim, generator=g)  # the same means for every split
    g = torch.Generator().manual_seed(seed + 1)
    y = torch.arange(classes).repeat_interleave(n_per)
    y = y[torch.randperm(len(y), generator=g)]  # classes interleaved, not in blocks
    return means[y] + spread * torch.randn(len(y), dim, generator=g), y


@pytest.fixture(scope="module")
def splits():
    return blobs(40, seed=0), blobs(25, seed=1)


def test_linear_probe_separates_separable_features(splits):
    (xtr, ytr), (xte, yte) = splits
    r = linear_probe(xtr, ytr, xte, yte, epochs=5, lr=0.05, batch_size=64)
    assert r["linear_top1"] == 100.0 and r["linear_train_top1"] == 100.0
    # an affine change of the features changes nothing that matters (they are standardised first)
    r2 = linear_probe(5 * xtr + 3, ytr, 5 * xte + 3, yte, epochs=5, lr=0.05, batch_size=64)
    assert r2["linear_top1"] == 100.0


def test_linear_probe_is_at_chance_when_labels_do_not_belong_to_the_features(splits):
    (xtr, ytr), (xte, yte) = splits
    g = torch.Generator().manual_seed(5)
    shuffled = ytr[torch.randperm(len(ytr), generator=g)]  # the same labels, not those of the features
    r = linear_probe(xtr, shuffled, xte, yte, epochs=5, lr=0.05, batch_size=64)
    # chance is 25 %; 100 test images at 1/4: 25 +- 4.3 (one sd), so 50 is over 5 sd away
    assert r["linear_top1"] < 50
    r = linear_probe(xtr, ytr, xte, yte[torch.randperm(len(yte), generator=g)], epochs=5, lr=0.05, batch_size=64)
    assert r["linear_top1"] < 50 and r["linear_train_top1"] == 100.0


def test_linear_probe_is_deterministic_in_its_seed(splits):
    (xtr, ytr), (xte, yte) = splits
    noisy = xtr + 8 * torch.randn(xtr.shape, generator=torch.Generator().manual_seed(3))  # not separable
    a = linear_probe(noisy, ytr, xte, yte, epochs=2, lr=1e-2, batch_size=16, seed=1)
    b = linear_probe(noisy, ytr, xte, yte, epochs=2, lr=1e-2, batch_size=16, seed=1)
    assert a == b


def test_knn_probe_separable_and_permuted(splits):
    (xtr, ytr), (xte, yte) = splits
    r = knn_probe(xtr, ytr, xte, yte, k=5)
    assert r == {"knn_top1": 100.0, "knn_k": 5}
    assert knn_probe(xtr, ytr, xte, yte, k=5, chunk=7) == r  # chunks of the test set change nothing
    shuffled = ytr[torch.randperm(len(ytr), generator=torch.Generator().manual_seed(5))]
    assert knn_probe(xtr, shuffled, xte, yte, k=5)["knn_top1"] < 50
    assert knn_probe(xtr, ytr, xte, yte, k=10_000)["knn_k"] == len(xtr)  # k capped at the training set


def test_knn_vote_weights_by_hand():
    # Four training points on the unit circle (norms differ: cosine similarity ignores them) and one test
    # point at angle 0. Similarities: cos 10deg, cos 50deg, cos 60deg (class 0, 1, 1) and cos 170deg (class 0).
    deg = [10, 50, 60, 170]
    tr = torch.tensor([[math.cos(math.radians(a)), math.sin(math.radians(a))] for a in deg])
    tr = tr * torch.tensor([[1.0], [3.0], [0.5], [2.0]])
    ytr = torch.tensor([0, 1, 1, 0])
    te = torch.tensor([[2.0, 0.0]])  # float32, as extract_features returns
    s = [math.cos(math.radians(a)) for a in deg]

    def votes(k, t):
        order = sorted(range(4), key=lambda j: -s[j])[:k]
        v = [0.0, 0.0]
        for j in order:
            v[ytr[j]] += math.exp(s[j] / t)
        return v

    for k, t, want in [(3, 0.05, 0), (3, 10.0, 1), (1, 10.0, 0), (2, 10.0, 0)]:
        v = votes(k, t)
        assert v.index(max(v)) == want  # the hand computation itself: weights decide, not counts
        for label in (0, 1):
            r = knn_probe(tr, ytr, te, torch.tensor([label]), k=k, temperature=t)
            assert r["knn_top1"] == (100.0 if label == want else 0.0), (k, t, label)
    # T = 0.05: exp(cos10/T) = exp(19.70) beats exp(cos50/T) + exp(cos60/T) = exp(12.86) + exp(10)
    # T = 10: nearly equal weights, the two class-1 neighbours outvote the one class-0 neighbour
    v = votes(3, 0.05)
    assert v[0] == pytest.approx(math.exp(math.cos(math.radians(10)) / 0.05))


def test_knn_probe_on_hand_made_two_classes():
    # 3 test points, each nearest to one training point; percentages of correct predictions
    tr = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    ytr = torch.tensor([0, 1, 2])
    te = torch.tensor([[0.9, 0.1], [0.1, 0.9], [-0.9, -0.1]])
    assert knn_probe(tr, ytr, te, torch.tensor([0, 1, 2]), k=1)["knn_top1"] == 100.0
    assert knn_probe(tr, ytr, te, torch.tensor([0, 1, 0]), k=1)["knn_top1"] == pytest.approx(200 / 3)
    assert knn_probe(tr, ytr, te, torch.tensor([2, 0, 1]), k=1)["knn_top1"] == 0.0


# ----------------------------------------------------------------------------- the quick protocol's mechanics

def test_documented_defaults():
    import inspect

    from aot_lib.training.probe import extract_features

    def defaults(f):
        return {k: p.default for k, p in inspect.signature(f).parameters.items() if p.default is not inspect.Parameter.empty}

    assert defaults(linear_probe) == {"epochs": 100, "lr": 1e-3, "weight_decay": 0.0, "batch_size": 1024, "seed": 0}
    assert defaults(knn_probe) == {"k": 20, "temperature": 0.07, "chunk": 1024}  # DINO's k-NN
    assert defaults(extract_features) == {"batch_size": 512, "device": "cpu"}


def test_linear_probe_standardises_each_feature():
    # one informative feature on a tiny scale far from 0 (class means 5 +- 1e-3, noise 1e-4: separable), three
    # noise features of scale 0.3: only standardising each feature makes a few AdamW steps enough (98 % here;
    # a global mean/std, no division by a std below 1, or train/test scaled differently: 46-69 %)
    g = torch.Generator().manual_seed(0)

    def split(n):
        y = torch.randint(0, 2, (n,), generator=g)
        signal = 5 + 1e-3 * (2 * y - 1).float() + 1e-4 * torch.randn(n, generator=g)
        return torch.cat([signal[:, None], 0.3 * torch.randn(n, 3, generator=g)], dim=1), y

    (xtr, ytr), (xte, yte) = split(200), split(100)
    assert linear_probe(xtr, ytr, xte, yte, epochs=5, lr=0.05, batch_size=64)["linear_top1"] >= 95


def test_linear_probe_optimiser_schedule_and_batches(monkeypatch):
    """AdamW with the asked lr and weight decay, a cosine over epochs * ceil(n / batch) steps without warm-up,
    and every training sample exactly once per epoch."""
    import torch.nn.functional as F

    made, lrs, targets = [], [], []
    real_adamw, real_ce = torch.optim.AdamW, F.cross_entropy

    class Recording(real_adamw):
        def __init__(self, params, **kw):
            made.append(kw)
            super().__init__(params, **kw)

        def step(self, *a, **kw):
            lrs.append(self.param_groups[0]["lr"])
            return super().step(*a, **kw)

    monkeypatch.setattr(torch.optim, "AdamW", Recording)
    monkeypatch.setattr(F, "cross_entropy", lambda logits, y, **kw: targets.append(y.clone()) or real_ce(logits, y, **kw))
    (xtr, _), (xte, yte) = blobs(10, seed=0), blobs(5, seed=1)  # 40 training samples
    linear_probe(xtr, torch.arange(40), xte, yte, epochs=3, lr=0.2, weight_decay=0.3, batch_size=16)
    assert made == [{"lr": 0.2, "weight_decay": 0.3}]
    steps = 3 * 3  # ceil(40 / 16) = 3 batches per epoch: 16, 16, 8
    assert lrs == pytest.approx([0.2 * 0.5 * (1 + math.cos(math.pi * s / (steps - 1))) for s in range(steps)])
    assert [len(t) for t in targets] == [16, 16, 8] * 3
    for e in range(3):  # the labels here are the sample indices: each sample once per epoch
        assert sorted(torch.cat(targets[3 * e:3 * e + 3]).tolist()) == list(range(40))


def test_knn_normalises_each_test_point_on_its_own():
    # two test points of very different norms in one chunk: each is compared by cosine similarity alone.
    # Training points at 0, 40, 45 and 90 degrees (classes 0, 1, 1, 1). The small test point at 0 degrees has
    # the class-0 point as nearest neighbour, which wins at T = 0.05 (exp(1/T) against exp(0.77/T) + exp(0.71/T));
    # scaled by the other point's norm, its similarities would all be ~0 and the two class-1 votes would win.
    deg = torch.tensor([0.0, 40.0, 45.0, 90.0]).deg2rad()
    tr = torch.stack([deg.cos(), deg.sin()], dim=1)
    ytr = torch.tensor([0, 1, 1, 1])
    te = torch.tensor([[0.0, 100.0], [0.01, 0.0]])
    assert knn_probe(tr, ytr, te, torch.tensor([1, 0]), k=3, temperature=0.05)["knn_top1"] == 100.0


def test_extract_features_values_batches_and_resize():
    from PIL import Image

    from aot_lib.data.datasets import ImageData
    from aot_lib.training.probe import extract_features

    class Pixels(nn.Module):  # the "features" are the normalised pixels themselves
        def __init__(self):
            super().__init__()
            self.batches = []

        def forward_features(self, x):
            self.batches.append(len(x))
            return x.flatten(1)

    g = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (5, 3, 8, 8), dtype=torch.uint8, generator=g)
    data = ImageData(images, torch.zeros(5, dtype=torch.long), ["a"], "memory")
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    m, s = torch.tensor(mean).view(1, 3, 1, 1), torch.tensor(std).view(1, 3, 1, 1)
    enc = Pixels().train()
    f = extract_features(enc, data, 8, mean, std, batch_size=2)
    assert not enc.training and enc.batches == [2, 2, 1]
    torch.testing.assert_close(f, ((images.float() / 255 - m) / s).flatten(1), rtol=0, atol=1e-6)
    # another size: PIL's bilinear resize (antialiased) of the [0, 1] images, then the normalisation
    ref = torch.stack([torch.stack([torch.from_numpy(np.array(
        Image.fromarray((img[c].float() / 255).numpy(), mode="F").resize((3, 3), Image.BILINEAR))) for c in range(3)])
        for img in images])
    torch.testing.assert_close(extract_features(enc, data, 3, mean, std), ((ref - m) / s).flatten(1), rtol=0, atol=1e-5)


# ----------------------------------------------------------------------------- probe(): what probe.json records

@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    from helpers import make_imagefolder, tiny_config

    from aot_lib import train

    tmp = tmp_path_factory.mktemp("probe")
    mp = pytest.MonkeyPatch()
    mp.setenv("AOT_CACHE", str(tmp / "cache"))
    data = make_imagefolder(tmp / "data")
    cfg = tiny_config(data, tmp / "runs", "optim.max_steps=1", "probe.epochs=2", "probe.lr=3e-3",
                      "probe.weight_decay=0.0", "probe.knn_k=5", "probe.knn_t=0.5")
    train.pretrain(cfg)
    yield cfg, tmp / "runs" / "tiny" / "last.ckpt"
    mp.undo()


def test_probe_records_what_it_measured(pretrained, monkeypatch):
    import json

    import aot_lib.training.probe as P
    from aot_lib.training.builders import load_train_test, normalization_for

    cfg, ckpt = pretrained
    monkeypatch.setenv("AOT_CACHE", str(ckpt.parent.parent.parent / "cache"))
    r = P.probe(cfg)
    train, test = load_train_test(cfg)
    mean, std = normalization_for(cfg)
    key = P.feature_cache_key(ckpt, train, test, 16, mean, std)
    assert r["feature_cache"] == f"features-{key}.pt" and (ckpt.parent / r["feature_cache"]).is_file()
    feats = torch.load(ckpt.parent / r["feature_cache"], weights_only=True)
    encoder, _ = P.load_encoder(ckpt)
    torch.testing.assert_close(feats["train"][0], P.extract_features(encoder, train, 16, mean, std))
    assert torch.equal(feats["test"][1], test.labels)
    (trf, try_), (tef, tey) = feats["train"], feats["test"]
    want = {"checkpoint": str(ckpt), "pretrain_step": 1, "train_images": 32, "test_images": 16,
            "dataset": "imagefolder", "protocol": P.PROTOCOLS["quick"], "probe": dict(cfg["probe"]),
            **P.select_linear_probe(trf, try_, tef, tey, 3e-3, 0.0, epochs=2, batch_size=cfg["probe"]["batch_size"]),
            **knn_probe(trf, try_, tef, tey, k=5, temperature=0.5)}
    assert {k: r[k] for k in want} == want
    assert r["data"]["train"]["n_images"] == 32 and r["data"]["test"]["n_images"] == 16
    assert 0 <= r["linear_probe_s"] <= r["wall_time_s"] < 60 and r["hardware"] and "commit" in r
    assert json.loads((ckpt.parent / "probe.json").read_text()) == json.loads(json.dumps(r))
    # the second time the cached features are read, not extracted again
    monkeypatch.setattr(P, "extract_features", lambda *a, **k: pytest.fail("features extracted again"))
    again = P.probe(cfg)
    assert {k: again[k] for k in want} == want
    # an unreadable cache is rebuilt
    (ckpt.parent / r["feature_cache"]).write_bytes(b"not a torch file")
    monkeypatch.undo()
    monkeypatch.setenv("AOT_CACHE", str(ckpt.parent.parent.parent / "cache"))
    assert {k: P.probe(cfg)[k] for k in want} == want


def test_load_encoder_names_the_mismatch(pretrained, tmp_path):
    from aot_lib.training.probe import load_encoder
    from aot_lib.training.runs import CheckpointError

    _, ckpt = pretrained
    c = torch.load(ckpt, weights_only=True)
    del c["model"]["encoder.stem.cls_token"]
    bad = tmp_path / "bad.ckpt"
    torch.save(c, bad)
    with pytest.raises(CheckpointError) as e:
        load_encoder(bad)
    msg = str(e.value)
    assert msg.startswith(f"checkpoint {bad} does not fit aot_admm_tiny (")
    assert msg.endswith(" (missing ['stem.cls_token'])")


def test_feature_cache_key_format(pretrained):
    import hashlib

    from aot_lib.data.datasets import ImageData
    from aot_lib.training.probe import feature_cache_key

    _, ckpt = pretrained
    a = ImageData(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), torch.tensor([0, 1]), ["x", "y"], "a")
    b = ImageData(torch.ones(2, 3, 4, 4, dtype=torch.uint8), torch.tensor([1, 0]), ["x", "y"], "b")

    def digest(d):
        return hashlib.sha256(d.images.numpy().tobytes() + d.labels.numpy().tobytes() + b"x|y").hexdigest()

    parts = [hashlib.sha256(ckpt.read_bytes()).hexdigest(), digest(a), digest(b), "16", repr((0.5, 0.5, 0.5)),
             repr((0.25, 0.25, 0.25)), "v1"]
    key = feature_cache_key(ckpt, a, b, 16, [0.5] * 3, [0.25] * 3)
    assert key == hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]  # caches stay valid across versions


def test_probe_passes_its_settings_on(pretrained, monkeypatch):
    """probe() hands the configured settings to the probes (recorded, not rerun) and takes the model from the
    checkpoint, whatever the config's model section says; times are seconds rounded to 0.01."""
    import copy

    import aot_lib.training.probe as P

    cfg, ckpt = pretrained
    monkeypatch.setenv("AOT_CACHE", str(ckpt.parent.parent.parent / "cache"))
    calls = {}

    def recorder(name, out):
        def f(*args, **kw):
            calls[name] = (args, kw)
            return out
        return f

    monkeypatch.setattr(P, "select_linear_probe", recorder("quick", {"linear_top1": 1.0}))
    monkeypatch.setattr(P, "standard_linear_probe", recorder("standard", {"linear_top1": 2.0}))
    monkeypatch.setattr(P, "knn_probe", recorder("knn", {"knn_top1": 3.0}))
    c = copy.deepcopy(cfg)
    c["model"]["name"] = "no_such_model"  # probing never builds the config's model
    c["probe"].update(lr=[0.1, 0.2], weight_decay=[0.0, 0.3], val_fraction=0.25, epochs=3, batch_size=7, knn_k=4,
                      knn_t=0.3, standard_lr=0.05, standard_batch_size=6, lr_below=[0.05], lr_above=[0.4, 0.8])
    c["run"]["seed"] = 11
    r = P.probe(c)
    args, kw = calls["quick"]
    assert args[4:] == ([0.1, 0.2], [0.0, 0.3], 0.25)
    assert kw == {"epochs": 3, "batch_size": 7, "seed": 11, "lr_below": [0.05], "lr_above": [0.4, 0.8]}
    assert calls["knn"][1] == {"k": 4, "temperature": 0.3} and r["linear_top1"] == 1.0 and r["knn_top1"] == 3.0
    for key in ("linear_probe_s", "wall_time_s"):
        assert isinstance(r[key], float) and r[key] == round(r[key], 2)
    assert isinstance(r["commit"], str) and r["commit"]
    c["probe"]["protocol"] = "standard"
    r = P.probe(c)
    args, kw = calls["standard"]
    assert args[3:] == (16, *P.normalization_for(cfg))
    assert kw == {"epochs": 3, "lr": 0.05, "batch_size": 6, "seed": 11, "device": "cpu", "progress": False}
    assert r["linear_top1"] == 2.0 and r["protocol"] == P.PROTOCOLS["standard"]


def test_stratified_split_small_classes():
    from aot_lib.training.probe import stratified_split

    y = torch.tensor([0] * 10 + [1] * 2 + [2])
    tr, va = stratified_split(y, 0.2)
    assert torch.equal(tr, stratified_split(y, 0.2, seed=0)[0])  # seed 0 by default
    # 10 -> 2 held out; 2 -> at least 1 held out; a class of one stays whole in the training part
    assert torch.bincount(y[va], minlength=3).tolist() == [2, 1, 0]
    assert torch.bincount(y[tr], minlength=3).tolist() == [8, 1, 1]


# ----------------------------------------------------------------------------- protocol mechanics (recorded)

def test_select_linear_probe_chooses_on_the_validation_split(monkeypatch):
    import aot_lib.training.probe as P

    calls = []
    table = {(0.1, 0.0): 50.0, (0.2, 0.0): 70.0, (0.1, 0.5): 70.0, (0.2, 0.5): 60.0}  # a tie at 70

    def fake(trf, try_, tef, tey, *, epochs, lr, weight_decay, batch_size, seed):
        calls.append((len(trf), len(tef), epochs, lr, weight_decay, batch_size, seed))
        return {"linear_top1": table.get((lr, weight_decay), -1.0)}

    monkeypatch.setattr(P, "linear_probe", fake)
    y = torch.arange(4).repeat_interleave(10)  # 40 training images, 4 classes
    x = torch.randn(40, 3)
    r = P.select_linear_probe(x, y, torch.randn(7, 3), torch.zeros(7, dtype=torch.long), [0.1, 0.2], [0.0, 0.5],
                              val_fraction=0.25, epochs=3, batch_size=5, seed=2)
    tr, va = P.stratified_split(y, 0.25, 2)
    assert calls[:4] == [(len(tr), len(va), 3, lr, wd, 5, 2) for lr in (0.1, 0.2) for wd in (0.0, 0.5)]
    # the tie at 70 goes to less weight decay; the final fit is on the whole training set, scored on the test set
    assert calls[4:] == [(40, 7, 3, 0.2, 0.0, 5, 2)]
    assert (r["linear_lr"], r["linear_weight_decay"], r["linear_val_fraction"]) == (0.2, 0.0, 0.25)
    assert r["linear_val_top1"] == {"lr=0.1,wd=0": 50.0, "lr=0.1,wd=0.5": 70.0, "lr=0.2,wd=0": 70.0, "lr=0.2,wd=0.5": 60.0}
    # equal scores and equal decay: the smaller learning rate
    table.update({(0.1, 0.0): 70.0})
    calls.clear()
    assert P.select_linear_probe(x, y, x, y, [0.1, 0.2], [0.0, 0.5], epochs=1)["linear_lr"] == 0.1
    # a grid of two values is still a grid: chosen on the validation split
    table[(0.1, 0.0)] = 50.0
    calls.clear()
    r = P.select_linear_probe(x, y, x, y, [0.1, 0.2], 0.0, epochs=1)
    assert len(calls) == 3 and r["linear_lr"] == 0.2 and r["linear_val_fraction"] == 0.1


@pytest.mark.parametrize("peak, tried, pick", [
    (0.03, [0.01, 0.03, 0.1], 0.03),                  # inside: nothing added
    (0.3, [0.01, 0.03, 0.1, 0.3, 1.0], 0.3),          # at the top: 0.3, then 1.0 (0.3 still at the top), then inside
    (3.0, [0.01, 0.03, 0.1, 0.3, 1.0], 1.0),          # still rising where lr_above ends: the pick stays at the edge
    (0.001, [0.001, 0.003, 0.01, 0.03, 0.1], 0.001),  # at the bottom: one rate further down each time
])
def test_select_linear_probe_extends_the_grid_while_the_pick_sits_at_an_end(monkeypatch, peak, tried, pick):
    """probe.lr_below / lr_above: one rate further out at a time, in order, while the validation pick sits at that
    end of the rates tried so far, all on the validation split; the test split is read once, at the final pick."""
    import math
    import aot_lib.training.probe as P

    calls = []

    def fake(trf, try_, tef, tey, *, epochs, lr, weight_decay, batch_size, seed):
        calls.append((len(tef), lr))
        return {"linear_top1": 50.0 - abs(math.log10(lr / peak))}  # one peak, at `peak`

    monkeypatch.setattr(P, "linear_probe", fake)
    y = torch.arange(4).repeat_interleave(10)
    x = torch.randn(40, 3)
    r = P.select_linear_probe(x, y, torch.randn(7, 3), torch.zeros(7, dtype=torch.long), [0.01, 0.03, 0.1], 0.0,
                              lr_below=[0.003, 0.001], lr_above=[0.3, 1.0])
    val = len(P.stratified_split(y, 0.1, 0)[1])
    extra = [t for t in (0.003, 0.001, 0.3, 1.0) if t in tried]  # in the order each side lists them
    assert calls == [(val, lr) for lr in [0.01, 0.03, 0.1, *extra]] + [(7, pick)]
    assert r["linear_lr"] == pick and r["linear_lr_grid"] == tried
    assert sorted(r["linear_val_top1"]) == sorted(f"lr={t:g},wd=0" for t in tried)


def test_probe_lr_extension_must_lead_outward_from_the_grid():
    from aot_lib.training.config import ConfigError, load_config

    for key, value, msg in (
            ("lr_above", "[0.003]", "probe.lr_above=[0.003] must be strictly increasing above the grid probe.lr="
                                    "[0.001, 0.003, 0.01] (e.g. probe.lr_above=[0.03])"),
            ("lr_below", "[0.0001,0.0003]", "probe.lr_below=[0.0001, 0.0003] must be strictly decreasing below the "
                                            "grid probe.lr=[0.001, 0.003, 0.01] (e.g. probe.lr_below=[0.000333333])")):
        with pytest.raises(ConfigError) as e:
            load_config(None, [f"probe.{key}={value}"])
        assert str(e.value) == msg
    assert load_config(None, ["probe.lr_above=0.03"])["probe"]["lr_above"] == [0.03]  # one rate: a list of one


def test_standard_probe_protocol_settings(monkeypatch):
    """SGD (momentum 0.9, no weight decay) on a parameter-free BatchNorm + Linear, a cosine over
    epochs * (n // batch) steps, random-resized crops (scale 0.08-1) with flips only, drawn from seed + 1."""
    import aot_lib.data.augment as A
    import aot_lib.training.probe as P
    from aot_lib.data.datasets import ImageData

    made = {}
    real_sgd, real_cfg = torch.optim.SGD, A.MultiCropConfig
    lrs = []

    class SGD(real_sgd):
        def __init__(self, params, **kw):
            params = list(params)
            made["sgd"], made["params"] = kw, [tuple(p.shape) for p in params]
            super().__init__(params, **kw)

        def step(self, *a, **kw):
            lrs.append(self.param_groups[0]["lr"])
            return super().step(*a, **kw)

    def cfg(**kw):
        made["views"] = kw
        return real_cfg(**kw)

    monkeypatch.setattr(torch.optim, "SGD", SGD)
    monkeypatch.setattr(A, "MultiCropConfig", cfg)

    class Enc(nn.Module):
        num_features = 3

        def forward_features(self, x):
            return x.mean((2, 3))

    g = torch.Generator().manual_seed(0)
    imgs = torch.randint(0, 256, (10, 3, 8, 8), dtype=torch.uint8, generator=g)
    data = ImageData(imgs, torch.arange(10) % 2, ["a", "b"], "m")
    r = P.standard_linear_probe(Enc(), data, data, 8, (0.5,) * 3, (0.25,) * 3, epochs=2, lr=0.3, batch_size=4, seed=5)
    assert made["sgd"] == {"lr": 0.3, "momentum": 0.9, "weight_decay": 0.0}
    assert made["params"] == [(2, 3), (2,)]  # only the Linear learns: the BatchNorm has no affine parameters
    assert made["views"] == {"n_global": 1, "n_local": 0, "global_size": 8, "global_scale": (0.08, 1.0), "jitter_p": 0.0,
                             "grayscale_p": 0.0, "solarize_p": 0.0, "blur_p": 0.0, "mean": (0.5,) * 3, "std": (0.25,) * 3}
    steps = 2 * (10 // 4)
    assert lrs == pytest.approx([0.3 * 0.5 * (1 + math.cos(math.pi * s / (steps - 1))) for s in range(steps)])
    assert set(r) == {"linear_top1", "linear_lr", "linear_epochs"} and (r["linear_lr"], r["linear_epochs"]) == (0.3, 2)
    assert min(abs(r["linear_top1"] - 10 * k) for k in range(11)) < 1e-4  # a percentage of 10 test images
    # deterministic in its seed (crops drawn from a generator seeded from it)
    again = P.standard_linear_probe(Enc(), data, data, 8, (0.5,) * 3, (0.25,) * 3, epochs=2, lr=0.3, batch_size=4, seed=5)
    assert again == r


# ----------------------------------------------------------------------------- defaults, seeds and the record

def _knn_reference(trf, ytr, tef, k, t):
    """DINO's weighted k-NN in float64, one test point at a time (argsort, not topk; no chunks): the k most
    cosine-similar training points vote exp(sim / T). Also the smallest gap between the k-th and (k+1)-th
    similarity and the smallest relative margin of the winning vote, over the test points."""
    tr = trf.double() / trf.double().norm(dim=1, keepdim=True)
    preds, gap, margin = [], math.inf, math.inf
    for x in tef.double():
        s = (tr @ (x / x.norm())).tolist()
        order = sorted(range(len(s)), key=lambda j: -s[j])
        if k < len(s):
            gap = min(gap, s[order[k - 1]] - s[order[k]])
        v = [0.0] * (int(ytr.max()) + 1)
        for j in order[:k]:
            v[int(ytr[j])] += math.exp(s[j] / t)
        top = sorted(v, reverse=True)
        margin = min(margin, (top[0] - top[1]) / top[0])
        preds.append(v.index(top[0]))
    return torch.tensor(preds), gap, margin


def test_knn_probe_defaults_are_dinos_k20_t007():
    # overlapping classes (the k-NN gets 75 % right): called without k and T, knn_probe must predict what the
    # float64 reference predicts with k = 20, T = 0.07. Its predictions are handed in as the test labels, so
    # agreeing on every point is 100 %. T = 1.07 predicts 5 of the 60 points differently.
    g = torch.Generator().manual_seed(0)
    means = torch.randn(3, 4, generator=g)
    ytr, yte = torch.arange(3).repeat(14)[:40], torch.arange(3).repeat(20)[:60]
    trf = means[ytr] + torch.randn(40, 4, generator=g)
    tef = means[yte] + torch.randn(60, 4, generator=g)
    want, gap, margin = _knn_reference(trf, ytr, tef, 20, 0.07)
    # exact agreement with float32 is safe: the 20th and 21st similarities differ by > 1e-4 (float32 error
    # ~1e-7) and the winning vote leads by > 1 % (float32 error of exp(s / 0.07) ~1e-6 relative)
    assert gap > 1e-4 and margin > 1e-2
    assert (_knn_reference(trf, ytr, tef, 20, 1.07)[0] != want).sum() >= 1  # the temperature matters here
    assert knn_probe(trf, ytr, tef, want) == {"knn_top1": 100.0, "knn_k": 20}
    assert knn_probe(trf, ytr, tef, yte)["knn_top1"] == pytest.approx(100 * (want == yte).float().mean().item())


def test_linear_probe_default_settings(monkeypatch):
    """Without settings: AdamW at lr 1e-3 without weight decay, 100 epochs of batches of 1024 (1025 samples:
    a batch of 1024 and one of 1 per epoch, 200 steps)."""
    import torch.nn.functional as F

    made, sizes = [], []
    real_adamw, real_ce = torch.optim.AdamW, F.cross_entropy

    class Recording(real_adamw):
        def __init__(self, params, **kw):
            made.append(kw)
            super().__init__(params, **kw)

    monkeypatch.setattr(torch.optim, "AdamW", Recording)
    monkeypatch.setattr(F, "cross_entropy", lambda logits, y, **kw: sizes.append(len(y)) or real_ce(logits, y, **kw))
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(1025, 2, generator=g), torch.arange(1025) % 2
    linear_probe(x, y, x[:4], y[:4])
    assert made == [{"lr": 1e-3, "weight_decay": 0.0}]
    assert sizes == [1024, 1] * 100


def test_linear_probe_batch_order_depends_on_the_seed_alone(monkeypatch):
    """The samples are visited in an order drawn from the seed alone: probes of features of another width
    (another classifier to initialise) see the same batches; another seed, other batches."""
    import torch.nn.functional as F

    targets = []
    real_ce = F.cross_entropy
    monkeypatch.setattr(F, "cross_entropy", lambda logits, y, **kw: targets.append(y.clone()) or real_ce(logits, y, **kw))

    def order(dim, seed):
        targets.clear()
        x = torch.randn(40, dim, generator=torch.Generator().manual_seed(dim))
        linear_probe(x, torch.arange(40), x[:2], torch.arange(2), epochs=2, lr=0.1, batch_size=16, seed=seed)
        return torch.cat(targets).tolist()  # the labels are the sample indices

    a = order(3, seed=0)
    assert sorted(a[:40]) == list(range(40)) and a[:40] != a[40:]  # a fresh shuffle every epoch
    assert order(7, seed=0) == a
    assert order(3, seed=1) != a


def test_select_linear_probe_defaults_split_seed_and_ties(monkeypatch):
    import aot_lib.training.probe as P

    calls = []
    table = {}

    def fake(trf, try_, tef, tey, *, epochs, lr, weight_decay, batch_size, seed):
        calls.append((trf, tef, {"epochs": epochs, "lr": lr, "weight_decay": weight_decay, "batch_size": batch_size,
                                 "seed": seed}))
        return {"linear_top1": table.get((lr, weight_decay), -1.0)}

    monkeypatch.setattr(P, "linear_probe", fake)
    y = torch.arange(4).repeat_interleave(10)
    x = torch.arange(40.0)[:, None]  # row i is the number i: which rows were passed is visible
    # one setting: no validation split, nothing recorded for it; 100 epochs of batches of 1024, seed 0
    r = P.select_linear_probe(x, y, x, y, 0.1, 0.0)
    assert [c[2] for c in calls] == [{"epochs": 100, "lr": 0.1, "weight_decay": 0.0, "batch_size": 1024, "seed": 0}]
    assert r["linear_val_top1"] is None and r["linear_val_fraction"] is None
    # a grid: the validation split is the seeded stratified split of that seed (seed 2 here, not 0)
    calls.clear()
    table.update({(0.2, 0.0): 70.0, (0.1, 0.0): 70.0})
    r = P.select_linear_probe(x, y, x, y, [0.2, 0.1], 0.0, val_fraction=0.25, epochs=1, seed=2)
    tr, va = P.stratified_split(y, 0.25, 2)
    assert not torch.equal(va, P.stratified_split(y, 0.25, 0)[1])
    for trf, tef, _ in calls[:2]:
        assert trf.flatten().tolist() == tr.tolist() and tef.flatten().tolist() == va.tolist()
    # equal scores and decay with the larger learning rate listed first: still the smaller learning rate
    assert r["linear_lr"] == 0.1 and calls[2][2]["lr"] == 0.1


def test_probe_times_are_rounded_to_hundredths(pretrained, monkeypatch):
    import types

    import aot_lib.training.probe as P

    cfg, ckpt = pretrained
    monkeypatch.setenv("AOT_CACHE", str(ckpt.parent.parent.parent / "cache"))
    monkeypatch.setattr(P, "select_linear_probe", lambda *a, **k: {"linear_top1": 1.0})
    monkeypatch.setattr(P, "knn_probe", lambda *a, **k: {"knn_top1": 2.0})
    ticks = iter([100.0, 101.0, 101.0 + 1.23456, 101.0 + 4.56789])  # start, probe start, probe end, end
    monkeypatch.setattr(P, "time", types.SimpleNamespace(time=lambda: next(ticks)))
    r = P.probe(cfg)
    assert r["linear_probe_s"] == 1.23 and r["wall_time_s"] == 5.57


class _MeanColour(nn.Module):
    """Features: the mean of each normalised colour channel, times ``scale`` plus ``shift``; records its inputs."""

    def __init__(self, scale=(1.0, 1.0, 1.0), shift=(0.0, 0.0, 0.0)):
        super().__init__()
        self.num_features = 3
        self.scale, self.shift = torch.tensor(scale), torch.tensor(shift)
        self.seen = []

    def forward_features(self, x):
        self.seen.append(x.clone())
        return x.mean((2, 3)) * self.scale + self.shift


def _image_data(n, classes=2, size=8, seed=0):
    from aot_lib.data.datasets import ImageData

    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    return ImageData(torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, generator=g), y,
                     [str(c) for c in range(classes)], "memory")


def test_standard_probe_defaults(monkeypatch, capsys):
    """Without settings: SGD at lr 0.1, 100 epochs of batches of 256 in pretraining's order of seed 0
    (optim.epoch_order), no progress bar."""
    import torch.nn.functional as F

    import aot_lib.training.probe as P
    from aot_lib.training.optim import epoch_order

    lrs, targets = [], []
    real_sgd, real_ce = torch.optim.SGD, F.cross_entropy

    class SGD(real_sgd):
        def __init__(self, params, **kw):
            lrs.append(kw["lr"])
            super().__init__(params, **kw)

    monkeypatch.setattr(torch.optim, "SGD", SGD)
    monkeypatch.setattr(F, "cross_entropy", lambda logits, y, **kw: targets.append(y.clone()) or real_ce(logits, y, **kw))
    train = _image_data(512, classes=512, size=4)  # label = index: the targets name the samples of each batch
    P.standard_linear_probe(_MeanColour(), train, _image_data(4, size=4), 4, (0.5,) * 3, (0.25,) * 3)
    assert lrs == [0.1]
    want = [epoch_order(0, e, 512)[i * 256:(i + 1) * 256].tolist() for e in range(100) for i in range(2)]
    assert [t.tolist() for t in targets] == want
    assert capsys.readouterr().err == ""


def test_standard_probe_progress_bar(capsys):
    import re

    import aot_lib.training.probe as P

    data = _image_data(8, size=4)
    P.standard_linear_probe(_MeanColour(), data, data, 4, (0.5,) * 3, (0.25,) * 3, epochs=1, batch_size=4,
                            progress=True)
    assert re.search(r"(^|\r)standard linear probe: 100%.* 2/2 ", capsys.readouterr().err)
    P.standard_linear_probe(_MeanColour(), data, data, 4, (0.5,) * 3, (0.25,) * 3, epochs=1, batch_size=4)
    assert capsys.readouterr().err == ""


def test_standard_probe_views_are_the_documented_crops():
    """The encoder sees, step by step, batch i of epoch e in pretraining's order (optim.batch_indices of the
    seed), as one random-resized crop (scale 0.08-1) with flips, drawn from a generator of its own seeded
    seed + 1, so that the views do not depend on the classifier's initialisation; epochs * max(1, n // batch)
    steps, then the un-augmented test images."""
    import aot_lib.training.probe as P
    from aot_lib.data.augment import BatchedMultiCrop, MultiCropConfig
    from aot_lib.training.optim import batch_indices

    train, test = _image_data(10, seed=1), _image_data(3, seed=2)
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    enc = _MeanColour()
    P.standard_linear_probe(enc, train, test, 6, mean, std, epochs=3, lr=0.1, batch_size=8, seed=4)
    aug = BatchedMultiCrop(MultiCropConfig(n_global=1, n_local=0, global_size=6, global_scale=(0.08, 1.0), jitter_p=0.0,
                                           grayscale_p=0.0, solarize_p=0.0, blur_p=0.0, mean=mean, std=std))
    gen = torch.Generator().manual_seed(5)
    want = [aug(train.images[batch_indices(4, e, 0, 10, 8)], gen)[0] for e in range(3)]  # 10 // 8: one step an epoch
    assert len(enc.seen) == 3 + 1  # three training steps, one batch of test images
    for got, w in zip(enc.seen, want):
        torch.testing.assert_close(got, w, rtol=0, atol=0)


def test_standard_probe_is_invariant_to_an_affine_change_of_the_features(monkeypatch):
    """The parameter-free BatchNorm standardises each feature on the batch: features scaled and shifted per
    channel train the same classifier (the logits of every step agree); dark against bright images: 100 %."""
    import torch.nn.functional as F

    import aot_lib.training.probe as P
    from aot_lib.data.datasets import ImageData

    logits = []
    real_ce = F.cross_entropy
    monkeypatch.setattr(F, "cross_entropy", lambda z, y, **kw: logits.append(z.detach().clone()) or real_ce(z, y, **kw))
    g = torch.Generator().manual_seed(0)
    y = torch.arange(16) % 2
    images = (torch.randint(0, 60, (16, 3, 8, 8), generator=g) + 190 * y[:, None, None, None]).to(torch.uint8)
    data = ImageData(images, y, ["dark", "bright"], "memory")
    args = (data, data, 8, (0.5,) * 3, (0.25,) * 3)
    r = P.standard_linear_probe(_MeanColour(), *args, epochs=4, lr=0.1, batch_size=8, seed=0)
    plain, logits[:] = list(logits), []
    P.standard_linear_probe(_MeanColour(scale=(3.0, 0.5, 2.0), shift=(5.0, -3.0, 40.0)), *args, epochs=4, lr=0.1,
                            batch_size=8, seed=0)
    assert len(plain) == len(logits) == 8
    # features of variance ~2 (channel means at about +-1.5): BatchNorm's eps = 1e-5 and float32 rounding of
    # the shifted features (~4e-6 at 40) move the standardised features by ~1e-5, so 1e-4 is ample
    for a, b in zip(plain, logits):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-4)
    assert r["linear_top1"] == 100.0
