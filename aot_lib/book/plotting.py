"""Figures the book draws (matplotlib is imported lazily: it is an optional ``[book]`` dependency)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

#: The widest a book figure is drawn (inches). At matplotlib's 100 dpi that is 900 px, which the built
#: book shows at full size at 1280 px (a figure may grow into the right margin up to 936 px, as wide tables
#: do: book/_static/aot.css); drawn wider, it is scaled down and its text with it (scripts/check_tables.py
#: measures every figure of the built book against this).
FIGURE_WIDTH_IN = 9.0

__all__ = ["FIGURE_WIDTH_IN", "plot_claims_forest", "plot_admm_history", "draw_layer", "LAYER_DIAGRAMS", "plot_views", "plot_sigreg_scaling",
           "plot_training_curves", "plot_monitors", "plot_cls_attention", "show_image"]

_PANELS = [
    ("objective", "$R^c(Z|U)+\\lambda\\|V\\|_1$", "log"),
    ("primal", "primal residual $\\|Z-V\\|_F$", "log"),
    ("dual", "dual residual $\\rho\\|V^{t+1}-V^t\\|_F$", "log"),
    ("sparsity", "fraction of zeros in $V$", "linear"),
    ("alignment", "energy on own subspace", "linear"),
]


def plot_admm_history(histories: Mapping[str, object], axes=None, title: str | None = None):
    """One panel per diagnostic of :class:`aot_lib.theory.admm.ADMMHistory`, one line per run: two rows of
    three, the legend in the sixth place (or the ``axes`` given, one per diagnostic)."""
    import matplotlib.pyplot as plt

    legend_ax = None
    if axes is None:
        _, grid = plt.subplots(2, 3, figsize=(FIGURE_WIDTH_IN, 5.2))
        axes, legend_ax = list(grid.flat[:len(_PANELS)]), grid.flat[len(_PANELS)]
    for ax, (key, label, scale) in zip(axes, _PANELS):
        for name, h in histories.items():
            ys = getattr(h, key)
            ax.plot(range(len(ys)), ys, label=name)
        ax.set_yscale(scale)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("iteration = layer", fontsize=9)
        ax.tick_params(labelsize=8)
    if legend_ax is not None:
        legend_ax.axis("off")
        legend_ax.legend(*axes[0].get_legend_handles_labels(), loc="center", fontsize=10)
    else:
        axes[0].legend(fontsize=8)
    if title:
        axes[0].figure.suptitle(title, fontsize=10)
    axes[0].figure.tight_layout()
    return axes


# Each diagram: a list of boxes (label, colour) from input to output, and the skip connections
# as (from box index, to box index, label). Index -1 is the input.
LAYER_DIAGRAMS = {
    "AoT-ADMM": {
        "boxes": [("LayerNorm", "#dddddd"), ("MSSA($\\cdot\\,|\\,U^\\ell$)", "#9ecae1"),
                  ("$a_\\ell Z + b_\\ell A + c_\\ell(V-W)$", "#fdd0a2"), ("RMS rescale $\\to Z^{\\ell+1}$", "#dddddd"),
                  ("ReLU$(Z^{\\ell+1}+W^\\ell-\\tau)\\to V^{\\ell+1}$", "#a1d99b"),
                  ("$W^\\ell+Z^{\\ell+1}-V^{\\ell+1}$, RMS $\\to W^{\\ell+1}$", "#dadaeb")],
        "skips": [(-1, 2, "$Z^\\ell$, $V^\\ell$, $W^\\ell$"), (-1, 4, "$W^\\ell$")],
        "note": "state $(Z, V, W)$",
    },
    "CRATE": {
        "boxes": [("LayerNorm", "#dddddd"), ("MSSA($\\cdot\\,|\\,U^\\ell$)", "#9ecae1"), ("$+$ residual", "#fdd0a2"),
                  ("LayerNorm", "#dddddd"), ("ISTA: ReLU$(x+\\eta D^\\top(x-Dx)-\\eta\\lambda)$", "#fcbba1")],
        "skips": [(-1, 2, "$Z^\\ell$")],
        "note": "state $Z$",
    },
    "AoT": {
        "boxes": [("LayerNorm", "#dddddd"), ("MSSA($\\cdot\\,|\\,U^\\ell$)", "#9ecae1"), ("$+$ residual", "#fdd0a2")],
        "skips": [(-1, 2, "$Z^\\ell$")],
        "note": "state $Z$",
    },
}


def draw_layer(name: str, ax=None):
    """Draw one layer of ``name`` (a key of :data:`LAYER_DIAGRAMS`) as a vertical flow chart, titled with the
    layer's state (parameter counts are the caller's: chapter 4 computes them from the modules)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    spec = LAYER_DIAGRAMS[name]
    boxes = spec["boxes"]
    if ax is None:
        _, ax = plt.subplots(figsize=(3.6, 5))
    n = len(boxes)
    ys = [n - i for i in range(n)]  # top to bottom
    y_in, y_out = n + 1, 0
    ax.text(0, y_in, "input $Z^\\ell$" + (", $V^\\ell$, $W^\\ell$" if name == "AoT-ADMM" else ""), ha="center", va="center", fontsize=9)
    prev = y_in
    for (label, colour), y in zip(boxes, ys):
        ax.add_patch(FancyBboxPatch((-1.45, y - 0.3), 2.9, 0.6, boxstyle="round,pad=0.02", fc=colour, ec="k", lw=0.8))
        ax.text(0, y, label, ha="center", va="center", fontsize=8.5)
        ax.annotate("", xy=(0, y + 0.32), xytext=(0, prev - 0.32), arrowprops=dict(arrowstyle="->", lw=0.8))
        prev = y
    ax.annotate("", xy=(0, y_out + 0.2), xytext=(0, prev - 0.32), arrowprops=dict(arrowstyle="->", lw=0.8))
    ax.text(0, y_out, "output " + ("$Z^{\\ell+1}$, $V^{\\ell+1}$, $W^{\\ell+1}$" if name == "AoT-ADMM" else "$Z^{\\ell+1}$"),
            ha="center", va="center", fontsize=9)
    for k, (src, dst, label) in enumerate(spec["skips"]):
        # route each skip around the right side: right, down, then left into the target box
        y0 = y_in if src == -1 else ys[src]
        y1 = ys[dst]
        x = 1.75 + 0.4 * k
        ax.plot([0.9, x, x], [y0, y0, y1], color="#555555", lw=0.8)
        ax.annotate("", xy=(1.47, y1), xytext=(x, y1), arrowprops=dict(arrowstyle="->", lw=0.8, color="#555555"))
        ax.text(x + 0.06, (y0 + y1) / 2, label, fontsize=8, color="#555555", rotation=90, va="center")
    ax.set_title(f"{name}\n{spec['note']}", fontsize=9)
    ax.set_xlim(-1.6, 2.7)
    ax.set_ylim(-0.6, n + 1.6)
    ax.axis("off")
    return ax


