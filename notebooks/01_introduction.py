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
# # Introduction: one objective, split in two
#
# White-box Transformers start from an objective and derive the network from it. CRATE
# {cite:p}`yu2023crate`-style models use **sparse rate reduction** (the paper's Eq. `srr`):
#
# $$
# \min_{f}\ \mathbb{E}_{Z=f(X)}\bigl[\,R^c(Z\mid U_{[K]}) - R(Z) + \lambda\lVert Z\rVert_0\,\bigr],
# $$
#
# with the global coding rate $R(Z)=\tfrac12\log\det\bigl(I_d+\tfrac{d}{N\epsilon^2}ZZ^\top\bigr)$
# (Eq. `global_rate`) and the compression rate $R^c(Z\mid U_{[K]})=\sum_k R(U_k^\top Z)$
# (Eqs. `subspace_rate`, `compression_rate`).
#
# The paper splits the three terms by **where** they are optimised:
#
# | term | role | where it goes | in `aot_lib` |
# |---|---|---|---|
# | $-R(Z)$ | expansion: use the whole space | the **training loss**, as LeJEPA's SIGReg (Theorem 1) | `SIGReg`, `LeJEPALoss` |
# | $R^c(Z\mid U)$ | compression onto subspaces | the **architecture**: an ADMM $Z$-step = MSSA | `MSSA`, `ADMMLayer` |
# | $\lambda\lVert Z\rVert_1$ | sparsity | the **architecture**: an ADMM $V$-step = ReLU | `ADMMLayer` |
#
# Unrolling one ADMM iteration per layer (Eq. `layer_updates`) gives a Transformer made of
# attention alone: no MLP and no ISTA dictionary.

# %%
import torch

import aot_lib

torch.manual_seed(0)
print("aot_lib", aot_lib.__version__, "| torch", torch.__version__)
print("registered models:", ", ".join(aot_lib.list_models()))

# %% [markdown]
# ## The two rates on a toy example
#
# Tokens drawn from $K$ low-dimensional subspaces have a small **compression** rate measured
# against the right subspaces, while their **global** rate stays large: exactly what the
# objective asks for. Tokens spread isotropically have a large rate everywhere.

# %%
d, p, K, N, eps = 12, 2, 3, 300, 0.5
U = torch.linalg.qr(torch.randn(d, d, dtype=torch.float64))[0][:, : p * K].reshape(d, K, p).permute(1, 0, 2)
labels = torch.randint(K, (N,))
coeffs = torch.randn(N, p, dtype=torch.float64)
Z_sub = torch.stack([U[k] @ c for k, c in zip(labels, coeffs)], dim=1)  # (d, N): tokens are columns
Z_iso = torch.randn(d, N, dtype=torch.float64) * (Z_sub.norm() / (d * N) ** 0.5)  # same energy

for name, Z in [("mixture of subspaces", Z_sub), ("isotropic", Z_iso)]:
    R = aot_lib.coding_rate(Z, eps).item()
    Rc = aot_lib.subspace_coding_rate(Z, U, eps).item()
    print(f"{name:22s} R(Z) = {R:7.2f}   R^c(Z|U) = {Rc:6.2f}   R^c - R = {Rc - R:7.2f}")

# %% [markdown]
# ## Map of the book
#
# 1. **Theorem 1, verified**: SIGReg and $R(Z)$ share the isotropic optimum and agree to
#    second order around it; checked symbolically (SymPy) and by Monte Carlo.
# 2. **ADMM unrolled**: the iterations on synthetic subspace data, then the same iterates
#    computed by `aot_lib`'s layer.
# 3. **Architecture**: AoT-ADMM next to CRATE and AoT; parameter and FLOP tables computed
#    live against the paper's.
# 4. **Training at CPU scale**: multi-crop views, LeJEPA pretraining on CIFAR-10 and the linear
#    probe, from recorded runs (`aot pretrain`, `aot probe`), and the speed benchmarks.
#
# And the package, module by module:
#
# | module | what |
# |---|---|
# | `aot_lib.models`, `aot_lib.layers`, `aot_lib.registry` | AoT-ADMM, CRATE, AoT, ViT; `create_model(name, **overrides)` |
# | `aot_lib.sigreg`, `aot_lib.lejepa`, `aot_lib.heads` | Epps–Pulley, SIGReg, the LeJEPA loss, the projector |
# | `aot_lib.coding_rate`, `aot_lib.theory`, `aot_lib.admm` | $R$, $R^c$; Appendix A's closed forms; the ADMM iterations |
# | `aot_lib.data`, `aot_lib.augment` | data sets (with their provenance and statistics), batched multi-crop |
# | `aot_lib.pretrain`, `aot_lib.probe`, `aot_lib.supervised` | LeJEPA pretraining, linear/k-NN probes, fine-tuning and distillation |
# | `aot_lib.loop`, `aot_lib.runs`, `aot_lib.optim`, `aot_lib.config`, `aot_lib.cli` | the shared training loop, run folders and checkpoints, schedule and parameter groups, validated configs, the `aot` command (`aot_lib.train` imports them all) |
# | `aot_lib.flops`, `aot_lib.paper` | parameter/FLOP counting; the paper's own numbers |
