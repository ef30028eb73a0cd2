"""LeJEPALoss: Eq. total, the two SIGReg sample conventions against a float64 reference, autocast."""
import numpy as np
import pytest
import torch

from aot_lib import LeJEPALoss
from aot_lib.objectives.lejepa import LeJEPAOutput, alpha_from_lejepa_lambda
from helpers import assert_float32_under_bf16_autocast


def test_default_alpha_is_lejepa_lambda_005():
    loss = LeJEPALoss()
    assert loss.alpha == pytest.approx(alpha_from_lejepa_lambda(0.05)) == pytest.approx(1 / 19)
    # (1 - lambda) * L_total = (1 - lambda) * pred + lambda * sigreg
    y = torch.randn(8, 64, 16)
    out = loss(y)
    assert LeJEPAOutput._fields == ("loss", "pred_loss", "sigreg_loss", "embeddings") and out.embeddings is None
    lejepa_form = 0.95 * out.pred_loss + 0.05 * out.sigreg_loss
    torch.testing.assert_close(0.95 * out.loss, lejepa_form)


@pytest.mark.parametrize("num_global", [2, 3, 8])
def test_prediction_loss_is_zero_when_views_agree(num_global):
    base = torch.randn(64, 16)
    out = LeJEPALoss(num_global=num_global)(base.expand(8, -1, -1))
    # The target is a float32 mean of identical global views: the sum of k copies divided by k equals the
    # copy up to one or two roundings (for k = 3, (x + x + x) / 3 need not be x exactly), i.e. a relative
    # error of at most a few float32 eps (2^-23 = 1.2e-7) per entry. The squared error is then below
    # (4 eps)^2 * mean(x^2), about 2e-13 here, where any real disagreement between the views is many
    # orders larger (below).
    bound = (4 * torch.finfo(torch.float32).eps) ** 2 * base.square().mean().item()
    assert 0 <= out.pred_loss.item() <= bound
    assert out.sigreg_loss.item() > 0
    # one view off by 1e-3 in every entry: a loss of about 1e-6 / 8, far above that bound
    views = base.expand(8, -1, -1).clone()
    views[-1] += 1e-3
    assert LeJEPALoss(num_global=2)(views).pred_loss.item() == pytest.approx(1e-6 / 8, rel=1e-3)


def test_prediction_loss_definition_and_list_input():
    torch.manual_seed(0)
    views = [torch.randn(10, 4) for _ in range(5)]
    out = LeJEPALoss(num_global=2)(views)
    center = (views[0] + views[1]) / 2
    ref = sum(((center - v) ** 2).mean() for v in views) / 5
    torch.testing.assert_close(out.pred_loss, ref)
    torch.testing.assert_close(out.loss, out.pred_loss + out.sigreg_loss / 19)


