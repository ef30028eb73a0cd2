# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,mystnb,-user_expressions
#     formats: py:percent
#     notebook_metadata_filter: -jupytext.text_representation
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# (ch-theorem1)=
# # Theorem 1 and the Proposition, verified
#
# **This chapter:** why SIGReg may replace the expansion term $-R(Z)$, checked step by
# step with SymPy, then numerically with the SIGReg used in training.

# %% tags=["remove-input"]
from aot_lib.book.pages import open_chapter

open_chapter(seed=0)

# %% [markdown]
# The paper moves the expansion term $-R(Z)$ of sparse rate reduction {eq}`eq-srr` out
# of the architecture and into the training loss, replacing it by the SIGReg of LeJEPA
# ([](#bib-balestriero2025lejepa)) (written out term by term in {ref}`ch-objective`).
# That swap is justified by **Theorem 1** (the paper's Eq. (4)): on the trace-$d$
# set $\mathcal S=\{\Sigma\succeq0:\operatorname{tr}\Sigma=d\}$ both objectives have the
# single optimum $\Sigma=I_d$, and near it both grow like $\lVert\Sigma-I_d\rVert_F^2$.
# The **Proposition** (the paper's Eq. (A.24)) extends this to
# two-sided bounds on all of $\mathcal S$.
#
# Every identity is `assert`ed in the cell that shows it, so a wrong one stops the book
# from building. Notation of the appendix: $c=d/\epsilon^2$, $\theta=c/(1+c)$,
# $A=\Sigma-I_d$ (so $\operatorname{tr}A=0$).

# %% tags=["hide-input"]
import math

import matplotlib.pyplot as plt
import sympy as sp
import torch
from IPython.display import display

import aot_lib
from aot_lib.theory import theorem1 as theory
from aot_lib.book.pages import equations, pick
from aot_lib.book.plotting import plot_sigreg_scaling
from aot_lib.book.panels import spectrum_panel
from aot_lib.objectives.sigreg import sample_directions
from aot_lib.book.tables import Col, Table, key_value_table

_ = torch.manual_seed(0)  # the generator it returns is not shown

# %% [markdown]
# (sec-spherical-moment)=
# ## The spherical fourth moment
#
# For $a\sim\mathrm{Unif}(\mathbb S^{d-1})$ (the paper's Eq. (A.8)),
#
# $$
# \mathbb E[a_ia_ja_ka_l]=\frac{\delta_{ij}\delta_{kl}+\delta_{ik}\delta_{jl}
#   +\delta_{il}\delta_{jk}}{d(d+2)}.
# $$ (eq-sup-spherical-moment)
#
# One derivation: write $a=g/\lVert g\rVert$ with $g\sim\mathcal N(0,I_d)$. The radius
# and the direction are independent, so
# $\mathbb E[g_ig_jg_kg_l]=\mathbb E\lVert g\rVert^4\,\mathbb E[a_ia_ja_ka_l]$. Isserlis
# gives the numerator, and $\lVert g\rVert^2\sim\chi^2_d$ gives
# $\mathbb E\lVert g\rVert^4=d(d+2)$.

# %%
from sympy.stats import ChiSquared, E, Normal

d = sp.Symbol("d", positive=True, integer=True)
g1, g2 = Normal("g1", 0, 1), Normal("g2", 0, 1)
q = ChiSquared("q", d)
norm4 = sp.simplify(E(q**2))
assert sp.simplify(norm4 - d * (d + 2)) == 0
display(equations((r"\mathbb E\lVert g\rVert^4", sp.factor(norm4))))

m4 = E(g1**4) / norm4
m22 = E(g1**2 * g2**2) / norm4
m31 = E(g1**3 * g2) / norm4
assert sp.simplify(m4 - 3 / (d * (d + 2))) == 0
assert sp.simplify(m22 - 1 / (d * (d + 2))) == 0
assert m31 == 0
display(equations((r"\mathbb E[a_1^4]", sp.factor(m4)),
                  (r"\mathbb E[a_1^2a_2^2]", sp.factor(m22)),
                  (r"\mathbb E[a_1^3a_2]", m31)))

# %% [markdown]
# The same numbers by integrating over the circle ($d=2$) and the sphere ($d=3$)
# directly:

# %%
th, ph = sp.symbols("theta phi", real=True)


def circle(f):
    """Average over the unit circle, parametrised by the angle theta."""
    return sp.integrate(f, (th, 0, 2 * sp.pi)) / (2 * sp.pi)


