"""Sphinx extension: cells whose output is wider than the text column become the theme's full-width cells.

At 1280 px the text column is 688 px and the page's contents column sits to its right. The book's figures are drawn
up to 900 px wide (:data:`aot_lib.book.plotting.FIGURE_WIDTH_IN`) and its wide tables grow past the column too, so
they were drawn over the contents column. sphinx-book-theme has a rule for this: a cell tagged ``full-width`` spans
136 % of the column, and while one is in view the theme folds the contents column up to its title. This marks, in
every page's HTML, each cell whose output holds a figure drawn wider than the column or a table
(``.aot-table-wrap``), so no chapter has to tag them by hand. ``scripts/check_tables.py`` measures the result:
nothing drawn into the contents column at 1280 px.

On a phone the same figures shrink to the page (420 px: under half their size, their labels too small to read), so
every figure image of a cell output is also a link to itself (:func:`link_images`): a tap opens it at full size,
where the phone can zoom.
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["TEXT_COLUMN_PX", "widen_cells", "link_images", "setup"]

#: The theme's text column at 1280 px (scripts/check_tables.py measures it); a figure drawn wider needs the margin.
TEXT_COLUMN_PX = 688
_CELL = re.compile(r'<div class="cell(?=[\s"])')  # a cell, not its cell_input / cell_output
_IMG = re.compile(r'<img[^>]*src="(?P<src>[^"]+)"(?:[^>]*data-drawn-width="(?P<drawn>\d+)")?')


def _png_width(path: Path) -> int:
    """Width of a PNG from its header (bytes 16-20 of the IHDR chunk); 0 for anything else."""
    try:
        head = path.read_bytes()[:24]
    except OSError:
        return 0
    return int.from_bytes(head[16:20], "big") if head[:8] == b"\x89PNG\r\n\x1a\n" else 0


def widen_cells(body: str, image_width) -> str:
    """``body`` with ``tag_full-width`` added to each cell whose output holds an ``.aot-table-wrap`` or an image
    ``image_width(src)`` says is wider than :data:`TEXT_COLUMN_PX`."""
    starts = [m.start() for m in _CELL.finditer(body)] + [len(body)]
    out, last = [], 0
    for start, end in zip(starts, starts[1:]):
        chunk = body[start:end]
        # a figure at two widths (aot_lib.book.two_widths) is a data URI that names its page width
        wide = "aot-table-wrap" in chunk or any((int(m["drawn"]) if m["drawn"] else image_width(m["src"])) > TEXT_COLUMN_PX
                                                for m in _IMG.finditer(chunk))
        head = '<div class="cell'
        if wide and chunk.startswith(head) and "tag_full-width" not in chunk[:chunk.find(">")]:
            chunk = head + " tag_full-width" + chunk[len(head):]
        out.append(body[last:start])
        out.append(chunk)
        last = end
    out.append(body[last:])
    return "".join(out)


_FIGURE_IMG = re.compile(r'(<figure[^>]*>\s*)(<img[^>]*src="(?P<src>[^"]+)"[^>]*>)')


def link_images(body: str) -> str:
    """Each ``<img>`` that opens a ``<figure>`` wrapped in a link to its own file (tap to enlarge on a phone);
    an image already inside a link is left alone."""
    return _FIGURE_IMG.sub(lambda m: f'{m[1]}<a class="aot-enlarge" href="{m["src"]}" title="open the figure at '
                                     f'full size">{m[2]}</a>', body)


def _on_page(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if app.builder.format != "html" or not body or '<div class="cell' not in body:
        return
    # an <img> names _images/<unique name>; env.images maps each source image to that name
    sources = {name: Path(app.srcdir) / path for path, (_, name) in app.env.images.items()}

    def width(src: str) -> int:
        name = src.rsplit("/", 1)[-1]
        return _png_width(sources[name]) if name in sources else 0

    context["body"] = link_images(widen_cells(body, width))


def setup(app):
    app.connect("html-page-context", _on_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
