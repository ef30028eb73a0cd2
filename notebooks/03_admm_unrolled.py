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
# (ch-admm)=
# # ADMM, unrolled step by step
#
# **This chapter:** ADMM on compression plus sparsity, run on tokens whose subspaces we
# know, and a check by computation that one AoT-ADMM layer is one iteration.

# %% tags=["remove-input"]
from aot_lib.book.pages import open_chapter

open_chapter(seed=0)

# %% [markdown]
# With the expansion term moved into the loss ({ref}`ch-theorem1`), what remains of
# {eq}`eq-srr` is compression plus sparsity (the paper's Eq. (5)). Splitting $Z=V$ (the
# paper's Eq. (8)) and applying scaled-form ADMM ([](#bib-boyd2011admm)) with dual
# variable $W$ and penalty $\rho$, with the $Z$-step linearised (one gradient step, as
# in linearised ADMM ([](#bib-ouyang2015linearized))) and the $V$-step the proximal map
# of the non-negative $\ell_1$ penalty ([](#bib-parikh2014proximal)), gives three
# updates per iteration:
#
# $$
# \begin{aligned}
# Z^{t+1} &= Z^t-\eta\bigl(\nabla_Z R^c(Z^t\mid U)+\rho(Z^t-V^t+W^t)\bigr)\\
# V^{t+1} &= \mathrm{ReLU}\bigl(Z^{t+1}+W^t-\lambda/\rho\bigr)\\
# W^{t+1} &= W^t+Z^{t+1}-V^{t+1}
# \end{aligned}
# $$ (eq-admm-updates)
#
# The first line is one gradient step on the $Z$-subproblem of the augmented
# Lagrangian, the second the non-negative proximal map of $\lambda\lVert\cdot\rVert_1$,
# the third dual ascent.
#
# Replacing the exact gradient (`aot_lib.theory.admm.exact_compression_gradient`,
# automatic differentiation of the paper's Eq. (7)) by its MSSA approximation
# $\nabla_ZR^c\approx\gamma\,[Z-\mathrm{MSSA}(Z\mid U)]$ (the paper's Eq.
# (11), `aot_lib.theory.admm.mssa_compression_gradient`) turns the
# $Z$-step into the paper's Eq. (14); mapping iteration $t$ to layer $\ell$, each
# with its own subspaces $U^\ell$, gives the AoT-ADMM layer (the paper's Eq.
# (18)):
#
# $$
# \begin{aligned}
# Z^{\ell+1} &= (1-\eta\gamma-\eta\rho)\,Z^\ell
#   +\eta\gamma\,\mathrm{MSSA}(Z^\ell\mid U^\ell)+\eta\rho\,(V^\ell-W^\ell)\\
# V^{\ell+1} &= \mathrm{ReLU}\bigl(Z^{\ell+1}+W^\ell-\lambda/\rho\bigr)\\
# W^{\ell+1} &= W^\ell+Z^{\ell+1}-V^{\ell+1}
# \end{aligned}
# $$ (eq-layer-updates)
#
# In the trained network the three branch coefficients are learned and the states
# RMS-rescaled (Appendix B; {ref}`ch-architecture`). This chapter runs both versions of
# {eq}`eq-admm-updates`, watches the diagnostics ADMM is judged by, and then checks that
# `aot_lib`'s layer computes exactly the iterates of {eq}`eq-layer-updates`.

# %% tags=["hide-input"]

import matplotlib.pyplot as plt
import torch

from aot_lib.book.inline import phrases
from aot_lib.book.panels import admm_panel
from aot_lib.models.aot_admm import ADMMLayer, admm_coefficients
from aot_lib.objectives.coding_rate import subspace_coding_rate
from aot_lib.theory.admm import (
    admm_iterations,
    admm_layer_from_subspaces,
    exact_compression_gradient,
    mixture_of_subspaces,
    mssa_compression_gradient,
)
from aot_lib.book.pages import pick, show_source
from aot_lib.book.plotting import FIGURE_WIDTH_IN, plot_admm_history
from aot_lib.book.tables import Col, Table