def sphere(f):
    """Average over the unit sphere, in spherical coordinates (theta, phi)."""
    inner = sp.integrate(f * sp.sin(ph), (ph, 0, sp.pi))
    return sp.integrate(inner, (th, 0, 2 * sp.pi)) / (4 * sp.pi)


x2, y2 = sp.cos(th), sp.sin(th)
x3, y3, z3 = sp.sin(ph) * sp.cos(th), sp.sin(ph) * sp.sin(th), sp.cos(ph)
c4, c22 = circle(x2**4), circle(x2**2 * y2**2)
s4, s22 = sphere(z3**4), sphere(x3**2 * z3**2)
assert c4 == sp.Rational(3, 8) and c22 == sp.Rational(1, 8)  # 3/(2*4), 1/(2*4)
assert s4 == sp.Rational(3, 15) and s22 == sp.Rational(1, 15)  # 3/(3*5), 1/(3*5)
display(equations((r"d=2:\quad \mathbb E[a_1^4]", c4),
                  (r"\mathbb E[a_1^2a_2^2]", c22),
                  (r"d=3:\quad \mathbb E[a_3^4]", s4),
                  (r"\mathbb E[a_1^2a_3^2]", s22)))

# %% [markdown]
# (sec-quadratic-identity)=
# ## The quadratic-form identity
#
# For symmetric traceless $A$ (the paper's Eq. (A.11)):
#
# $$
# \mathbb E_a\bigl[(a^\top Aa)^2\bigr]=\frac{2\lVert A\rVert_F^2}{d(d+2)}.
# $$ (eq-sup-spherical-identity)
#
# Contract the moment tensor {eq}`eq-sup-spherical-moment` with a generic symmetric
# traceless $A$ ($d=3$, five free entries), and check $d=2$ once more by a direct
# integral.


# %%
def spherical_quadratic_moment(A: sp.Matrix) -> sp.Expr:
    """E[(a^T A a)^2] for a uniform on the sphere, from the fourth-moment tensor."""
    n = A.shape[0]

    def delta(i, j):
        return 1 if i == j else 0

    total = 0
    for i in range(n):
        for j in range(n):
            for k in range(n):
                for l in range(n):  # noqa: E741
                    m = (delta(i, j) * delta(k, l) + delta(i, k) * delta(j, l)
                         + delta(i, l) * delta(j, k))
                    if m:
                        total += A[i, j] * A[k, l] * m
    return sp.expand(total / (n * (n + 2)))


a11, a22, a12, a13, a23 = sp.symbols("a11 a22 a12 a13 a23", real=True)
A3 = sp.Matrix([[a11, a12, a13], [a12, a22, a23], [a13, a23, -a11 - a22]])
frob = sum(x**2 for x in A3)
lhs = spherical_quadratic_moment(A3)
assert sp.simplify(lhs - 2 * frob / (3 * 5)) == 0
u, v = sp.symbols("u v", real=True)
A2 = sp.Matrix([[u, v], [v, -u]])
a_vec = sp.Matrix([x2, y2])
direct = sp.simplify(circle(sp.expand(((a_vec.T * A2 * a_vec)[0]) ** 2)))
assert sp.simplify(direct - 2 * (2 * u**2 + 2 * v**2) / (2 * 4)) == 0
display(equations(
    (r"d=3:\quad \mathbb E_a[(a^\top A a)^2]",
     sp.latex(sp.factor(lhs)) + r" = \tfrac{2}{15}\lVert A\rVert_F^2"),
    (r"d=2:\quad \mathbb E_a[(a^\top A a)^2]",
     sp.latex(sp.factor(direct)) + r" = \tfrac{2}{8}\lVert A\rVert_F^2"),
))

# %% [markdown]
# (sec-rate-gap)=
# ## The log-det expansion behind the rate gap
#
# $(1+c)I+cA=(1+c)(I+\theta A)$ (the paper's Eq. (A.19)), and for
# symmetric $A$ the series of $\log\det(I+\theta\varepsilon A)$ in $\varepsilon$ is
# $\theta\varepsilon\operatorname{tr}A
# -\tfrac{\theta^2\varepsilon^2}{2}\operatorname{tr}A^2+O(\varepsilon^3)$. With
# $\operatorname{tr}A=0$ (the paper's Eq. (A.22)):
#
# $$
# R(I)-R(\Sigma)=\frac{\theta^2}{4}\lVert A\rVert_F^2+O(\lVert A\rVert_F^3).
# $$ (eq-sup-rate-gap)

