r"""AoT-ADMM: the attention-only white-box Transformer of the paper (Algorithm 1).

Each layer is one unrolled scaled-form ADMM iteration (Eq. (18)) on the
compression + sparsity objective (Eq. (8)):

.. math::
    Z^{\ell+1} &= a_\ell Z^\ell + b_\ell\,\mathrm{MSSA}(\mathrm{LN}(Z^\ell)\mid U^\ell_{[K]}) + c_\ell (V^\ell - W^\ell) \\
    V^{\ell+1} &= \mathrm{ReLU}(Z^{\ell+1} + W^\ell - \tau) \\
    W^{\ell+1} &= W^\ell + Z^{\ell+1} - V^{\ell+1}

with ``(a, b, c) = softmax(logits)`` initialised to ``(1 - eta*gamma - eta*rho, eta*gamma,
eta*rho)`` (Eq. (14)) and ``tau = lambda / rho`` at initialisation.  Following Appendix B,
``Z^{l+1}`` and the updated dual ``W^{l+1}`` are rescaled feature-wise by RMS.

Parameters per layer: ``2 d^2 + 4 d + 3``: MSSA (``U``, ``d^2``, and its output map with a
bias, ``d^2 + d``), the pre-MSSA LayerNorm that CRATE and AoT also use (``2 d``), a learnable
per-feature threshold ``tau`` initialised to ``lambda / rho`` (``d``) and the three branch logits.
The threshold is learned as ``tau = softplus(tau_raw)``: the paper fixes ``tau = lambda / rho``, which
"retains the proximal interpretation" of the V-step as the proximal map of ``lambda ||V||_1 + 1_{V >= 0}``
(a shrinkage); a threshold that training could drive negative would stop being one, so it is kept
positive by construction (same parameter count: one ``tau_raw`` per feature).
The RMS rescalings have no parameters, so every parameter is used (the last layer's ``W`` is not).

The paper is silent on whether MSSA's output map has a bias (Eq. (12) has none, and no
layer-level parameter list is given), and neither AoT-ADMM nor AoT has public code; we take the bias of
official CRATE, whose ``to_out`` is ``nn.Linear(inner_dim, dim)``. With the CRATE-style stem and counting the encoder
without its classification head, as the paper does, this reproduces every AoT-ADMM cell of
Tables 1-3: 3,639,588 / 8,113,380 / 14,356,644 parameters (3.64 / 8.11 / 14.36 M; 14,837,028 =
14.84 M at 128 px, patch 16).

Cost. Beyond AoT's MSSA a layer only adds element-wise work on the state (the mix, two RMS
rescalings, the threshold, the dual update). As plain tensor operations (:meth:`ADMMLayer.step`,
kept as the readable definition) that chain costs, on a CPU, about as much as the matrix products.
:meth:`ADMMLayer.forward` therefore runs it, in eager mode, as one autograd node with a
hand-written backward (:func:`aot_lib.models.fused.admm_state_update`: same values to rounding, fewer
passes over memory, no temporaries, fewer saved tensors); under ``torch.compile`` (e.g. per layer with
:func:`aot_lib.models.compile.compile_blocks`) it traces :meth:`ADMMLayer.step` and lets the compiler fuse it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .fused import admm_state_update
from .layers import MSSA, PatchStem
from .registry import WHITE_BOX_SIZES, register_sizes
from ._base import EncoderBase, LayerState

__all__ = ["ADMMLayer", "AoTADMM", "ADMMState", "admm_coefficients", "inverse_softplus"]


def admm_coefficients(eta: float, gamma: float, rho: float) -> tuple[float, float, float]:
    """``(1 - eta*gamma - eta*rho, eta*gamma, eta*rho)``: the branch weights of Eq. (14).

    Raises unless ``eta, gamma, rho > 0`` (NaN included: all three negative would also give positive
    weights, but a negative threshold ``lambd / rho``) and the three weights are positive: a softmax cannot
    represent them otherwise, and the gradient step of Eq. (13) would then not be a
    contraction toward its target.
    """
    if not (eta > 0 and gamma > 0 and rho > 0):  # written so that NaN fails too
        raise ValueError(f"eta, gamma and rho must all be positive, got eta={eta}, gamma={gamma}, rho={rho}; "
                         "choose eta*(gamma+rho) < 1 with eta, gamma, rho > 0.")
    a, b, c = 1.0 - eta * gamma - eta * rho, eta * gamma, eta * rho
    if not min(a, b, c) > 0:  # a <= 0, or a product that underflows to 0
        raise ValueError(
            f"eta={eta}, gamma={gamma}, rho={rho} give branch coefficients ({a:.4g}, {b:.4g}, {c:.4g}); "
            "all three must be positive: choose eta*(gamma+rho) < 1 with eta, gamma, rho > 0."
        )
    return a, b, c


@dataclass
class ADMMState(LayerState):
    """What one layer computed, for inspection (``forward_intermediates``) and tests.

    ``tokens`` (the uniform :class:`~aot_lib.models._base.LayerState` field, set from ``v``) is
    ``V^{l+1}``, the state the encoder pools. ``w_raw`` is ``W^l + Z^{l+1} - V^{l+1}`` before the
    RMS rescaling that gives ``w``.
    """

    tokens: torch.Tensor = field(init=False, repr=False)
    z: torch.Tensor
    v: torch.Tensor
    w: torch.Tensor
    w_raw: torch.Tensor
    mssa: torch.Tensor
    coefficients: torch.Tensor

    def __post_init__(self) -> None:
        self.tokens = self.v


def inverse_softplus(y: float) -> float:
    """``x`` with ``softplus(x) = log(1 + e^x) = y`` for ``y > 0``: ``y + log(1 - e^{-y})``, in a form
    exact for small and large ``y`` (``expm1`` avoids cancelling ``1 - e^{-y}``)."""
    return y + math.log(-math.expm1(-y))


def check_threshold(lambd: float) -> None:
    """The V-step's threshold ``tau = lambd / rho`` must be positive: it is learned as a softplus.
    (``rho > 0`` is checked by :func:`admm_coefficients`, called first.)"""
    if not lambd > 0:
        raise ValueError(f"lambd must be > 0 (the V-step's threshold tau = lambd/rho is learned as softplus(tau_raw) "
                         f"> 0, a shrinkage by construction), got {lambd}; for the un-thresholded iteration use "
                         f"aot_lib.theory.admm.admm_iterations(lambd=0)")


class ADMMLayer(nn.Module):
    """One AoT-ADMM layer = one unrolled ADMM iteration (Algorithm 1, lines 6-9).

    Args:
        dim: token width ``d``.
        num_heads: number of subspaces ``K`` (each of dimension ``d/K``).
        eta, gamma, rho: step size, compression-gradient coefficient and ADMM penalty;
            they set the initial branch coefficients of Eq. (14).
        lambd: sparsity weight (> 0); the initial threshold is ``tau = lambd / rho``, learned as
            ``tau = softplus(tau_raw)`` so that it stays positive (the V-step stays a shrinkage).
        rms_eps: epsilon of the RMS rescaling.
        pre_norm, rms_rescale: the two stabilisers of the trained network (pre-MSSA LayerNorm,
            RMS rescaling of ``Z`` and ``W``). With both off the layer is the plain ADMM iteration
            of Eq. (18), which the book checks iterate by iterate.
        fused: how :meth:`forward` computes the element-wise state update (mix, RMS, threshold,
            dual update, RMS) in eager mode: ``True`` (default) with the single autograd node of
            :func:`aot_lib.models.fused.admm_state_update` (fewer passes over memory than the
            plain operations, fewer saved tensors), ``False`` with :meth:`step`'s plain tensor
            operations. Both give the same values and gradients to floating-point rounding and
            have the same parameters. Under ``torch.compile`` :meth:`forward` always traces
            :meth:`step`, which the compiler fuses by itself (see :mod:`aot_lib.models.compile`).

    :meth:`step` is the readable definition (Algorithm 1, lines 6-9, one line per update) and
    returns every intermediate as an :class:`ADMMState`; :meth:`forward` returns ``(Z, V, W)`` and
    :meth:`forward_state` the :class:`ADMMState` of exactly what :meth:`forward` computes.
    """

    def __init__(self, dim: int, num_heads: int, eta: float = 0.25, gamma: float = 1.0,
                 rho: float = 1.0, lambd: float = 0.1, rms_eps: float = 1e-6,
                 pre_norm: bool = True, rms_rescale: bool = True, fused: bool = True):
        super().__init__()
        self.fused = fused
        self.eta, self.gamma, self.rho, self.lambd = eta, gamma, rho, lambd
        init = torch.tensor(admm_coefficients(eta, gamma, rho))
        # softmax(log p) = p because p sums to one.
        self.coef_logits = nn.Parameter(init.log())
        self.norm = nn.LayerNorm(dim) if pre_norm else nn.Identity()
        self.mssa = MSSA(dim, num_heads)
        check_threshold(lambd)
        self.tau_raw = nn.Parameter(torch.full((dim,), inverse_softplus(lambd / rho)))
        self.rms_eps, self.rms_rescale = rms_eps, rms_rescale

    def no_weight_decay(self) -> set[str]:
        """The branch logits and the thresholds are the layer's step sizes, not weight matrices: no weight decay."""
        return {"coef_logits", "tau_raw"}

    @property
    def tau(self) -> torch.Tensor:
        """The V-step's per-feature threshold ``softplus(tau_raw) > 0`` (``lambda / rho`` at initialisation)."""
        return F.softplus(self.tau_raw)

    def rms(self, x: torch.Tensor) -> torch.Tensor:
        """Feature-wise RMS rescaling (Appendix B): every token to unit root-mean-square."""
        return F.rms_norm(x, (x.shape[-1],), eps=self.rms_eps) if self.rms_rescale else x

    def coefficients(self) -> torch.Tensor:
        """``(a_l, b_l, c_l)``: positive and summing to one by construction."""
        return self.coef_logits.softmax(0)

    def step(self, z: torch.Tensor, v: torch.Tensor, w: torch.Tensor) -> ADMMState:
        a, b, c = self.coefficients().to(z.dtype)
        attn = self.mssa(self.norm(z))
        z_next = self.rms((a * z).add_(b * attn).add_(c * (v - w)))  # in place: fewer passes over memory
        u = z_next + w
        v_next = F.relu(u - self.tau)
        w_raw = u - v_next  # = W^l + Z^{l+1} - V^{l+1}
        return ADMMState(z=z_next, v=v_next, w=self.rms(w_raw), w_raw=w_raw, mssa=attn,
                         coefficients=torch.stack([a, b, c]))

    def _fused_update(self, z: torch.Tensor, v: torch.Tensor, w: torch.Tensor):
        """:meth:`step`'s ``Z, V, W`` through :func:`aot_lib.models.fused.admm_state_update`, plus ``(MSSA, coef)``."""
        attn, coef = self.mssa(self.norm(z)), self.coefficients()
        eps = self.rms_eps if self.rms_rescale else None
        return (*admm_state_update(z, attn, v, w, coef, self.tau, eps), attn, coef)

    def _use_fused(self) -> bool:
        return self.fused and not torch.compiler.is_compiling()

    def forward(self, z: torch.Tensor, v: torch.Tensor, w: torch.Tensor):
        """``(Z^{l+1}, V^{l+1}, W^{l+1})``: :meth:`step`'s values, fused in eager mode when ``fused``."""
        if self._use_fused():
            return self._fused_update(z, v, w)[:3]
        s = self.step(z, v, w)
        return s.z, s.v, s.w

    def forward_state(self, z: torch.Tensor, v: torch.Tensor, w: torch.Tensor) -> ADMMState:
        """:meth:`forward`'s computation (fused or not) with its intermediates, as :meth:`step`
        returns them; with ``fused`` the ``w_raw`` field is recomputed as ``W^l + Z^{l+1} - V^{l+1}``."""
        if not self._use_fused():
            return self.step(z, v, w)
        z_next, v_next, w_next, attn, coef = self._fused_update(z, v, w)
        return ADMMState(z=z_next, v=v_next, w=w_next, w_raw=w + z_next - v_next, mssa=attn,
                         coefficients=coef.to(z_next.dtype))


