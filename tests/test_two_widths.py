"""Figures at two widths (aot_lib.book.two_widths): the phone rendering stacks a figure's panels one per row, keeps
a grid of pictures a grid, and the page shows the right one by the page's width."""
import base64
import re

import pytest

matplotlib = pytest.importorskip("matplotlib", reason="matplotlib is a [book]/[dev] dependency")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from aot_lib.book.two_widths import (NARROW_WIDTH_IN, PHONE_MEDIA, narrow_layout,  # noqa: E402
                                     show_at_two_widths, two_width_html)


def _boxes(fig):
    fig.canvas.draw()
    return [ax.get_position() for ax in fig.axes]


def test_panels_side_by_side_are_stacked_in_reading_order_with_the_legend_under_them():
    fig, axes = plt.subplots(2, 2, figsize=(9, 5))
    for k, ax in enumerate(axes.flat):
        ax.plot([0, 1], [0, k], label=f"line {k}")
        ax.set_title(f"panel {k}")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="lower center", ncol=4)
    narrow_layout(fig)
    assert tuple(fig.get_size_inches())[0] == NARROW_WIDTH_IN
    boxes = _boxes(fig)
    # one panel per row: every panel spans the same columns, and panel k sits above panel k + 1
    assert all(abs(b.x0 - boxes[0].x0) < 1e-9 and abs(b.x1 - boxes[0].x1) < 1e-9 for b in boxes)
    assert all(upper.y0 > lower.y1 for upper, lower in zip(boxes, boxes[1:]))
    assert [ax.get_title() for ax in fig.axes] == [f"panel {k}" for k in range(4)]
    # the legend, one entry per line, below the lowest panel
    (legend,) = fig.legends
    extent = legend.get_window_extent(fig.canvas.get_renderer()).transformed(fig.transFigure.inverted())
    assert extent.y1 <= boxes[-1].y0
    assert len({round(t.get_window_extent().x0) for t in legend.texts}) == 1
    plt.close(fig)


def test_a_twin_axis_stays_on_its_panel():
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3))
    twin = left.twinx()
    narrow_layout(fig)
    fig.canvas.draw()
    assert twin.get_position().bounds == pytest.approx(left.get_position().bounds)
    assert right.get_position().y1 < left.get_position().y0
    plt.close(fig)


def test_a_grid_of_pictures_keeps_its_rows_and_columns():
    fig, axes = plt.subplots(2, 3, figsize=(9, 6))
    for ax in axes.flat:
        ax.imshow(np.zeros((4, 4)))
        ax.set_xticks([])
    before = [(round(b.x0, 6), round(b.y0, 6)) for b in _boxes(fig)]
    narrow_layout(fig)
    after = _boxes(fig)
    assert len({round(b.x0, 6) for b in after}) == 3 and len({round(b.y0, 6) for b in after}) == 2
    assert [(round(b.x0, 6), round(b.y0, 6)) for b in after] == before  # same places, a narrower figure
    assert tuple(fig.get_size_inches()) == pytest.approx((NARROW_WIDTH_IN, 6 * NARROW_WIDTH_IN / 9))
    plt.close(fig)


def _png_width(data: bytes) -> int:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big")


def test_the_html_holds_the_page_rendering_and_the_phone_one_with_its_width():
    fig, axes = plt.subplots(1, 3, figsize=(9, 3))
    for ax in axes:
        ax.plot([0, 1])
    html = two_width_html(fig)
    plt.close(fig)
    m = re.fullmatch(r'<picture class="aot-two-widths"><source media="(?P<media>[^"]+)" '
                     r'srcset="data:image/png;base64,(?P<narrow>[^"]+)"><img src="data:image/png;base64,'
                     r'(?P<wide>[^"]+)" alt="figure" data-drawn-width="(?P<width>\d+)"></picture>', html)
    assert m, html[:300]
    assert m["media"] == PHONE_MEDIA
    wide, narrow = (_png_width(base64.b64decode(m[k])) for k in ("wide", "narrow"))
    assert int(m["width"]) == wide
    # 9 in at 100 dpi less the empty margins the tight box trims (matplotlib's subplot margins are 12.5 % left and
    # 10 % right); the phone rendering within its 4 in (400 px), trimmed the same way
    assert 0.75 * 900 < wide <= 900 and 0.75 * 100 * NARROW_WIDTH_IN < narrow <= 100 * NARROW_WIDTH_IN