# %% [markdown]
# ## Data: a mixture of low-rank Gaussians
#
# $K=4$ subspaces of dimension $p=3$ in $d=12$, 32 tokens each, plus noise of standard
# deviation 0.3. The proximal step is a ReLU in the *standard* basis, so the model
# presumes tokens that are sparse and non-negative there; we draw the subspaces as
# blocks of coordinate axes with non-negative coefficients, which makes the data fit
# every term of the objective. (With randomly rotated subspaces the ReLU pulls tokens
# into the positive orthant, away from their subspaces.)

# %%
gen = torch.Generator().manual_seed(0)
Z0, U, labels = mixture_of_subspaces(d=12, p=3, K=4, n_per=32, noise=0.3,
                                     basis="coordinate", nonnegative=True,
                                     generator=gen)
print(f"tokens Z0: {tuple(Z0.shape)} (d, N);  subspaces U: {tuple(U.shape)} (K, d, p)")
defaults = dict(eta=0.25, gamma=1.0, rho=1.0, lambd=0.1, eps=0.5)
iters = pick(20, 40)

# %% [markdown]
# ## Exact gradient versus the MSSA approximation
#
# Five diagnostics per iteration: the objective $R^c(Z\mid U)+\lambda\lVert V\rVert_1$,
# the primal residual $\lVert Z-V\rVert_F$, the dual residual
# $\rho\lVert V^{t+1}-V^t\rVert_F$, the sparsity of $V$, and how much of each token's
# energy lies in its own subspace.
#
# First the two gradients themselves, on the start tokens. The paper gives no regime in
# which they coincide ($\gamma$ is only "determined by the coding precision"), so we
# compare their directions (cosine) and their sizes separately, with the $\gamma=1$ and
# $\epsilon=0.5$ used below:

# %%
g_exact = exact_compression_gradient(Z0, U, defaults["eps"])
g_mssa = mssa_compression_gradient(Z0, U, defaults["gamma"])
cos = float((g_exact * g_mssa).sum() / (g_exact.norm() * g_mssa.norm()))
size = float(g_mssa.norm() / g_exact.norm())
assert 0 < cos < 1 and size > 1
print(f"cos(exact, MSSA approximation) = {cos:.3f};  "
      f"||MSSA approximation|| / ||exact|| = {size:.1f}")

# %% [markdown]
# At the same $\eta$ the MSSA step is therefore about that many times longer than the
# exact one. To see direction and size apart, take one step of each from $Z^0$ with the
# *same length* $\eta\lVert\nabla_ZR^c\rVert$, and one MSSA step at the same $\eta$,
# and compare how much each lowers $R^c$ ({numref}`tbl-admm-one-step`):

# %%
eta, eps = defaults["eta"], defaults["eps"]
length = eta * g_exact.norm()
Rc0 = float(subspace_coding_rate(Z0, U, eps))
one_step = {
    "exact gradient, length η‖∇Rᶜ‖": g_exact / g_exact.norm() * length,
    "MSSA direction, same length": g_mssa / g_mssa.norm() * length,
    "MSSA, same η (the paper's step)": eta * g_mssa,
}
drops = {name: Rc0 - float(subspace_coding_rate(Z0 - step, U, eps))
         for name, step in one_step.items()}
exact_drop, matched_drop, long_drop = drops.values()
assert 0 < matched_drop < exact_drop  # the exact gradient is the steepest direction
# to first order the matched step lowers R^c by cos times the exact step's drop
assert abs(matched_drop / exact_drop - cos) < 0.05
assert long_drop > 10 * exact_drop
Table([(name, float(step.norm()), drop) for (name, step), drop
       in zip(one_step.items(), drops.values())],
      [Col("step"), Col("len", "step length ‖ΔZ‖", ".3f"),
       Col("drop", "decrease of Rᶜ", ".4f")],
      caption=f"One step from Z⁰ (Rᶜ(Z⁰) = {Rc0:.3f} nats)",
      name="tbl-admm-one-step",
      notes=[f"Same length: the MSSA direction lowers Rᶜ by "
             f"{matched_drop / exact_drop:.2f} of the exact step's decrease "
             f"(cosine {cos:.2f})."])

