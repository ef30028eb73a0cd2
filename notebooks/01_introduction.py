# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# (ch-introduction)=
# # Introduction: one objective, split in two
#
# **This chapter:** the objective white-box Transformers are derived from, and where the
# paper puts each of its three terms: one into the loss, two into the network.
#
# White-box Transformers start from an objective and derive the network from it. CRATE
# {cite:p}`yu2023crate`-style models use **sparse rate reduction** (the paper's Eq.
# `srr`):
#
# $$
# \min_{f}\ \mathbb{E}_{Z=f(X)}\bigl[\,R^c(Z\mid U_{[K]}) - R(Z)
#   + \lambda\lVert Z\rVert_0\,\bigr],
# $$ (eq-srr)
#
# with the global coding rate (the paper's Eq. `global_rate`)
#
# $$
# R(Z)=\tfrac12\log\det\Bigl(I_d+\tfrac{d}{N\epsilon^2}ZZ^\top\Bigr)
# $$ (eq-global-rate)
#
# and the compression rate $R^c(Z\mid U_{[K]})=\sum_k R(U_k^\top Z)$ (the paper's Eqs.
# `subspace_rate`, `compression_rate`).
#
# The paper splits the three terms of {eq}`eq-srr` by **where** they are optimised:
#
# | term | role | where it goes | in `aot_lib` |
# |---|---|---|---|
# | $-R(Z)$ | expansion | **loss**: SIGReg (Theorem 1) | `SIGReg`, `LeJEPALoss` |
# | $R^c(Z\mid U)$ | compression | **network**: ADMM $Z$-step = MSSA | `MSSA` |
# | $\lambda\Vert Z\Vert_1$ | sparsity | **network**: $V$-step = ReLU | `ADMMLayer` |
#
# Unrolling one ADMM iteration per layer (the paper's Eq. `layer_updates`, restated as
# {eq}`eq-layer-updates` in {ref}`ch-admm`) gives a Transformer made of attention alone:
# no MLP and no ISTA dictionary.

# %%
import textwrap

import torch
from IPython.display import display

import aot_lib
from aot_lib.book.pages import run_record_box
from aot_lib.book.tables import Col, Table

torch.manual_seed(0)
display(run_record_box(seed=0, aot_lib=aot_lib.__version__))
print("registered models:\n" + textwrap.fill(", ".join(aot_lib.list_models()), 80))

# %% [markdown]
# ## The two rates on a toy example
#
# Tokens drawn from $K$ low-dimensional subspaces have a small **compression** rate
# measured against the right subspaces, while their **global** rate stays large: exactly
# what the objective asks for. Tokens spread isotropically have a large rate everywhere.

# %%
d, p, K, N, eps = 12, 2, 3, 300, 0.5
Q = torch.linalg.qr(torch.randn(d, d, dtype=torch.float64))[0]
U = Q[:, : p * K].reshape(d, K, p).permute(1, 0, 2)  # K orthonormal bases, (K, d, p)
labels = torch.randint(K, (N,))
coeffs = torch.randn(N, p, dtype=torch.float64)
# (d, N): tokens are columns
Z_sub = torch.stack([U[k] @ c for k, c in zip(labels, coeffs)], dim=1)
# same energy, no structure
Z_iso = torch.randn(d, N, dtype=torch.float64) * (Z_sub.norm() / (d * N) ** 0.5)

rows = []
for name, Z in [("mixture of subspaces", Z_sub), ("isotropic", Z_iso)]:
    R = aot_lib.coding_rate(Z, eps).item()
    Rc = aot_lib.subspace_coding_rate(Z, U, eps).item()
    rows.append((name, R, Rc, Rc - R))
Table(
    rows,
    [Col("tokens"), Col("R", "R(Z) (nats)", ".2f"), Col("Rc", "Rᶜ(Z|U) (nats)", ".2f"),
     Col("diff", "Rᶜ − R (nats)", ".2f")],
    caption=f"Coding rates of {N} tokens in d = {d}: K = {K} subspaces of dimension "
    f"{p}, ε = {eps}",
)

# %% [markdown]
# ## Map of the book
#
# 1. {ref}`ch-theorem1`: SIGReg and $R(Z)$ share the isotropic optimum and agree to
#    second order around it; checked symbolically (SymPy) and by Monte Carlo.
# 2. {ref}`ch-admm`: the iterations on synthetic subspace data, then the same iterates
#    computed by `aot_lib`'s layer.
# 3. {ref}`ch-architecture`: AoT-ADMM next to CRATE and AoT; parameter and FLOP tables
#    computed live against the paper's.
# 4. {ref}`ch-training`: multi-crop views, LeJEPA pretraining on CIFAR-10 and the linear
#    probe, from recorded runs (`aot pretrain`, `aot probe`), and the speed benchmarks.
#
# And the package, module by module:
#
# * `aot_lib.models`: the layers, AoT-ADMM, CRATE, AoT, ViT, the registry
#   (`create_model(name, **overrides)`), parameter/FLOP counting, compilation.
# * `aot_lib.objectives`: Epps–Pulley and SIGReg (`sigreg`), the LeJEPA loss (`lejepa`),
#   the projector (`heads`), $R$ and $R^c$ (`coding_rate`).
# * `aot_lib.theory`: Appendix A's closed forms (`theorem1`); the ADMM iterations
#   (`admm`).
# * `aot_lib.data`: data sets with their provenance and statistics (`datasets`),
#   batched multi-crop (`augment`), streamed data (`streaming`).
# * `aot_lib.training`: LeJEPA pretraining, linear/k-NN probes, fine-tuning and
#   distillation (`pretrain`, `probe`, `supervised`); the shared training loop, run
#   folders and checkpoints, schedule and parameter groups, validated configs (`loop`,
#   `runs`, `optim`, `config`); `aot_lib.train` imports them all, `aot_lib.cli` is the
#   `aot` command.
# * `aot_lib.book`: what these pages use to show their results (`pages`, `tables`,
#   `plotting`) and the paper's own numbers (`paper`).
#
# Every chapter is a jupytext notebook under `notebooks/`: to run and change it, open it
# in JupyterLab (the README has the one command).
#
# ## What we learned
#
# * Sparse rate reduction {eq}`eq-srr` has three terms; the paper keeps compression and
#   sparsity in the architecture and moves expansion into the training loss.
# * On subspace-structured tokens the compression rate is small while the global rate
#   stays large, the regime the objective rewards; isotropic tokens of the same energy
#   are not.
