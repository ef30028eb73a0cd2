# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-user_expressions
#     formats: py:percent
#     notebook_metadata_filter: -jupytext.text_representation
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# (ch-objective)=
# # The training objective: LeJEPA written down
#
# **This chapter:** the loss AoT-ADMM is pretrained with, term by term: each formula,
# the `aot_lib` code that computes it, and a numerical check of one against the other.

# %% tags=["remove-input"]
from aot_lib.book.pages import open_chapter

open_chapter(seed=0)

# %% [markdown]
# The paper trains its encoder with the LeJEPA objective
# ([](#bib-balestriero2025lejepa)) (the paper's Eq. (19)):
#
# $$
# \mathcal L=\mathcal L_{\text{pred}}+\alpha\,\mathcal L_{\text{SIGReg}} .
# $$ (eq-total)
#
# It says what the two terms do: "a predictive consistency loss aligns the local and
# global embeddings with the mean global representation, while SIGReg regularizes the
# batch embedding distribution toward a standard isotropic Gaussian", and its Appendix A
# defines SIGReg's population form, the Epps–Pulley statistic of random one-dimensional
# projections (the paper's Eq. (A.2)), for any weight $w(t)$. It does **not** state the
# form of $\mathcal L_{\text{pred}}$, the weight, the quadrature, the factor $N$, the
# number of slices, the value of $\alpha$, which embeddings form one SIGReg sample, or
# the projection head. Those follow LeJEPA's two public implementations or are this
# project's choices. {numref}`tbl-objective-provenance` says which, with the values
# `aot_lib` uses by default (`aot_lib.training.config.DEFAULTS`) and in the CPU recipe
# of {ref}`ch-tables-1-3`, both read from the configs.

# %% tags=["hide-input"]
import math
from pathlib import Path

import numpy as np
import torch
from scipy import integrate

from aot_lib.book.pages import show_source
from aot_lib.book.tables import Col, Table
from aot_lib.objectives.lejepa import LeJEPALoss, alpha_from_lejepa_lambda
from aot_lib.objectives.sigreg import SIGReg, epps_pulley, quadrature, sample_directions
from aot_lib.training.config import DEFAULTS, load_config

ROOT = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()


# %% [markdown]
# (sec-objective-provenance)=
# ## What the paper states, and what is ours

# %% tags=["hide-input"]
cpu = load_config(ROOT / "configs" / "cpu" / "aot_admm_cifar10.yaml")


def projector(cfg):
    p = cfg["projector"]
    widths = [p["hidden_dim"]] * (p["num_layers"] - 1) + [p["out_dim"]]
    return "-".join(map(str, widths))


def alpha_text(cfg):
    lam = cfg["loss"]["lejepa_lambda"]
    return f"λ = {lam} → α = {alpha_from_lejepa_lambda(lam):.4f}"


def quadrature_text(cfg):
    loss = cfg["loss"]
    return f"{loss['n_points']} nodes on [0, {loss['t_max']}]"


