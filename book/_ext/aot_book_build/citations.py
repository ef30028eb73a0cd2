"""Sphinx extension: the reference list labelled the way the text cites, author and year.

The text cites author-year (``bibtex_reference_style: author_year``: "(Grill et al., 2020)"), but pybtex's default
``alpha`` labels gave the list keys like "GSAltche+20" (Grill, Strub, Altché ... 2020, the accent mangled). This
registers a pybtex style, ``author_year_labels``, whose labels are "Grill et al., 2020", "Krizhevsky and Hinton,
2009", "Boyd, 2011" (a letter added when two entries would share one: "2020a", "2020b"), sorted by author, year and
title; ``_config.yml`` names it in ``bibtex_default_style``.

**How a chapter cites.** A chapter writes a citation as a link to ``#bib-KEY`` (KEY a ``references.bib`` key):
``([](#bib-yu2023crate))`` for "(Yu et al., 2023)", ``([](#bib-chen2020simclr); [](#bib-grill2020byol))`` for two
at once, and ``[](#bib-wang2025aot)`` for "Wang et al. (2025)". When Sphinx reads a page, this extension turns
them into sphinxcontrib-bibtex's ``{cite:p}`` and ``{cite:t}`` roles (:func:`links_to_roles`), so the book links
and lists them as before. The reason is JupyterLab: jupyterlab-myst 2.7 marks every ``{cite}`` role "Citation Not
Found" (it resolves a citation only from a DOI it fetches online), whereas a link resolves against the target the
chapter's JupyterLab key defines (``aot_book_build.jupyterlab_key``: "Yu et al., 2023", with the full reference).
"""
from __future__ import annotations

import re

__all__ = ["CITE_LINK", "author_year_label", "links_to_roles", "roles_to_links", "in_prose", "page_links_to_roles",
           "reference_texts", "setup"]

#: One citation as a chapter writes it: a link with no text to ``#bib-KEY``.
CITE_LINK = re.compile(r"\[\]\(#bib-(?P<key>[\w-]+)\)")
#: A parenthesised group of them, separated by "; ": one ``{cite:p}`` role.
_CITE_GROUP = re.compile(r"\((?P<links>\[\]\(#bib-[\w-]+\)(?:; \[\]\(#bib-[\w-]+\))*)\)")
_CITE_ROLE = re.compile(r"\{cite:(?P<kind>[pt])\}`(?P<keys>[\w,-]+)`")


#: A fence that opens or closes a block (``` or ~~~, three or more, indented up to three spaces) and its info string.
_FENCE = re.compile(r"^ {0,3}(?P<mark>`{3,}|~{3,})(?P<info>.*)$")
#: A fenced block is code unless it is a MyST directive (```` ```{admonition} ````), whose body is prose -- but for
#: the directives whose body is code or maths.
_CODE_DIRECTIVES = ("code-block", "code-cell", "code", "sourcecode", "literalinclude", "math", "eval-rst")
#: A role (``{cite:p}`KEY```: its name, then its text in backticks) or an inline code span (a run of backticks, its
#: text, a run of exactly as many: CommonMark's rule), never across a blank line (a span ends with its paragraph).
#: A role is prose to convert, but for ``{code}`` and ``{literal}``, whose text is code.
_IN_PARAGRAPH = r"(?:(?!\n[ \t]*\n).)+?"
_ROLE_OR_CODE = re.compile(rf"(?P<role>\{{(?P<name>[\w:.-]+)\}}(?P<rt>`+){_IN_PARAGRAPH}(?<!`)(?P=rt)(?!`))"
                           rf"|(?<!`)(?P<tick>`+)(?!`){_IN_PARAGRAPH}(?<!`)(?P=tick)(?!`)", re.S)
_CODE_ROLES = ("code", "literal")


def in_prose(markdown: str, convert) -> str:
    """``convert`` applied to the prose of a Markdown text only: code blocks (fenced) and code spans are left as they
    are, byte for byte, so a chapter that shows how to cite (`` `[](#bib-KEY)` ``) shows it as written."""
    out, prose, fence = [], [], None

    def spans_kept(text: str) -> str:
        done, last = [], 0
        for m in _ROLE_OR_CODE.finditer(text):
            if m["role"] and m["name"] not in _CODE_ROLES:
                continue  # a role is prose: converted with what surrounds it
            done += [convert(text[last:m.start()]), m.group(0)]
            last = m.end()
        return "".join(done) + convert(text[last:])

    def flush():
        out.append(spans_kept("".join(prose)))
        prose.clear()

    directives: list[str] = []  # the fences of the directives open around this line (their bodies are prose)
    for line in markdown.splitlines(keepends=True):
        m = _FENCE.match(line.rstrip("\n"))
        info = m["info"].strip() if m else ""
        directive = re.match(r"\{([\w-]+)\}", info)
        if fence is None and m and directive and directive[1] not in _CODE_DIRECTIVES:
            directives.append(m["mark"])  # its title (after the fence) is prose; its backticks open no code span
            flush()
            out.append(line[:m.end("mark")] + spans_kept(line[m.end("mark"):]))
        elif (fence is None and m and not info and directives and m["mark"][0] == directives[-1][0]
              and len(m["mark"]) >= len(directives[-1])):
            directives.pop()  # a directive closes
            flush()
            out.append(line)
        elif fence is None and m:
            flush()
            fence = m["mark"]
            out.append(line)
        elif fence is not None:
            out.append(line)
            if m and m["mark"][0] == fence[0] and len(m["mark"]) >= len(fence) and not m["info"].strip():
                fence = None
        else:
            prose.append(line)
    flush()
    return "".join(out)


