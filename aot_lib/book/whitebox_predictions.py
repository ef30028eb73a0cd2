"""The white-box chapter's four predictions, each judged by a number over the images with its interval (issue 58).

**Written before any verdict was computed** (the commit that added this module holds the rules; the chapter says
which commit), though not before every number was seen: an earlier version of the chapter (8d8f190) had shown the
point readings behind predictions 1-3 on these encoders, as the chapter says. For each family, the trained encoder
against the same family's encoder at its initialisation (the run's seed, :func:`aot_lib.book.whitebox.initial_encoder`), on the same images at the encoders' training size.

The unit is the image: there is one trained run per family, so an interval says how sure the image sample makes a
reading, not how a second training run would differ. Every interval
is Student-t over those units at the familywise level :data:`FAMILYWISE` shared by all of the chapter's verdicts
(Bonferroni: each at ``1 - FAMILYWISE / m`` for the ``m`` verdicts judged), so a "holds" or "fails" is not one lucky
reading among eleven.

1. **Compression** (the paper's Eq. (7); :func:`aot_lib.training.monitors.layer_rates`, orthonormal bases): per image and layer,
   the drop ``R^c(Z_in | U) - R^c(Z_out | U)`` (the rate of one image's tokens). *Holds* when every layer's interval
   lies above 0 and the whole stack's drop (first input minus last output) lies above the initial encoder's, paired
   by image; *fails* when some layer's interval lies below 0 or the stack's paired gain lies below 0; else *not
   settled*. (Amended before any verdict was computed: the first version measured the rate on groups of images,
   believing it a property of a set of images only; :func:`~aot_lib.training.monitors.audit_layers` already
   averages a per-image rate, so the image is the unit here too, as for the other three.)
2. **Sparsity** (AoT-ADMM's proximal step, CRATE's ISTA step; not judged for AoT, which has none): per image, the
   fraction of exact zeros of the last layer's sparse state, trained minus initial. *Holds* above 0 (training
   sparsifies), *fails* below 0, else *not settled*.
3. **Attention concentration**: per image, the share of the last layer's class-token attention on its top eighth of
   the patches (:func:`aot_lib.book.whitebox.attention_mass_on_top`, mean over heads), trained minus initial.
   *Holds* above 0, *fails* below 0, else *not settled*.
4. **Foreground in the patch features**: the first principal component of the last layer's patch tokens (fitted
   over all the images, signed so that border patches score low: :func:`aot_lib.training.monitors.patch_pca`); per
   image, the share of its top quarter of patches that lies in the central region (the middle half of each side, a
   quarter of the patches). The sign rule favours the centre for any encoder, so the judged number is trained minus
   initial: *holds* above 0, *fails* below 0, else *not settled*.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

__all__ = ["FAMILYWISE", "Prediction", "PREDICTIONS", "Interval", "t_interval", "central_mask", "foreground_centre_share", "judge_differences", "judge_compression"]

#: The familywise error rate of the chapter's verdicts together (Bonferroni over the verdicts judged).
FAMILYWISE = 0.05


@dataclass(frozen=True)
class Prediction:
    """One prediction: its key, what the paper's reading says, the measure and the families it is judged for."""

    key: str
    title: str
    reading: str
    measure: str
    families: tuple[str, ...]


PREDICTIONS = (
    Prediction("compression", "Compression",
               "every layer lowers the coding rate on its own subspaces (Eq. (7)), more than at initialisation",
               "Rᶜ drop per layer per image; the stack's drop, trained − initial, per image",
               ("aot_admm", "crate", "aot")),
    Prediction("sparsity", "Sparsity",
               "the proximal (ISTA) step makes the state sparse",
               "fraction of exact zeros of the last layer's sparse state, trained − initial, per image",
               ("aot_admm", "crate")),
    Prediction("attention", "Attention that concentrates",
               "the class token's attention falls on fewer patches than an untrained network's",
               "share of attention on the top eighth of patches, last layer, trained − initial, per image",
               ("aot_admm", "crate", "aot")),
    Prediction("foreground", "Foreground in the patch features",
               "the first principal component of the patch tokens marks the object",
               "share of the first component's top quarter in the central region, trained − initial, per image",
               ("aot_admm", "crate", "aot")),
)