PAPER, LEJEPA, OURS = "the paper", "LeJEPA's code", "ours"
rows = [
    ("L = L_pred + α L_SIGReg", "—", "—", PAPER, "Eq. (19)"),
    ("target: mean of the global views", "—", "—", PAPER,
     "Sec. 3.3 (text), Algorithm 1"),
    ("L_pred: mean squared error, target not detached", "—", "—", LEJEPA,
     "both implementations"),
    ("SIGReg: Epps–Pulley of random 1-D projections", "—", "—", PAPER,
     "Eq. (A.2) (any weight w)"),
    ("weight w(t) = exp(−t²/2)", "—", "—", LEJEPA, "both implementations"),
    ("trapezoid rule", quadrature_text(DEFAULTS), quadrature_text(cpu), LEJEPA,
     "both implementations"),
    ("factor N on the statistic", "—", "—", LEJEPA, "both implementations"),
    ("slices per step", DEFAULTS["loss"]["num_slices"], cpu["loss"]["num_slices"],
     LEJEPA, "stable-pretraining (minimal example: 256)"),
    ("one SIGReg sample", DEFAULTS["loss"]["sigreg_sample"],
     cpu["loss"]["sigreg_sample"], LEJEPA,
     "minimal example (stable-pretraining pools)"),
    ("SIGReg weight α", alpha_text(DEFAULTS), alpha_text(cpu), OURS,
     "LeJEPA's code: λ = 0.02 or α = 0.02"),
    ("projection head", projector(DEFAULTS), projector(cpu), LEJEPA,
     "minimal example"),
]
Table(rows, [Col("what"), Col("default", "aot_lib default"),
             Col("cpu", "CPU recipe"), Col("source", "from"),
             Col("where", "where")],
      caption="The pieces of the objective and where each comes from",
      name="tbl-objective-provenance",
      notes=["LeJEPA's code: the minimal example of rbalestr-lab/lejepa (MINIMAL.md) "
             "and stable_pretraining/methods/lejepa.py of "
             "galilai-group/stable-pretraining.",
             "The paper states none of the rows marked ours or LeJEPA's code: "
             "they are assumptions of this reproduction."])

# %% [markdown]
# The encoder's pooled features go through the projection head $g$ (Algorithm 1, line
# 12; `aot_lib.objectives.heads.LeJEPAProjector`), and both terms act on its outputs:
# $V$ views (the $G=2$ global ones first), each a batch of $N$ embeddings
# $y_{v,n}\in\mathbb R^D$.
#
# (sec-pred-loss)=
# ## The prediction loss
#
# Every view is pulled to the mean of the global views of the same image:
#
# $$
# \mu_n=\frac1G\sum_{g=1}^{G}y_{g,n},\qquad
# \mathcal L_{\text{pred}}=\frac{1}{VND}\sum_{v=1}^{V}\sum_{n=1}^{N}
#   \lVert\mu_n-y_{v,n}\rVert_2^2 .
# $$ (eq-pred)
#
# The global views are pulled too (towards each other), and the target $\mu_n$ is not
# detached: the gradient flows through it, as in both LeJEPA implementations. `aot_lib`
# computes both terms of {eq}`eq-total` in one method:

# %%
show_source(LeJEPALoss.forward)

# %% [markdown]
# Check {eq}`eq-pred` against a float64 loop over views, images and coordinates, and the
# gradient of the package's loss with respect to one global view against the gradient
# of {eq}`eq-pred` by hand, which has a term from the target:
# $\partial\mathcal L_{\text{pred}}/\partial y_{g,n}
# =\tfrac{2}{VND}\bigl[(y_{g,n}-\mu_n)+\tfrac1G\sum_v(\mu_n-y_{v,n})\bigr]$.

# %%
gen = torch.Generator().manual_seed(0)
V, G, N, D = 8, 2, 16, 5
y = torch.randn(V, N, D, generator=gen, dtype=torch.float64, requires_grad=True)
loss = LeJEPALoss(num_global=G, num_slices=16)
out = loss(y)

values = y.detach().tolist()  # plain Python floats
by_hand = 0.0
for n in range(N):
    mu = [sum(values[g][n][j] for g in range(G)) / G for j in range(D)]
    for v in range(V):
        by_hand += sum((mu[j] - values[v][n][j]) ** 2 for j in range(D))
by_hand /= V * N * D
(grad,) = torch.autograd.grad(out.pred_loss, y)
with torch.no_grad():
    mu = y[:G].mean(0)
    grad_global = 2 / (V * N * D) * ((y[0] - mu) + (mu - y).sum(0) / G)
assert abs(out.pred_loss.item() - by_hand) < 1e-14  # float64, same sums
assert torch.allclose(grad[0], grad_global, rtol=0, atol=1e-15)
assert torch.equal(out.loss, out.pred_loss + loss.alpha * out.sigreg_loss)
print(f"L_pred: package {out.pred_loss.item():.15f}, loop {by_hand:.15f}")
print(f"gradient for global view 1: largest difference from the formula "
      f"{(grad[0] - grad_global).abs().max().item():.1e}")