class AoTADMM(EncoderBase):
    """The AoT-ADMM encoder with a classification head (Algorithm 1, lines 3-12).

    Defaults are the paper's CIFAR setting (32 px, patch 8, 10 classes) at Tiny width.

    ADMM hyper-parameters (our choice; the paper does not state them):
    ``eta=0.25, gamma=1, rho=1`` give initial coefficients ``(0.5, 0.25, 0.25)``: half of each
    layer is the identity path, so the untrained network starts close to a residual
    attention stack (as AoT and CRATE do), and compression (``gamma``) and consensus
    (``rho``) are weighted evenly. ``lambd=0.1`` gives ``tau = 0.1`` on RMS-normalised states:
    about 54 % of a unit Gaussian's entries fall below it, a CRATE-like level of sparsity
    in ``V`` that still lets most signal through at initialisation.

    ``fused`` (default ``True``) is :class:`ADMMLayer`'s eager fast path for the element-wise
    state update; ``False`` runs every layer through the plain operations of :meth:`ADMMLayer.step`.
    It changes no parameter and no value beyond floating-point rounding.
    """

    def __init__(self, img_size: int = 32, patch_size: int = 8, in_chans: int = 3, num_classes: int = 10,
                 embed_dim: int = 384, depth: int = 12, num_heads: int = 6, eta: float = 0.25,
                 gamma: float = 1.0, rho: float = 1.0, lambd: float = 0.1, fused: bool = True):
        super().__init__(img_size=img_size, patch_size=patch_size, in_chans=in_chans, num_classes=num_classes,
                         embed_dim=embed_dim, depth=depth, num_heads=num_heads)
        admm_coefficients(eta, gamma, rho)  # fail early with the clear message
        check_threshold(lambd)
        self.stem = PatchStem(img_size, patch_size, in_chans, embed_dim)
        self.blocks = nn.ModuleList(
            ADMMLayer(embed_dim, num_heads, eta=eta, gamma=gamma, rho=rho, lambd=lambd, fused=fused)
            for _ in range(depth)
        )
        self._init_linear()

    def forward_tokens(self, x: torch.Tensor) -> torch.Tensor:
        z = self.stem(x)
        v, w = z.clone(), torch.zeros_like(z)  # V^0 = Z^0, W^0 = 0 (Algorithm 1, line 4)
        # Every layer gets inputs of the same kind, so that a compiled layer (aot_lib.models.compile) has
        # one graph, not a second one for the first layer: V^0 is a copy of Z^0, not the same
        # tensor (nor a view of it), and W^0 requires grad when Z^0 does (its gradient is discarded).
        w.requires_grad_(z.requires_grad)
        for layer in self.blocks:
            z, v, w = layer(z, v, w)
        return v  # features are Pool(V^L)

    def forward_intermediates(self, x: torch.Tensor) -> list[ADMMState]:
        """Every layer's :class:`ADMMState`; entry 0 holds ``Z^0, V^0, W^0`` (``tokens`` is ``V``)."""
        z = self.stem(x)
        v, w = z, torch.zeros_like(z)
        states = [ADMMState(z=z, v=v, w=w, w_raw=w, mssa=torch.zeros_like(z), coefficients=torch.full((3,), math.nan))]
        for layer in self.blocks:
            s = layer.forward_state(z, v, w)  # what forward_tokens computes, so that the last V pools to forward_features
            states.append(s)
            z, v, w = s.z, s.v, s.w
        return states


register_sizes(AoTADMM, "aot_admm", WHITE_BOX_SIZES, {
    "tiny": "AoT-ADMM-Tiny: d=384, 6 heads, depth 12 (3.64 M params in the CIFAR setting).",
    "small": "AoT-ADMM-Small: d=576, 12 heads, depth 12 (8.11 M).",
    "base": "AoT-ADMM-Base: d=768, 12 heads, depth 12 (14.36 M; 14.84 M at 128 px / patch 16).",
}, label='AoT-ADMM', tables=("table1", "table2", "table3"))
