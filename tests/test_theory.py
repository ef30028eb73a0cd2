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
    d, eps = 4, 0.5
    g = torch.Generator().manual_seed(0)
    ratios = []
    for rank in (1, 2, 4):
        for _ in range(20):
            sigma = theory.random_trace_d_covariance(d, g, rank)
            gap = theory.rate_gap(sigma, eps)
            assert gap > 0
            ratios.append((theory.sigreg2(sigma) / gap).item())
    assert 0 < min(ratios) <= max(ratios) < math.inf


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
