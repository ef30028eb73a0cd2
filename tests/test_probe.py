"""The probes by value: near 100 % on separable features, chance when the labels are permuted relative to
the features, and the k-NN vote weighted as DINO's ``exp(sim / T)``, against a hand computation."""
import math

import pytest
import torch

from aot_lib.probe import knn_probe, linear_probe


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