# %% [markdown]
# (sec-epps-pulley)=
# ## The Epps–Pulley statistic of one direction
#
# For the projections $u_1,\dots,u_N$ of a batch onto one direction, with empirical
# characteristic function $\hat\varphi(t)=\frac1N\sum_ne^{\mathrm itu_n}$, the statistic
# compares $\hat\varphi$ with the standard normal's $e^{-t^2/2}$:
#
# $$
# T(u_{1:N})=N\int_{\mathbb R}\bigl|\hat\varphi(t)-e^{-t^2/2}\bigr|^2\,w(t)\,dt,
# \qquad w(t)=e^{-t^2/2}.
# $$ (eq-ep)
#
# Without the factor $N$ and with the law's $\varphi$ in place of $\hat\varphi$ this is
# the integrand of the paper's Eq. (A.2), which allows any weight positive almost
# everywhere with $\int(1+t^8)w<\infty$; LeJEPA's $w(t)=e^{-t^2/2}$ is one. The
# integrand is even in $t$, so the code integrates $[0,t_{\max}]$ by the trapezoid rule
# with $J$ equally spaced nodes and doubles it:
#
# $$
# T\approx N\sum_{j=0}^{J-1}\omega_j\Bigl[
#   \bigl(\overline{\cos}(t_j)-e^{-t_j^2/2}\bigr)^2
#   +\overline{\sin}(t_j)^2\Bigr],\quad
# t_j=\frac{j\,t_{\max}}{J-1},\quad
# \omega_j=c_j\,2\Delta\,e^{-t_j^2/2},
# $$ (eq-ep-quadrature)
#
# with $\Delta=t_{\max}/(J-1)$, $c_j=\tfrac12$ at the two ends and 1 elsewhere, and
# $\overline{\cos}(t)=\frac1N\sum_n\cos(tu_n)$, $\overline{\sin}(t)$ likewise (the real
# and imaginary parts of $\hat\varphi$). The nodes and weights, then the statistic:

# %%
show_source(quadrature)

# %%
show_source(epps_pulley)

# %% [markdown]
# The cosine and sine means come from `empirical_cf`, which steps through the nodes by
# the angle-addition recurrence instead of calling `cos` and `sin` at every node (its
# docstring bounds the rounding). Three checks, all in float64: the weights are those
# of {eq}`eq-ep-quadrature`; the package's $T$ equals {eq}`eq-ep-quadrature` evaluated
# with complex exponentials (NumPy, no recurrence); and the 17-node rule is close to the
# integral over all of $\mathbb R$ (SciPy's adaptive quadrature); the three values are
# in {numref}`tbl-objective-epps-pulley-check`.

# %%
t_max, n_points = DEFAULTS["loss"]["t_max"], DEFAULTS["loss"]["n_points"]
t, omega = quadrature(t_max, n_points, dtype=torch.float64)
step = t_max / (n_points - 1)
ends = torch.ones(n_points, dtype=torch.float64)
ends[[0, -1]] = 0.5
assert torch.allclose(omega, ends * 2 * step * torch.exp(-t**2 / 2), rtol=1e-15, atol=0)

x = 1.3 * torch.randn(64, 1, generator=gen, dtype=torch.float64) + 0.2  # not N(0, 1)
T_package = epps_pulley(x, t_max, n_points).item()
u = x[:, 0].numpy()


def gap(tt):
    """|phi_hat(t) - exp(-t^2/2)|^2 for the sample u (complex arithmetic)."""
    return abs(np.exp(1j * tt * u).mean() - math.exp(-tt**2 / 2)) ** 2


T_rule = len(u) * sum(float(w) * gap(float(tj)) for tj, w in zip(t, omega))
T_exact = len(u) * integrate.quad(lambda tt: gap(tt) * math.exp(-tt**2 / 2),
                                  -np.inf, np.inf, epsabs=1e-13, limit=400)[0]
