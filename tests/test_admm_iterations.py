"""The stand-alone ADMM iterations, the two compression gradients, and the unrolled layer."""
import numpy as np
import pytest
import torch

from aot_lib.theory.admm import (admm_iterations, admm_layer_from_subspaces, exact_compression_gradient,
                          mixture_of_subspaces, mssa_columns, mssa_compression_gradient, subspace_alignment)
from aot_lib import subspace_coding_rate


@pytest.fixture
def data():
    return mixture_of_subspaces(d=12, p=3, K=4, n_per=10, noise=0.3, generator=torch.Generator().manual_seed(0))


def test_synthetic_subspaces(data):
    Z, U, labels = data
    assert Z.shape == (12, 40) and U.shape == (4, 12, 3)
    gram = torch.einsum("kdp,ldq->klpq", U, U)
    torch.testing.assert_close(gram[0, 0], torch.eye(3, dtype=torch.float64))
    torch.testing.assert_close(gram[0, 1], torch.zeros(3, 3, dtype=torch.float64))
    clean, _, _ = mixture_of_subspaces(d=12, p=3, K=4, n_per=10, noise=0.0, generator=torch.Generator().manual_seed(0))
    assert subspace_alignment(clean, U, labels).item() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="do not fit"):
        mixture_of_subspaces(d=4, p=3, K=2)
    with pytest.raises(ValueError, match="'random' or 'coordinate'"):
        mixture_of_subspaces(basis="sparse")


def test_exact_gradient_matches_finite_differences(data):
    Z, U, _ = data
    g = exact_compression_gradient(Z, U, 0.5)
    direction = torch.randn_like(Z)
    h = 1e-6
    fd = (subspace_coding_rate(Z + h * direction, U, 0.5) - subspace_coding_rate(Z - h * direction, U, 0.5)) / (2 * h)
    assert (g * direction).sum().item() == pytest.approx(fd.item(), rel=1e-6)


def mssa_reference(Z: np.ndarray, U: np.ndarray, t: float) -> np.ndarray:
    """Eq. mssa written out: sum_k P_k Z S_k, P_k = U_k U_k^T, S_k[:, j] = softmax_i(t (P_k z_i) . (P_k z_j))."""
    out = np.zeros_like(Z)
    for Uk in U:
        PZ = Uk @ Uk.T @ Z
        for j in range(Z.shape[1]):
            logits = t * (PZ.T @ PZ[:, j])  # <P z_i, P z_j> = z_i^T U_k U_k^T z_j
            w = np.exp(logits - logits.max())
            out[:, j] += PZ @ (w / w.sum())
    return out


@pytest.mark.parametrize("temperature", [None, 1.0])
def test_mssa_compression_gradient_is_eq_compression_gradient(data, temperature):
    """gamma [Z - MSSA(Z|U)] against an independent float64 evaluation; temperature 1 is Eq. mssa as
    printed, None the library's p^{-1/2}. Same float64 arithmetic in another order: 1e-12."""
    Z, U, _ = data
    gamma = 0.7
    t = 3**-0.5 if temperature is None else temperature
    ref = gamma * (Z.numpy() - mssa_reference(Z.numpy(), U.numpy(), t))
    got = mssa_compression_gradient(Z, U, gamma, temperature)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_zupdate_is_a_step_with_the_mssa_gradient(data):
    """Eq. zupdate = Z - eta (gamma [Z - MSSA(Z|U)] + rho (Z - V + W)), i.e. a step on Eq. zsub_gradient
    (the iteration computes the left side; the two differ by float64 rounding only)."""
    Z, U, _ = data
    kw = dict(eta=0.3, gamma=1.2, rho=0.8)
    h = admm_iterations(Z, U, iters=4, gradient="mssa", lambd=0.1, **kw)
    for (z0, v0, w0), (z1, _, _) in zip(h.iterates[:-1], h.iterates[1:]):
        step = z0 - kw["eta"] * (mssa_compression_gradient(z0, U, kw["gamma"]) + kw["rho"] * (z0 - v0 + w0))
        torch.testing.assert_close(z1, step, rtol=0, atol=1e-12)


def test_the_two_gradients_are_different_functions(data):
    """The paper claims no regime in which they agree; at least they are not the same map (a guard
    against wiring the wrong one into admm_iterations)."""
    Z, U, _ = data
    exact, approx = exact_compression_gradient(Z, U, 0.5), mssa_compression_gradient(Z, U)
    cos = (exact * approx).sum() / (exact.norm() * approx.norm())
    assert cos < 0.99
    ex = admm_iterations(Z, U, iters=1, gradient="exact", lambd=0.0, eta=0.1, rho=1.0, eps=0.5).iterates[1][0]
    torch.testing.assert_close(ex, Z - 0.1 * exact_compression_gradient(Z, U, 0.5), rtol=0, atol=1e-14)


