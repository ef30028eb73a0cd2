import pytest
import torch

from aot_lib import LeJEPALoss
from aot_lib.lejepa import alpha_from_lejepa_lambda


def test_default_alpha_is_lejepa_lambda_005():
    loss = LeJEPALoss()
    assert loss.alpha == pytest.approx(alpha_from_lejepa_lambda(0.05)) == pytest.approx(1 / 19)
    # (1 - lambda) * L_total = (1 - lambda) * pred + lambda * sigreg
    y = torch.randn(8, 64, 16)
    out = loss(y)
    lejepa_form = 0.95 * out.pred + 0.05 * out.sigreg
    torch.testing.assert_close(0.95 * out.loss, lejepa_form)


def test_prediction_loss_is_zero_when_views_agree():
    base = torch.randn(64, 16)
    out = LeJEPALoss()(base.expand(8, -1, -1))
    assert out.pred.item() == 0.0
    assert out.sigreg.item() > 0


def test_prediction_loss_definition_and_list_input():
    torch.manual_seed(0)
    views = [torch.randn(10, 4) for _ in range(5)]
    out = LeJEPALoss(num_global=2)(views)
    center = (views[0] + views[1]) / 2
    ref = sum(((center - v) ** 2).mean() for v in views) / 5
    torch.testing.assert_close(out.pred, ref)
    torch.testing.assert_close(out.loss, out.pred + out.sigreg / 19)


def test_gradients_reach_every_view():
    y = torch.randn(4, 32, 8, requires_grad=True)
    LeJEPALoss(num_slices=16).forward(y).loss.backward()
    assert (y.grad.abs().sum((1, 2)) > 0).all()


def test_bad_input():
    with pytest.raises(ValueError, match=r"shape \(views, batch, dim\) with at least 2 global"):
        LeJEPALoss()(torch.randn(1, 8, 4))
    with pytest.raises(ValueError, match=r"lambda must lie in \[0, 1\)"):
        alpha_from_lejepa_lambda(1.0)