assert abs(T_package - T_rule) < 1e-12 * T_rule  # the same sum, another route
rule_error = T_package / T_exact - 1
assert abs(rule_error) < 0.01
Table([("aot_lib.epps_pulley", T_package),
       (f"the {n_points}-node rule, NumPy complex exponentials", T_rule),
       ("the integral over ℝ, SciPy adaptive quadrature", T_exact)],
      [Col("how"), Col("T", "T", ".12f")],
      caption=f"T of one sample of N = {len(u)} from N(0.2, 1.3²)",
      name="tbl-objective-epps-pulley-check",
      notes=[f"The {n_points}-node rule differs from the integral over ℝ by "
             f"{rule_error:+.2%} of it."])

# %% [markdown]
# (sec-times-n)=
# ### Why the factor $N$
#
# For $N$ independent draws from a symmetric law with (real) characteristic function
# $\varphi$, $\mathbb E\,\hat\varphi(t)=\varphi(t)$ and
# $\mathbb E|\hat\varphi(t)-\varphi(t)|^2=(1-\varphi(t)^2)/N$, so the statistic of
# {eq}`eq-ep-quadrature` has the exact expectation
#
# $$
# \mathbb E\,T=N\sum_j\omega_j\bigl(\varphi(t_j)-e^{-t_j^2/2}\bigr)^2
#   +\sum_j\omega_j\bigl(1-\varphi(t_j)^2\bigr).
# $$ (eq-ep-expectation)
#
# Under the null ($\varphi(t)=e^{-t^2/2}$) the first sum vanishes and $\mathbb E\,T$ is
# the same at every batch size ({ref}`sec-quadrature` derives this bias for the
# population form); away from it $T$ grows like $N$. A Monte Carlo check for
# $\mathcal N(0,1)$ and $\mathcal N(0,1.5^2)$ ($\varphi(t)=e^{-v t^2/2}$) at two batch
# sizes, 2,000 batches each ({numref}`tbl-objective-batch-size`):

# %%
reps, sizes = 2000, (64, 1024)


def expected_T(v: float, n: int) -> float:
    """The expectation above, for N(0, v) and batch size n."""
    phi = torch.exp(-v * t**2 / 2)
    return float(n * (omega * (phi - torch.exp(-t**2 / 2)) ** 2).sum()
                 + (omega * (1 - phi**2)).sum())


rows = []
for law, v in (("N(0, 1): the null", 1.0), ("N(0, 1.5²)", 1.5**2)):
    row = [law]
    for n in sizes:
        xs = math.sqrt(v) * torch.randn(reps, n, 1, generator=gen, dtype=torch.float64)
        T = epps_pulley(xs, t_max, n_points)[:, 0]
        se = T.std().item() / math.sqrt(reps)
        # the exact expectation, to 4 Monte Carlo standard errors
        assert abs(T.mean().item() - expected_T(v, n)) < 4 * se, (law, n)
        row += [T.mean().item(), expected_T(v, n)]
    rows.append(row)
assert expected_T(1.0, sizes[0]) == expected_T(1.0, sizes[1])  # no N under the null
Table(rows, [Col("law"),
             *[c for n in sizes for c in (
                 Col(f"mc{n}", f"mean T, N = {n}", ".3f"),
                 Col(f"ex{n}", f"exact, N = {n}", ".3f"))]],
      caption=f"The statistic at two batch sizes ({reps:,} batches each)",
      name="tbl-objective-batch-size",
      notes=["exact: the expectation of the equation above.",
             f"Over ℝ instead of the {n_points}-node rule, the null value is "
             f"√(2π)(1 − 3^(−1/2)) = {math.sqrt(2 * math.pi) * (1 - 3**-0.5):.4f}."])

