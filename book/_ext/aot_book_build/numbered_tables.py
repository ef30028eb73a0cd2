"""Sphinx extension: the chapters' tables numbered by the build and citable with ``{numref}``, like the figures.

A :class:`~aot_lib.book.tables.Table` is a cell's HTML output, which Sphinx passes through as raw HTML and so never
numbers. A table given a ``name`` (``Table(..., name="tbl-...")``) marks its HTML with ``data-aot-table``; this
transform finds that mark while the page is read, lifts the table's title out of the HTML into a caption node, and
wraps the output in a :class:`numbered_table` node registered as Sphinx's ``table`` kind. Sphinx then numbers it
("Table 7.2", in the chapter's sequence), registers ``tbl-...`` as a label, and resolves ``{numref}`` to it like to
any table. In JupyterLab the same output shows its title as before, unnumbered.

Runs before Sphinx's label collection (priority 850), after myst-nb has put the executed outputs in the page.
"""
from __future__ import annotations

import html
import re

from docutils import nodes
from sphinx.transforms import SphinxTransform

from aot_lib.book.tables import NAME_PATTERN

__all__ = ["numbered_table", "NumberTables", "NAME_PATTERN", "setup"]

_MARK = re.compile(rf'data-aot-table="(?P<name>{NAME_PATTERN})"')
_TITLE = re.compile(r'<p class="aot-table-title"><strong>(?P<title>.*?)</strong></p>\n?', re.S)


class numbered_table(nodes.General, nodes.Element):  # noqa: N801 - docutils names nodes in lower case
    """A cell's table output under a caption that Sphinx numbers (its first child is the caption)."""


def _bundle(raw: nodes.raw) -> nodes.Element:
    """What to wrap: the output's mime bundle (myst-nb keeps every format of an output until the builder picks
    one), or the raw node itself outside one."""
    node = raw
    while node.parent is not None:
        if isinstance(node.parent, nodes.container) and node.parent.get("nb_element") == "mime_bundle":
            return node.parent
        if isinstance(node.parent, nodes.container) and node.parent.get("mime_type"):
            node = node.parent
            continue
        break
    return raw


class NumberTables(SphinxTransform):
    default_priority = 800  # before SphinxDomains (850), which collects the labels

    def apply(self, **kwargs) -> None:
        for raw in list(self.document.findall(nodes.raw)):
            if "html" not in raw.get("format", "").split():
                continue
            text = raw.astext()
            mark = _MARK.search(text)
            if mark is None:
                continue
            name = mark["name"]
            title = _TITLE.search(text)
            if title is None:
                raise ValueError(f"table {name} has no title: a numbered table needs Table(caption=...)")
            caption_text = html.unescape(re.sub(r"<[^>]+>", "", title["title"]))
            bundle = _bundle(raw)
            stripped = nodes.raw("", text[:title.start()] + text[title.end():], format=raw["format"])
            raw.replace_self(stripped)  # the title is the caption now; the HTML keeps the table and its notes
            if bundle is raw:
                bundle = stripped
            target = numbered_table()
            target["names"].append(name)
            target += nodes.caption(caption_text, caption_text)
            bundle.replace_self(target)
            target += bundle
            self.document.note_explicit_target(target, target)


def visit_numbered_table_html(self, node: numbered_table) -> None:
    # tex2jax_process: the caption's $...$, if any, is typeset as the table's cells are
    self.body.append(self.starttag(node, "div", CLASS="aot-numbered-table tex2jax_process"))


def depart_numbered_table_html(self, node: numbered_table) -> None:
    self.body.append("</div>\n")


def _pass(self, node) -> None:
    pass


def setup(app):
    app.add_enumerable_node(numbered_table, "table", html=(visit_numbered_table_html, depart_numbered_table_html),
                            latex=(_pass, _pass), text=(_pass, _pass), man=(_pass, _pass), texinfo=(_pass, _pass))
    app.add_transform(NumberTables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