# %% [markdown]
# The same holds over whole runs. Beside the two versions of {eq}`eq-admm-updates` at
# the same $\eta$, a third run shortens the MSSA step to the exact gradient's length at
# $Z^0$ by dividing $\gamma$ by the size ratio above, which changes the branch weights
# of {eq}`eq-layer-updates` to $(1-\eta\gamma-\eta\rho,\ \eta\gamma,\ \eta\rho)$
# with that $\gamma$ ({numref}`tbl-admm-three-runs` and {numref}`fig-admm-history`):

# %%
matched = {**defaults, "gamma": defaults["gamma"] / size}
runs = {
    "exact gradient": admm_iterations(Z0, U, iters=iters, gradient="exact",
                                      labels=labels, **defaults),
    "MSSA (the paper's Eq. (14))": admm_iterations(Z0, U, iters=iters, gradient="mssa",
                                          labels=labels, **defaults),
    "MSSA, matched length": admm_iterations(Z0, U, iters=iters, gradient="mssa",
                                            labels=labels, **matched),
}
exact, approx, short = runs.values()
for h in runs.values():
    assert h.objective[-1] < 0.5 * h.objective[0]
assert exact.alignment[-1] > exact.alignment[0]
assert short.alignment[-1] > short.alignment[0]  # shortened, MSSA keeps the tokens
assert abs(short.alignment[-1] - exact.alignment[-1]) < 0.05
assert approx.alignment[-1] < approx.alignment[0]  # at full length it loses them
for h in (exact, short):  # Z and V stay close, the dual residual decays
    assert h.primal[-1] < 0.05 * float(Z0.norm()) and h.dual[-1] < h.dual[1]
Table(
    [dict(run=name, obj0=h.objective[0], obj=h.objective[-1], primal=h.primal[-1],
          sparsity=h.sparsity[-1], align0=h.alignment[0], align=h.alignment[-1])
     for name, h in runs.items()],
    [Col("run"), Col("obj0", "objective, start", ".2f"),
     Col("obj", f"objective, t = {iters}", ".3f"),
     Col("primal", "primal residual, end", ".2e"),
     Col("sparsity", "zeros in V, end (fraction)", ".2f"),
     Col("align0", "own-subspace energy, start", ".3f"),
     Col("align", "own-subspace energy, end", ".3f")],
    caption=f"ADMM on compression + sparsity (η = 0.25, ρ = 1, λ = 0.1; γ = 1, "
    f"matched: γ = {matched['gamma']:.4f})",
    name="tbl-admm-three-runs",
)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The three ADMM runs of the table above, iteration by iteration ($\\eta=0.25$, $\\rho=1$, $\\lambda=0.1$): the objective, the primal and dual residuals, the fraction of zeros in $V$ and each token's energy on its own subspace. The matched-length MSSA run (green) lies on the exact one (blue); where the full-length MSSA run's primal residual falls to about $10^{-15}$, $Z=V$ to rounding: no entry of $V$ is thresholded there (its fraction of zeros is 0).", "name": "fig-admm-history"}}
plot_admm_history(runs)
plt.show()

# %% [markdown]
# All three runs drive the objective below half its start and make $V$ sparse; in the
# exact and the matched runs $Z$ and $V$ stay close (primal residual under 5 % of
# $\lVert Z^0\rVert_F$) and the dual residual decays (all asserted above). They differ
# in **where** the tokens go, and {numref}`tbl-admm-three-runs` separates the two
# reasons. The exact gradient of $R^c$ acts inside each subspace only, so the
# thresholding removes the off-subspace noise and the tokens settle onto their own
# subspaces. The MSSA step at
# the same $\eta$ replaces, with branch weight $\eta\gamma$, each token's projection by
# a softmax-weighted *average* of all tokens' projections; a step that many times too
# long smooths the tokens toward one another — the rank collapse of pure attention
# stacks ([](#bib-dong2021attention)) — and the threshold removes what is left: its
# own-subspace energy ends below where it started. Shortened to the exact gradient's
# length, the same MSSA iteration keeps the tokens on their subspaces about as well as
# the exact gradient (the assertions: within 0.05 of it). So the loss of structure comes
# from the size of the paper's step at $\gamma=1$, not from the direction of the
# approximation.
#
# (sec-collapse)=
# ### Run long enough, both collapse — and that is the point
#
# Compression plus sparsity alone is minimised by $Z=V=0$: nothing in the
# paper's Eq. (5) keeps the representation expanded. Running the iterations
# well past the network's depth shows it ({numref}`tbl-admm-collapse-to-zero`):