@pytest.mark.parametrize("gradient", ["mssa", "exact"])
def test_iteration_invariants(data, gradient):
    """The V- and W-steps by what they solve, not by how they are computed: V^{t+1} minimises the V-subproblem
    tau ||V||_1 + 1{V >= 0} + 1/2 ||V - (Z^{t+1} + W^t)||^2 (tau = lambda / rho), and W^{t+1} = Z^{t+1} + W^t - V^{t+1}
    is then a subgradient of that penalty at V^{t+1} (scaled ADMM's dual feasibility): W = tau where V > 0,
    W <= tau where V = 0, V >= 0. Float64; W = tau holds to one rounding of u - (u - tau)."""
    Z, U, labels = data
    lambd, rho = 0.2, 0.5
    tau = lambd / rho
    h = admm_iterations(Z, U, iters=8, gradient=gradient, labels=labels, lambd=lambd, rho=rho)

    def prox_objective(v, u):
        return tau * v.abs().sum() + 0.5 * (v - u).square().sum()

    assert len(h.objective) == len(h.iterates) == 9
    for (_, _, w0), (z1, v1, w1) in zip(h.iterates[:-1], h.iterates[1:]):
        assert (v1 >= 0).all() and (v1 > 0).any() and (v1 == 0).any()  # both branches of the prox are exercised
        torch.testing.assert_close(v1 + w1, z1 + w0, rtol=0, atol=1e-14)  # the split of Z^{t+1} + W^t
        active = v1 > 0
        torch.testing.assert_close(w1[active], torch.full_like(w1[active], tau), rtol=0, atol=1e-14)
        assert (w1[~active] <= tau).all()
        # V^{t+1} beats every perturbation that stays feasible (V >= 0): the prox objective is strictly convex
        g = torch.Generator().manual_seed(0)
        for _ in range(5):
            other = (v1 + 0.05 * torch.randn(v1.shape, generator=g, dtype=v1.dtype)).clamp_min(0)
            assert prox_objective(v1, z1 + w0) < prox_objective(other, z1 + w0)
    # the recorded diagnostics are the iterates' own: ||Z - V||_F, rho ||V^{t+1} - V^t||_F, the share of zeros in V
    for t in range(1, 9):
        (z, v, _), (_, v_prev, _) = h.iterates[t], h.iterates[t - 1]
        assert h.primal[t] == pytest.approx(float(np.linalg.norm((z - v).numpy())), rel=1e-12)
        assert h.dual[t] == pytest.approx(rho * float(np.linalg.norm((v - v_prev).numpy())), rel=1e-12)
        assert h.sparsity[t] == float((v.numpy() == 0).mean())


def test_both_gradients_compress():
    """With lambda = 0 both Z-steps lower R^c; the exact gradient also pulls tokens onto their
    subspaces, while iterated MSSA with a fixed U over-smooths them (the book's ADMM chapter)."""
    Z, U, labels = mixture_of_subspaces(basis="coordinate", nonnegative=True, generator=torch.Generator().manual_seed(0))
    exact = admm_iterations(Z, U, iters=20, gradient="exact", labels=labels, lambd=0.1)
    mssa = admm_iterations(Z, U, iters=20, gradient="mssa", labels=labels, lambd=0.0)
    assert mssa.objective[-1] < 0.5 * mssa.objective[0]
    assert exact.objective[-1] < 0.5 * exact.objective[0]
    assert exact.alignment[-1] > exact.alignment[0] + 0.1
    assert mssa.alignment[-1] < exact.alignment[-1]


def test_layer_computes_the_same_iterates(data):
    Z, U, _ = data
    kw = dict(eta=0.3, gamma=1.2, rho=0.8, lambd=0.15)
    h = admm_iterations(Z, U, iters=6, gradient="mssa", **kw)
    layer = admm_layer_from_subspaces(U, **kw)
    torch.testing.assert_close(layer.mssa(Z.T.unsqueeze(0))[0].T, mssa_columns(Z, U))
    z = v = Z.T.unsqueeze(0)
    w = torch.zeros_like(z)
    for Zt, Vt, Wt in h.iterates[1:]:
        z, v, w = layer(z, v, w)
        torch.testing.assert_close(z[0].T, Zt, rtol=0, atol=1e-12)
        torch.testing.assert_close(v[0].T, Vt, rtol=0, atol=1e-12)
        torch.testing.assert_close(w[0].T, Wt, rtol=0, atol=1e-12)


def test_bad_arguments(data):
    Z, U, _ = data
    with pytest.raises(ValueError, match="'mssa' or 'exact'"):
        admm_iterations(Z, U, gradient="newton")
    with pytest.raises(ValueError, match="need K\\*p = d"):
        admm_layer_from_subspaces(U[:2])
