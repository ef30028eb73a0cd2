"""The white-box chapter's measurements: the recorded Imagenette encoders of the three families, trained and at their
initialisation, read on Imagenette images (per-head class-token attention, PCA of patch tokens, layer-wise rates,
sparsity and effective rank), and the figures that show them.

Every measurement is a function of :mod:`aot_lib.training.monitors` (:func:`audit_layers`, :func:`cls_attention`,
:func:`patch_pca`); this module only picks the encoders and images and draws.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import torch

__all__ = ["WHITEBOX_RUNS", "initial_encoder", "Subject", "load_subjects", "attention_mass_on_top", "plot_head_attention",
           "plot_patch_pca", "plot_layer_audit"]

#: The recorded Imagenette runs (128 px, patch 16: an 8x8 grid of patches) whose encoders the chapter reads:
#: Table 2's picks for AoT-ADMM and CRATE, and the AoT run trained for the chapter (configs/cpu/whitebox/).
WHITEBOX_RUNS = {"aot_admm": "cpu_aot_admm_imagenette_lr4e-3", "crate": "cpu_crate_imagenette",
                 "aot": "cpu_aot_imagenette"}


def initial_encoder(cfg: Mapping):
    """The encoder a pretraining run of ``cfg`` starts from (the white-box audit's untrained control, the probes'
    floor): :func:`aot_lib.training.baselines.initial_encoder`, the caller's random state left as it was."""
    from ..training.baselines import initial_encoder as _initial

    with torch.random.fork_rng(devices=[]):
        return _initial(dict(cfg))


@dataclass
class Subject:
    """One family's encoder, trained (a recorded run's export) and at its initialisation (rebuilt from the run's
    seed as pretraining built it: :func:`initial_encoder`)."""

    family: str
    label: str
    run: str
    trained: torch.nn.Module
    initial: torch.nn.Module
    config: dict


def load_subjects(results: Path, labels: Mapping[str, str]) -> tuple[list[Subject], list[str]]:
    """The families of :data:`WHITEBOX_RUNS` whose run is recorded with its encoder under ``results``, and one
    line for each that is not (the chapter prints it)."""
    import aot_lib
    from aot_lib.training.config import load_config

    subjects, missing = [], []
    for family, run in WHITEBOX_RUNS.items():
        folder = Path(results) / run
        if not (folder / "encoder" / "config.json").exists():
            missing.append(f"{labels[family]}: {run} is not recorded yet (scripts/evidence_runs.sh whitebox)")
            continue
        cfg = load_config(folder / "config.yaml")
        subjects.append(Subject(family, labels[family], run, aot_lib.from_pretrained(folder / "encoder").eval(),
                                initial_encoder(cfg).eval(), cfg))
    return subjects, missing


def attention_mass_on_top(attention: torch.Tensor, fraction: float = 0.125) -> float:
    """Mean share of the class token's attention that falls on its top ``fraction`` of patches (``attention``
    ``(..., N-1)``, rows summing to at most 1 over the patches): ``fraction`` itself for uniform attention, 1 when
    all of it sits on so few patches."""
    n = attention.shape[-1]
    k = max(1, round(fraction * n))
    a = attention / attention.sum(-1, keepdim=True)
    return float(a.topk(k, dim=-1).values.sum(-1).mean())


def plot_head_attention(maps: Mapping[str, torch.Tensor], image: torch.Tensor, mean, std, grid: tuple[int, int]):
    """One row per encoder: the image, then the class token's attention of each head of the last layer
    (``maps[name]`` ``(K, N-1)``), on one colour scale with its bar."""
    import matplotlib.pyplot as plt

    from .plotting import FIGURE_WIDTH_IN, show_image

    n_heads = next(iter(maps.values())).shape[0]
    top = max(float(m.max()) for m in maps.values())
    side = FIGURE_WIDTH_IN / (n_heads + 1.4)
    fig, axes = plt.subplots(len(maps), n_heads + 1, figsize=(FIGURE_WIDTH_IN, side * len(maps) + 0.3),
                             squeeze=False)
    for r, (name, m) in enumerate(maps.items()):
        show_image(axes[r, 0], image, mean, std)
        axes[r, 0].set_ylabel(name.replace(", ", "\n"), fontsize=8)
        for k in range(n_heads):
            shown = axes[r, k + 1].imshow(m[k].reshape(grid).cpu().numpy(), cmap="viridis", vmin=0, vmax=top)
            if r == 0:
                axes[r, k + 1].set_title(f"head {k + 1}", fontsize=9)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.subplots_adjust(left=0.08, right=0.9, wspace=0.05, hspace=0.08)
    bar = fig.add_axes([0.92, 0.15, 0.015, 0.7])
    fig.colorbar(shown, cax=bar).set_label("attention weight", fontsize=9)
    bar.tick_params(labelsize=8)
    return fig