@dataclass(frozen=True)
class Interval:
    """A mean over ``n`` units with its two-sided Student-t interval at ``confidence``."""

    mean: float
    low: float
    high: float
    n: int
    confidence: float

    def reading(self) -> str:
        """``"above 0"``, ``"below 0"`` or ``"includes 0"``."""
        return "above 0" if self.low > 0 else "below 0" if self.high < 0 else "includes 0"


def t_interval(values: Sequence[float] | torch.Tensor, confidence: float) -> Interval:
    """Mean and Student-t interval of ``values`` (at least two, all finite): :func:`aot_lib.evidence.stats.summarize`,
    the evidence chapters' interval."""
    from ..evidence.stats import summarize

    x = torch.as_tensor(values, dtype=torch.float64).flatten()
    n = x.numel()
    if n < 2:
        raise ValueError(f"an interval needs at least two units, got {n}")
    if not torch.isfinite(x).all() or not 0 < confidence < 1:  # a NaN would read "includes 0": not settled
        bad = int((~torch.isfinite(x)).sum())
        raise ValueError(f"an interval of {n} values with {bad} not finite at confidence {confidence!r}: a measure "
                         "that cannot be right is refused, not judged")
    got = summarize(x.tolist(), confidence)
    return Interval(got.mean, got.low, got.high, got.n, got.confidence)


def central_mask(grid: tuple[int, int]) -> torch.Tensor:
    """``(H * W,)`` bools: the patches in the middle half of each side of a ``grid`` (a quarter of the patches)."""
    h, w = grid
    rows = torch.zeros(h, dtype=torch.bool)
    cols = torch.zeros(w, dtype=torch.bool)
    rows[h // 4: h - h // 4] = True
    cols[w // 4: w - w // 4] = True
    return (rows[:, None] & cols[None, :]).flatten()


def foreground_centre_share(first_component: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
    """Per image, the share of its top quarter of patches by ``first_component`` (``(B, H * W)``) that lies in the
    central region (:func:`central_mask`)."""
    b, p = first_component.shape
    k = max(1, round(p / 4))
    top = first_component.topk(k, dim=1).indices
    return central_mask(grid)[top].double().mean(1)


def _verdict(interval: Interval) -> str:
    return {"above 0": "holds", "below 0": "fails"}[interval.reading()] if interval.reading() != "includes 0" \
        else "not settled"


def judge_differences(trained: torch.Tensor, initial: torch.Tensor, confidence: float) -> dict:
    """A per-image prediction (sparsity, attention, foreground): ``trained`` and ``initial`` per image, paired;
    ``{"trained", "initial", "difference"}`` intervals and the ``verdict`` of the module's rule."""
    diff = t_interval(trained.double() - initial.double(), confidence)
    return {"trained": t_interval(trained, confidence), "initial": t_interval(initial, confidence),
            "difference": diff, "verdict": _verdict(diff)}


def judge_compression(trained: torch.Tensor, initial: torch.Tensor, confidence: float) -> dict:
    """The compression rule on :func:`aot_lib.training.monitors.layer_rates` of the same images (``(B, L, 2)``:
    ``rc_in``, ``rc_out`` per image and layer): each layer's drop over the images and the stack's drop (first
    ``rc_in`` minus last ``rc_out``), trained minus initial paired by image."""
    def drops(rates):
        return rates[..., 0].double() - rates[..., 1].double()

    def stack(rates):
        return rates[:, 0, 0].double() - rates[:, -1, 1].double()

    layers_t, layers_i = drops(trained), drops(initial)
    per_layer = [t_interval(layers_t[:, k], confidence) for k in range(layers_t.shape[1])]
    per_layer_initial = [t_interval(layers_i[:, k], confidence) for k in range(layers_i.shape[1])]
    gain = t_interval(stack(trained) - stack(initial), confidence)
    if all(i.low > 0 for i in per_layer) and gain.low > 0:
        verdict = "holds"
    elif any(i.high < 0 for i in per_layer) or gain.high < 0:
        verdict = "fails"
    else:
        verdict = "not settled"
    return {"layers": per_layer, "layers_initial": per_layer_initial, "gain": gain, "verdict": verdict,
            "lowering": sum(i.low > 0 for i in per_layer), "raising": sum(i.high < 0 for i in per_layer),
            "lowering_initial": sum(i.low > 0 for i in per_layer_initial),
            "stack": t_interval(stack(trained), confidence), "stack_initial": t_interval(stack(initial), confidence)}
