"""epps_pulley / SIGReg against float64 references and their statistical behaviour."""
import math
import os

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from aot_lib import SIGReg, epps_pulley
from aot_lib.objectives.sigreg import ANCHOR_EVERY, empirical_cf, quadrature, sample_directions
from helpers import assert_float32_under_bf16_autocast, free_port


def direct_integral(u: np.ndarray, t_max: float, n_grid: int = 200_001) -> float:
    """N * int_{-t_max}^{t_max} |phi_hat(t) - exp(-t^2/2)|^2 exp(-t^2/2) dt on a fine grid, float64."""
    t = np.linspace(-t_max, t_max, n_grid)
    phi_hat = np.exp(1j * np.outer(t, u)).mean(1)
    integrand = np.abs(phi_hat - np.exp(-t**2 / 2)) ** 2 * np.exp(-t**2 / 2)
    return len(u) * np.trapezoid(integrand, t)


@pytest.mark.parametrize("shift", [0.0, 0.7])
def test_epps_pulley_converges_to_the_float64_integral(shift):
    rng = np.random.default_rng(0)
    u = rng.standard_normal(64) * 1.3 + shift
    ref = direct_integral(u, 3.0)
    x = torch.from_numpy(u).reshape(64, 1)
    fine = epps_pulley(x, t_max=3.0, n_points=2001).item()
    assert fine == pytest.approx(ref, rel=1e-6)
    # the default 17-node rule: its quadrature error on such samples stays below 1 %
    coarse = epps_pulley(x, t_max=3.0, n_points=17).item()
    assert coarse == pytest.approx(ref, rel=1e-2)


def test_quadrature_integrates_the_gaussian_weight():
    # int_{-3}^{3} e^{-t^2/2} dt = sqrt(2 pi) erf(3/sqrt 2)
    _, w = quadrature(3.0, 2001, dtype=torch.float64)
    assert w.sum().item() == pytest.approx(math.sqrt(2 * math.pi) * math.erf(3 / math.sqrt(2)), rel=1e-6)
    with pytest.raises(ValueError, match="n_points >= 2"):
        quadrature(3.0, 1)


def test_null_expectation():
    """Under N(0,1): E[N |phi_hat - phi|^2] = 1 - e^{-t^2}, so E[T] = int (1 - e^{-t^2}) w(t) dt."""
    t, w = quadrature(3.0, 17, dtype=torch.float64)
    expected = ((1 - torch.exp(-t**2)) * w).sum().item()
    stats = epps_pulley(torch.randn(256, 8000, dtype=torch.float64))
    assert stats.shape == (8000,)
    assert stats.mean().item() == pytest.approx(expected, rel=0.05)


def test_batched_leading_dims():
    x = torch.randn(3, 50, 4, dtype=torch.float64)
    out = epps_pulley(x)
    assert out.shape == (3, 4)
    torch.testing.assert_close(out[1], epps_pulley(x[1]))


def test_gradcheck():
    x = torch.randn(12, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: epps_pulley(a, n_points=9), (x,))


def test_sigreg_small_for_gaussian_large_otherwise():
    sig = SIGReg(num_slices=256)
    gauss = sig(torch.randn(512, 32)).item()
    collapsed = sig(torch.randn(512, 1) * torch.ones(1, 32)).item()  # rank one
    shifted = sig(torch.randn(512, 32) + 1.0).item()
    scaled = sig(3 * torch.randn(512, 32)).item()
    assert gauss < 2.0  # the null mean is about 1.05 (test_null_expectation)
    for bad in (collapsed, shifted, scaled):
        assert bad > 20 * gauss


def test_sigreg_directions_are_seeded_by_step():
    sig = SIGReg(num_slices=8, seed=3)
    z = torch.randn(64, 5)
    a = sig(z)
    assert sig.step.item() == 1
    b = sig(z)
    assert sig.step.item() == 2 and a != b  # fresh directions every training step
    sig.eval()
    c = sig(z)
    assert sig.step.item() == 2  # eval does not advance the step
    fresh = SIGReg(num_slices=8, seed=3)
    fresh.load_state_dict(sig.state_dict())  # the step is saved with the module
    assert torch.equal(fresh.eval()(z), c)
    d = sample_directions(5, 8, seed=5)
    torch.testing.assert_close(c, epps_pulley(z @ d).mean())
    torch.testing.assert_close(d.norm(dim=0), torch.ones(8))