def plot_views(images, views, mean, std, title: str | None = None, view_names=None, scale: float = 1.0):
    """One row per image: the image, then every multi-crop view of it (denormalised).

    ``images``: ``(N, 3, H, W)`` uint8; ``views``: a list of ``(N, 3, h, w)`` normalised tensors
    (what :class:`aot_lib.data.augment.BatchedMultiCrop` returns); ``mean``/``std``: 3-tuples.
    """
    import matplotlib.pyplot as plt

    n, cols = images.shape[0], len(views) + 1
    scale = min(scale, FIGURE_WIDTH_IN / cols)
    fig, axes = plt.subplots(n, cols, figsize=(scale * cols, scale * n + 0.5), squeeze=False)
    for i in range(n):
        axes[i, 0].imshow(images[i].permute(1, 2, 0))
        for v, view in enumerate(views):
            show_image(axes[i, v + 1], view[i], mean, std)
    for ax in axes.flat:
        ax.axis("off")
    names = view_names or ["image"] + [f"view {k}" for k in range(1, cols)]
    for j, name in enumerate(names):
        axes[0, j].set_title(name, fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_sigreg_scaling(frob2, rows, limit: float, n_samples: int):
    """Chapter 2, Section 6: both objectives against ``||Sigma - I||_F^2`` (left) and their ratio
    against the predicted limit (right). ``rows``: dicts with ``population``, ``sigreg2``,
    ``finite`` and ``gap``."""
    import matplotlib.pyplot as plt
    import torch

    pop = [r["population"] for r in rows]
    exact = [r["sigreg2"] for r in rows]
    gap = [r["gap"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(FIGURE_WIDTH_IN, 4.8))
    ax = axes[0]
    ax.loglog(frob2, pop, "o-", label="population SIGReg, $\\mathcal{N}(0,\\Sigma)$")
    ax.loglog(frob2, exact, "k--", label="$\\mathcal{L}^{(2)}$ (the paper's Eq. (A.12))")
    ax.loglog(frob2, gap, "s-", label="$R(I)-R(\\Sigma)$")
    fin = torch.tensor([r["finite"] for r in rows])
    ok = fin > 0
    ax.loglog(frob2[ok], fin[ok], "x", ms=8, label=f"finite-sample SIGReg / N, N={n_samples}")
    ax.axhline(1 / n_samples, color="gray", lw=0.8, ls=":")
    ax.text(frob2[0], 1.3 / n_samples, "noise floor ~ 1/N", color="gray", fontsize=9)
    ax.set_xlabel("$\\|\\Sigma-I\\|_F^2$")
    ax.set_title("both scale as $\\|\\Sigma-I\\|_F^2$ (slope 1)")
    # legends under their panels, never over a curve (issue 59)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    ax = axes[1]
    ax.semilogx(frob2, [p / g for p, g in zip(pop, gap)], "o-", label="population SIGReg / gap")
    ax.semilogx(frob2, [e / g for e, g in zip(exact, gap)], "s-", label="$\\mathcal{L}^{(2)}$ / gap")
    ax.axhline(limit, color="k", ls="--", label="$8C_w/(\\theta^2 d(d+2))$")
    ax.set_xlabel("$\\|\\Sigma-I\\|_F^2$")
    ax.set_title("ratio tends to the predicted constant")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    fig.tight_layout()
    return fig


def plot_training_curves(curves: Mapping[str, Any], note: str = "", panel_each: bool = False):
    """Total loss, prediction loss and the SIGReg statistic against the step, one panel each
    (chapter 5 for one run; the paper's Figure 3 for several); a supervised run's curve, which has
    only ``loss``, gets the first panel alone. With ``panel_each``, each run's loss gets a panel of its own, on
    its own scale (chapter 11: a distillation loss and a cross-entropy are not one quantity).

    ``curves`` is one run's curve (a mapping with ``step``, ``loss`` and, for pretraining, ``pred``
    and ``sigreg`` lists) or several, keyed by their legend label.
    """
    import matplotlib.pyplot as plt

    if "step" in curves:  # a single curve
        curves = {"": curves}
    panels = [(k, t) for k, t in (("loss", "total loss"), ("pred", "prediction loss"), ("sigreg", "SIGReg statistic"))
              if all(k in c for c in curves.values())]
    if panel_each:
        panels = [("loss", label) for label in curves]
    fig, axes = plt.subplots(1, len(panels), figsize=(min(4 * len(panels), FIGURE_WIDTH_IN), 3.2), squeeze=False)
    axes = axes[0]
    if note:
        fig.suptitle(note, fontsize=9, color="darkred")
    for i, (ax, (key, title)) in enumerate(zip(axes, panels)):
        for label, curve in curves.items():
            if not panel_each or label == title:
                ax.plot(curve["step"], curve[key], label=label or None, lw=1.2, color=f"C{i}" if panel_each else None)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step", fontsize=9)
        if panel_each:
            ax.set_ylabel("training loss", fontsize=9)
        if key == "sigreg":
            ax.set_yscale("log")
    if any(curves) and not panel_each:  # a named curve, even alone, says whose it is
        axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_wall_curves(curves: Mapping[str, Mapping[str, Any]], limit_min: float, target: float, title: str = ""):
    """Learning curves against wall minutes (chapter 7's goal runs): per run the online k-NN on validation images
    (``minutes``, ``acc``) and a hollow marker at ``final`` (wall minutes, test linear top-1) where its pretraining
    ended; runs that do not count (``counts`` false: a shared machine, over the limit) dashed and grey. A dotted line
    at ``limit_min`` and one at the ``target`` accuracy."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(min(6.4, FIGURE_WIDTH_IN), 3.6))
    for i, (label, c) in enumerate(curves.items()):
        style = dict(color=f"C{i}", ls="-") if c["counts"] else dict(color="0.55", ls="--")
        ax.plot(c["minutes"], c["acc"], lw=1.2, label=label, **style)
        ax.plot(*c["final"], marker="o", mfc="none", color=style["color"], ms=6)
    ax.axvline(limit_min, color="k", ls=":", lw=1)
    ax.axhline(target, color="k", ls=":", lw=1)
    ax.set_xlabel("wall minutes (pretraining, monitors and checkpoints included)", fontsize=9)
    ax.set_ylabel("top-1 (%)", fontsize=9)
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_monitors(rows: list[Mapping[str, str]], limit: float | None = None, title: str = ""):
    """Chapter 6: the monitors over training (``metrics.csv`` rows with them): Theorem 1's two sides, their
    ratio against the theorem's limit near isotropy, and RankMe of the features and embeddings."""
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r.get("theorem1/rate_gap")]
    step = [float(r["step"]) for r in rows]
    col = {k: [float(r[k]) for r in rows] for k in ("theorem1/sigreg", "theorem1/sigreg2", "theorem1/rate_gap",
                                                     "rankme/features", "rankme/embeddings")}
    fig, axes = plt.subplots(1, 3, figsize=(FIGURE_WIDTH_IN, 3.4))
    if title:
        fig.suptitle(title, fontsize=10)
    ax = axes[0]
    ax.plot(step, col["theorem1/sigreg"], label="SIGReg (per sample)")
    ax.plot(step, col["theorem1/sigreg2"], label="covariance part")
    ax2 = ax.twinx()
    ax2.plot(step, col["theorem1/rate_gap"], color="black", ls="--", label=r"$R(I)-R(\hat\Sigma)$ (right)")
    ax.set_yscale("log")
    ax.set_title("Theorem 1's two sides", fontsize=10)
    lines = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(lines, [ln.get_label() for ln in lines], fontsize=8)
    ax = axes[1]
    ax.plot(step, [a / b for a, b in zip(col["theorem1/sigreg2"], col["theorem1/rate_gap"])],
            label=r"SIGReg$^{(2)}$ / rate gap")
    if limit is not None:
        ax.axhline(limit, color="grey", ls=":", label="limit at $\\Sigma = I$")
    ax.set_yscale("log")
    ax.set_title("ratio against Theorem 1's limit", fontsize=10)
    ax.legend(fontsize=8)
    ax = axes[2]
    ax.plot(step, col["rankme/features"], label="encoder features")
    ax.plot(step, col["rankme/embeddings"], label="projector embeddings")
    ax.set_title("RankMe (effective rank)", fontsize=10)
    ax.legend(fontsize=8)
    for ax in axes:
        ax.set_xlabel("step", fontsize=8)
    fig.tight_layout()
    return fig


def show_image(ax, image, mean, std) -> None:
    """A normalised ``(3, H, W)`` image drawn as the encoder saw it (its normalisation undone)."""
    import torch

    m = torch.tensor(mean).view(3, 1, 1)
    s = torch.tensor(std).view(3, 1, 1)
    ax.imshow((image.cpu() * s + m).clamp(0, 1).permute(1, 2, 0).numpy())


def plot_cls_attention(attention, images, mean, std, grid: tuple[int, int]):
    """Chapter 7: the class token's attention to the patches (``(L, B, K, N-1)`` from
    :func:`aot_lib.training.monitors.cls_attention`, averaged over heads), one row per image, one column per layer,
    beside the image; every map on one logarithmic colour scale with its bar (from a quarter of uniform attention to
    the largest weight, as the chapter's attention panel), so layers and images compare."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm

    att = attention.mean(2)  # (L, B, N-1)
    L, B = att.shape[:2]
    norm = LogNorm(vmin=0.25 / att.shape[-1], vmax=float(att.max()))
    side = min(1.3, FIGURE_WIDTH_IN / (L + 2))
    # constrained layout makes room for the colour bar beside the grid
    fig, axes = plt.subplots(B, L + 1, figsize=(side * (L + 1.6), side * B), squeeze=False, layout="constrained")
    for b in range(B):
        show_image(axes[b, 0], images[b], mean, std)
        for layer in range(L):
            drawn = axes[b, layer + 1].imshow(att[layer, b].reshape(grid).cpu().numpy(), cmap="magma", norm=norm)
            if b == 0:
                axes[b, layer + 1].set_title(f"layer {layer + 1}", fontsize=9)
    axes[0, 0].set_title("image", fontsize=9)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(drawn, ax=axes, shrink=0.8).set_label("attention weight (log)", fontsize=9)
    return fig


def plot_claims_forest(rows: list[Mapping[str, Any]], floors: Sequence[Mapping[str, Any]] = ()):
    """Chapter 1: every claim as one row of a forest plot (:func:`aot_lib.evidence.claim_rows`): our mean
    A − B with its 95 % interval (a dot alone for one seed), the plan's parity margin as a shaded band, the paper's
    own gap as a cross, and 0 as a line; the paper's claims above the line that separates our controls; † marks a
    claim the plan judges post hoc. Points. With ``floors`` (:func:`aot_lib.evidence.floor_rows`) a second
    panel below, on its own scale: what pretraining adds over an untrained encoder and over raw pixels (green),
    the floor the claims' gaps are read against; descriptive, not judged."""
    import matplotlib.pyplot as plt

    shown = [r for r in rows if r["diff"] is not None]
    order = [r for r in shown if r["claim"].paper_gap is not None] + [r for r in shown if r["claim"].paper_gap is None]
    floors = [f for f in floors if f["diff"] is not None]
    heights = [0.42 * len(order) + 1.2] + ([0.42 * len(floors) + 0.9] if floors else [])
    fig, axes = plt.subplots(len(heights), 1, figsize=(FIGURE_WIDTH_IN * 0.8, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    ax = axes[0][0]
    for y, r in enumerate(reversed(order)):
        c, d = r["claim"], r["diff"]
        if r["margin"] is not None:
            ax.fill_betweenx([y - 0.35, y + 0.35], -r["margin"], r["margin"], color="0.85", lw=0)
        if d.n >= 2:
            ax.plot([d.low, d.high], [y, y], color="C0", lw=2)
        ax.plot(d.mean, y, "o", color="C0", ms=5)
        if c.paper_gap is not None:
            ax.plot(c.paper_gap, y, "x", color="C3", ms=7, mew=2)
    ax.axvline(0, color="k", lw=0.8)
    controls = sum(r["claim"].paper_gap is None for r in order)
    if controls and controls < len(order):
        ax.axhline(controls - 0.5, color="0.5", lw=0.8, ls="--")
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels([r["claim"].key + (" †" if r["plan"].post_hoc else "") for r in reversed(order)], fontsize=8)
    ax.set_ylim(-2.2, len(order) - 0.5)  # room for the legend below the last row
    ax.set_xlabel("A − B, top-1 points (our mean and 95 % CI; × the paper's gap)", fontsize=9)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    ax.legend(handles=[Line2D([], [], color="C0", marker="o", lw=2, label="ours, 95 % CI"),
                       Line2D([], [], color="C3", marker="x", lw=0, mew=2, label="paper's gap"),
                       Patch(color="0.85", label="parity margin (plan)")], fontsize=8, loc="lower right")
    if floors:
        fx = axes[1][0]
        for y, f in enumerate(reversed(floors)):
            d = f["diff"]
            if d.n >= 2:
                fx.plot([d.low, d.high], [y, y], color="C2", lw=2)
            fx.plot(d.mean, y, "o", color="C2", ms=5)
        fx.axvline(0, color="k", lw=0.8)
        fx.set_xlim(left=min(0.0, *(f["diff"].low if f["diff"].n >= 2 else f["diff"].mean for f in floors)) - 1)
        fx.set_yticks(range(len(floors)))
        fx.set_yticklabels([f["label"] for f in reversed(floors)], fontsize=8)
        fx.set_ylim(-0.6, len(floors) - 0.4)
        fx.set_xlabel("the floor: pretrained − untrained encoder or raw pixels, same probe, paired by seed "
                      "(points, 95 % CI)", fontsize=9)
    fig.tight_layout()
    return fig