def test_ipython_shows_every_figure_as_the_two_widths_html_and_no_bare_png():
    from IPython.core.interactiveshell import InteractiveShell
    from matplotlib.figure import Figure

    shell = InteractiveShell.instance()
    try:
        assert show_at_two_widths(shell)
        fig, ax = plt.subplots(figsize=(6, 3))
        bundle, _ = shell.display_formatter.format(fig)
        plt.close(fig)
        assert "image/png" not in bundle
        assert bundle["text/html"].startswith('<picture class="aot-two-widths">')
        assert Figure not in shell.display_formatter.formatters["image/png"].type_printers
    finally:
        InteractiveShell.clear_instance()


def test_chapter_7s_attention_figure_has_one_colour_scale_with_its_bar_and_keeps_its_grid_on_a_phone():
    """Issue 58, item 6: figure 7.4's maps share one logarithmic scale (a quarter of uniform attention to the
    largest weight) shown by a colour bar, each row's image beside its maps; narrowed, it stays a grid."""
    import torch
    from matplotlib.colors import LogNorm

    from aot_lib.book.plotting import plot_cls_attention

    torch.manual_seed(0)
    attention = torch.softmax(torch.randn(3, 2, 4, 16), -1)  # 3 layers, 2 images, 4 heads, a 4x4 grid
    fig = plot_cls_attention(attention, torch.rand(2, 3, 32, 32), (0.0,) * 3, (1.0,) * 3, (4, 4))
    maps = [ax.images[0] for ax in fig.axes if ax.images and ax.images[0].get_array().shape == (4, 4)]
    assert len(maps) == 3 * 2
    norms = {id(m.norm) for m in maps}
    assert len(norms) == 1 and isinstance(maps[0].norm, LogNorm)
    top = float(attention.mean(2).max())
    assert (maps[0].norm.vmin, maps[0].norm.vmax) == pytest.approx((0.25 / 16, top))
    bars = [ax for ax in fig.axes if ax.get_ylabel() == "attention weight (log)"]
    assert len(bars) == 1
    images = [ax for ax in fig.axes if ax.images and ax.images[0].get_array().shape[:2] == (32, 32)]
    assert len(images) == 2  # one per row, beside its maps
    narrow_layout(fig)
    fig.canvas.draw()
    columns = {round(ax.get_position().x0, 3) for ax in fig.axes if ax.images}
    assert len(columns) == 4  # the image and three layers, still side by side
    plt.close(fig)


def test_long_labels_are_wrapped_so_the_phone_rendering_stays_phone_wide():
    """Figure 1.1's floor panel names its rows in 50 characters: unwrapped, the tight box of the 4 in rendering grew
    to 689 px and a 420 px page showed it at 54 %. Wrapped labels keep it within 10 % of 400 px (the tight box may
    add a few pixels of label past the figure's edge)."""
    fig, ax = plt.subplots(figsize=(7.2, 4))
    names = [f"AoT-ADMM CIFAR-{k}: pretrained − untrained encoder, seed paired" for k in (10, 100, 1000)]
    ax.errorbar([1, 2, 3], range(3), xerr=0.5, fmt="o")
    ax.set_yticks(range(3), names)
    ax.set_xlabel("the floor: pretrained − untrained encoder or raw pixels, same probe, paired by seed (points)")
    narrow_layout(fig)
    data = __import__("io").BytesIO()
    fig.savefig(data, format="png", bbox_inches="tight")
    assert _png_width(data.getvalue()) <= 1.1 * 100 * NARROW_WIDTH_IN
    assert all("\n" in t.get_text() for t in ax.get_yticklabels()) and "\n" in ax.get_xlabel()
    plt.close(fig)


def test_a_picture_grids_row_labels_are_set_across_in_the_phone_rendering():
    """Figure 10.1 at 420 px: its rows' labels, written along rows a narrower figure made too short, ran into each
    other ("CRATEAoT-ADMM"). Narrowed, each label is horizontal, a word a line, in 7 pt, and no two overlap."""
    fig, axes = plt.subplots(4, 7, figsize=(9, 5.4))
    for r, ax_row in enumerate(axes):
        for ax in ax_row:
            ax.imshow(np.zeros((4, 4)))
        ax_row[0].set_ylabel(["AoT-ADMM, trained", "CRATE, trained", "AoT, trained", "AoT-ADMM, initial"][r])
    narrow_layout(fig)
    fig.canvas.draw()
    labels = [row[0].yaxis.label for row in axes]
    assert all(lab.get_rotation() == 0 and lab.get_fontsize() == 7 for lab in labels)
    boxes = [lab.get_window_extent() for lab in labels]
    assert all(upper.y0 >= lower.y1 for upper, lower in zip(boxes, boxes[1:]))  # top row first, none overlapping
    plt.close(fig)