def _links_to_roles(text: str) -> str:
    text = _CITE_GROUP.sub(lambda m: "{cite:p}`" + ",".join(CITE_LINK.findall(m["links"])) + "`", text)
    return CITE_LINK.sub(lambda m: "{cite:t}`" + m["key"] + "`", text)


def _roles_to_links(text: str) -> str:
    def link(m):
        links = "; ".join(f"[](#bib-{k})" for k in m["keys"].split(","))
        return f"({links})" if m["kind"] == "p" else links

    return _CITE_ROLE.sub(link, text)


def links_to_roles(markdown: str) -> str:
    """A Markdown text's citation links as sphinxcontrib-bibtex roles: a parenthesised group becomes ``{cite:p}``
    (its keys in order), any other link ``{cite:t}``; code blocks and code spans untouched (:func:`in_prose`)."""
    return in_prose(markdown, _links_to_roles)


def roles_to_links(markdown: str) -> str:
    """The inverse of :func:`links_to_roles`, for the executed notebook the book offers for download (myst-nb
    wrote it from the text Sphinx read, roles and all); code untouched."""
    return in_prose(markdown, _roles_to_links)


def page_links_to_roles(text: str, suffix: str) -> str:
    """A page as Sphinx reads it, its citations made roles in its Markdown only: a chapter (``.py``, jupytext's
    percent format) has its Markdown cells converted and its code cells left byte for byte; a ``.md`` page is
    Markdown throughout."""
    if suffix != ".py":
        return links_to_roles(text)
    import jupytext

    nb = jupytext.reads(text, fmt="py:percent")
    changed = False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            new = links_to_roles(cell.source)
            changed |= new != cell.source
            cell.source = new
    return jupytext.writes(nb, fmt="py:percent") if changed else text


def _source_read(app, docname: str, source: list[str]) -> None:
    from pathlib import Path

    source[0] = page_links_to_roles(source[0], Path(app.env.doc2path(docname)).suffix)


STYLE_NAME = "author_year_labels"


def _last_name(person) -> str:
    from pybtex.richtext import Text

    return Text.from_latex(" ".join(person.prelast_names + person.last_names)).render_as("text")


def author_year_label(entry) -> str:
    """"Last, year", "Last1 and Last2, year" or "Last1 et al., year" from a pybtex entry (its editors when it has no
    authors; its key when it has neither)."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_last_name(p) for p in people]
    if not names:
        who = entry.key
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


def _style():
    from pybtex.style.formatting.unsrt import Style as UnsrtStyle
    from pybtex.style.labels import BaseLabelStyle

    class AuthorYearLabels(BaseLabelStyle):
        def format_labels(self, sorted_entries):
            labels = [author_year_label(e) for e in sorted_entries]
            seen: dict[str, int] = {}
            for lab in labels:
                seen[lab] = seen.get(lab, 0) + 1
            count: dict[str, int] = {}
            for lab in labels:
                if seen[lab] == 1:
                    yield lab
                else:  # two works of the same authors and year: 2020a, 2020b
                    count[lab] = count.get(lab, 0) + 1
                    yield lab + "abcdefghijklmnopqrstuvwxyz"[count[lab] - 1]

    class AuthorYearStyle(UnsrtStyle):
        default_label_style = AuthorYearLabels
        default_sorting_style = "author_year_title"

    return AuthorYearStyle


def reference_texts(bib_path) -> dict[str, tuple[str, str]]:
    """``key -> (label, reference)`` for every entry of a ``.bib`` file, as the book's reference list writes them
    (this style's labels over the whole file; the reference as plain text)."""
    from pybtex.database import parse_file

    entries = parse_file(str(bib_path)).entries
    style = _style()()
    formatted = style.format_entries(entries.values())
    return {e.key: (e.label, e.text.render_as("text")) for e in formatted}


def setup(app):
    from pybtex.plugin import find_plugin, register_plugin

    try:
        find_plugin("pybtex.style.formatting", STYLE_NAME)
    except Exception:  # not registered yet in this process
        register_plugin("pybtex.style.formatting", STYLE_NAME, _style())
    app.connect("source-read", _source_read)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