def test_sigreg_explicit_directions_and_bad_shape():
    sig = SIGReg()
    z = torch.randn(32, 6)
    eye = torch.eye(6)
    torch.testing.assert_close(sig(z, directions=eye), epps_pulley(z).mean())
    assert sig.step.item() == 0
    with pytest.raises(ValueError, match=r"directions must have shape \(6, K\)"):
        sig(z, directions=torch.eye(5))


def test_sigreg_explicit_directions_dtype_promotion():
    """float64 embeddings with float32 directions are not rounded to float32 (nor the reverse)."""
    z = torch.randn(32, 6, dtype=torch.float64)
    eye32 = torch.eye(6)
    out = SIGReg()(z, directions=eye32)
    assert out.dtype == torch.float64
    torch.testing.assert_close(out, epps_pulley(z).mean(), rtol=0, atol=0)  # the same float64 ops
    assert SIGReg()(z.float(), directions=eye32.double()).dtype == torch.float64


@pytest.mark.parametrize("which", ["sigreg", "epps_pulley"])
def test_float32_under_bf16_autocast(which):
    """Under bf16 autocast SIGReg's value and gradient are the float32 ones, in float32 (autocast is switched off
    inside), also for a bf16 input."""
    z = torch.randn(256, 64, generator=torch.Generator().manual_seed(0))
    dirs = sample_directions(64, 128, seed=1)
    if which == "sigreg":
        assert_float32_under_bf16_autocast(lambda x: SIGReg()(x, directions=dirs), z)
    else:
        assert_float32_under_bf16_autocast(lambda x: epps_pulley(x[:, :8]), z)


def _ddp_worker(rank, world, port, x, out):
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    local = x.chunk(world)[rank].clone().requires_grad_(True)
    stat = epps_pulley(local)
    stat.sum().backward()
    out[rank] = torch.cat([stat.detach(), local.grad.flatten()])
    dist.destroy_process_group()


def test_ddp_statistic_is_the_global_batch_statistic():
    world, x = 2, torch.randn(40, 3, dtype=torch.float64)
    out = mp.Manager().dict()
    port = free_port()
    mp.spawn(_ddp_worker, args=(world, port, x, out), nprocs=world, join=True)
    full = x.clone().requires_grad_(True)
    ref = epps_pulley(full)
    ref.sum().backward()
    for rank in range(world):
        torch.testing.assert_close(out[rank][:3], ref.detach())
        # each rank's gradient is its slice of the global gradient (the all-reduce is autograd-aware;
        # DDP then averages parameter gradients, so the global loss must be summed over ranks once)
        torch.testing.assert_close(out[rank][3:] / world, full.grad.chunk(world)[rank].flatten())


def cf_bound(x: torch.Tensor, t_max: float, n_points: int) -> torch.Tensor:
    """Per entry of ``x``, the bound of aot_lib.objectives.sigreg._EmpiricalCF's docstring on |cos + i sin - exp(i x t_j)|
    over the nodes: (2 sqrt 2 + (2 sqrt 2 + sqrt 5) m + 2 |x| t_max) u, with m the recurrence steps since the
    last anchor (at most ANCHOR_EVERY - 1 whatever the node count) and u the unit roundoff of x's dtype."""
    u = torch.finfo(x.dtype).eps / 2
    m = min(n_points - 1, ANCHOR_EVERY - 1)
    return (2 * math.sqrt(2) + (2 * math.sqrt(2) + math.sqrt(5)) * m + 2 * x.detach().double().abs() * t_max) * u


