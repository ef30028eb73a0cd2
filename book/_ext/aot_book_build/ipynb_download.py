"""Sphinx extension: every executed chapter downloadable as an ``.ipynb`` with its outputs, beside its ``.py`` source.

myst-nb writes each notebook it executes, outputs included, to ``<build>/jupyter_execute/<page>.ipynb``, and
sphinx-book-theme's download menu offers an ``.ipynb`` when the page's context names one under ``_sources/``
(``ipynb_source``) — which nothing sets for jupytext ``.py`` chapters, so the menu offered the ``.py`` only.
This copies the executed notebook there and names it. ``_config.yml`` lists it in ``sphinx.extra_extensions``.
myst-nb wrote that notebook from the text Sphinx read, whose citation links ``aot_book_build.citations`` had turned
into ``{cite}`` roles; the copy gets the chapter's own links back, which JupyterLab resolves through the chapter's key.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = ["offer_executed_notebook", "download_name", "setup"]

#: Where myst-nb writes executed notebooks, beside the HTML folder (``myst_nb.sphinx_ext.OUTPUT_FOLDER``).
EXECUTED = "jupyter_execute"


def offer_executed_notebook(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """``html-page-context`` handler: copy the page's executed notebook into ``_sources/`` and name it in the
    context; a page that was not executed (the references, the notation) keeps its source download only."""
    executed = Path(app.outdir).parent / EXECUTED / f"{pagename}.ipynb"
    if app.builder.format != "html" or not executed.is_file():
        return
    name = download_name(pagename, app.env.toc_secnumbers.get(pagename, {}).get("", ()))
    target = Path(app.outdir) / "_sources" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(with_citation_links(executed.read_text()))
    context["ipynb_source"] = name


def with_citation_links(notebook_json: str) -> str:
    """An ``.ipynb``'s text with its Markdown cells' citation roles written back as the chapter's links."""
    from .citations import roles_to_links

    nb = json.loads(notebook_json)
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            src = cell["source"]
            cell["source"] = roles_to_links(src) if isinstance(src, str) else roles_to_links("".join(src))
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def download_name(pagename: str, number: tuple[int, ...]) -> str:
    """The executed notebook's file name, numbered as the book numbers the chapter (``_toc.yml`` numbers them in
    order, so a file ``notebooks/04a_objective`` in the fifth place is chapter 5: ``notebooks/05_objective.ipynb``); a page
    without a number keeps its own name."""
    folder, _, stem = pagename.rpartition("/")
    if number:
        stem = f"{number[0]:02d}_" + re.sub(r"^\d+[a-z]?_", "", stem)
    return f"{folder}/{stem}.ipynb" if folder else f"{stem}.ipynb"


def setup(app):
    # before sphinx-book-theme's add_header_buttons (priority 501), which reads ipynb_source
    app.connect("html-page-context", offer_executed_notebook, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
