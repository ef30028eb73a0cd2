"""Every figure drawn twice: as laid out for the page, and stacked one panel per row for a phone.

A figure drawn 900 px wide (:data:`aot_lib.book.plotting.FIGURE_WIDTH_IN`) is shown at 0.4 of its size on a 420 px
phone, its 9 pt labels at 5 px. So each figure a chapter shows is written as a ``<picture>``: the page's rendering,
and a narrow one the browser picks below :data:`PHONE_MEDIA` -- the same artists, each panel in its own row,
:data:`NARROW_WIDTH_IN` wide, the type at its size in points (so larger against the figure). Figures of pictures
(every panel an image with no axes: attention maps, PCA overlays) keep their grid and only narrow.

:func:`show_at_two_widths` registers this with IPython for every matplotlib figure a chapter displays
(:func:`aot_lib.book.pages.open_chapter` calls it); ``scripts/check_tables.py`` measures the result at 420 px.
"""
from __future__ import annotations

import base64
import io
import warnings
from typing import Any

__all__ = ["NARROW_WIDTH_IN", "PHONE_MEDIA", "narrow_layout", "two_width_html", "show_at_two_widths"]

#: The phone rendering's width (inches, 100 dpi): 400 px, which a 420 px page shows at about 0.9, its 9 pt text at
#: 11 px or more.
NARROW_WIDTH_IN = 4.0
#: Below this page width the browser shows the narrow rendering.
PHONE_MEDIA = "(max-width: 640px)"
#: A stacked panel's height (inches) when the figure's own rows were shorter.
MIN_PANEL_HEIGHT_IN = 2.4


