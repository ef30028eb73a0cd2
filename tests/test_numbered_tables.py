"""Tables numbered by the build (issue 38): a named Table's output becomes a Sphinx table with a number, a caption
and a label that {numref} resolves, checked on a one-page Sphinx + myst-nb build of a notebook holding such output."""
from __future__ import annotations

import re

import nbformat
import pytest
from helpers import require

from aot_lib.book.tables import Col, Table

require("sphinx.application", "sphinx")
require("myst_nb", "myst-nb")


def _build(tmp_path, cells) -> str:
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        'extensions = ["myst_nb", "aot_book_build.numbered_tables"]\n'
        'numfig = True\nnb_execution_mode = "off"\nexclude_patterns = ["_build"]\n')
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, src / "index.ipynb")
    out = tmp_path / "out"
    app = Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html", status=None, warning=None,
                 freshenv=True, warningiserror=True)
    app.build()
    return (out / "index.html").read_text()


def _table_cell(table: Table):
    cell = nbformat.v4.new_code_cell("table")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": table._repr_html_(),
                                                                  "text/plain": repr(table)})]
    return cell


def test_named_tables_are_numbered_captioned_and_cited(tmp_path):
    first = Table([("a", 1.5)], [Col("k", "key"), Col("v", "value", ".2f")], caption="First & <one>",
                  name="tbl-first")
    second = Table([("b", 2)], [Col("k"), Col("v")], caption="Second", name="tbl-second-one", notes="a note")
    plain = Table([("c", 3)], [Col("k"), Col("v")], caption="Unnumbered")
    page = _build(tmp_path, [
        nbformat.v4.new_markdown_cell("# Page\n\nSee {numref}`tbl-second-one` and {numref}`Tab. %s <tbl-first>`."),
        _table_cell(first), _table_cell(plain), _table_cell(second)])
    numbered = re.findall(r'<div class="aot-numbered-table tex2jax_process" id="([^"]+)">\s*<p>\s*'
                          r'<span class="caption-number">([^<]+)</span><span class="caption-text">([^<]*)</span>', page)
    # numbered in page order; the caption's text escaped once, as written
    assert numbered == [("tbl-first", "Table 1 ", "First &amp; &lt;one&gt;"), ("tbl-second-one", "Table 2 ", "Second")]
    # the title moved into the caption: the numbered tables' HTML no longer carries it, the unnamed one keeps its own
    assert page.count('class="aot-table-title"') == 1 and "<strong>Unnumbered</strong>" in page
    assert "a note" in page and "1.50" in page
    refs = re.findall(r'<a class="reference internal" href="#([^"]+)"><span class="std std-numref">([^<]+)</span></a>',
                      page)
    assert refs == [("tbl-second-one", "Table 2"), ("tbl-first", "Tab. 1")]


def test_table_names_and_captions_are_checked():
    with pytest.raises(ValueError) as e:
        Table([(1,)], ["x"], caption="c", name="Final losses")
    assert str(e.value) == ("table name 'Final losses': give tbl- and lower-case words joined by hyphens, e.g. "
                            "'tbl-final-losses' (the label {numref} cites)")
    with pytest.raises(ValueError) as e:
        Table([(1,)], ["x"], name="tbl-x")
    assert str(e.value) == "table tbl-x: a numbered table needs a caption (its title under the number)"
    assert 'data-aot-table="tbl-x"' in Table([(1,)], ["x"], caption="c", name="tbl-x")._repr_html_()
    assert "data-aot-table" not in Table([(1,)], ["x"], caption="c")._repr_html_()