# %% [markdown]
# So the factor $N$ makes the statistic of a Gaussian batch the same number at any batch
# size, while a non-Gaussian batch is penalised in proportion to $N$: the weight
# $\alpha$ that balances $\mathcal L_{\text{SIGReg}}$ against $\mathcal L_{\text{pred}}$
# is tied to the batch size: by {numref}`tbl-objective-batch-size`, a larger batch
# pushes harder toward the Gaussian at the same $\alpha$.
#
# (sec-slicing)=
# ## Slicing: many random directions
#
# SIGReg averages $T$ over $K$ random unit directions $a_k$ of $\mathbb R^D$, the
# finite version of the paper's $\mathbb E_{a\sim\mathrm{Unif}(\mathbb S^{D-1})}$ in
# the paper's Eq. (A.2):
#
# $$
# \mathcal L_{\text{SIGReg}}(Y)=\frac1K\sum_{k=1}^{K}T(Ya_k),\qquad
# a_k=\frac{g_k}{\lVert g_k\rVert},\quad g_k\sim\mathcal N(0,I_D).
# $$ (eq-sigreg-sliced)
#
# A normalised Gaussian vector is uniform on the sphere. The directions are drawn anew
# at every training step, from the seed plus the step counter (a buffer, so a resumed
# run draws the same ones):

# %%
show_source(sample_directions)

# %%
show_source(SIGReg.forward)

# %% [markdown]
# Check {eq}`eq-sigreg-sliced`: the directions have unit norm, the module's value is the
# mean of the per-direction statistics, two modules with one seed draw the same
# directions, and training advances the counter.

# %%
D, K = 8, 32
Y = torch.randn(256, D, generator=gen, dtype=torch.float64)
A = sample_directions(D, K, seed=5, dtype=torch.float64)
per_direction = torch.stack([epps_pulley(Y @ A[:, [k]])[0] for k in range(K)])
sig = SIGReg(num_slices=K, seed=5).double()
assert torch.allclose(A.norm(dim=0), torch.ones(K, dtype=torch.float64), atol=1e-15)
assert abs(sig(Y, A).item() - per_direction.mean().item()) < 1e-13
first = sig.eval()(Y).item()  # eval mode: the counter stays at 0
assert first == SIGReg(num_slices=K, seed=5).double().eval()(Y).item()
sig.train()(Y)  # a training step advances the counter
assert int(sig.step) == 1
assert sig.eval()(Y).item() != first  # the next step's directions differ
print(f"SIGReg of {Y.shape[0]} Gaussian embeddings in D = {D}: {first:.4f} "
      f"(mean of {K} per-direction statistics)")

# %% [markdown]
# (sec-per-view)=
# ## Which embeddings form one sample: per view or pooled
#
# Nothing in the paper says whether SIGReg sees each view's batch separately or all
# $V\!\times\!N$ embeddings at once, and LeJEPA's two implementations differ:
#
# $$
# \mathcal L_{\text{SIGReg}}^{\text{per view}}=\frac1V\sum_{v=1}^{V}
#   \mathcal L_{\text{SIGReg}}(Y_v),
# \qquad
# \mathcal L_{\text{SIGReg}}^{\text{pooled}}=\mathcal L_{\text{SIGReg}}\bigl(
#   [Y_1;\dots;Y_V]\bigr).
# $$ (eq-per-view-pooled)
#
# `LeJEPALoss(sigreg_sample=...)` offers both; `"per_view"` (the minimal example's) is
# the default. The pooled sample has $VN$ points, so by
# {ref}`the factor-N argument <sec-times-n>` it carries a factor $VN$ instead of $N$.
# Three cases, with the same directions
# ({numref}`tbl-objective-per-view-pooled`):

# %%
V, N, D = 4, 256, 8
A = sample_directions(D, 64, seed=1, dtype=torch.float64)
sig = SIGReg(num_slices=64).double()


def both(views):
    return sig(views.reshape(-1, D), A).item(), sig(views, A).item()