# %%
steps = (0, 12, 40, 80)
rows = []
for grad in ("exact", "mssa"):
    long = admm_iterations(Z0, U, iters=80, gradient=grad, labels=labels, **defaults)
    norms = [float(long.iterates[t][0].norm()) for t in steps]
    assert norms[-1] < 0.01 * norms[0]
    rows.append([grad] + norms)
norm_cols = [Col(f"t{t}", f"‖Zᵗ‖_F at t = {t}", ".3f") for t in steps]
Table(rows, [Col("gradient")] + norm_cols,
      caption="Without an expansion term the iterates shrink to zero",
      name="tbl-admm-collapse-to-zero")

# %% [markdown]
# This is why the expansion term has to come from somewhere else. In AoT-ADMM it comes
# from SIGReg in the training loss (Theorem 1, {ref}`ch-theorem1`), and the network
# unrolls only $L=12$ iterations, each with its own learned $U^\ell$, learned branch
# weights and RMS-rescaled states (Appendix B) — the rescaling alone already rules out
# the collapse to zero.
#
# Where the tokens are after the iterations plotted above, on one coordinate of the
# first subspace ($e_1$) and one of the second ($e_4$) ({numref}`fig-admm-tokens`):

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The tokens on one coordinate of the first subspace ($e_1$) and one of the second ($e_4$), coloured by the subspace they were drawn from: at the start, after the exact-gradient iterations and after the MSSA iterations at full step length.", "name": "fig-admm-tokens"}}
fig, axes = plt.subplots(1, 3, figsize=(FIGURE_WIDTH_IN, 3.2), sharex=True, sharey=True)
colours = plt.cm.tab10(labels.numpy())
panels = [("start", Z0), ("exact gradient, last", exact.iterates[-1][0]),
          ("MSSA, last", approx.iterates[-1][0])]
for ax, (title, Z) in zip(axes, panels):
    ax.scatter(Z[0], Z[3], c=colours, s=10)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("$e_1$ (subspace 1)", fontsize=9)
axes[0].set_ylabel("$e_4$ (subspace 2)", fontsize=9)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## The hyper-parameters: a grid
#
# $\eta$, $\gamma$, $\rho$ and $\lambda$ fix the initial branch coefficients
# $(1-\eta\gamma-\eta\rho,\ \eta\gamma,\ \eta\rho)$ of {eq}`eq-layer-updates` and the
# threshold $\tau=\lambda/\rho$. {numref}`fig-admm-grid` varies two at a time around
# the defaults; the panel after it lets you move all four.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Two hyper-parameters at a time around the defaults: one panel per $(\\rho,\\lambda)$, $\\gamma=1$. Solid: the exact gradient; dashed: MSSA. Blue: energy on each token's own subspace; green: the fraction of zeros in $V$.", "name": "fig-admm-grid"}}
grid_lambda = [0.0, 0.1, 0.3]
grid_rho = [0.5, 1.0, 2.0]
grid = {}  # (rho, lambda, gradient) -> history
fig, axes = plt.subplots(len(grid_rho), len(grid_lambda), figsize=(FIGURE_WIDTH_IN, 7),
                         sharex=True)
for i, rho in enumerate(grid_rho):
    for j, lam in enumerate(grid_lambda):
        eta = min(0.25, 0.9 / (1.0 + rho))  # keep 1 - eta*gamma - eta*rho positive
        ax = axes[i, j]
        for grad, ls in [("exact", "-"), ("mssa", "--")]:
            h = admm_iterations(Z0, U, iters=iters, gradient=grad, labels=labels,
                                eta=eta, gamma=1.0, rho=rho, lambd=lam)
            grid[rho, lam, grad] = h
            ax.plot(h.alignment, ls, color="C0", label=f"{grad}: own-subspace energy")
            ax.plot(h.sparsity, ls, color="C2", label=f"{grad}: sparsity of V")
        ax.set_title(f"$\\rho={rho}$, $\\lambda={lam}$, $\\eta={eta:.2f}$", fontsize=10)
        ax.set_ylim(-0.02, 1.02)
        ax.tick_params(labelsize=8)
