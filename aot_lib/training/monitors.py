r"""Training-time monitors: cheap, optional measurements logged beside the loss.

As in stable-pretraining, the training step returns a dict and a monitor reads it; the loop
(:func:`aot_lib.training.loop.fit`) does not change: every ``monitor.every`` steps it calls each monitor with
a :class:`StepContext` and logs the scalars it returns (CSV / TensorBoard, like the loss).

* :class:`RankMe` — effective rank of the step's embeddings (Garrido et al., 2023), read from the
  step dict's ``"embeddings"``.
* :class:`Theorem1Monitor` — Theorem 1 measured in practice on a fixed batch: the SIGReg value of the
  normalised embeddings (Appendix A's normalisation) beside the rate gap
  ``R(I) - R(\hat\Sigma)`` (Eq. (A.17)) and the covariance component ``SIGReg^{(2)}``
  (Eq. (A.12)) that links them.
* :class:`WhiteBoxAudit` — does the trained encoder still do what it was derived to do? Per layer on
  a fixed batch (:func:`audit_layers`): the compression term ``R^c(Z | U^\ell)`` before and after the
  layer (Eq. (7); MSSA is a descent step on it), the sparsity of the state, and for
  AoT-ADMM the primal residual ``||Z - V||``, the branch coefficients ``(a, b, c)`` and the threshold
  ``tau`` against their initial ADMM values (Eq. (14)).
* :class:`OnlineKNN` — a learning curve without labels in the loss (stable-pretraining's OnlineKNN idea):
  the weighted k-NN accuracy (:func:`aot_lib.training.evaluation.knn_probe`) of a fixed validation subset of the
  training set, voted on by a fixed labelled subset of the rest (the probe's stratified split).

The fixed-batch monitors run the model in evaluation mode without gradients on every process (the
batch is the same everywhere, so collective operations inside agree) and leave it in training mode.
"""
from __future__ import annotations

import math

from dataclasses import dataclass, field

import torch
from torch import nn

from .. import distributed
from ..objectives.coding_rate import subspace_coding_rate
from ..objectives.lejepa import energy_normalize
from ..objectives.sigreg import epps_pulley, sample_directions
from ..theory.theorem1 import cw_quadrature, rate_gap
from .evaluation import extract_features, knn_probe, stratified_split

__all__ = ["rankme", "theorem1_terms", "audit_layers", "layer_rates", "sparse_state", "last_zeros", "cls_attention", "patch_pca", "StepContext",
           "Monitor", "RankMe", "Theorem1Monitor", "WhiteBoxAudit", "OnlineKNN", "orthonormal_bases",
           "knn_monitor_split", "build_monitors"]


def rankme(embeddings: torch.Tensor, eps: float = 1e-7) -> float:
    r"""RankMe of ``(N, D)`` embeddings: ``exp(-sum_k p_k log p_k)``, ``p_k = sigma_k / ||sigma||_1 + eps``
    over the singular values ``sigma`` (Garrido et al., 2023, Eq. 1). Between 1 and ``min(N, D)``; equal
    to ``k`` when the embeddings span ``k`` directions with equal energy."""
    if embeddings.ndim != 2:
        raise ValueError(f"rankme expects (N, D) embeddings, got shape {tuple(embeddings.shape)}")
    s = torch.linalg.svdvals(embeddings.detach().double())
    p = s / s.sum() + eps
    return float(torch.exp(-(p * p.log()).sum()))