# %%
eps_, c_, t_ = sp.symbols("varepsilon c theta", positive=True)
b11, b22, b33, b12, b13, b23 = sp.symbols("b11 b22 b33 b12 b13 b23", real=True)
B = sp.Matrix([[b11, b12, b13], [b12, b22, b23], [b13, b23, b33]])
factorised = (1 + c_) * (sp.eye(3) + (c_ / (1 + c_)) * B)
assert sp.simplify(((1 + c_) * sp.eye(3) + c_ * B) - factorised) == sp.zeros(3)
series = sp.series(sp.log((sp.eye(3) + t_ * eps_ * B).det()), eps_, 0, 3).removeO()
expected = t_ * eps_ * B.trace() - t_**2 * eps_**2 / 2 * (B * B).trace()
assert sp.simplify(sp.expand(series - expected)) == 0
# R(I) - R(I + eps A) with tr A = 0
gap = -sp.Rational(1, 2) * expected.subs(b33, -b11 - b22)
frob3 = sum(x**2 for x in B.subs(b33, -b11 - b22))
assert sp.simplify(gap - t_**2 / 4 * eps_**2 * frob3) == 0
A_sym = sp.MatrixSymbol("A", 3, 3)
display(equations(
    (r"\log\det(I+\theta\varepsilon A)",
     t_ * eps_ * sp.Trace(A_sym) - t_**2 * eps_**2 / 2 * sp.Trace(A_sym**2)
     + sp.O(eps_**3)),
    (r"R(I)-R(I+\varepsilon A)\big|_{\operatorname{tr}A=0}",
     t_**2 / 4 * eps_**2 * sp.Symbol(r"\lVert A\rVert_F^2") + sp.O(eps_**3)),
))

# %% [markdown]
# The display above is the expansion SymPy verified for a generic symmetric $3\times3$
# matrix ($A$ with six free entries, then with $\operatorname{tr}A=0$).
#
# (sec-cw)=
# ## The constant $C_w$ in closed form
#
# $C_w=\tfrac14\int t^4e^{-t^2}w(t)\,dt$ (the paper's Eq. (A.6)). For a Gaussian
# weight $w(t)=e^{-t^2/(2\sigma^2)}$ SymPy integrates it; LeJEPA uses $\sigma=1$. For
# Gaussian embeddings the whole discrepancy of one projection $u_a\sim\mathcal N(0,v)$
# also has a closed form $L(v)$, and its Taylor coefficient at $v=1$ must be $C_w$: the
# covariance part of SIGReg, without the cumulant bookkeeping.

# %%
t, s, sig = sp.symbols("t s sigma", positive=True)
vv = sp.Symbol("v", positive=True)
integrand = t**4 * sp.exp(-(t**2)) * sp.exp(-(t**2) / (2 * sig**2))
Cw_general = sp.simplify(sp.integrate(integrand, (t, -sp.oo, sp.oo)) / 4)
Cw = sp.nsimplify(sp.simplify(Cw_general.subs(sig, 1)))
assert abs(float(Cw) - theory.cw_gaussian_weight()) < 1e-14
assert abs(float(Cw_general.subs(sig, 2)) - theory.cw_gaussian_weight(2.0)) < 1e-14
display(equations(
    (r"C_w(\sigma)", Cw_general),
    (r"C_w\big|_{\sigma=1}", sp.latex(Cw) + rf" \approx {float(Cw):.6f}"),
))

gauss_gap = (sp.exp(-vv * t**2 / 2) - sp.exp(-(t**2) / 2)) ** 2 * sp.exp(-(t**2) / 2)
L = sp.simplify(sp.integrate(gauss_gap, (t, -sp.oo, sp.oo)))
taylor = sp.series(L.subs(vv, 1 + s), s, 0, 3).removeO()
assert sp.simplify(taylor.coeff(s, 0)) == 0 and sp.simplify(taylor.coeff(s, 1)) == 0
assert sp.simplify(taylor.coeff(s, 2) - Cw) == 0
display(equations(("L(v)", L), ("L(1+s)", sp.Symbol("C_w") * s**2 + sp.O(s**3))))

# %% [markdown]
# So with LeJEPA's weight
# $\mathcal L^{(2)}_{\mathrm{SIGReg}}(\Sigma)
# =\frac{2C_w}{d(d+2)}\lVert\Sigma-I\rVert_F^2$, and with {eq}`eq-sup-rate-gap` the
# limit ratio (the paper's Eq. (A.23)) is
#
# $$
# \lim_{\Sigma\to I}\frac{\mathcal L_{\mathrm{SIGReg}}(\Sigma)}{R(I)-R(\Sigma)}
#   =\frac{8C_w}{\theta^2d(d+2)}.
# $$ (eq-sup-proportionality)
#
# {numref}`tbl-theorem1-limit-ratio` evaluates this constant at two widths.