axes[0, 0].legend(fontsize=8)
for ax in axes[-1]:
    ax.set_xlabel("iteration", fontsize=9)
fig.tight_layout()
plt.show()

# %%
def ends_above_start(h):
    return h.alignment[-1] > h.alignment[0]


for rho in grid_rho:
    assert all(grid[rho, 0.0, g].sparsity[-1] == 0 for g in ("exact", "mssa"))
    zeros = [grid[rho, lam, "exact"].sparsity[-1] for lam in grid_lambda]
    assert zeros == sorted(zeros)  # more zeros in V for larger lambda
assert not any(ends_above_start(grid[k]) for k in grid if k[2] == "mssa")
kept = [k[:2] for k in grid if k[2] == "exact" and ends_above_start(grid[k])]
lost = [k[:2] for k in grid if k[2] == "exact" and not ends_above_start(grid[k])]
largest_tau = max(lam / rho for rho in grid_rho for lam in grid_lambda)
assert all(lam / rho == largest_tau for rho, lam in lost)
exact = phrases(kept=len(kept), settings=len(kept) + len(lost),
                lost=", ".join(f"(ρ, λ) = {k}" for k in lost) or "none")

# %% [markdown]
# With $\lambda=0$ nothing is thresholded and $V$ stays dense; at each $\rho$ a larger
# $\lambda$ leaves more zeros in $V$. The exact gradient keeps its tokens on their
# subspaces (own-subspace energy ends above its start) at {eval}`exact.kept` of the
# {eval}`exact.settings` settings; only the largest threshold $\tau=\lambda/\rho$ could
# lose them, and the settings where it does are: {eval}`exact.lost`. The MSSA iteration
# at $\gamma=1$, whose step is the long one measured above, loses them at every setting.
#
# Move all four yourself in {numref}`fig-admm-panel`: each setting of the grid was
# computed by `admm_iterations` when this page was built, so the panel works in the page
# without a kernel (and the same cell runs live in JupyterLab). Two things to try: lower
# $\gamma$, which shortens the MSSA step (the exact one does not depend on it), and move
# $\lambda$ against $\rho$, whose ratio is the threshold $\tau$.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The two iterations for every $(\\eta,\\gamma,\\rho,\\lambda)$ of a small grid (move the sliders). Solid: the exact gradient; dashed: MSSA. Left: each token's energy on its own subspace; right: the fraction of zeros in $V$. A setting with $\\eta(\\gamma+\\rho)\\ge 1$ runs nothing and says why.", "name": "fig-admm-panel"}}
admm_panel(Z0, U, labels, iters)

# %% [markdown]
# (sec-layer-equals-iteration)=
# ## The unrolled network computes the same iterates
#
# Here is {eq}`eq-layer-updates` as `aot_lib` writes it: `ADMMLayer.step`, the readable
# definition of one layer (Algorithm 1, lines 6–9). The branch weights $(a,b,c)$ are a
# softmax of three logits initialised to $(1-\eta\gamma-\eta\rho,\ \eta\gamma,\
# \eta\rho)$ (`admm_coefficients` below), the threshold is $\tau=\mathrm{softplus}
# (\tau_{\text{raw}})$ initialised to $\lambda/\rho$, `self.norm` is the pre-MSSA
# LayerNorm and `self.rms` the RMS rescaling of Appendix B; the last two are the
# trained network's stabilisers, not part of {eq}`eq-layer-updates`.

# %%
show_source(ADMMLayer.step)

# %%
show_source(admm_coefficients)

# %% [markdown]
# `ADMMLayer.forward` computes the same values as `step` with the element-wise part
# fused into one autograd node. `aot_lib.theory.admm.admm_layer_from_subspaces` builds
# an `ADMMLayer` whose shared projection is $[U_1\cdots U_K]^\top$ and whose output map
# is $[U_1\cdots U_K]$, with the LayerNorm and the RMS rescaling switched off. Applying
# it $L$ times to $(Z^0,V^0,W^0)=(Z^0,Z^0,0)$ must reproduce the ADMM iterates of
# {eq}`eq-layer-updates` exactly — in float64, to rounding.