cases = {
    "V copies of one batch": torch.randn(1, N, D, generator=gen,
                                         dtype=torch.float64).expand(V, N, D),
    "independent N(0, I) views": torch.randn(V, N, D, generator=gen,
                                             dtype=torch.float64),
    "independent N(0, 4I) views": 2 * torch.randn(V, N, D, generator=gen,
                                                  dtype=torch.float64),
}
rows = [(name, *both(views)) for name, views in cases.items()]
rows = [(name, pooled, per_view, pooled / per_view) for name, pooled, per_view in rows]
(_, _, _, copies), (_, _, _, null), (_, _, _, far) = rows
assert abs(copies - V) < 1e-12  # same empirical c.f., factor VN against N
assert 0.5 < null < 2  # both near the null value: the ratio is noise around 1
assert abs(far / V - 1) < 0.1  # far from the null the factor V dominates
Table(rows, [Col("views"), Col("pooled", "pooled", ".4f"),
             Col("per_view", "per view", ".4f"),
             Col("ratio", "pooled / per view", ".3f")],
      caption=f"SIGReg of V = {V} views of N = {N} embeddings, both conventions",
      name="tbl-objective-per-view-pooled")

# %% [markdown]
# For identical views the pooled value is exactly $V$ times the per-view one; for views
# far from Gaussian it is close to $V$ times; near the optimum both sit at the null
# value. So a weight $\alpha$ tuned for one convention is about $V$ times too strong
# (or weak) for the other, except near the optimum.
#
# (sec-alpha)=
# ## The weight: α from LeJEPA's λ
#
# LeJEPA's minimal example writes the loss as
# $(1-\lambda)\,\mathcal L_{\text{pred}}+\lambda\,\mathcal L_{\text{SIGReg}}$. Dividing
# by $1-\lambda$ gives {eq}`eq-total` with
#
# $$
# \alpha=\frac{\lambda}{1-\lambda}:
# $$ (eq-alpha)
#
# the same minimiser, every gradient scaled by $1/(1-\lambda)$ (which AdamW's
# normalised step nearly ignores). stable-pretraining's `lamb` is already $\alpha$.
# `aot_lib`'s configs take LeJEPA's $\lambda$ (`loss.lejepa_lambda`):

# %%
show_source(alpha_from_lejepa_lambda)

# %%
lam = DEFAULTS["loss"]["lejepa_lambda"]
alpha = alpha_from_lejepa_lambda(lam)
assert alpha == lam / (1 - lam)
y = torch.randn(6, 32, 4, generator=gen, dtype=torch.float64, requires_grad=True)
A = sample_directions(4, 16, seed=0, dtype=torch.float64)
ours = LeJEPALoss(alpha=alpha)(y, A)
theirs = (1 - lam) * ours.pred_loss + lam * ours.sigreg_loss  # the minimal example's
(g_ours,) = torch.autograd.grad(ours.loss, y, retain_graph=True)
(g_theirs,) = torch.autograd.grad(theirs, y)
assert abs((1 - lam) * ours.loss.item() - theirs.item()) < 1e-14
assert torch.allclose((1 - lam) * g_ours, g_theirs, rtol=1e-12, atol=1e-15)
print(f"default lambda = {lam}: alpha = {alpha:.6f}\n"
      f"(1 - lambda) L = {(1 - lam) * ours.loss.item():.12f}\n"
      f"the minimal example's (1 - lambda) L_pred + lambda L_SIGReg = "
      f"{theirs.item():.12f}")