# %%
dd, ee = sp.symbols("d epsilon", positive=True)
theta_sym = (dd / ee**2) / (1 + dd / ee**2)
ratio_sym = sp.simplify(8 * Cw / (theta_sym**2 * dd * (dd + 2)))
display(equations((r"\frac{8C_w}{\theta^2d(d+2)}", ratio_sym)))
rows = []
for d_, e_ in [(8, 0.5), (128, 0.5)]:
    value = float(ratio_sym.subs({dd: d_, ee: e_}))
    assert math.isclose(value, theory.limit_ratio(d_, e_), rel_tol=1e-12)
    rows.append((d_, e_, value))
Table(rows, [Col("d", "d"), Col("eps", "ε"), Col("ratio", "limit ratio", ".4e")],
      caption="The limit ratio at two widths (SymPy; equal to theory.limit_ratio)",
      name="tbl-theorem1-limit-ratio")

# %% [markdown]
# (sec-quadrature)=
# ## What the 17-node quadrature and the finite batch do to it
#
# `aot_lib.SIGReg` does not integrate over $\mathbb R$: it uses the trapezoid rule with
# 17 nodes on $[0,3]$ (doubled by symmetry), and it sees $N$ samples, not the law.
#
# * **Quadrature.** The rule's $C_w$ differs from the exact one by the amount in
#   {numref}`tbl-theorem1-quadrature`.
# * **Finite $N$.**
#   $\mathbb E|\hat\varphi(t)-\varphi(t)|^2=|\varphi-\varphi_{\mathcal N}|^2
#   +(1-|\varphi|^2)/N$, so the statistic $T_N/N$ over-estimates the population
#   discrepancy by $\sqrt{2\pi}\,(1-(2v+1)^{-1/2})/N$ — about $1.06/N$ at the optimum,
#   where the signal is zero. This $O(1/N)$ bias is subtracted below
#   (`theory.finite_sample_bias`).

# %%
rows = []
for n_points in (5, 9, 17, 33):
    q = theory.cw_quadrature(3.0, n_points)
    rows.append((n_points, q, q / theory.cw_gaussian_weight() - 1))
quad_err = theory.cw_quadrature() / theory.cw_gaussian_weight() - 1
assert abs(quad_err) < 1e-3
bias = theory.finite_sample_bias(1.0, 1).item()
assert abs(bias - 1.06) < 0.005  # "about 1.06/N" in the text above
Table(
    rows,
    [Col("n", "nodes on [0, 3]"), Col("cw", "C_w (trapezoid)", ".8f"),
     Col("err", "relative error", "+.2e")],
    caption="The trapezoid rule's C_w against the exact value",
    name="tbl-theorem1-quadrature",
    notes=f"Bias of T_N/N at the optimum: {bias:.4f} / N.",
)

# %% [markdown]
# (sec-monte-carlo)=
# ## Monte Carlo: both objectives scale as the squared distance to I
#
# Gaussian embeddings $z\sim\mathcal N(0,\Sigma)$ with $\Sigma=I+sB$ on the trace-$d$
# set ($B$ random, symmetric, traceless, $\lVert B\rVert_F=1$). For each $s$ we compute
#
# * $\mathcal L^{(2)}_{\mathrm{SIGReg}}$ from the paper's Eq. (A.12);
# * the population SIGReg of $\mathcal N(0,\Sigma)$ (closed form per direction, averaged
#   over many random directions) — on the Gaussian slice $\mathcal L_{>2}=0$, so it
#   equals $\mathcal L^{(2)}$ up to $O(s^3)$;
# * the finite-sample `aot_lib.SIGReg` on $N$ samples, divided by $N$, minus the bias;
# * the coding-rate gap $R(I)-R(\Sigma)$ with $\epsilon=0.5$.
#
# Their ratio must tend to the constant of {eq}`eq-sup-proportionality`.
# {numref}`tbl-theorem1-monte-carlo` lists them, {numref}`fig-sigreg-scaling` draws
# them.

# %%
dim, eps = 8, 0.5
gen = torch.Generator().manual_seed(0)
B = theory.random_traceless(dim, gen)
n_dirs = pick(20_000, 200_000)
dirs = sample_directions(dim, n_dirs, seed=1, dtype=torch.float64)
N = pick(8_192, 65_536)
sigreg_module = aot_lib.SIGReg(num_slices=256).double().eval()
mc_dirs = sample_directions(dim, 256, seed=2, dtype=torch.float64)
eye = torch.eye(dim, dtype=torch.float64)