# %%
kw = dict(eta=0.3, gamma=1.2, rho=0.8, lambd=0.15)
ref = admm_iterations(Z0, U, iters=iters, gradient="mssa", **kw)
layer = admm_layer_from_subspaces(U, **kw)
a, b, c = layer.coefficients().tolist()
print(f"layer coefficients a, b, c = {a:.4f}, {b:.4f}, {c:.4f};  "
      f"threshold tau = {layer.tau[0].item():.4f}")
z = v = Z0.T.unsqueeze(0)  # the network holds tokens as rows
w = torch.zeros_like(z)
worst = 0.0
with torch.no_grad():
    for Zt, Vt, Wt in ref.iterates[1:]:
        z, v, w = layer(z, v, w)
        pairs = [(z, Zt), (v, Vt), (w, Wt)]
        diffs = [float((net[0].T - it).abs().max()) for net, it in pairs]
        worst = max(worst, *diffs)
assert worst < 1e-12
print(f"largest difference between network states and ADMM iterates over {iters} "
      f"layers: {worst:.2e}")

# %% [markdown]
# ## Exercises
#
# 1. **Which step length is best?** Scale the MSSA step by $\gamma\in\{1/64, 1/32,
#    1/16, 1/8, 1/4, 1\}$ (keeping $\eta=0.25$, $\rho=1$, $\lambda=0.1$) and plot the
#    own-subspace energy after 20 iterations against $\gamma$. Where does it start to
#    fall below its value at $Z^0$?
# 2. **The temperature.** `mssa_columns` scales the attention logits by $p^{-1/2}$;
#    the paper's Eq. (12) has no scaling. Recompute the cosine and the size ratio of
#    the first table with `temperature=1.0` (an argument of `admm_iterations` and
#    `mssa_compression_gradient`). Which of the two changes more?
# 3. **Random subspaces.** Draw the data with `basis="random"` and
#    `nonnegative=False`. Run the exact-gradient ADMM with $\lambda=0.1$ and with
#    $\lambda=0$: what does the ReLU do to the own-subspace energy, and why does
#    this chapter's data use coordinate blocks with non-negative coefficients?
# 4. **The layer, by hand.** For $d=2$, $K=1$, $p=2$, $U=I$, and two tokens, write out
#    one application of {eq}`eq-layer-updates` with $\eta=0.3$, $\gamma=1.2$,
#    $\rho=0.8$, $\lambda=0.15$ on paper, and compare with
#    `admm_layer_from_subspaces(U, ...)` applied to the same tokens.
#
# ## What we learned
#
# * One AoT-ADMM layer *is* one linearised ADMM iteration {eq}`eq-layer-updates`: with
#   $U$ fixed to the true subspaces the network's states equal the iterates to
#   $10^{-12}$.
# * ADMM's bookkeeping shows up as it should: with a step of the exact gradient's
#   length $Z$ and $V$ stay close (small primal residual), the dual residual decays,
#   and $\lambda$ sets how sparse $V$ becomes.
# * Compression and sparsity without expansion are minimised by collapse ($Z=0$): the
#   expansion term that the paper moves into the loss is not optional.
# * The MSSA approximation points roughly the way of the exact gradient (the cosine
#   printed above) but, at $\gamma=1$, is many times longer. At the paper's step it
#   averages tokens together and loses their subspaces; shortened to the exact step's
#   length it keeps them about as well as the exact gradient. The size of the step,
#   which the network learns through its branch weights ({ref}`ch-architecture`), is
#   what matters.

