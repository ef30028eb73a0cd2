"""The book's control panels (:mod:`aot_lib.book.controls`): one function per panel, each computing its grid with
the package's own functions when the chapter runs, so a chapter's cell is one call.

* :func:`admm_panel` — chapter 3: η, γ, ρ, λ → the two ADMM iterations, exact and MSSA (the paper's Eq. (18) in layer form);
* :func:`spectrum_panel` — chapter 2: a covariance's spectrum → SIGReg against the coding-rate gap (Theorem 1);
* :func:`size_panel` — chapter 4: depth, width and image setting → parameters and FLOPs of each family;
* :func:`margin_panel` — chapter 1: the parity margin → every parity verdict;
* :func:`attention_panel` — chapter 6: layer and head → the class token's attention maps;
* :func:`curves_panel` — chapter 7: family and logged quantity → every recorded run's curve.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import torch

from aot_lib.book.controls import Choice, Panel, html_table, lookup_panel, plain_column

__all__ = ["admm_panel", "spectrum_panel", "size_panel", "margin_panel", "attention_panel", "require_distinct", "curves_panel",
           "COLOURS"]

#: matplotlib's first colours (C0, C1, C2, C3), so a panel and the static figures beside it agree.
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")
_HEIGHT = 260  # px: two panels stacked still fit a laptop screen


def _figure(title: str, x_label: str, y_label: str, **kw):
    from bokeh.plotting import figure

    fig = figure(title=title, height=kw.pop("height", _HEIGHT), sizing_mode=kw.pop("sizing_mode", "stretch_width"),
                 toolbar_location=kw.pop("toolbar_location", None), x_axis_label=x_label, y_axis_label=y_label, **kw)
    fig.title.text_font_size = "13px"
    return fig


def _row(*children):
    """Figures side by side at 1280 px, one above the other on a phone (a wrapping row)."""
    from bokeh.layouts import row

    for c in children:
        c.styles = {"flex": "1 1 300px"}
    return row(*children, sizing_mode="stretch_width", styles={"flex-wrap": "wrap"})


# ------------------------------------------------------------------------------------------------ chapter 3

def admm_panel(Z0: torch.Tensor, U: torch.Tensor, labels: torch.Tensor, iters: int,
               eta=(0.2, 0.25, 0.3), gamma=(0.5, 1.0, 1.5), rho=(0.5, 1.0, 1.5),
               lambd=(0.0, 0.1, 0.2, 0.3), defaults=(0.25, 1.0, 1.0, 0.1)) -> Panel:
    """Both iterations (exact gradient, MSSA) for every setting of the grid: each token's energy on its own
    subspace and the fraction of zeros in ``V`` per iteration. A setting with ``eta*(gamma+rho) >= 1`` (first
    branch coefficient not positive) shows no curves and says so."""
    from bokeh.layouts import column

    from aot_lib.theory.admm import admm_iterations

    def state(e, g, r, lam):
        out = {}
        valid = e * (g + r) < 1
        for grad in ("exact", "mssa"):
            if valid:
                h = admm_iterations(Z0, U, iters=iters, gradient=grad, labels=labels, eta=e, gamma=g, rho=r,
                                    lambd=lam)
                align, zeros = h.alignment, h.sparsity
            else:
                align = zeros = [math.nan] * (iters + 1)
            out[grad] = {"t": np.arange(iters + 1, dtype=float), "align": np.asarray(align),
                         "zeros": np.asarray(zeros)}
        a = 1 - e * g - e * r
        out["note"] = (f"<p>branch weights (a, b, c) = ({a:.2f}, {e * g:.2f}, {e * r:.2f}); threshold "
                       f"τ = λ/ρ = {lam / r:.3f}</p>" if valid else
                       f"<p><b>η(γ+ρ) = {e * (g + r):.2f} ≥ 1:</b> the first branch weight 1−ηγ−ηρ would not be "
                       f"positive; no iteration is run.</p>")
        return out

    def draw(t):
        left = _figure("each token's energy on its own subspace", "iteration", "fraction", y_range=(-0.02, 1.02))
        right = _figure("sparsity of V", "iteration", "fraction of zeros", y_range=(-0.02, 1.02))
        for fig, col in ((left, "align"), (right, "zeros")):
            fig.line("t", col, source=t["exact"], color=COLOURS[0], line_width=2, legend_label="exact gradient")
            fig.line("t", col, source=t["mssa"], color=COLOURS[1], line_width=2, line_dash="dashed",
                     legend_label="MSSA (Eq. (14))")
            fig.legend.location = "bottom_right"
            fig.legend.label_text_font_size = "11px"
        return column(_row(left, right), t["note"], sizing_mode="stretch_width")

    return lookup_panel([Choice("eta", "η (step)", eta, defaults[0]), Choice("gamma", "γ (MSSA weight)", gamma,
                                                                            defaults[1]),
                         Choice("rho", "ρ (penalty)", rho, defaults[2]),
                         Choice("lambd", "λ (sparsity)", lambd, defaults[3])], state, draw)


# ------------------------------------------------------------------------------------------------ chapter 2

#: Traceless directions of the spectrum (unit norm once normalised): one eigenvalue up, the rest down; half up,
#: half down; and a collapse onto two dimensions.
SPECTRUM_SHAPES = ("one direction stretched", "half stretched, half squeezed", "collapse onto 2 dimensions")


def _spectrum(shape: str, s: float, dim: int) -> np.ndarray:
    """Eigenvalues of a covariance on the trace-``dim`` set at distance ``s`` (Frobenius) from ``I`` along
    ``shape``; the collapse is the segment from ``I`` toward ``(dim/2) (e1 e1^T + e2 e2^T)``."""
    if shape == SPECTRUM_SHAPES[0]:
        b = np.full(dim, -1.0)
        b[0] = dim - 1
    elif shape == SPECTRUM_SHAPES[1]:
        b = np.where(np.arange(dim) < dim // 2, 1.0, -1.0)
    else:
        b = np.where(np.arange(dim) < 2, dim / 2 - 1, -1.0)
    b = b / np.linalg.norm(b)
    return 1.0 + s * b


def spectrum_panel(dim: int, eps: float, directions: torch.Tensor,
                   distances: Sequence[float] = tuple(round(0.1 * k, 1) for k in range(1, 11)),
                   default: float = 0.3) -> Panel:
    """A diagonal covariance ``Sigma`` on the trace-``dim`` set, moved away from ``I`` along one of three spectra:
    its eigenvalues, and its population SIGReg (:func:`aot_lib.theory.population_sigreg` over ``directions``)
    against the coding-rate gap ``R(I) - R(Sigma)`` (the paper's Eq. (A.17)), beside the straight line of slope
    :func:`aot_lib.theory.limit_ratio` that Theorem 1 predicts near ``I``."""
    from bokeh.layouts import column

    from aot_lib.theory import theorem1 as theory

    limit = theory.limit_ratio(dim, eps)
    far = max(distances)
    # every shape stays positive definite on the whole slider: its smallest eigenvalue at the far end
    assert all(_spectrum(sh, far, dim).min() > 0 for sh in SPECTRUM_SHAPES), "a spectrum leaves the PD cone"

    def values(shape, s):
        sigma = torch.diag(torch.as_tensor(_spectrum(shape, s, dim), dtype=torch.float64))
        return float(theory.rate_gap(sigma, eps)), float(theory.population_sigreg(sigma, directions))

    curves = {sh: [values(sh, s) for s in distances] for sh in SPECTRUM_SHAPES}

    def state(shape, s):
        gap, sig = values(shape, s)
        gaps, sigs = zip(*curves[shape])
        return {"eig": {"i": np.arange(1, dim + 1, dtype=float), "value": _spectrum(shape, s, dim)},
                "path": {"gap": np.asarray(gaps), "sigreg": np.asarray(sigs)},
                "here": {"gap": np.asarray([gap]), "sigreg": np.asarray([sig])},
                "note": f"<p>‖Σ−I‖<sub>F</sub> = {s:.1f}: SIGReg / (R(I) − R(Σ)) = {sig / gap:.4e}, "
                        f"{sig / gap / limit:.3f} × the limit at Σ = I ({limit:.4e}).</p>"}

    def draw(t):
        from bokeh.models import Range1d

        eig = _figure("eigenvalues of Σ (trace d)", "eigenvalue index", "eigenvalue", y_range=Range1d(0, 3.2))
        eig.vbar(x="i", top="value", source=t["eig"], width=0.7, color=COLOURS[0])
        eig.line([0.5, dim + 0.5], [1, 1], color="black", line_dash="dotted")
        gmax = max(g for c in curves.values() for g, _ in c)
        smax = max(s for c in curves.values() for _, s in c)
        rel = _figure("SIGReg against the coding-rate gap", "R(I) − R(Σ) (nats)", "population SIGReg",
                      x_range=Range1d(0, 1.05 * gmax), y_range=Range1d(0, 1.05 * smax))
        rel.line([0, gmax], [0, limit * gmax], color="black", line_dash="dashed",
                 legend_label="slope of the limit (A.23)")
        rel.line("gap", "sigreg", source=t["path"], color=COLOURS[0], line_width=2, legend_label="this spectrum")
        rel.scatter("gap", "sigreg", source=t["here"], size=10, color=COLOURS[3], legend_label="this Σ")
        rel.legend.label_text_font_size = "11px"
        rel.add_layout(rel.legend[0], "below")  # under the plot, never over the curve or the marker (issue 59)
        return column(_row(eig, rel), t["note"], sizing_mode="stretch_width")

    return lookup_panel([Choice("shape", "spectrum", list(SPECTRUM_SHAPES), SPECTRUM_SHAPES[0]),
                         Choice("s", "distance to I, ‖Σ−I‖_F", list(distances), default)], state, draw)


# ------------------------------------------------------------------------------------------------ chapter 4

SETTINGS = {"CIFAR (32 px, patch 8)": dict(img_size=32, patch_size=8),
            "ImageNet (128 px, patch 16)": dict(img_size=128, patch_size=16)}


def size_panel(families: Mapping[str, str], scales=("tiny", "small", "base"), depths=tuple(range(1, 13)),
               default_depth: int = 12) -> Panel:
    """Parameters (without the head) and forward FLOPs per image (with a 10-class head, as the paper's tables) of each family at every depth, width (the
    scales' widths and heads) and image setting. Every block of a model is the same, so both counts are affine in
    the depth: each is counted (:func:`aot_lib.count_params`, :func:`aot_lib.count_flops`) at depth 1 and 2 and
    extended, and the extension is checked against a full count at ``default_depth``."""
    import aot_lib

    counts = {}
    for fam in families:
        for scale in scales:
            for setting, kw in SETTINGS.items():
                at = {}
                for d in (1, 2):
                    # with the 10-class head, as the chapter's tables and the paper count FLOPs (count_params leaves
                    # the head out by default): figure 4.2 said 0.308 GFLOPs where tables 4.2/4.4 say 0.309 (issue 59)
                    m = aot_lib.create_model(f"{fam}_{scale}", depth=d, **kw)
                    at[d] = (aot_lib.count_params(m), aot_lib.count_flops(m))
                counts[fam, scale, setting] = at
    fam0, setting0 = next(iter(families)), next(iter(SETTINGS))

    def affine(fam, scale, setting, depth):
        (p1, f1), (p2, f2) = counts[fam, scale, setting][1], counts[fam, scale, setting][2]
        return p1 + (depth - 1) * (p2 - p1), f1 + (depth - 1) * (f2 - f1)

    full = aot_lib.create_model(f"{fam0}_{scales[0]}", depth=default_depth, **SETTINGS[setting0])
    assert affine(fam0, scales[0], setting0, default_depth) == (aot_lib.count_params(full),
                                                               aot_lib.count_flops(full)), "counts not affine"

    names = list(families.values())

    def state(scale, setting, depth):
        p, f = zip(*(affine(fam, scale, setting, depth) for fam in families))
        rows = [(families[fam], f"{pp / 1e6:.2f}", f"{ff / 1e9:.3f}") for fam, pp, ff in zip(families, p, f)]
        return {"bars": {"family": names, "params": np.asarray(p, float) / 1e6, "flops": np.asarray(f, float) / 1e9,
                         "colour": list(COLOURS[:len(names)])},
                "note": html_table(["family", "params (M)", "FLOPs (G)"], rows,
                                   caption=f"{scale}, depth {depth}, {setting}")}

    def draw(t):
        from bokeh.layouts import column
        from bokeh.models import DataRange1d

        left = _figure("parameters (M, without head)", "", "M", x_range=names, y_range=DataRange1d(start=0))
        left.vbar(x="family", top="params", color="colour", source=t["bars"], width=0.6)
        right = _figure("forward FLOPs per image (G)", "", "G", x_range=names, y_range=DataRange1d(start=0))
        right.vbar(x="family", top="flops", color="colour", source=t["bars"], width=0.6)
        return column(_row(left, right), t["note"], sizing_mode="stretch_width")

    return lookup_panel([Choice("scale", "width (scale)", list(scales), scales[0]),
                         Choice("setting", "image setting", list(SETTINGS), setting0),
                         Choice("depth", "depth (layers)", list(depths), default_depth)], state, draw)


# ------------------------------------------------------------------------------------------------ chapter 1

def margin_panel(rows: Sequence[Mapping[str, Any]], margins=tuple(k / 4 for k in range(1, 13)),
                 default: float = 1.0) -> Panel:
    """Every parity claim with an interval (rows of :func:`aot_lib.evidence.claim_rows`) judged at the chosen
    margin (points) by :func:`aot_lib.evidence.stats.verdict` — the rule the plan fixes, only the margin moved — with
    its interval drawn against the band ±margin. The plan's own margins judge; this is a reading."""
    from bokeh.layouts import column
    from bokeh.models import Range1d

    from aot_lib.evidence import stats

    judged = [r for r in rows if r["claim"].claim == "parity" and r["diff"] is not None and r["diff"].n >= 2]
    if not judged:
        raise ValueError("no parity claim has two seeds yet: nothing for the margin to move")
    keys = [r["claim"].key for r in judged]
    lows = np.asarray([r["diff"].low for r in judged])
    highs = np.asarray([r["diff"].high for r in judged])
    means = np.asarray([r["diff"].mean for r in judged])
    reach = max(float(np.abs(np.r_[lows, highs]).max()), max(margins)) * 1.1
    verdict_colour = {"reproduced": COLOURS[2], "contradicted": COLOURS[3]}

    def state(m):
        verdicts = [stats.verdict(r["diff"], "parity", m) for r in judged]
        n_rep = verdicts.count("reproduced")
        table = html_table(["claim", "A − B (points)", "95 % interval", f"verdict at ±{m:g}", "plan's margin"],
                           [(r["claim"].key, f"{r['diff'].mean:+.2f}", f"[{r['diff'].low:+.2f}, {r['diff'].high:+.2f}]",
                             v, f"±{r['margin']:g}") for r, v in zip(judged, verdicts)],
                           caption=f"At ±{m:g} points: {n_rep} of {len(judged)} reproduced")
        return {"band": {"x": [-m, m, m, -m], "y": [-0.5, -0.5, len(judged) - 0.5, len(judged) - 0.5]},
                "claims": {"key": keys, "low": lows, "high": highs, "mean": means,
                           "colour": [verdict_colour.get(v, "#7f7f7f") for v in verdicts]},
                "table": table}

    def draw(t):
        fig = _figure("A − B with its interval, against the band ±margin", "top-1 points", "",
                      y_range=list(reversed(keys)), x_range=Range1d(-reach, reach),
                      height=max(160, 28 * len(keys) + 70))
        fig.patch("x", "y", source=t["band"], color="#bbbbbb", alpha=0.4)
        fig.line([0, 0], [-0.5, len(keys) - 0.5], color="black")
        fig.segment("low", "key", "high", "key", source=t["claims"], color="colour", line_width=3)
        fig.scatter("mean", "key", source=t["claims"], color="colour", size=8)
        fig.yaxis.major_label_text_font_size = "11px"
        return column(fig, t["table"], sizing_mode="stretch_width")

    return lookup_panel([Choice("margin", "parity margin (± top-1 points)", list(margins), default)], state, draw)


# ------------------------------------------------------------------------------------------------ chapter 6

def require_distinct(tensors: Sequence[torch.Tensor], what: str) -> None:
    """Refuses two equal ``tensors`` (images or maps) among those a figure or a control shows side by side, naming
    them: a picture that repeats one image says less than its caption claims (issue 58)."""
    for i in range(len(tensors)):
        for j in range(i + 1, len(tensors)):
            if tensors[i].shape == tensors[j].shape and torch.equal(tensors[i], tensors[j]):
                raise ValueError(f"{what} {i + 1} and {j + 1} are the same; show distinct ones (pick images of "
                                 "distinct classes)")


#: The side (pixels) of an image as a panel ships it: the size its figure draws it at.
PANEL_IMAGE_PX = 150


def _rgba(image: torch.Tensor) -> "np.ndarray":
    """A ``(3, H, W)`` image in [0, 1] as Bokeh's packed RGBA (``(H, W)`` uint32), its first row drawn at the top."""
    rgb = (image.clamp(0, 1).permute(1, 2, 0).flip(0) * 255).round().to(torch.uint8).numpy()
    rgba = np.dstack([rgb, np.full(rgb.shape[:2], 255, np.uint8)])
    return np.ascontiguousarray(rgba).view(np.uint32).reshape(rgb.shape[:2])


def attention_panel(attention: Mapping[str, torch.Tensor], grid: tuple[int, int], images: torch.Tensor,
                    n_images: int = 4) -> Panel:
    """The class token's attention to the patches (:func:`aot_lib.training.monitors.cls_attention`, ``(L, B, K,
    N-1)`` per encoder name) of ``n_images`` images, each drawn beside its map and under it: the chosen encoder, layer
    and head (or the heads' mean) on one logarithmic colour scale for all (from a quarter of uniform attention to the
    largest weight, so a flat map and a peaked one both show their structure) with a colour bar. ``images``: the
    images as shown, ``(B, 3, H, W)`` in [0, 1] (their normalisation undone). Two equal images, or two equal maps in
    one state, are refused (:func:`require_distinct`)."""
    from bokeh.layouts import column, row
    from bokeh.models import ColorBar, ColumnDataSource, LogColorMapper
    from bokeh.palettes import Viridis256

    first = next(iter(attention.values()))
    n_layers, n_heads = first.shape[0], first.shape[2]
    if any(a.shape[0] != n_layers or a.shape[2] != n_heads for a in attention.values()):
        raise ValueError("attention_panel: every encoder must have the same layers and heads")
    n_images = min(n_images, first.shape[1], images.shape[0])
    require_distinct(list(images[:n_images]), "images")
    top = max(float(a.max()) for a in attention.values())
    heads = ["mean of the heads"] + [f"head {k + 1}" for k in range(n_heads)]

    def state(name, layer, head):
        a = attention[name][layer - 1, :n_images]  # (B, K, N-1)
        a = a.mean(1) if head == heads[0] else a[:, heads.index(head) - 1]
        if n_images > 1 and float(a.std()) > 0:  # a constant map (an untrained head can be flat) repeats by nature
            require_distinct([m for m in a], f"{name}, layer {layer}, {head}: maps of images")
        # image rows run bottom to top in Bokeh: flip so the first patch row is drawn at the top
        maps = a.reshape(n_images, *grid).flip(1).double().numpy()
        return {f"img{i}": {"image": [maps[i]]} for i in range(n_images)}

    def draw(t):
        n_patches = grid[0] * grid[1]
        mapper = LogColorMapper(palette=Viridis256, low=0.25 / n_patches, high=top)
        # shown at the figures' 150 px, not more: the page carries each image once (one source for both figures)
        small = torch.nn.functional.interpolate(images[:n_images].float(), size=(PANEL_IMAGE_PX,) * 2,
                                                mode="bilinear", antialias=True, align_corners=False)
        h = w = PANEL_IMAGE_PX
        pairs = []
        for i in range(n_images):
            last = i == n_images - 1  # the colour bar sits right of the last map
            picture = ColumnDataSource({"image": [_rgba(small[i])]})
            photo = _figure(f"image {i + 1}", "", "", height=150, width=150, x_range=(0, w), y_range=(0, h),
                            sizing_mode="fixed")
            photo.image_rgba(image="image", x=0, y=0, dw=w, dh=h, source=picture)
            over = _figure("its map over it", "", "", height=150, width=150 + 80 * last, x_range=(0, w),
                           y_range=(0, h), sizing_mode="fixed")
            over.image_rgba(image="image", x=0, y=0, dw=w, dh=h, source=picture)
            over.image(image="image", x=0, y=0, dw=w, dh=h, source=t[f"img{i}"], color_mapper=mapper,
                       global_alpha=0.7)
            for f in (photo, over):
                f.axis.visible = False
                f.grid.visible = False
            if last:
                over.add_layout(ColorBar(color_mapper=mapper, title="weight (log scale)", width=12), "right")
            pairs.append(row(photo, over))
        return column(row(*pairs, styles={"flex-wrap": "wrap", "column-gap": "18px"}, sizing_mode="stretch_width"),
                      sizing_mode="stretch_width")

    names = list(attention)
    return lookup_panel([Choice("encoder", "encoder", names, names[0]),
                         Choice("layer", "layer", list(range(1, n_layers + 1)), n_layers),
                         Choice("head", "head", heads, heads[0])], state, draw)


# ------------------------------------------------------------------------------------------------ chapter 7

QUANTITIES = {"total loss (Eq. (19))": "loss", "prediction loss": "pred", "SIGReg statistic": "sigreg"}


def curves_panel(curves: Mapping[tuple[str, str], Mapping[str, Sequence[float]]]) -> Panel:
    """Every recorded run's logged curve (:func:`aot_lib.book.recorded.read_curve`, keyed by ``(family label, run
    label)``) for the chosen family and quantity, one line per run, each run's shade named in a legend."""
    families = list(dict.fromkeys(f for f, _ in curves))
    width = max(sum(1 for f, _ in curves if f == fam) for fam in families)

    def state(family, quantity):
        runs = [(run, c) for (f, run), c in curves.items() if f == family]
        col = QUANTITIES[quantity]
        xs = [np.asarray(c["step"], float) for _, c in runs] + [np.asarray([math.nan])] * (width - len(runs))
        ys = [np.asarray(c[col], float) for _, c in runs] + [np.asarray([math.nan])] * (width - len(runs))
        labels = [run for run, _ in runs] + [""] * (width - len(runs))
        return {"lines": {"xs": [plain_column(x) for x in xs], "ys": [plain_column(y) for y in ys], "label": labels,
                          "colour": seed_colours}}

    # runs in shades of one sequential palette, not the family colours of the chapter's other figures (issue 59:
    # figure 8.3 coloured seeds like figure 8.2's families), and named in a legend
    from bokeh.palettes import Viridis256

    seed_colours = [Viridis256[round(k * 200 / max(1, width - 1))] for k in range(width)]

    def draw(t):
        from bokeh.models import HoverTool

        fig = _figure("logged every 10 steps", "step", "value")
        fig.multi_line("xs", "ys", source=t["lines"], color="colour", line_width=2, legend_field="label")
        fig.add_layout(fig.legend[0], "right")
        fig.add_tools(HoverTool(tooltips=[("run", "@label")]))
        fig.toolbar_location = None
        return fig

    return lookup_panel([Choice("family", "family", families, families[0]),
                         Choice("quantity", "quantity", list(QUANTITIES), list(QUANTITIES)[0])], state, draw)