scales = torch.logspace(-2.5, -0.3, pick(6, 10), dtype=torch.float64)
rows = []
for s_ in scales:
    Sigma = eye + s_ * B
    chol = torch.linalg.cholesky(Sigma)
    z = torch.randn(N, dim, dtype=torch.float64, generator=gen) @ chol.T
    v_dirs = torch.einsum("dk,de,ek->k", mc_dirs, Sigma, mc_dirs)
    bias_N = theory.finite_sample_bias(v_dirs, N).mean()
    finite = sigreg_module(z, directions=mc_dirs) / N - bias_N
    rows.append(dict(
        frob2=((Sigma - eye).norm() ** 2).item(),
        sigreg2=theory.sigreg2(Sigma).item(),
        population=theory.population_sigreg(Sigma, dirs).item(),
        finite=finite.item(),
        gap=theory.rate_gap(Sigma, eps).item(),
    ))
limit = theory.limit_ratio(dim, eps)
for r in rows:
    r["ratio"] = r["population"] / r["gap"]
    r["to_limit"] = r["ratio"] / limit
mant, exponent = f"{limit:.5e}".split("e")
Table(
    rows,
    [Col("frob2", r"\(\lVert\Sigma-I\rVert_F^2\)", ".3e"),
     Col("sigreg2", r"\(\mathcal L^{(2)}\)", ".3e"),
     Col("population", "population SIGReg", ".3e"),
     Col("finite", f"finite-N SIGReg / N (N = {N:,})", ".3e"),
     Col("gap", r"\(R(I)-R(\Sigma)\)", ".3e"),
     Col("ratio", "population / gap", ".3e"),
     Col("to_limit", "ratio / limit", ".5f")],
    # the limit as m×10^k: "1.28255e-02" in \\(...\\) was typeset as a product with e
    caption=rf"\(d={dim}\), \(\epsilon={eps}\); predicted limit "
    rf"\(8C_w/(\theta^2d(d+2))={mant}\times10^{{{int(exponent)}}}\)",
    name="tbl-theorem1-monte-carlo",
)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Left: population SIGReg, $\\mathcal L^{(2)}$, the coding-rate gap $R(I)-R(\\Sigma)$ and the finite-sample SIGReg (divided by $N$, bias removed) against $\\lVert\\Sigma-I\\rVert_F^2$, with the $1/N$ noise floor dotted; a finite-sample value below zero (noise, at the smallest distances) has no place on a log scale and is left out. Right: the ratios to the gap, against the limit of {eq}`eq-sup-proportionality` (dashed).", "name": "fig-sigreg-scaling"}}
frob2 = torch.tensor([r["frob2"] for r in rows])
plot_sigreg_scaling(frob2, rows, limit, N)
plt.show()

# %% [markdown]
# The assertions below state the tolerances reached, and
# {numref}`tbl-theorem1-fit-checks` the values they check. The log-log slopes are 1 to
# within 2 %. The population SIGReg is averaged over random directions, so its ratio to
# the limit carries a Monte Carlo error of a few standard errors of
# $\mathbb E_a[(a^\top Ba)^2]$; the exact $\mathcal L^{(2)}$ has none and must reach the
# limit up to its $O(\lVert A\rVert_F)$ correction.

# %%
logx = frob2.log()


def slope(y):
    """Least-squares slope of log y against log ||Sigma - I||_F^2."""
    y = torch.tensor(y).log()
    xm = logx - logx.mean()
    return float((xm * (y - y.mean())).sum() / (xm**2).sum())


quad = torch.einsum("dk,de,ek->k", dirs, B, dirs) ** 2  # (a^T B a)^2 per direction
mc_se = float(quad.std() / quad.mean()) / math.sqrt(n_dirs)
s_pop, s_gap = slope([r["population"] for r in rows]), slope([r["gap"] for r in rows])
pop_ratio = rows[0]["population"] / rows[0]["gap"] / limit
exact_ratio = rows[0]["sigreg2"] / rows[0]["gap"] / limit
assert abs(s_pop - 1) < 0.02 and abs(s_gap - 1) < 0.02
assert abs(pop_ratio - 1) < 4 * mc_se + 5 * float(scales[0])
assert abs(exact_ratio - 1) < 5 * float(scales[0])
big = rows[-1]
assert abs(big["finite"] / big["population"] - 1) < 0.1, (
    "finite-sample SIGReg should match the population at large s")
key_value_table(
    [("log-log slope, population SIGReg", f"{s_pop:.4f}"),
     ("log-log slope, rate gap", f"{s_gap:.4f}"),
     (f"(population SIGReg / gap) / limit at ‖A‖_F = {scales[0]:.1e}",
      f"{pop_ratio:.5f}  (direction Monte Carlo s.e. {mc_se:.1e})"),
     (f"(SIGReg⁽²⁾ / gap) / limit at ‖A‖_F = {scales[0]:.1e}", f"{exact_ratio:.6f}")],
    caption="Fits and ratios checked by the assertions",
    name="tbl-theorem1-fit-checks",
)