# %% [markdown] tags=["remove-cell"]
# % aot-jupyterlab-key
# % Written after a build by `python book/_ext/aot_book_build jupyterlab-key`;
# % the book leaves this cell out (its tag remove-cell).
# ##### This chapter's references, as the book numbers them
#
# In the book these are links; in JupyterLab this cell gives them their numbers and
# titles, and the works the chapter cites their full references.
#
# (ch-theorem1)=
# ###### Theorem 1 and the Proposition, verified
#
# ```{math}
# :label: eq-srr
# :enumerator: 1.1
# \min_{f}\ \mathbb{E}_{Z=f(X)}\bigl[\,R^c(Z\mid U_{[K]}) - R(Z)
#   + \lambda\lVert Z\rVert_0\,\bigr],
# ```
#
# (ch-architecture)=
# ###### The architecture: AoT-ADMM next to CRATE and AoT
#
# :::{figure}
# :label: tbl-admm-one-step
# :kind: table
# :enumerator: 3.1
# One step from Z⁰ (Rᶜ(Z⁰) = 8.790 nats)
# :::
#
# :::{figure}
# :label: tbl-admm-three-runs
# :kind: table
# :enumerator: 3.2
# ADMM on compression + sparsity (η = 0.25, ρ = 1, λ = 0.1; γ = 1, matched: γ = 0.0313)
# :::
#
# :::{figure}
# :label: fig-admm-history
# :enumerator: 3.1
# The three ADMM runs of the table above, iteration by iteration ($\eta=0.25$, $\rho=1$,
# $\lambda=0.1$): the objective, the primal and dual residuals, the fraction of zeros in
# $V$ and each token’s energy on its own subspace. The matched-length MSSA run (green)
# lies on the exact one (blue); where the full-length MSSA run’s primal residual falls
# to about $10^{-15}$, $Z=V$ to rounding: no entry of $V$ is thresholded there (its
# fraction of zeros is 0).
# :::
#
# :::{figure}
# :label: tbl-admm-collapse-to-zero
# :kind: table
# :enumerator: 3.3
# Without an expansion term the iterates shrink to zero
# :::
#
# :::{figure}
# :label: fig-admm-tokens
# :enumerator: 3.2
# The tokens on one coordinate of the first subspace ($e_1$) and one of the second
# ($e_4$), coloured by the subspace they were drawn from: at the start, after the
# exact-gradient iterations and after the MSSA iterations at full step length.
# :::
#
# :::{figure}
# :label: fig-admm-grid
# :enumerator: 3.3
# Two hyper-parameters at a time around the defaults: one panel per $(\rho,\lambda)$,
# $\gamma=1$. Solid: the exact gradient; dashed: MSSA. Blue: energy on each token’s own
# subspace; green: the fraction of zeros in $V$.
# :::
#
# :::{figure}
# :label: fig-admm-panel
# :enumerator: 3.4
# The two iterations for every $(\eta,\gamma,\rho,\lambda)$ of a small grid (move the
# sliders). Solid: the exact gradient; dashed: MSSA. Left: each token’s energy on its
# own subspace; right: the fraction of zeros in $V$. A setting with
# $\eta(\gamma+\rho)\ge 1$ runs nothing and says why.
# :::
#
# **Works cited**
#
# (bib-boyd2011admm)=
# ###### Boyd et al., 2011
#
# Stephen Boyd, Neal Parikh, Eric Chu, Borja Peleato, and Jonathan Eckstein. Distributed
# optimization and statistical learning via the alternating direction method of
# multipliers. Foundations and Trends in Machine Learning, 3(1):1–122, 2011.
#
# (bib-ouyang2015linearized)=
# ###### Ouyang et al., 2015
#
# Yuyuan Ouyang, Yunmei Chen, Guanghui Lan, and Eduardo Pasiliao, Jr. An accelerated
# linearized alternating direction method of multipliers. SIAM Journal on Imaging
# Sciences, 8(1):644–681, 2015. doi:10.1137/14095697X.
#
# (bib-parikh2014proximal)=
# ###### Parikh and Boyd, 2014
#
# Neal Parikh and Stephen Boyd. Proximal algorithms. Foundations and Trends in
# Optimization, 1(3):127–239, 2014. doi:10.1561/2400000003.
#
# (bib-dong2021attention)=
# ###### Dong et al., 2021
#
# Yihe Dong, Jean-Baptiste Cordonnier, and Andreas Loukas. Attention is not all you
# need: pure attention loses rank doubly exponentially with depth. In Proceedings of the
# 38th International Conference on Machine Learning, volume 139 of Proceedings of
# Machine Learning Research, 2793–2803. PMLR, 2021.
#
# **This chapter's own equations**, numbered here in order and in the book by chapter:
# (1) is the book's (3.1); (2) is the book's (3.2).
