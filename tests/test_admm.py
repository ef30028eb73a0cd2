"""Algorithm 1 invariants of the AoT-ADMM encoder, checked in float64 on a small width."""
import math

import pytest
import torch
import torch.nn.functional as F

from aot_lib import create_model
from aot_lib.models import ADMMLayer, admm_coefficients


@pytest.fixture
def model():
    m = create_model("aot_admm_tiny", embed_dim=48, num_heads=4, depth=4).double()
    # move away from the initial point so the invariants are not checked only at init
    with torch.no_grad():
        for blk in m.blocks:
            blk.coef_logits.add_(torch.randn(3))
            blk.tau_raw.add_(0.05 * torch.randn_like(blk.tau_raw))
    return m


def test_initial_coefficients_are_the_admm_step():
    m = create_model("aot_admm_tiny", depth=2, eta=0.2, gamma=1.5, rho=2.0)
    for blk in m.blocks:
        torch.testing.assert_close(blk.coefficients(), torch.tensor([1 - 0.3 - 0.4, 0.3, 0.4]))
        torch.testing.assert_close(blk.tau, torch.full((384,), 0.1 / 2.0))
    default = create_model("aot_admm_tiny", depth=1).blocks[0]
    torch.testing.assert_close(default.coefficients(), torch.tensor([0.5, 0.25, 0.25]))
    torch.testing.assert_close(default.tau, torch.full((384,), 0.1))
    assert admm_coefficients(0.25, 1.0, 1.0) == (0.5, 0.25, 0.25)


def test_state_recursion(model):
    x = torch.randn(3, 3, 32, 32, dtype=torch.float64)
    states = model.forward_intermediates(x)
    assert len(states) == model.depth + 1
    assert all(s.tokens is s.v for s in states)  # the uniform `tokens` field of every family is V
    s0 = states[0]
    torch.testing.assert_close(s0.v, s0.z)  # V^0 = Z^0
    assert (s0.w == 0).all()  # W^0 = 0

    def rms(x):  # Appendix B's feature-wise RMS rescaling, written out: x / sqrt(mean_features(x^2) + eps)
        return x / x.square().mean(-1, keepdim=True).add(model.blocks[0].rms_eps).sqrt()

    for layer, prev, s in zip(model.blocks, states[:-1], states[1:]):
        coef = s.coefficients
        assert (coef > 0).all() and math.isclose(coef.sum().item(), 1.0, rel_tol=1e-12)
        a, b, c = coef
        # Z-step (Eq. layer_updates, first line) followed by the RMS rescaling
        pre = a * prev.z + b * layer.mssa(layer.norm(prev.z)) + c * (prev.v - prev.w)
        torch.testing.assert_close(s.z, rms(pre))
        # V-step: one-sided soft threshold of Z^{l+1} + W^l
        u, tau = s.z + prev.w, layer.tau.expand_as(s.z)
        torch.testing.assert_close(s.v, F.relu(u - tau))
        assert (s.v >= 0).all()
        # W-step W^{l+1} = W^l + Z^{l+1} - V^{l+1} = u - ReLU(u - tau) = min(u, tau), the part the threshold
        # removed, written without V (the fused path computes W from V; this does not); then RMS-rescaled
        torch.testing.assert_close(s.w_raw, torch.minimum(u, tau))
        torch.testing.assert_close(s.w, rms(torch.minimum(u, tau)))
        # ... and the scaled dual is a subgradient of the V-step's penalty tau |V| + 1{V >= 0} at V^{l+1}
        # (the prox optimality condition, u - V in tau * d|V|): W = tau where V > 0, W <= tau where V = 0
        torch.testing.assert_close(s.w_raw[s.v > 0], tau[s.v > 0])
        assert (s.w_raw[s.v == 0] <= tau[s.v == 0]).all() and (s.v > 0).any() and (s.v == 0).any()


def test_features_are_pooled_v(model):
    x = torch.randn(2, 3, 32, 32, dtype=torch.float64)
    states = model.forward_intermediates(x)
    torch.testing.assert_close(model.forward_features(x), states[-1].v[:, 0])
    assert (model.forward_features(x) >= 0).all()


def test_mssa_matches_equation_mssa():
    """With the output map tied to U (proj = U), MSSA is Eq. mssa with a 1/sqrt(p) temperature."""
    torch.manual_seed(1)
    d, k, n = 12, 3, 5
    layer = ADMMLayer(d, k).double()
    mssa = layer.mssa
    with torch.no_grad():
        mssa.proj.weight.copy_(mssa.qkv.weight.t())
    Z = torch.randn(d, n, dtype=torch.float64)  # paper convention: tokens are columns
    ref = torch.zeros(d, n, dtype=torch.float64)
    for Uk in mssa.subspaces():  # (d, p)
        p = Uk.shape[1]
        proj = Uk.T @ Z
        ref += Uk @ proj @ torch.softmax(proj.T @ proj / math.sqrt(p), dim=0)
    torch.testing.assert_close(mssa(Z.T.unsqueeze(0))[0].T, ref)


def test_coefficients_stay_on_simplex_after_training_steps():
    # The claim is about the parametrisation (a softmax of free logits), not about float range: a softmax
    # of logits more than ~104 apart underflows to an exact 0 in float32 (~745 in float64) whatever the
    # model does, which SGD at lr 10 used to reach. So: float64, a step size that moves the logits by a
    # few units (spread ~7 here), and a check that the spread stays far inside the representable range.
    m = create_model("aot_admm_tiny", embed_dim=32, num_heads=2, depth=2).double()
    opt = torch.optim.SGD(m.parameters(), lr=1.0)
    for _ in range(3):
        opt.zero_grad()
        m(torch.randn(4, 3, 32, 32, dtype=torch.float64)).logsumexp(-1).sum().backward()
        opt.step()
    moved = 0.0
    for blk in m.blocks:
        c, logits = blk.coefficients(), blk.coef_logits.detach()
        assert logits.max() - logits.min() < 50  # exp(-50) ~ 2e-22: positivity is representable
        assert (c > 0).all()
        # three terms of a normalised sum: |sum - 1| is a few float64 ulps (2.2e-16 each)
        assert abs(c.sum().item() - 1.0) <= 4 * torch.finfo(torch.float64).eps
        torch.testing.assert_close(c, logits.exp() / logits.exp().sum(), rtol=1e-12, atol=0)
        moved = max(moved, (c - torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)).abs().max().item())
    assert moved > 1e-2  # they did move (by about 0.5 at this step size)
