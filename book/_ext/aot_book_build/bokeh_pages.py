"""Sphinx extension: BokehJS shipped with the book (``_static/bokeh/``) and loaded only by the pages that hold a
control panel (:mod:`aot_lib.book.controls`). It sets ``AOT_BOOK_BUILD=1`` first, so the chapters' kernels, started
after it, leave BokehJS to the page instead of inlining it in every panel; and before each page is read it names the
page in ``AOT_BOOK_PAGE``, so a panel that refuses a state names its chapter."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from aot_lib.book.controls import BOKEH_FILES, BUILD_ENV, PAGE_ENV, bokeh_js_dir


def _copy_bokeh(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    dest = Path(app.outdir) / "_static" / "bokeh"
    dest.mkdir(parents=True, exist_ok=True)
    for f in BOKEH_FILES:
        shutil.copyfile(bokeh_js_dir() / f, dest / f)


def _load_bokeh_on_panel_pages(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body") or ""
    if 'class="aot-control"' in body:
        for i, f in enumerate(BOKEH_FILES):
            app.add_js_file(f"bokeh/{f}", priority=200 + i)


def _name_the_page(app, docname, source) -> None:
    os.environ[PAGE_ENV] = docname  # the chapter's kernel, started as myst-nb parses it, inherits it


def setup(app):
    os.environ[BUILD_ENV] = "1"  # the chapters' kernels, started after this, inherit it
    app.connect("source-read", _name_the_page)
    app.connect("html-page-context", _load_bokeh_on_panel_pages)
    app.connect("build-finished", _copy_bokeh)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