# %% [markdown]
# At large $s$ the finite-sample SIGReg of training matches the population value; at
# small $s$ it drowns in its $O(1/N)$ noise — which is why the asymptotic statements are
# checked on the population quantity.
#
# The scan above follows one random direction $B$. {numref}`fig-spectrum-panel` lets you
# pick the direction by its spectrum and the distance: on the left the eigenvalues of a
# diagonal $\Sigma$ on the trace-$d$ set, on the right its population SIGReg against
# $R(I)-R(\Sigma)$, beside the line whose slope is the limit of
# {eq}`eq-sup-proportionality`. Near $I$ every spectrum follows that slope; how far out
# each one stays on it is what the ratio under the panel reports.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "A covariance moved away from $I$ along a chosen spectrum (drop-down list) by a chosen distance (slider): its eigenvalues (left; dotted: $I$) and its population SIGReg against the coding-rate gap (right), the whole path of that spectrum in blue, this $\\Sigma$ in red, the slope of the limit dashed. Computed for every setting when the page was built.", "name": "fig-spectrum-panel"}}
spectrum_panel(dim, eps, dirs)

# %% [markdown]
# (sec-proposition)=
# ## The Proposition: the bounds k1 and k2
#
# The ratio $\rho(\Sigma)=\mathcal L^{(2)}(\Sigma)/(R(I)-R(\Sigma))$ is positive and
# bounded on $\mathcal S$; $k_1=\min\rho$, $k_2=\max\rho$. We sample $\Sigma$ from
# Wishart matrices of every rank (rank-one ones sit on the boundary of $\mathcal S$,
# where the rate gap is largest), plus points close to $I$. Sampled extremes bound the
# true ones from inside: $k_1\le\min$, $k_2\ge\max$.

# %%
n_samples = pick(300, 3000)
rhos, frobs = [], []
for i in range(n_samples):
    rank = 1 + i % dim
    Sigma = theory.random_trace_d_covariance(dim, gen, rank)
    if i % 3 == 0:  # also points near the optimum
        w = float(torch.rand((), generator=gen))
        Sigma = (1 - w) * eye + w * Sigma
    rhos.append((theory.sigreg2(Sigma) / theory.rate_gap(Sigma, eps)).item())
    frobs.append(((Sigma - eye).norm() ** 2).item())
rhos_t = torch.tensor(rhos)
assert (rhos_t > 0).all() and torch.isfinite(rhos_t).all()
assert rhos_t.min() <= limit * 1.001 <= rhos_t.max() * 1.001
print(f"over {n_samples} samples: k1 <= {rhos_t.min():.4e}, k2 >= {rhos_t.max():.4e}, "
      f"limit at I {limit:.4e}")

# %% tags=["hide-input"] mystnb={"figure": {"caption": "$\\rho(\\Sigma)=\\mathcal L^{(2)}/(R(I)-R(\\Sigma))$ over the sampled covariances of $\\mathcal S$, against their distance to $I$; dashed: the limit at $\\Sigma=I$.", "name": "fig-rho-scatter"}}
fig, ax = plt.subplots(figsize=(5, 3.2))
ax.scatter(frobs, rhos, s=4, alpha=0.5)
ax.axhline(limit, color="k", ls="--", label="limit at $\\Sigma=I$")
ax.set_xscale("log")
ax.set_xlabel("$\\|\\Sigma-I\\|_F^2$")
ax.set_ylabel("$\\rho(\\Sigma)$")
ax.set_title("SIGReg$^{(2)}$ / rate gap over $\\mathcal{S}$")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# The printout gives the sampled range of $\rho$; where along $\lVert\Sigma-I\rVert_F^2$
# the extremes sit is read off {numref}`fig-rho-scatter`: near the optimum $\rho$
# approaches the limit of {eq}`eq-sup-proportionality`, as the Monte Carlo above found.
#
# (sec-gradients)=
# ## Gradient alignment
#
# On the tangent space of $\mathcal S$ (traceless matrices) the two gradients are
# $\frac{4C_w}{d(d+2)}A$ and $\frac{\theta^2}{2}A+O(\lVert A\rVert_F^2)$ (the
# paper's Eq. (A.26)): their cosine tends to 1
# ({numref}`tbl-theorem1-gradient-alignment`).