def theorem1_terms(embeddings: torch.Tensor, eps: float = 0.5, num_slices: int = 1024, seed: int = 0,
                   t_max: float = 3.0, n_points: int = 17) -> dict[str, float]:
    r"""Both sides of Theorem 1 for ``(N, D)`` embeddings, after Appendix A's normalisation
    (:func:`~aot_lib.objectives.lejepa.energy_normalize`: centred, ``tr \hat\Sigma = D``).

    Returns ``sigreg``: the sliced Epps-Pulley discrepancy per sample (the statistic over ``N``: the
    population scale of Eq. (A.2), biased up by about ``0.4 / N``), over ``num_slices`` directions fixed by
    ``seed``; ``sigreg2``: its covariance component ``2 C_w ||\hat\Sigma - I||_F^2 / (D (D+2))``;
    ``rate_gap``: ``R(I) - R(\hat\Sigma)`` at ``eps``. Near ``\Sigma = I`` the theorem makes
    ``sigreg2 / rate_gap`` tend to :func:`aot_lib.theory.theorem1.limit_ratio`.
    """
    y = energy_normalize(embeddings.detach().double())
    n, d = y.shape
    sigma = y.T @ y / n
    eye = torch.eye(d, dtype=y.dtype, device=y.device)
    directions = sample_directions(d, num_slices, seed, device=y.device, dtype=y.dtype)
    sig = epps_pulley(y @ directions, t_max, n_points).mean() / (n * distributed.world_size())  # same batch on every rank
    cw = cw_quadrature(t_max, n_points)
    return {"sigreg": float(sig), "sigreg2": float(2 * cw / (d * (d + 2)) * (sigma - eye).square().sum()),
            "rate_gap": float(rate_gap(sigma, eps))}


def _rms(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.square().mean(-1, keepdim=True).clamp_min(1e-12))


def _rates(tokens: torch.Tensor, U: torch.Tensor, eps: float) -> torch.Tensor:
    """``(B,)``: per image ``R^c(Z | U)``, its tokens as the columns of ``Z``, each token rescaled to unit RMS
    first so that the rate compares geometry across layers and families, not scale."""
    z = _rms(tokens.double()).transpose(-1, -2)  # (B, d, N)
    return subspace_coding_rate(z, U.double(), eps)


def _rate(tokens: torch.Tensor, U: torch.Tensor, eps: float) -> float:
    """The mean over images of :func:`_rates`."""
    return float(_rates(tokens, U, eps).mean())


def orthonormal_bases(U: torch.Tensor) -> torch.Tensor:
    """``(K, d, p)`` orthonormal bases of the column spaces of each ``U_k`` (the Q of its reduced QR). Eq.
    (6) assumes ``U_k^T U_k = I``; a layer's learned ``U_k`` is not, so its raw ``R^c`` also
    measures the bases' scale. ``R^c`` with these bases depends on the subspaces alone."""
    return torch.linalg.qr(U.double(), mode="reduced").Q


@torch.no_grad()
def audit_layers(encoder: nn.Module, images: torch.Tensor, eps: float = 0.5,
                 orthonormal: bool = False) -> list[dict[str, float]]:
    r"""Per layer ``l = 1..L`` of an encoder whose blocks have an ``mssa`` (AoT-ADMM, CRATE, AoT), on
    normalised ``images``:

    * ``rc_in``, ``rc_out``: ``R^c(Z | U^l)`` of the layer's input and output token state, with the layer's
      own subspaces ``U^l`` (:meth:`~aot_lib.models.layers.MSSA.subspaces`); the layer descends its compression
      term when ``rc_out < rc_in``. With ``orthonormal=True`` the rates use :func:`orthonormal_bases` of
      ``U^l``: the subspaces alone, as Eq. (6) assumes. For AoT-ADMM the state is ``Z`` (Algorithm 1), elsewhere the tokens.
    * ``zeros``: fraction of exact zeros of the pooled state (AoT-ADMM's ``V^l``; CRATE's ISTA output);
      ``l1``: its mean absolute entry (``||V^l||_1`` per entry).
    * ``erank``: the effective rank (:func:`rankme`) of the layer's output tokens, all images' tokens as rows,
      centred: how many directions of ``R^d`` the tokens spread over (compression lowers it).
    * AoT-ADMM only: ``primal`` = ``||Z^l - V^l||_F / ||Z^l||_F``, the coefficients ``a, b, c`` and their
      initial values ``a0, b0, c0``, and ``tau_mean / tau_min / tau_max`` against ``tau0 = lambda / rho``.
    """
    from ..models.aot_admm import ADMMLayer, admm_coefficients

    states = _intermediates(encoder, images)
    rows = []
    for i, block in enumerate(encoder.blocks):
        if not hasattr(block, "mssa"):
            raise ValueError(f"audit_layers needs blocks with an MSSA (AoT-ADMM, CRATE, AoT); block {i} is "
                             f"{type(block).__name__}")
        U = block.mssa.subspaces()
        if orthonormal:
            U = orthonormal_bases(U)
        before, after = states[i], states[i + 1]
        v = sparse_state(block, after)
        z_in, z_out = compressed_state(block, before), compressed_state(block, after)
        row = {"rc_in": _rate(z_in, U, eps), "rc_out": _rate(z_out, U, eps),
               "zeros": float((v == 0).double().mean()), "l1": float(v.abs().double().mean()),
               "erank": rankme(z_out.reshape(-1, z_out.shape[-1]) - z_out.reshape(-1, z_out.shape[-1]).mean(0))}
        if isinstance(block, ADMMLayer):
            a, b, c = block.coefficients().tolist()
            a0, b0, c0 = admm_coefficients(block.eta, block.gamma, block.rho)
            tau = block.tau.double()
            row.update(primal=float((after.z - after.v).double().norm() / after.z.double().norm()),
                       a=a, b=b, c=c, a0=a0, b0=b0, c0=c0, tau_mean=float(tau.mean()), tau_min=float(tau.min()),
                       tau_max=float(tau.max()), tau0=block.lambd / block.rho)
        rows.append(row)
    return rows


