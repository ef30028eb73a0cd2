"""Appendix A closed forms against independent numerics."""
import math

import numpy as np
import pytest
import torch

from aot_lib.theory import theorem1 as theory
from aot_lib.objectives.sigreg import sample_directions


def test_cw_closed_form_matches_numerical_integral():
    for sigma in (0.5, 1.0, 2.0):
        t = np.linspace(-30, 30, 600_001)
        num = 0.25 * np.trapezoid(t**4 * np.exp(-(t**2)) * np.exp(-(t**2) / (2 * sigma**2)), t)
        assert theory.cw_gaussian_weight(sigma) == pytest.approx(num, rel=1e-9)
    assert theory.cw_gaussian_weight() == pytest.approx(math.sqrt(2 * math.pi) / (4 * 3**1.5), rel=1e-14)
    # SIGReg's 17-node rule on [-3, 3] reproduces C_w to better than 0.1 %
    assert theory.cw_quadrature() == pytest.approx(theory.cw_gaussian_weight(), rel=1e-3)


def test_gaussian_slice_closed_form():
    for v in (0.3, 1.0, 2.5):
        t = np.linspace(-30, 30, 600_001)
        num = np.trapezoid((np.exp(-v * t**2 / 2) - np.exp(-(t**2) / 2)) ** 2 * np.exp(-(t**2) / 2), t)
        assert theory.gaussian_slice_sigreg(v).item() == pytest.approx(num, rel=1e-9, abs=1e-15)
    # second-order behaviour: L(1 + s) / s^2 -> C_w
    s = 1e-4
    assert (theory.gaussian_slice_sigreg(1 + s) / s**2).item() == pytest.approx(theory.cw_gaussian_weight(), rel=1e-3)


def test_population_sigreg_approaches_sigreg2_and_ratio_limit():
    d, eps = 6, 0.5
    g = torch.Generator().manual_seed(0)
    b = theory.random_traceless(d, g)
    dirs = sample_directions(d, 200_000, seed=1, dtype=torch.float64)
    for s in (1e-2, 1e-3):
        sigma = torch.eye(d, dtype=torch.float64) + s * b
        pop = theory.population_sigreg(sigma, dirs)
        # Monte Carlo over directions: ~0.5 % error; the O(s^3) remainder is smaller still
        assert pop.item() == pytest.approx(theory.sigreg2(sigma).item(), rel=2e-2)
        ratio = theory.sigreg2(sigma) / theory.rate_gap(sigma, eps)
        assert ratio.item() == pytest.approx(theory.limit_ratio(d, eps), rel=5 * s)


def test_proposition_ratio_positive_and_bounded_on_trace_d_set():
    """The Proposition's k_1 <= SIGReg^(2) / (R(I) - R(Sigma)) <= k_2 on the trace-d set, with the constants made
    explicit. In the eigenvalues nu_i of Sigma (sum nu_i = d, so sum theta (nu_i - 1) = 0):
    R(I) - R(Sigma) = 1/2 sum f(nu_i), f(nu) = log(1 + c) - log(1 + c nu) + theta (nu - 1), with f(1) = f'(1) = 0 and
    f'' = c^2 / (1 + c nu)^2 decreasing, so g(nu) = f(nu) / (nu - 1)^2 = int_0^1 (1 - s) f''(1 + s (nu - 1)) ds decreases
    on [0, d] from g(0) = log(1 + c) - theta to g(d). SIGReg^(2) = 2 C_w / (d (d+2)) sum (nu_i - 1)^2, so the ratio is
    4 C_w / (d (d+2)) over a weighted mean of g(nu_i): k_1 = 4 C_w / (d (d+2) g(0)), k_2 = 4 C_w / (d (d+2) g(d)),
    and the limit at I (g(1) = theta^2 / 2) is Eq. sup_proportionality's 8 C_w / (theta^2 d (d+2)) between them."""
    d, eps = 4, 0.5
    c, th, cw = d / eps**2, theory.theta(d, eps), theory.cw_gaussian_weight()

    def g(nu):
        return (math.log1p(c) - math.log1p(c * nu) + th * (nu - 1)) / (nu - 1) ** 2

    k1, k2 = 4 * cw / (d * (d + 2) * g(0)), 4 * cw / (d * (d + 2) * g(d))
    limit = theory.limit_ratio(d, eps)
    assert limit == pytest.approx(4 * cw / (d * (d + 2) * th**2 / 2), rel=1e-14) and k1 < limit < k2

    def ratio(sigma):
        gap = theory.rate_gap(sigma, eps)
        assert gap > 0
        return (theory.sigreg2(sigma) / gap).item()

    g_ = torch.Generator().manual_seed(0)
    ratios = [ratio(theory.random_trace_d_covariance(d, g_, rank)) for rank in (1, 2, 4) for _ in range(20)]
    # float64 logdet and sums: the ratio to ~1e-13 relative; 1e-12 keeps the bounds meaningful
    assert k1 * (1 - 1e-12) <= min(ratios) and max(ratios) <= k2 * (1 + 1e-12)
    # the ratio of a diagonal Sigma is the weighted mean of g, computed here by hand: both ends are approached
    for nu in ([4.0, 0.0, 0.0, 0.0], [2.0, 2.0, 0.0, 0.0], [1.5, 1.0, 1.0, 0.5]):
        w = [(n - 1) ** 2 for n in nu]
        by_hand = 4 * cw / (d * (d + 2)) * sum(w) / sum(wi * g(n) for wi, n in zip(w, nu) if n != 1)
        assert ratio(torch.diag(torch.tensor(nu, dtype=torch.float64))) == pytest.approx(by_hand, rel=1e-12)
    # an equivalence, not a proportionality away from I: the sampled ratios lie on both sides of the limit at I
    assert min(ratios) < limit < max(ratios)


def test_gradients_align_with_A():
    d, eps = 5, 0.5
    a = 1e-3 * theory.random_traceless(d, torch.Generator().manual_seed(2))
    sigma = (torch.eye(d, dtype=torch.float64) + a).requires_grad_(True)
    (g_sig,) = torch.autograd.grad(theory.sigreg2(sigma), sigma)
    (g_rate,) = torch.autograd.grad(theory.rate_gap(sigma, eps), sigma)
    cw, th = theory.cw_gaussian_weight(), theory.theta(d, eps)
    torch.testing.assert_close(theory.project_traceless(g_sig), 4 * cw / (d * (d + 2)) * a)
    err = (theory.project_traceless(g_rate) - th**2 / 2 * a).norm() / (th**2 / 2 * a).norm()
    assert err < 1e-2  # O(||A||)


def test_finite_sample_bias_is_what_the_statistic_adds():
    from aot_lib import epps_pulley

    n, v = 64, 1.5
    x = torch.randn(n, 20_000, dtype=torch.float64) * v**0.5
    mean_stat = epps_pulley(x, t_max=8.0, n_points=81).mean() / n  # wide interval: no truncation
    expected = theory.gaussian_slice_sigreg(v) + theory.finite_sample_bias(v, n)
    assert mean_stat.item() == pytest.approx(expected.item(), rel=2e-2)