# %%
rows = []
th2 = theory.theta(dim, eps) ** 2 / 2
for s_ in torch.logspace(-3, 0, 7, dtype=torch.float64):
    Sigma = (eye + s_ * B).requires_grad_(True)
    (grad1,) = torch.autograd.grad(theory.sigreg2(Sigma), Sigma)
    (grad2,) = torch.autograd.grad(theory.rate_gap(Sigma, eps), Sigma)
    p1, p2 = theory.project_traceless(grad1), theory.project_traceless(grad2)
    cos = float((p1 * p2).sum() / (p1.norm() * p2.norm()))
    rel = float((p2 - th2 * s_ * B).norm() / (th2 * s_ * B).norm())
    rows.append((float(s_), cos, rel))
cosines = [r[1] for r in rows]
assert cosines[0] > 1 - 1e-6 and min(cosines) > 0
Table(
    rows,
    [Col("s", r"\(\lVert A\rVert_F\)", ".0e"),
     Col("cos", "cos(P∇SIGReg⁽²⁾, P∇gap)", ".8f"),
     Col("rel", "|P∇gap − θ²/2 A| / |θ²/2 A|", ".2e")],
    caption="Projected gradients of the two objectives (P: projection onto traceless "
    "matrices)",
    name="tbl-theorem1-gradient-alignment",
)

# %% [markdown]
# (sec-cumulants)=
# ## What SIGReg sees and the coding rate cannot: the higher cumulants
#
# Take laws with the *same* covariance $I_d$: Gaussian, uniform on $[-\sqrt3,\sqrt3]^d$,
# and Rademacher $\pm1$. The coding rate depends on the covariance only, so it cannot
# tell them apart; SIGReg sees the higher cumulants (kurtosis $-1.2$ and $-2$ per
# coordinate), as {numref}`tbl-theorem1-same-covariance-laws` shows.

# %%
n_mc = pick(4096, 16384)
samples = {
    "Gaussian": torch.randn(n_mc, dim, dtype=torch.float64, generator=gen),
    "uniform": (torch.rand(n_mc, dim, dtype=torch.float64, generator=gen) * 2 - 1)
    * math.sqrt(3),
    "Rademacher": torch.randint(0, 2, (n_mc, dim), generator=gen).double() * 2 - 1,
}
stats = {}
for name, zz in samples.items():
    stats[name] = dict(law=name, R=aot_lib.coding_rate(zz.T, eps).item(),
                       T=sigreg_module(zz, directions=mc_dirs).item())
for name in ("uniform", "Rademacher"):
    R_gauss = stats["Gaussian"]["R"]
    assert abs(stats[name]["R"] - R_gauss) / R_gauss < 0.01
    assert stats[name]["T"] > 4 * stats["Gaussian"]["T"]
Table(
    stats.values(),
    [Col("law"), Col("R", "R(Z) (nats)", ".4f"),
     Col("T", "SIGReg statistic T_N", ".3f")],
    caption=f"Three laws with covariance I (d = {dim}, N = {n_mc:,})",
    name="tbl-theorem1-same-covariance-laws",
)

# %% [markdown]
# ## Exercises
#
# 1. **Another weight.** With `theory.cw_gaussian_weight(sigma)` compute $C_w$ for
#    $\sigma=1/2, 1, 2$, and the limit ratio {eq}`eq-sup-proportionality` at $d=128$,
#    $\epsilon=0.5$ for each. How would the SIGReg weight $\alpha$ have to change to
#    keep the same expansion strength if LeJEPA's weight were wider?
# 2. **The identity by Monte Carlo.** Draw 100,000 directions with
#    `aot_lib.objectives.sigreg.sample_directions` in $d=10$ and a random symmetric
#    traceless $A$ (`theory.random_traceless`). Compare the mean of $(a^\top Aa)^2$
#    with {eq}`eq-sup-spherical-identity`, and give the Monte Carlo standard error.
# 3. **The extremes of $\rho$ in $d=2$.** On the trace-2 set every $\Sigma$ has
#    eigenvalues $1\pm s$ with $0\le s\le1$. Write $\rho(s)$ in closed form and find
#    its minimum and maximum. Where do $k_1$ and $k_2$ sit: at the optimum or on the
#    boundary?
# 4. **Same covariance, different SIGReg.** Add a fourth law with covariance $I$ to
#    {numref}`tbl-theorem1-same-covariance-laws`: a Gaussian mixture
#    $\tfrac12\mathcal N(\pm m\,e_1, \cdot)$ rescaled to unit variance. How does its
#    SIGReg compare with the uniform and Rademacher laws as $m$ grows?
#
# ## What we learned
#
# * The identities of Appendix A hold as stated; $C_w=\sqrt{2\pi}/(4\cdot3^{3/2})\approx
#   0.1206$ for LeJEPA's weight, and the 17-node rule used in training reproduces it to
#   better than $10^{-3}$.
# * Near $\Sigma=I$ the population SIGReg and the rate gap are both
#   $\propto\lVert\Sigma-I\rVert_F^2$, with the ratio {eq}`eq-sup-proportionality`; the
#   constant decays as $O(d^{-2})$, so the SIGReg weight $\alpha$ must grow with the
#   projector width to keep the same expansion strength.
# * The finite-sample statistic carries an $O(1/N)$ bias ($\approx1.06/N$ at the
#   optimum) and $O(1/N)$ noise: below $\lVert\Sigma-I\rVert_F^2\sim 1/N$ it cannot
#   resolve the covariance any more.
# * SIGReg is strictly more than $R(Z)$: equal covariance, different law, different
#   SIGReg. {ref}`ch-admm` turns to the other two terms of {eq}`eq-srr`.