def _png(fig) -> tuple[bytes, int]:
    """The figure as the inline backend writes it (tight bounding box), and its width in pixels."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    data = buf.getvalue()
    return data, int.from_bytes(data[16:20], "big")


def _is_picture_grid(axes) -> bool:
    """Every panel an image (maps over photographs, a grid of views): such grids narrow but keep their layout,
    rows and columns meaning what they meant."""
    return all(ax.images for ax in axes)


def _legends_under(fig) -> float:
    """Each figure legend drawn again in one column under the panels (a legend's columns are fixed when it is
    made); the height they take, in inches."""
    renderer = fig.canvas.get_renderer()
    height = 0.0
    for leg in list(fig.legends):
        handles, labels = leg.legend_handles, [t.get_text() for t in leg.texts]
        size = leg.texts[0].get_fontsize() if leg.texts else None
        frame = leg.get_frame_on()
        leg.remove()
        new = fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, height / fig.get_size_inches()[1]),
                         ncols=1, fontsize=size, frameon=frame)
        height += new.get_window_extent(renderer).height / fig.dpi
    return height


#: On the phone rendering, labels longer than this (characters) are wrapped: at 9 pt about 45 characters fill 4 in,
#: and a tick label on the left may take half of that.
WRAP_LABEL_CHARS, WRAP_TICK_CHARS = 45, 24


def _wrap(text: str, width: int) -> str:
    """``text`` wrapped at spaces to ``width`` characters; mathtext (``$...$``) is left whole."""
    import textwrap

    return text if "$" in text or len(text) <= width else textwrap.fill(text, width, break_long_words=False)


def _wrap_labels(fig) -> None:
    """Axis labels, titles and long text tick labels wrapped, so that a long label does not widen the narrow figure
    past the phone (its tight box would grow, and the browser shrink it again)."""
    for ax in fig.axes:
        ax.set_xlabel(_wrap(ax.get_xlabel(), WRAP_LABEL_CHARS))
        ax.set_ylabel(_wrap(ax.get_ylabel(), WRAP_LABEL_CHARS))
        ax.set_title(_wrap(ax.get_title(), WRAP_LABEL_CHARS))
        labels = [t.get_text() for t in ax.get_yticklabels()]
        if any(len(t) > WRAP_TICK_CHARS and "$" not in t for t in labels):
            ax.set_yticks(ax.get_yticks(), [_wrap(t, WRAP_TICK_CHARS) for t in labels])


def narrow_layout(fig) -> None:
    """Rearrange ``fig`` in place for a phone: :data:`NARROW_WIDTH_IN` wide, each panel of its subplot grid in
    its own row in reading order (twin axes stay with their panel; a figure legend moves under the panels)."""
    width, height = fig.get_size_inches()
    panels = [ax for ax in fig.axes if ax.get_subplotspec() is not None and ax.get_visible()]
    if not panels or _is_picture_grid(panels):
        fig.set_size_inches(NARROW_WIDTH_IN, height * NARROW_WIDTH_IN / width)
        # a row's label, written along a row now too short for it, would run into the next: set it across, a word
        # a line, in a smaller type (figure 10.1 at 420 px)
        for ax in panels:
            if ax.get_ylabel():
                ax.set_ylabel(ax.get_ylabel().replace(" ", "\n"), rotation=0, ha="right", va="center",
                              fontsize=min(7.0, ax.yaxis.label.get_fontsize()))
            if ax.get_title():  # the columns' titles, side by side in a narrower figure
                ax.set_title(ax.get_title(), fontsize=min(7.0, ax.title.get_fontsize()))
        return
    # one row per distinct cell of the original grid (twinx/twiny share their panel's cell)
    cells: dict[tuple, list] = {}
    for ax in panels:
        spec = ax.get_subplotspec()
        cells.setdefault((spec.rowspan.start, spec.colspan.start, id(spec.get_gridspec())), []).append(ax)
    original_rows = max(ax.get_subplotspec().get_gridspec().nrows for ax in panels)
    panel_height = max(MIN_PANEL_HEIGHT_IN, height / original_rows)
    order = sorted(cells)
    _wrap_labels(fig)
    fig.set_size_inches(NARROW_WIDTH_IN, panel_height * len(order))
    grid = fig.add_gridspec(len(order), 1)
    for row, key in enumerate(order):
        for ax in cells[key]:
            ax.set_subplotspec(grid[row])
    legends = _legends_under(fig) if fig.legends else 0.0
    if legends:  # the panels keep their height; the figure grows by the legends'
        fig.set_size_inches(NARROW_WIDTH_IN, panel_height * len(order) + legends)
        _legends_under(fig)  # again: their anchors are fractions of the height, which just changed
    fig.set_layout_engine(None)
    with warnings.catch_warnings():
        # a colour bar placed by hand (fig.add_axes) is not in the grid: it keeps its place, and says so on stderr
        warnings.filterwarnings("ignore", "This figure includes Axes that are not compatible with tight_layout")
        fig.tight_layout(rect=(0, legends / fig.get_size_inches()[1], 1, 1))
        # tight_layout makes room above and below a panel, not beside it: an x label centred under a panel that
        # starts far right (long tick labels on its left) can run past the figure's edge; wrap it to the panel
        for _ in range(3):
            renderer = fig.canvas.get_renderer()
            right = fig.bbox.x1
            over = [ax for ax in panels if ax.xaxis.label.get_window_extent(renderer).x1 > right + 1]
            if not over:
                break
            for ax in over:
                chars = len(max(ax.get_xlabel().splitlines(), key=len))
                ax.set_xlabel(_wrap(ax.get_xlabel().replace("\n", " "), max(12, int(chars * 0.75))))
            fig.tight_layout(rect=(0, legends / fig.get_size_inches()[1], 1, 1))


def two_width_html(fig) -> str:
    """The ``<picture>`` of ``fig`` at the page's width and, below :data:`PHONE_MEDIA`, narrowed
    (:func:`narrow_layout`; the figure is changed: call it last). The ``<img>`` carries its drawn width
    (``data-drawn-width``) for the build's layout check, which cannot read a data URI's size."""
    wide, wide_px = _png(fig)
    try:
        narrow_layout(fig)
        narrow, _ = _png(fig)
    except Exception as exc:  # a figure this cannot restack is shown as drawn, and says so
        warnings.warn(f"figure shown at one width only ({type(exc).__name__}: {exc})", stacklevel=2)
        narrow = None

    def uri(data: bytes) -> str:
        return "data:image/png;base64," + base64.b64encode(data).decode("ascii")

    source = f'<source media="{PHONE_MEDIA}" srcset="{uri(narrow)}">' if narrow else ""
    return (f'<picture class="aot-two-widths">{source}<img src="{uri(wide)}" alt="figure" '
            f'data-drawn-width="{wide_px}"></picture>')


def show_at_two_widths(shell: Any = None) -> bool:
    """Make IPython display every matplotlib figure as :func:`two_width_html` (its PNG alone no longer: the
    HTML holds both renderings). False outside IPython, where figures are shown as matplotlib shows them."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None:
        return False
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    # the inline backend registers its PNG formatter when the first figure loads it: load it now, then replace it
    plt.close(plt.figure())

    formatters = shell.display_formatter.formatters
    formatters["image/png"].pop(Figure, None)
    formatters["text/html"].for_type(Figure, two_width_html)
    return True
