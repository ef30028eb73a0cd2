"""The white-box chapter's measurements: the recorded Imagenette encoders of the three families, trained and at their
initialisation, read on Imagenette images (per-head class-token attention, PCA of patch tokens, layer-wise rates,
sparsity and effective rank), and the figures that show them.

Every measurement is a function of :mod:`aot_lib.training.monitors` (:func:`audit_layers`, :func:`cls_attention`,
:func:`patch_pca`, :func:`last_zeros`); this module picks the encoders and images, measures per image for the
predictions' rules (:mod:`aot_lib.book.whitebox_predictions`) and draws the maps over their images.

The images (:func:`draw_images`): Imagenette's validation split when ``AOT_DATA`` holds it, else the 30 validation
images shipped with the book (``book/images/imagenette_val``, credited there): in-domain images the encoders never
trained on, in every build.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import torch

from .inline import and_list

__all__ = ["WHITEBOX_RUNS", "SHIPPED_IMAGES", "IMAGENETTE_NAMES", "initial_encoder", "Subject", "load_subjects",
           "Drawn", "draw_images", "first_per_class", "distinct_class_picks", "attention_share_on_top", "attention_mass_on_top",
           "per_image_measures", "judge_predictions", "VERDICTS", "verdict_words", "plot_attention_overlay", "plot_pca_overlay",
           "plot_layer_audit"]

#: The book's own in-domain images, relative to the checkout: an ImageFolder tree ``val/<wnid>/<image>``.
SHIPPED_IMAGES = Path("book") / "images" / "imagenette_val"

#: Imagenette's classes by WordNet id (the data README's list).
IMAGENETTE_NAMES = {"n01440764": "tench", "n02102040": "English springer", "n02979186": "cassette player",
                    "n03000684": "chain saw", "n03028079": "church", "n03394916": "French horn",
                    "n03417042": "garbage truck", "n03425413": "gas pump", "n03445777": "golf ball",
                    "n03888257": "parachute"}

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


@dataclass
class Drawn:
    """The images the chapter reads: ``images`` ``(B, 3, H, W)`` uint8 at their stored size, ``labels``, ``classes``
    (WordNet ids), ``source`` (one sentence for the page, no path of the machine) and ``shipped`` (the book's own)."""

    images: torch.Tensor
    labels: torch.Tensor
    classes: list[str]
    source: str
    shipped: bool


def draw_images(cfg: Mapping, root: Path, per_class: int | None = None) -> Drawn:
    """Imagenette's validation split as the run's config names it (``AOT_DATA``), else the book's shipped images
    (:data:`SHIPPED_IMAGES` under the checkout ``root``); with ``per_class``, only the first that many of each class
    (:func:`first_per_class`; the fast build profile's sample), which ``source`` then says."""
    from ..data.datasets import DataError, load_split
    from ..training.builders import load_data

    try:
        data = load_data(dict(cfg), "test")
        drawn = Drawn(data.images, data.labels, list(data.classes),
                      f"{len(data.images):,} images of Imagenette's validation split ({data.provenance['label']})",
                      False)
    except DataError:
        data = load_split("imagefolder", "test", root=Path(root) / SHIPPED_IMAGES)
        per = len(data.images) // len(data.classes)
        drawn = Drawn(data.images, data.labels, list(data.classes),
                      f"the {len(data.images)} Imagenette validation images shipped with the book ({per} of each of "
                      f"its {len(data.classes)} classes; book/images/imagenette_val)", True)
    if per_class is None:
        return drawn
    keep = first_per_class(drawn.labels, per_class)
    if len(keep) == len(drawn.labels):
        return drawn
    return Drawn(drawn.images[keep], drawn.labels[keep], drawn.classes,
                 f"the first {per_class} of each class ({len(keep):,} images: the fast build profile) of "
                 f"{drawn.source}", drawn.shipped)


def first_per_class(labels: torch.Tensor, n: int) -> torch.Tensor:
    """The indices of the first ``n`` images of each class, in their order: a sample that keeps every class and is
    the same on every machine. Refuses ``n < 1``."""
    if n < 1:
        raise ValueError(f"first_per_class needs at least one image of each class, got n={n}")
    seen: dict[int, int] = {}
    keep = []
    for i, label in enumerate(labels.tolist()):
        seen[label] = seen.get(label, 0) + 1
        if seen[label] <= n:
            keep.append(i)
    return torch.tensor(keep, dtype=torch.long)


def distinct_class_picks(labels: torch.Tensor, n: int) -> list[int]:
    """Indices of ``n`` images of ``n`` different classes spread over the classes (the first image of each): a
    figure's panels never repeat an image, whatever the number drawn."""
    classes = sorted(set(labels.tolist()))
    if n > len(classes):
        raise ValueError(f"{n} images of distinct classes asked for, but only {len(classes)} classes were drawn")
    chosen = [classes[round(k * (len(classes) - 1) / max(1, n - 1))] for k in range(n)]
    return [int((labels == c).nonzero()[0]) for c in chosen]


def attention_share_on_top(attention: torch.Tensor, fraction: float = 0.125) -> torch.Tensor:
    """Per row of ``attention`` ``(..., N-1)`` (class token to patches), the share of its weight on its top
    ``fraction`` of patches: ``fraction`` itself for uniform attention, 1 when all of it sits on so few patches."""
    n = attention.shape[-1]
    k = max(1, round(fraction * n))
    a = attention / attention.sum(-1, keepdim=True)
    return a.topk(k, dim=-1).values.sum(-1)


def attention_mass_on_top(attention: torch.Tensor, fraction: float = 0.125) -> float:
    """The mean of :func:`attention_share_on_top` over every row (heads, images)."""
    return float(attention_share_on_top(attention, fraction).mean())


@torch.no_grad()
def per_image_measures(encoder: torch.nn.Module, images: torch.Tensor, grid: tuple[int, int]) -> dict:
    """What the predictions' rules read (:mod:`aot_lib.book.whitebox_predictions`) for one encoder on normalised
    ``images``: per image ``attention`` (the last layer's share on its top eighth, mean over heads), ``zeros`` (the
    last sparse state's fraction of exact zeros) and ``foreground`` (the first component's top quarter in the
    centre) and ``rates`` (:func:`aot_lib.training.monitors.layer_rates`: ``R^c`` in and out of every layer)."""
    from ..training.monitors import cls_attention, last_zeros, layer_rates, patch_pca
    from .whitebox_predictions import foreground_centre_share

    attention = attention_share_on_top(cls_attention(encoder, images)[-1]).mean(1)
    scores, explained = patch_pca(encoder, images)
    return {"attention": attention, "zeros": last_zeros(encoder, images),
            "foreground": foreground_centre_share(scores[..., 0], grid), "explained": explained,
            "rates": layer_rates(encoder, images)}


#: Which of :func:`per_image_measures`' numbers judges each per-image prediction.
MEASURED = {"sparsity": "zeros", "attention": "attention", "foreground": "foreground"}


def judge_predictions(measures: Mapping[str, Mapping[str, dict]], labels: Mapping[str, str],
                      count_intervals: bool = False) -> list[dict]:
    """Every prediction judged for every family it concerns (``measures[family]["trained" | "initial"]`` of
    :func:`per_image_measures`), each at the Bonferroni level over all of them: rows ``prediction``, ``family``
    (its label), ``judged`` (the rule's intervals), ``verdict`` and ``tests`` (the Bonferroni count).

    The rule fixed beforehand counts each verdict as one test. ``count_intervals`` counts every interval a verdict
    reads instead (compression reads one per layer and one for the stack): a stricter level, a post-hoc check of
    the rule's, since a compression "fails" can come from any one of its intervals."""
    from .whitebox_predictions import FAMILYWISE, PREDICTIONS, judge_compression, judge_differences

    cases = [(p, f) for p in PREDICTIONS for f in p.families if f in measures]
    tests = (sum(measures[f]["trained"]["rates"].shape[1] + 1 if p.key == "compression" else 1 for p, f in cases)
             if count_intervals else len(cases))
    confidence = 1 - FAMILYWISE / tests
    rows = []
    for p, family in cases:
        t, i = measures[family]["trained"], measures[family]["initial"]
        judged = (judge_compression(t["rates"], i["rates"], confidence) if p.key == "compression"
                  else judge_differences(t[MEASURED[p.key]], i[MEASURED[p.key]], confidence))
        rows.append({"prediction": p, "family": labels[family], "judged": judged, "verdict": judged["verdict"],
                     "tests": tests})
    return rows


VERDICTS = ("holds", "fails", "not settled")


def verdict_words(rows: Sequence[Mapping]) -> dict[str, tuple[int, str]]:
    """For each verdict of :data:`VERDICTS`, how many of :func:`judge_predictions`' ``rows`` read it and which, in
    words for the chapter's prose: ``{"holds": (3, "compression for AoT-ADMM and CRATE; sparsity for CRATE"), ...}``
    (predictions in the rows' order, families in theirs); a verdict no row reads is ``(0, "none")``."""
    out = {}
    for verdict in VERDICTS:
        families: dict[str, list[str]] = {}
        for r in rows:
            if r["verdict"] == verdict:
                families.setdefault(r["prediction"].title.lower(), []).append(r["family"])
        n = sum(len(f) for f in families.values())
        out[verdict] = (n, "; ".join(f"{title} for {and_list(f)}" for title, f in families.items()) or "none")
    return out


def _upsample(maps: torch.Tensor, grid: tuple[int, int], size: tuple[int, int]) -> torch.Tensor:
    """Patch maps ``(..., H*W)`` as images of ``size`` (each patch a block: what the encoder resolves, no more)."""
    m = maps.reshape(-1, 1, *grid).float()
    return torch.nn.functional.interpolate(m, size=size, mode="nearest").reshape(*maps.shape[:-1], *size)


def plot_attention_overlay(maps: Mapping[str, torch.Tensor], image: torch.Tensor, grid: tuple[int, int]):
    """One row per encoder: the image (``(3, H, W)`` in [0, 1]), then the class token's attention of each head of
    the last layer (``maps[name]`` ``(K, N-1)``) over it, on one colour scale with its bar."""
    import matplotlib.pyplot as plt

    from .plotting import FIGURE_WIDTH_IN

    n_heads = next(iter(maps.values())).shape[0]
    top = max(float(m.max()) for m in maps.values())
    side = FIGURE_WIDTH_IN / (n_heads + 1.4)
    fig, axes = plt.subplots(len(maps), n_heads + 1, figsize=(FIGURE_WIDTH_IN, side * len(maps) + 0.3),
                             squeeze=False)
    shown = image.permute(1, 2, 0).clamp(0, 1).numpy()
    for r, (name, m) in enumerate(maps.items()):
        axes[r, 0].imshow(shown)
        axes[r, 0].set_ylabel(name.replace(", ", "\n"), fontsize=8)
        big = _upsample(m, grid, tuple(image.shape[-2:]))
        for k in range(n_heads):
            axes[r, k + 1].imshow(shown)
            drawn = axes[r, k + 1].imshow(big[k].numpy(), cmap="inferno", vmin=0, vmax=top, alpha=0.65)
            if r == 0:
                axes[r, k + 1].set_title(f"head {k + 1}", fontsize=9)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.subplots_adjust(left=0.08, right=0.9, wspace=0.05, hspace=0.08)
    bar = fig.add_axes([0.92, 0.15, 0.015, 0.7])
    fig.colorbar(drawn, cax=bar).set_label("attention weight", fontsize=9)
    bar.tick_params(labelsize=8)
    return fig


def plot_pca_overlay(pcas: Mapping[str, torch.Tensor], images: torch.Tensor, grid: tuple[int, int]):
    """One row per image (``(B, 3, H, W)`` in [0, 1]): the image, then per encoder its patch tokens' first three
    principal components as red, green and blue over the image (PCA fitted over all the images,
    :func:`aot_lib.training.monitors.patch_pca`; each component scaled to its 1st-99th percentile over all images),
    the first component's top quarter outlined in white: the foreground mask the chapter's fourth prediction reads."""
    import matplotlib.pyplot as plt

    from .plotting import FIGURE_WIDTH_IN

    n_img, names = images.shape[0], list(pcas)
    cols = 1 + len(names)
    fig, axes = plt.subplots(n_img, cols, figsize=(FIGURE_WIDTH_IN, FIGURE_WIDTH_IN / cols * n_img + 0.4),
                             squeeze=False)
    size = tuple(images.shape[-2:])
    for b in range(n_img):
        shown = images[b].permute(1, 2, 0).clamp(0, 1).numpy()
        axes[b, 0].imshow(shown)
        for c, name in enumerate(names):
            every = pcas[name][..., :3].reshape(-1, 3)
            lo, hi = torch.quantile(every, 0.01, dim=0), torch.quantile(every, 0.99, dim=0)
            rgb = ((pcas[name][b, :, :3] - lo) / (hi - lo)).clamp(0, 1)  # (P, 3)
            big = _upsample(rgb.T, grid, size).permute(1, 2, 0).numpy()
            first = pcas[name][b, :, 0]
            mask = torch.zeros_like(first)
            mask[first.topk(max(1, round(first.numel() / 4))).indices] = 1
            ax = axes[b, c + 1]
            ax.imshow(shown)
            ax.imshow(big, alpha=0.6)
            ax.contour(_upsample(mask[None], grid, size)[0].numpy(), levels=[0.5], colors="white", linewidths=1)
            if b == 0:
                ax.set_title(name, fontsize=8)
    axes[0, 0].set_title("image", fontsize=8)
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