def direct_cf(x: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean_n cos(x_n t), mean_n sin(x_n t)), (..., K, T), with cos/sin evaluated at every node."""
    xt = x.unsqueeze(-1) * t
    return torch.cos(xt).mean(-3), torch.sin(xt).mean(-3)


@pytest.mark.parametrize("n_points", [17, 4097])  # LeJEPA's grid; 128 anchors (the plain recurrence: 2.1e-5 off in float32)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_empirical_cf_within_its_stated_bound_at_any_node_count(n_points, dtype):
    """empirical_cf (the re-anchored angle-addition recurrence) and its hand-written backward against cos/sin
    evaluated at every node in float64, on the same input values, within the error bound its docstring states."""
    g = torch.Generator().manual_seed(0)
    x = (2 * torch.randn(2, 24, 5, generator=g, dtype=dtype)).requires_grad_(True)
    x64 = x.detach().double().requires_grad_(True)
    t = torch.linspace(0.0, 3.0, n_points, dtype=torch.float64)
    ref = direct_cf(x64, t)
    got = empirical_cf(x, 3.0, n_points)
    u, n = torch.finfo(dtype).eps / 2, x.shape[-2]
    entry = cf_bound(x, 3.0, n_points)  # (2, 24, 5)
    # the means: the largest entry bound of the column, plus N u for the N - 1 additions (in any order) of terms
    # of modulus <= 1 and the division by N
    mean_tol = entry.amax(-2).unsqueeze(-1) + n * u  # (2, 5, 1)
    for a, b in zip(got, ref):
        assert ((a.double() - b).abs() <= mean_tol).all()
    gc, gs = (torch.randn(ref[0].shape, generator=g, dtype=dtype) for _ in range(2))
    (g_got,) = torch.autograd.grad((got[0] * gc).sum() + (got[1] * gs).sum(), x)
    (g_ref,) = torch.autograd.grad((ref[0] * gc.double()).sum() + (ref[1] * gs.double()).sum(), x64)
    # the gradient sum_j t_j (cos g^s_j - sin g^c_j) / N: off by at most (E + (k + 5) u) G, G = sum_j t_j |g_j| / N
    # (the docstring: E for cos/sin, 4 u for each term's products, (k - 1) u for the sum of a block of k terms,
    # 2 u for the compensated sum of the blocks)
    big_g = ((t * torch.hypot(gc.double(), gs.double())).sum(-1) / n).unsqueeze(-2)  # (2, 1, 5)
    assert ((g_got.double() - g_ref).abs() <= (entry + (ANCHOR_EVERY + 5) * u) * big_g).all()
    for a, b in zip(empirical_cf(x), empirical_cf(x, 3.0, 17)):  # the defaults are LeJEPA's grid: 17 nodes on [0, 3]
        assert torch.equal(a, b)


def test_the_compiled_cpu_kernel_is_within_the_same_bound_and_matches_the_eager_path(monkeypatch):
    """On a CPU, above COMPILE_MIN_ENTRIES (set to 0 here, so a small x takes the path training's large ones take),
    the characteristic function and its gradient come from the two compiled kernels: within the bound stated for
    the recurrence, against cos/sin evaluated at every node in float64, and equal to the eager path but for the
    order of the sums."""
    from aot_lib import cpu_kernels
    from aot_lib.objectives import sigreg

    monkeypatch.delenv(cpu_kernels.KERNEL_ENV, raising=False)
    monkeypatch.setattr(sigreg, "COMPILE_MIN_ENTRIES", 0)
    g = torch.Generator().manual_seed(5)
    x = (2 * torch.randn(2, 24, 5, generator=g)).requires_grad_(True)
    x64 = x.detach().double().requires_grad_(True)
    t = torch.linspace(0.0, 3.0, 17, dtype=torch.float64)
    gc, gs = (torch.randn(2, 5, 17, generator=g) for _ in range(2))
    got = empirical_cf(x)
    (g_got,) = torch.autograd.grad((got[0] * gc).sum() + (got[1] * gs).sum(), x)
    assert not cpu_kernels._KERNELS.get("failed"), "the compiled kernels could not be built on this machine"
    assert {"empirical_cf.forward", "empirical_cf.backward"} <= set(cpu_kernels._KERNELS)
    ref = direct_cf(x64, t)
    (g_ref,) = torch.autograd.grad((ref[0] * gc.double()).sum() + (ref[1] * gs.double()).sum(), x64)
    u, n = 2.0**-24, x.shape[-2]
    entry = cf_bound(x, 3.0, 17)
    for a, b in zip(got, ref):  # the bound of test_empirical_cf_within_its_stated_bound_at_any_node_count
        assert ((a.double() - b).abs() <= entry.amax(-2).unsqueeze(-1) + n * u).all()
    big_g = ((t * torch.hypot(gc.double(), gs.double())).sum(-1) / n).unsqueeze(-2)
    assert ((g_got.double() - g_ref).abs() <= (entry + (ANCHOR_EVERY + 5) * u) * big_g).all()
    monkeypatch.setenv(cpu_kernels.KERNEL_ENV, "eager")
    eager = empirical_cf(x)
    (g_eager,) = torch.autograd.grad((eager[0] * gc).sum() + (eager[1] * gs).sum(), x)
    # the same recurrence; only the order of the 24 additions of each mean (and of the 16 node terms of the
    # gradient) may differ: 24 u on terms of modulus <= 1, 16 u relative on the gradient's terms
    for a, b in zip(got, eager):
        torch.testing.assert_close(a, b, rtol=0, atol=n * u)
    torch.testing.assert_close(g_got, g_eager, rtol=0, atol=(16 * u * big_g).max().item())


def test_empirical_cf_backward_is_the_derivative_of_forward_across_anchors():
    """70 nodes: anchors at nodes 32 and 64 and three blocks of the gradient's compensated sum; 9 nodes: none."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    for n_points in (9, 70):
        gc, gs = (torch.randn(2, 3, n_points, generator=g, dtype=torch.float64) for _ in range(2))

        def projected(x, n_points=n_points, gc=gc, gs=gs):  # one output: one backward, every node's gradient
            c, s = empirical_cf(x, 2.5, n_points)
            return (c * gc).sum() + (s * gs).sum()

        assert torch.autograd.gradcheck(projected, (x,))


@pytest.mark.parametrize("n_points", [17, 2049])
def test_epps_pulley_float32_within_the_bound_of_its_parts(n_points):
    """epps_pulley of float32 input against the float64 statistic of the same values, with cos/sin at every node,
    on the same float32 quadrature (nodes t, weights w: aot_lib.objectives.sigreg.quadrature, tested above), value and gradient."""
    g = torch.Generator().manual_seed(2)
    x = (1.3 * torch.randn(24, 4, generator=g) + 0.4).requires_grad_(True)  # not N(0, 1): C - phi well above rounding
    x64 = x.detach().double().requires_grad_(True)
    t32, w32 = quadrature(3.0, n_points)
    t, w = t32.double(), w32.double()
    cos_m, sin_m = direct_cf(x64, t)
    phi = torch.exp(-0.5 * t**2)
    ref = ((cos_m - phi) ** 2 + sin_m**2) @ w * x.shape[0]
    got = epps_pulley(x, 3.0, n_points)
    assert got.dtype == torch.float32
    (g_ref,) = torch.autograd.grad(ref.sum(), x64)
    (g_got,) = torch.autograd.grad(got.sum(), x)
    u, n = 2.0**-24, x.shape[0]
    # absolute error of C_j - phi_j and of S_j: empirical_cf's (as above) plus phi_j's float32 rounding, below
    # (t_max^2 + 1) u: t^2 rounded (t^2 u / 2 on the exponent), exp to 1 ulp (2 u), and phi_j <= 1
    cf_err = cf_bound(x, 3.0, n_points).amax(0) + n * u + (3.0**2 + 1) * u  # (K,)
    # value N sum_j w_j D_j, D_j = (C_j - phi_j)^2 + S_j^2: first order 2 (|C - phi| + |S|) cf_err per node, then
    # relative rounding 4 u per D_j (difference, two squares, sum), T u for the dot over the T nodes in any order and
    # u for the factor N
    value_tol = 2 * n * (((cos_m - phi).abs() + sin_m.abs()) @ w) * cf_err + (n_points + 5) * u * ref
    assert ((got.double() - ref).abs() <= value_tol).all()
    # gradient: empirical_cf's backward (as above) with g^c_j = 2 N w_j (C_j - phi_j), g^s_j = 2 N w_j S_j, which
    # carry 4 u relative rounding (difference, square's derivative, weight, factor N) and, from C and S,
    # 2 N w_j sqrt 2 cf_err absolute: sum_j t_j / N of that is 2 sqrt 2 cf_err sum_j t_j w_j
    big_g = 2 * (t * w * torch.hypot(cos_m - phi, sin_m)).sum(-1)  # sum_j t_j |g_j| / N, (K,)
    grad_tol = (cf_bound(x, 3.0, n_points) + (ANCHOR_EVERY + 9) * u) * big_g + 2 * math.sqrt(2) * cf_err * (t @ w)
    assert ((g_got.double() - g_ref).abs() <= grad_tol).all()