# %% [markdown]
# ## Exercises
#
# 1. **$T$ against the batch size.** With `aot_lib.objectives.sigreg.epps_pulley`,
#    compute the mean of $T$ over 500 batches from $\mathcal N(0,1)$ and from
#    $\mathcal N(0,1.5^2)$ for $N=32,128,512,2048$, and plot both against $N$ on log
#    axes. Read off the slope of each line. What happens to the balance of
#    {eq}`eq-total` if you double the batch size and keep $\alpha$?
# 2. **Is $t_{\max}=3$ enough?** For a sample of 256 points from a Laplace law scaled to
#    unit variance, compare $T$ from the 17-node rule with `n_points=65` on $[0,3]$ and
#    with `t_max=6, n_points=129`. Which error is larger here, the node spacing or the
#    cut-off? (The weight and the integrand's $e^{-t^2/2}$ decay together.)
# 3. **The null expectation by hand.** Show that
#    $\mathbb E|\hat\varphi(t)-\varphi(t)|^2=(1-|\varphi(t)|^2)/N$ for i.i.d. samples,
#    and derive $\int_{\mathbb R}(1-e^{-t^2})e^{-t^2/2}dt=\sqrt{2\pi}(1-3^{-1/2})$.
#    Check the number in the note under {numref}`tbl-objective-batch-size`.
# 4. **Translating a weight.** stable-pretraining uses `lamb = 0.02` on the pooled
#    statistic of $V=8$ views. Using {eq}`eq-per-view-pooled` and
#    {numref}`tbl-objective-per-view-pooled`, which $\alpha$ gives the per-view
#    convention about the same pull toward the Gaussian early in training, far from the
#    optimum? Which LeJEPA $\lambda$ is that, by {eq}`eq-alpha`?
#
# ## What we learned
#
# * The paper fixes the shape of the objective, $\mathcal L_{\text{pred}}+\alpha
#   \mathcal L_{\text{SIGReg}}$ with the mean of the global views as target and SIGReg
#   as a sliced Epps–Pulley test; the weight $w$, the quadrature, the factor $N$, the
#   slices, the sample convention, $\alpha$ and the projection head come from LeJEPA's
#   code or from us, as {numref}`tbl-objective-provenance` says.
# * Every formula on this page is the code beside it: the package's values equal
#   float64 references built another way (loops, complex exponentials, explicit
#   means), and the 17-node rule stays within the tolerance asserted above of the
#   integral over $\mathbb R$.
# * The factor $N$ pins the null value of the statistic; away from it SIGReg grows with
#   the batch size, and pooling the views multiplies it by about $V$. A value of
#   $\alpha$ only means something together with the batch size and the sample
#   convention.

# %% [markdown] tags=["remove-cell"]
# % aot-jupyterlab-key
# % Written after a build by `python book/_ext/aot_book_build jupyterlab-key`;
# % the book leaves this cell out (its tag remove-cell).
# ##### This chapter's references, as the book numbers them
#
# In the book these are links; in JupyterLab this cell gives them their numbers and
# titles, and the works the chapter cites their full references.
#
# :::{figure}
# :label: tbl-objective-provenance
# :kind: table
# :enumerator: 5.1
# The pieces of the objective and where each comes from
# :::
#
# (ch-tables-1-3)=
# ###### Tables 1 and 3 and Figure 3, at CPU scale
#
# :::{figure}
# :label: tbl-objective-epps-pulley-check
# :kind: table
# :enumerator: 5.2
# T of one sample of N = 64 from N(0.2, 1.3²)
# :::
#
# (sec-quadrature)=
# ###### What the 17-node quadrature and the finite batch do to it
#
# :::{figure}
# :label: tbl-objective-batch-size
# :kind: table
# :enumerator: 5.3
# The statistic at two batch sizes (2,000 batches each)
# :::
#
# :::{figure}
# :label: tbl-objective-per-view-pooled
# :kind: table
# :enumerator: 5.4
# SIGReg of V = 4 views of N = 256 embeddings, both conventions
# :::
#
# **Works cited**
#
# (bib-balestriero2025lejepa)=
# ###### Balestriero and LeCun, 2025
#
# Randall Balestriero and Yann LeCun. LeJEPA: provable and scalable self-supervised
# learning without the heuristics. arXiv preprint arXiv:2511.08544, 2025.
#
# **This chapter's own equations**, numbered here in order and in the book by chapter:
# (1) is the book's (5.1); (2) is the book's (5.2); (3) is the book's (5.3); (4) is the
# book's (5.4); (5) is the book's (5.5); (6) is the book's (5.6); (7) is the book's
# (5.7); (8) is the book's (5.8).