# %% [markdown] tags=["remove-cell"]
# % aot-jupyterlab-key
# % Written after a build by `python book/_ext/aot_book_build jupyterlab-key`;
# % the book leaves this cell out (its tag remove-cell).
# ##### This chapter's references, as the book numbers them
#
# In the book these are links; in JupyterLab this cell gives them their numbers and
# titles, and the works the chapter cites their full references.
#
# ```{math}
# :label: eq-srr
# :enumerator: 1.1
# \min_{f}\ \mathbb{E}_{Z=f(X)}\bigl[\,R^c(Z\mid U_{[K]}) - R(Z)
#   + \lambda\lVert Z\rVert_0\,\bigr],
# ```
#
# (ch-objective)=
# ###### The training objective: LeJEPA written down
#
# :::{figure}
# :label: tbl-theorem1-limit-ratio
# :kind: table
# :enumerator: 2.1
# The limit ratio at two widths (SymPy; equal to theory.limit_ratio)
# :::
#
# :::{figure}
# :label: tbl-theorem1-quadrature
# :kind: table
# :enumerator: 2.2
# The trapezoid rule's C_w against the exact value
# :::
#
# :::{figure}
# :label: tbl-theorem1-monte-carlo
# :kind: table
# :enumerator: 2.3
# \(d=8\), \(\epsilon=0.5\); predicted limit
# \(8C_w/(\theta^2d(d+2))=1.28255\times10^{-2}\)
# :::
#
# :::{figure}
# :label: fig-sigreg-scaling
# :enumerator: 2.1
# Left: population SIGReg, $\mathcal L^{(2)}$, the coding-rate gap $R(I)-R(\Sigma)$ and
# the finite-sample SIGReg (divided by $N$, bias removed) against
# $\lVert\Sigma-I\rVert_F^2$, with the $1/N$ noise floor dotted; a finite-sample value
# below zero (noise, at the smallest distances) has no place on a log scale and is left
# out. Right: the ratios to the gap, against the limit of (2.4) (dashed).
# :::
#
# :::{figure}
# :label: tbl-theorem1-fit-checks
# :kind: table
# :enumerator: 2.4
# Fits and ratios checked by the assertions
# :::
#
# :::{figure}
# :label: fig-spectrum-panel
# :enumerator: 2.2
# A covariance moved away from $I$ along a chosen spectrum (drop-down list) by a chosen
# distance (slider): its eigenvalues (left; dotted: $I$) and its population SIGReg
# against the coding-rate gap (right), the whole path of that spectrum in blue, this
# $\Sigma$ in red, the slope of the limit dashed. Computed for every setting when the
# page was built.
# :::
#
# :::{figure}
# :label: fig-rho-scatter
# :enumerator: 2.3
# $\rho(\Sigma)=\mathcal L^{(2)}/(R(I)-R(\Sigma))$ over the sampled covariances of
# $\mathcal S$, against their distance to $I$; dashed: the limit at $\Sigma=I$.
# :::
#
# :::{figure}
# :label: tbl-theorem1-gradient-alignment
# :kind: table
# :enumerator: 2.5
# Projected gradients of the two objectives (P: projection onto traceless matrices)
# :::
#
# :::{figure}
# :label: tbl-theorem1-same-covariance-laws
# :kind: table
# :enumerator: 2.6
# Three laws with covariance I (d = 8, N = 4,096)
# :::
#
# (ch-admm)=
# ###### ADMM, unrolled step by step
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
# (1) is the book's (2.1); (2) is the book's (2.2); (3) is the book's (2.3); (4) is the
# book's (2.4).
