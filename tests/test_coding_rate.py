"""Coding rates against numpy float64 references, and Theorem 1's optimum on the trace-d set."""
import numpy as np
import pytest
import torch

from aot_lib import coding_rate, subspace_coding_rate


def np_rate(Z, eps):
    d, n = Z.shape
    return 0.5 * np.linalg.slogdet(np.eye(d) + d / (n * eps**2) * Z @ Z.T)[1]


@pytest.mark.parametrize("d,n", [(8, 50), (30, 7)])  # both sides of the Gram identity
def test_coding_rate_matches_numpy(d, n):
    Z = np.random.default_rng(1).standard_normal((d, n))
    assert coding_rate(torch.from_numpy(Z), eps=0.5).item() == pytest.approx(np_rate(Z, 0.5), rel=1e-12)


def test_subspace_coding_rate_matches_numpy():
    rng = np.random.default_rng(2)
    d, p, k, n, eps = 12, 3, 4, 20, 0.7
    U = np.linalg.qr(rng.standard_normal((d, d)))[0][:, : p * k].reshape(d, k, p).transpose(1, 0, 2)
    Z = rng.standard_normal((d, n))
    ref = sum(0.5 * np.linalg.slogdet(np.eye(p) + p / (n * eps**2) * Uk.T @ Z @ Z.T @ Uk)[1] for Uk in U)
    got = subspace_coding_rate(torch.from_numpy(Z), torch.from_numpy(U), eps=eps).item()
    assert got == pytest.approx(ref, rel=1e-12)
    as_list = subspace_coding_rate(torch.from_numpy(Z), [torch.from_numpy(u) for u in U], eps=eps).item()
    assert as_list == pytest.approx(ref, rel=1e-12)


def test_batched_and_differentiable():
    Z = torch.randn(3, 6, 10, dtype=torch.float64, requires_grad=True)
    r = coding_rate(Z)
    assert r.shape == (3,)
    torch.testing.assert_close(r[2], coding_rate(Z[2]))
    assert torch.autograd.gradcheck(lambda z: coding_rate(z, eps=0.3), (Z[:1].detach().requires_grad_(),))
    U = torch.linalg.qr(torch.randn(6, 6, dtype=torch.float64))[0].reshape(6, 2, 3).permute(1, 0, 2)
    assert torch.autograd.gradcheck(lambda z: subspace_coding_rate(z, U), (Z[0].detach().requires_grad_(),))


def test_identity_covariance_maximises_rate_on_trace_d_set():
    """Theorem 1 (Eq. sup_rate_argmax): among Sigma >= 0 with tr Sigma = d, R is largest at I."""
    d, n, eps = 6, 6, 0.5
    # Z Z^T / n = Sigma exactly when Z = sqrt(n) Sigma^{1/2}
    rate = lambda sigma: coding_rate(torch.linalg.cholesky(sigma) * n**0.5, eps)  # noqa: E731
    r_identity = rate(torch.eye(d, dtype=torch.float64))
    assert r_identity.item() == pytest.approx(d / 2 * np.log(1 + d / eps**2), rel=1e-12)
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        a = torch.randn(d, d, generator=g, dtype=torch.float64)
        sigma = a @ a.T + 1e-3 * torch.eye(d, dtype=torch.float64)
        sigma = sigma * d / sigma.trace()
        assert rate(sigma) < r_identity


def test_bad_shapes():
    with pytest.raises(ValueError, match=r"U must have shape \(K, d, p\) with d=5"):
        subspace_coding_rate(torch.randn(5, 9), torch.randn(2, 4, 2))
    with pytest.raises(ValueError, match=r"Z must have shape \(\.\.\., d, N\)"):
        coding_rate(torch.randn(5))