@pytest.mark.parametrize("sample", ["per_view", "pooled"])
def test_gradient_is_the_derivative_of_the_loss(sample):
    """torch.autograd.gradcheck in float64 (central finite differences, step 1e-6, against the analytic gradient
    of both terms), with fixed SIGReg directions so the loss is one smooth function; and every view, local ones
    included, receives a gradient (the target, the mean of the global views, is not detached)."""
    g = torch.Generator().manual_seed(0)
    y = torch.randn(4, 6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    dirs = torch.nn.functional.normalize(torch.randn(3, 5, generator=g, dtype=torch.float64), dim=0)
    loss = LeJEPALoss(alpha=0.5, sigreg_sample=sample)
    assert torch.autograd.gradcheck(lambda y: loss(y, directions=dirs).loss, (y,))
    (grad,) = torch.autograd.grad(loss(y, directions=dirs).loss, y)
    assert (grad.abs().sum((1, 2)) > 0).all()


def test_bad_input():
    with pytest.raises(ValueError, match=r"shape \(views, batch, dim\) with at least 2 global"):
        LeJEPALoss()(torch.randn(1, 8, 4))
    with pytest.raises(ValueError, match=r"lambda must lie in \[0, 1\)"):
        alpha_from_lejepa_lambda(1.0)
    with pytest.raises(ValueError, match=r"sigreg_sample must be one of \('per_view', 'pooled'\), got 'per_batch'"):
        LeJEPALoss(sigreg_sample="per_batch")


# --- the two SIGReg sample conventions -------------------------------------------------------

def epps_pulley_reference(u: np.ndarray, t_max: float, n_grid: int) -> float:
    """``N * int_{-t_max}^{t_max} |phi_hat(t) - e^{-t^2/2}|^2 e^{-t^2/2} dt``, trapezoid rule on the
    whole interval with ``n_grid`` nodes, float64, complex arithmetic (no symmetry folding)."""
    t = np.linspace(-t_max, t_max, n_grid)
    phi_hat = np.exp(1j * np.outer(t, u)).mean(1)
    integrand = np.abs(phi_hat - np.exp(-(t**2) / 2)) ** 2 * np.exp(-(t**2) / 2)
    return len(u) * np.trapezoid(integrand, t)


def sigreg_reference(y: np.ndarray, a: np.ndarray, sample: str, t_max: float, n_grid: int) -> float:
    """Mean over directions (and over views for ``per_view``) of the reference statistic."""
    samples = list(y) if sample == "per_view" else [y.reshape(-1, y.shape[-1])]
    return float(np.mean([epps_pulley_reference(s @ a[:, k], t_max, n_grid) for s in samples for k in range(a.shape[1])]))


@pytest.fixture
def fixed():
    rng = np.random.default_rng(0)
    V, N, D, K = 3, 16, 5, 4
    # skewed and off-centre (so far from the null), with a somewhat different scale per view
    y = rng.standard_normal((V, N, D)) * np.array([0.8, 1.0, 1.25])[:, None, None] + 0.5 * rng.standard_exponential((V, N, D))
    a = rng.standard_normal((D, K))
    a /= np.linalg.norm(a, axis=0)
    return y, a


@pytest.mark.parametrize("sample", ["per_view", "pooled"])
def test_sigreg_sample_conventions_against_float64_reference(fixed, sample):
    y, a = fixed
    yt, at = torch.from_numpy(y), torch.from_numpy(a)
    # default 17 nodes on [0, 3], doubled: the same rule as 33 nodes on [-3, 3] (even integrand);
    # everything in float64, so only rounding separates the two (1e-10 leaves room for the sums)
    out = LeJEPALoss(alpha=0.5, sigreg_sample=sample)(yt, directions=at)
    ref = sigreg_reference(y, a, sample, 3.0, 33)
    assert out.sigreg_loss.dtype == torch.float64
    assert out.sigreg_loss.item() == pytest.approx(ref, rel=1e-10)
    torch.testing.assert_close(out.loss, out.pred_loss + 0.5 * out.sigreg_loss)
    # and the integral itself: a fine rule against an independent, finer one; both are O(h^2)
    # from the integral, and 1e-5 is far above that error (about 1e-8 here) yet far below the gap
    # between the two conventions
    fine = LeJEPALoss(sigreg_sample=sample, n_points=1201)(yt, directions=at).sigreg_loss.item()
    assert fine == pytest.approx(sigreg_reference(y, a, sample, 3.0, 12_001), rel=1e-5)


def test_conventions_differ_and_pooled_is_v_times_per_view_for_identical_views(fixed):
    y, a = fixed
    yt, at = torch.from_numpy(y), torch.from_numpy(a)
    per_view = LeJEPALoss(sigreg_sample="per_view")(yt, directions=at).sigreg_loss
    pooled = LeJEPALoss(sigreg_sample="pooled")(yt, directions=at).sigreg_loss
    assert pooled > 1.5 * per_view  # here about 2x: the pooled sample is V times larger
    # identical views: the pooled empirical characteristic function is the per-view one, and the
    # pooled statistic carries the factor V*N instead of N (equal up to float64 rounding)
    same = yt[:1].expand(3, -1, -1)
    per_view = LeJEPALoss(sigreg_sample="per_view")(same, directions=at).sigreg_loss
    pooled = LeJEPALoss(sigreg_sample="pooled")(same, directions=at).sigreg_loss
    torch.testing.assert_close(pooled, 3 * per_view, rtol=1e-12, atol=0)


# --- precision under autocast ----------------------------------------------------------------

@pytest.mark.parametrize("sample", ["per_view", "pooled"])
def test_float32_under_bf16_autocast(sample):
    """Under bf16 autocast the loss, its two terms and the gradient are the float32 ones (autocast is switched off
    inside the loss), also for bf16 embeddings."""
    loss = LeJEPALoss(sigreg_sample=sample)
    y = torch.randn(4, 64, 16, generator=torch.Generator().manual_seed(0))
    dirs = torch.nn.functional.normalize(torch.randn(16, 64, generator=torch.Generator().manual_seed(1)), dim=0)
    # loss, pred_loss, sigreg_loss (embeddings: None from the loss alone)
    assert_float32_under_bf16_autocast(lambda x: loss(x, directions=dirs), y, outputs=lambda out: out[:3],
                                       loss=lambda out: out.loss)


def test_energy_normalize_imposes_appendix_a_conditions():
    """Centred, and tr(Sigma) = d for the sample covariance (Eq. sup_normalization), per view; float64 so
    the checks are exact to rounding."""
    from aot_lib.objectives.lejepa import energy_normalize

    g = torch.Generator().manual_seed(0)
    y = 3.0 + 5.0 * torch.randn(4, 64, 6, generator=g, dtype=torch.float64)
    z = energy_normalize(y)
    torch.testing.assert_close(z.mean(-2), torch.zeros(4, 6, dtype=torch.float64), rtol=0, atol=1e-12)
    cov = torch.einsum("vnd,vne->vde", z, z) / z.shape[-2]
    torch.testing.assert_close(torch.diagonal(cov, dim1=-2, dim2=-1).sum(-1), torch.full((4,), 6.0, dtype=torch.float64))
    # scale and shift of the input do not matter after normalisation
    torch.testing.assert_close(energy_normalize(7.0 * y - 2.0), z)


def test_sigreg_normalize_option_tests_the_normalised_sample():
    from aot_lib.objectives.lejepa import LeJEPALoss, energy_normalize

    g = torch.Generator().manual_seed(1)
    y = 4.0 * torch.randn(3, 32, 5, generator=g, dtype=torch.float64) + 1.0
    dirs = torch.nn.functional.normalize(torch.randn(5, 7, generator=g, dtype=torch.float64), dim=0)
    plain, normed = LeJEPALoss(num_global=2), LeJEPALoss(num_global=2, sigreg_normalize=True)
    out = normed(y, dirs)
    torch.testing.assert_close(out.sigreg_loss, plain(energy_normalize(y), dirs).sigreg_loss)
    torch.testing.assert_close(out.pred_loss, plain(y, dirs).pred_loss)  # the prediction sees raw embeddings