def plot_patch_pca(pcas: Mapping[str, torch.Tensor], images: torch.Tensor, mean, std, grid: tuple[int, int]):
    """One row per (encoder, image): the image, the first component of its patch tokens (PCA fitted over all
    images, :func:`aot_lib.training.monitors.patch_pca`), and components 2-4 as red, green and blue (each scaled
    to its 1st-99th percentile over all images)."""
    import matplotlib.pyplot as plt

    from .plotting import FIGURE_WIDTH_IN, show_image

    n_img = images.shape[0]
    names = list(pcas)
    fig, axes = plt.subplots(n_img, 3 * len(names), figsize=(FIGURE_WIDTH_IN, FIGURE_WIDTH_IN / (3 * len(names))
                                                             * n_img + 0.5), squeeze=False)
    for c, name in enumerate(names):
        scores = pcas[name][:n_img]  # (B, P, k)
        lo = torch.quantile(pcas[name].reshape(-1, scores.shape[-1]), 0.01, dim=0)
        hi = torch.quantile(pcas[name].reshape(-1, scores.shape[-1]), 0.99, dim=0)
        scaled = ((scores - lo) / (hi - lo)).clamp(0, 1)
        for b in range(n_img):
            show_image(axes[b, 3 * c], images[b], mean, std)
            axes[b, 3 * c + 1].imshow(scaled[b, :, 0].reshape(grid).numpy(), cmap="gray", vmin=0, vmax=1)
            axes[b, 3 * c + 2].imshow(scaled[b, :, 1:4].reshape(*grid, 3).numpy())
        axes[0, 3 * c + 1].set_title(f"{name}\nPC 1", fontsize=8)
        axes[0, 3 * c + 2].set_title("PC 2-4", fontsize=8)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout(pad=0.3)
    return fig


#: The layer-wise quantities the audit figure draws: (key of audit_layers' rows, axis label).
AUDIT_PANELS = (("rc_out", "$R^c(Z^\\ell\\mid U^\\ell)$, orthonormal bases"), ("zeros", "fraction of zeros"),
                ("l1", "mean $|V^\\ell|$ entry"), ("erank", "effective rank of the tokens"))


def plot_layer_audit(audits: Mapping[str, Mapping[str, list[dict]]]):
    """Per layer, the four quantities of :data:`AUDIT_PANELS` for each family (colour), trained (solid) and at
    initialisation (dashed): ``audits[family label]["trained" | "initial"]`` are rows of
    :func:`aot_lib.training.monitors.audit_layers`."""
    import matplotlib.pyplot as plt

    from .plotting import FIGURE_WIDTH_IN

    fig, axes = plt.subplots(1, len(AUDIT_PANELS), figsize=(FIGURE_WIDTH_IN, 2.8))
    for c, (label, by_state) in enumerate(audits.items()):
        for state, style in (("trained", "-"), ("initial", "--")):
            rows = by_state[state]
            layers = range(1, len(rows) + 1)
            for ax, (key, _) in zip(axes, AUDIT_PANELS):
                ax.plot(layers, [r[key] for r in rows], style, color=f"C{c}", marker="o", ms=3,
                        label=f"{label}, {'trained' if state == 'trained' else 'initialisation'}")
    for ax, (_, title) in zip(axes, AUDIT_PANELS):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("layer", fontsize=9)
        ax.tick_params(labelsize=8)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.18, 1, 1))
    return fig