@torch.no_grad()
def layer_rates(encoder: nn.Module, images: torch.Tensor, eps: float = 0.5) -> torch.Tensor:
    """``(B, L, 2)``: per image and layer, ``R^c(Z | U^l)`` of the layer's input and output state on its own
    subspaces, orthonormal bases (:func:`audit_layers`' ``rc_in`` and ``rc_out`` with ``orthonormal=True`` are their
    means over the images), one forward pass and one basis per layer."""
    states = _intermediates(encoder, images)
    out = []
    for i, block in enumerate(encoder.blocks):
        U = orthonormal_bases(block.mssa.subspaces())
        z_in, z_out = compressed_state(block, states[i]), compressed_state(block, states[i + 1])
        out.append(torch.stack([_rates(z_in, U, eps), _rates(z_out, U, eps)], -1))
    return torch.stack(out, 1)


def _intermediates(encoder: nn.Module, images: torch.Tensor) -> list:
    """``encoder.forward_intermediates(images)`` in eval mode, the encoder's mode restored after."""
    was_training = encoder.training
    encoder.eval()
    try:
        return encoder.forward_intermediates(images)
    finally:
        encoder.train(was_training)


def compressed_state(block: nn.Module, state) -> torch.Tensor:
    """The state a layer's compression step acts on (``state``: an entry of ``forward_intermediates``): AoT-ADMM's
    ``Z^l`` (Algorithm 1); elsewhere the tokens."""
    from ..models.aot_admm import ADMMLayer

    return state.z if isinstance(block, ADMMLayer) else state.tokens


def sparse_state(block: nn.Module, state) -> torch.Tensor:
    """The state a layer's sparsifying step leaves (``state``: the layer's entry of ``forward_intermediates``):
    AoT-ADMM's ``V^l``; elsewhere the layer's output tokens (CRATE's ISTA output; AoT has no such step)."""
    from ..models.aot_admm import ADMMLayer

    return state.v if isinstance(block, ADMMLayer) else state.tokens


@torch.no_grad()
def last_zeros(encoder: nn.Module, images: torch.Tensor) -> torch.Tensor:
    """``(B,)``: per image, the fraction of exact zeros of the last layer's :func:`sparse_state` (what
    :func:`audit_layers` pools over all images as ``zeros``)."""
    states = _intermediates(encoder, images)
    v = sparse_state(encoder.blocks[-1], states[-1])
    return (v == 0).double().flatten(1).mean(1)


@torch.no_grad()
def patch_pca(encoder: nn.Module, images: torch.Tensor, n_components: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """PCA of the final patch tokens (the class token left out) of ``images``, fitted over all their patches:
    ``(scores, explained)``, ``scores`` ``(B, N - 1, n_components)`` and ``explained`` the fraction of the
    patches' variance each component carries. A component's sign is arbitrary; each is signed so that the
    patches on the image border score lower on average than the others (objects tend to sit inside the frame),
    which makes the first component read "foreground" where the encoder separates one."""
    was_training = encoder.training
    encoder.eval()
    try:
        tokens = encoder.forward_tokens(images)[:, 1:].double()
    finally:
        encoder.train(was_training)
    b, n, d = tokens.shape
    side = math.isqrt(n)
    if side * side != n:
        raise ValueError(f"patch_pca needs a square grid of patches, got {n} patch tokens")
    x = tokens.reshape(-1, d)
    x = x - x.mean(0)
    _, s, vh = torch.linalg.svd(x, full_matrices=False)
    scores = (x @ vh[:n_components].T).reshape(b, n, n_components)
    border = torch.ones(side, side, dtype=torch.bool)
    border[1:-1, 1:-1] = False
    border = border.flatten()
    flip = scores[:, border].mean((0, 1)) > scores[:, ~border].mean((0, 1))
    scores[..., flip] *= -1
    return scores, (s[:n_components] ** 2 / (s**2).sum())


@torch.no_grad()
def cls_attention(encoder: nn.Module, images: torch.Tensor) -> torch.Tensor:
    """``(L, B, K, N - 1)``: every layer's MSSA attention from the class token to the patches, per head
    (:meth:`~aot_lib.models.layers.MSSA.attention`), for an encoder whose blocks have an ``mssa``."""
    inputs: list[torch.Tensor] = []
    hooks = [block.mssa.register_forward_pre_hook(lambda mod, args: inputs.append(args[0])) for block in encoder.blocks]
    was_training = encoder.training
    encoder.eval()
    try:
        encoder.forward_features(images)
    finally:
        encoder.train(was_training)
        for h in hooks:
            h.remove()
    return torch.stack([block.mssa.attention(x)[:, :, 0, 1:] for block, x in zip(encoder.blocks, inputs)])


# ----------------------------------------------------------------------------- the callbacks

@dataclass
class StepContext:
    """What a monitor sees after a completed step: ``step`` (steps done), the step function's dict
    ``out`` and the (unwrapped) model."""

    step: int
    out: dict
    model: nn.Module


@dataclass
class Monitor:
    """A measurement taken every ``every`` steps (and at the last step); returns scalars to log."""

    every: int

    def __call__(self, ctx: StepContext) -> dict[str, float]:
        raise NotImplementedError


@dataclass
class RankMe(Monitor):
    """``rankme``: effective rank of the first view's embeddings of this step (the step dict's ``embeddings``,
    shape ``(V, B, D)``)."""

    def __call__(self, ctx: StepContext) -> dict[str, float]:
        emb = ctx.out.get("embeddings")
        if emb is None:
            raise KeyError("RankMe reads the step dict's 'embeddings'; this step function returns none")
        return {"rankme": rankme(emb[0])}


def _fixed_batch_embeddings(model: nn.Module, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(features, embeddings)`` of the fixed batch, in evaluation mode (the projector's BatchNorms use their
    running statistics: nothing is updated, nothing is all-reduced)."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            feats = model.encoder.forward_features(images)
            emb = model.project(feats)
    finally:
        model.train(was_training)
    return feats, emb


@dataclass
class Theorem1Monitor(Monitor):
    """:func:`theorem1_terms` of the projector's embeddings of a fixed batch (``theorem1/*``), and RankMe
    of its features and embeddings (``rankme/features``, ``rankme/embeddings``)."""

    images: torch.Tensor = field(default=None, repr=False)
    eps: float = 0.5
    num_slices: int = 1024
    seed: int = 0

    def __call__(self, ctx: StepContext) -> dict[str, float]:
        images = self.images.to(next(ctx.model.parameters()).device)
        feats, emb = _fixed_batch_embeddings(ctx.model, images)
        terms = theorem1_terms(emb, self.eps, self.num_slices, self.seed)
        return {**{f"theorem1/{k}": v for k, v in terms.items()},
                "rankme/features": rankme(feats), "rankme/embeddings": rankme(emb)}


@dataclass
class WhiteBoxAudit(Monitor):
    """:func:`audit_layers` on a fixed batch, logged as ``audit/l{layer}/{quantity}`` (layers from 1)."""

    images: torch.Tensor = field(default=None, repr=False)
    eps: float = 0.5

    def __call__(self, ctx: StepContext) -> dict[str, float]:
        images = self.images.to(next(ctx.model.parameters()).device)
        rows = audit_layers(ctx.model.encoder, images, self.eps)
        skip = {"a0", "b0", "c0", "tau0"}  # constants: in the audit table, not in every log row
        return {f"audit/l{i}/{k}": v for i, row in enumerate(rows, 1) for k, v in row.items() if k not in skip}


def knn_monitor_split(labels: torch.Tensor, n_bank: int, n_val: int, val_fraction: float,
                      seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices ``(bank, val)`` of :class:`OnlineKNN`: the probe's stratified split of the training labels
    (:func:`aot_lib.training.evaluation.stratified_split`, same fraction and seed), each side thinned to at most ``n_bank``
    / ``n_val`` images evenly spaced over its sorted indices, so a split stored class by class stays
    balanced. No random number is drawn."""
    bank, val = stratified_split(labels, val_fraction, seed)

    def thin(idx: torch.Tensor, n: int) -> torch.Tensor:
        return idx if n >= len(idx) else idx[torch.linspace(0, len(idx) - 1, n).round().long()]

    return thin(bank, n_bank), thin(val, n_val)


@dataclass
class OnlineKNN(Monitor):
    """``knn/val_top1``: weighted k-NN accuracy (DINO's vote, :func:`aot_lib.training.evaluation.knn_probe`) of the
    encoder's features of ``val_images``, voted on by the features of ``bank_images`` (both un-augmented
    uint8 images of the training set, normalised here at ``size``). Evaluation mode, no gradient, no random
    draw: the trajectory is the same with or without it."""

    bank_images: torch.Tensor = field(default=None, repr=False)
    bank_labels: torch.Tensor = field(default=None, repr=False)
    val_images: torch.Tensor = field(default=None, repr=False)
    val_labels: torch.Tensor = field(default=None, repr=False)
    size: int = 32
    mean: tuple = (0.0, 0.0, 0.0)
    std: tuple = (1.0, 1.0, 1.0)
    k: int = 20
    temperature: float = 0.07
    batch_size: int = 512

    def __call__(self, ctx: StepContext) -> dict[str, float]:
        encoder = ctx.model.encoder
        device = next(encoder.parameters()).device
        was_training = encoder.training
        try:
            bank, val = (extract_features(encoder, images, self.size, self.mean, self.std, self.batch_size, device)
                         for images in (self.bank_images, self.val_images))
        finally:
            encoder.train(was_training)
        return {"knn/val_top1": knn_probe(bank, self.bank_labels, val, self.val_labels, self.k,
                                          self.temperature)["knn_top1"]}


def build_monitors(mc: dict, images: torch.Tensor | None, seed: int = 0, knn: dict | None = None) -> list[Monitor]:
    """The monitors the ``monitor`` config section asks for (none when ``every`` is 0); ``images`` is the
    fixed batch (normalised, at the global view size), needed by ``theorem1`` and ``audit``; ``knn`` the
    keyword arguments of :class:`OnlineKNN` (its images, labels and normalisation), needed by ``knn``."""
    if not mc["every"]:
        return []
    monitors: list[Monitor] = []
    if mc["rankme"]:
        monitors.append(RankMe(mc["every"]))
    if (mc["theorem1"] or mc["audit"]) and images is None:
        raise ValueError("monitor.theorem1 and monitor.audit need a fixed batch of images (in-memory data); "
                         "set them to false for data.name=stream")
    if mc["theorem1"]:
        monitors.append(Theorem1Monitor(mc["every"], images=images, eps=mc["eps"], seed=seed))
    if mc["audit"]:
        monitors.append(WhiteBoxAudit(mc["every"], images=images, eps=mc["eps"]))
    if mc["knn"]:
        if knn is None:
            raise ValueError("monitor.knn needs labelled in-memory training images; set it to false for data.name=stream")
        monitors.append(OnlineKNN(mc["every"], **knn))
    return monitors
