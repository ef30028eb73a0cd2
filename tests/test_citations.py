"""How the chapters cite (aot_book_build.citations): a link to ``#bib-KEY`` in the source, read by Sphinx as
sphinxcontrib-bibtex's ``{cite:p}``/``{cite:t}`` roles, and written back as links in the executed notebook the book
offers for download. The real build (CI, ``-W``) fails on a link it cannot resolve; these check the rewriting
itself, and that the chapters cite only works the bibliography holds."""
from __future__ import annotations

import re
from pathlib import Path

import jupytext
from markdown_it import MarkdownIt

from aot_book_build.citations import CITE_LINK, links_to_roles, page_links_to_roles, reference_texts, roles_to_links

ROOT = Path(__file__).resolve().parent.parent
BIB = ROOT / "book" / "references.bib"
PAGES = sorted((ROOT / "notebooks").glob("*.py")) + sorted((ROOT / "book").glob("*.md"))


def test_links_become_the_roles_the_book_renders():
    text = ("CRATE ([](#bib-yu2023crate))-style, as [](#bib-wang2025aot) did, two at once "
            "([](#bib-chen2020simclr); [](#bib-grill2020byol)), and (see [](#bib-boyd2011admm) there).\n"
            "Not citations: [](#sec-views), [a link](#bib-x), ([](#fig-a)).")
    assert links_to_roles(text) == (
        "CRATE {cite:p}`yu2023crate`-style, as {cite:t}`wang2025aot` did, two at once "
        "{cite:p}`chen2020simclr,grill2020byol`, and (see {cite:t}`boyd2011admm` there).\n"
        "Not citations: [](#sec-views), [a link](#bib-x), ([](#fig-a)).")


def _markdown_of(page: Path, text: str) -> list[str]:
    if page.suffix != ".py":
        return [text]
    return [c.source for c in jupytext.reads(text, fmt="py:percent").cells if c.cell_type == "markdown"]


def _code_of(markdown: str) -> list[str]:
    """Every code span and code block of a Markdown text, as markdown-it (MyST's parser, an independent reader) finds
    them: what a conversion of the prose must leave byte for byte."""
    out = []
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type in ("fence", "code_block"):
            if not token.info.startswith("{") or token.info.split()[0] in ("{code-block}", "{code-cell}", "{math}"):
                out.append(token.content)
        children = token.children or []
        for before, child in zip([None, *children], children):
            # commonmark reads a MyST role's text ({cite:p}`KEY`) as a code span after the text "{cite:p}": not code
            role = re.search(r"\{([\w:.-]+)\}$", before.content) if before is not None and before.type == "text" else None
            if child.type == "code_inline" and not (role and role[1] not in ("code", "literal")):
                out.append(child.content)
    return out


def test_the_download_gets_back_exactly_what_each_page_wrote():
    """roles_to_links undoes links_to_roles on every page, so the executed notebook offered for download cites as
    its chapter does (and JupyterLab resolves it through the chapter's key)."""
    for page in PAGES:
        text = page.read_text()
        read = page_links_to_roles(text, page.suffix)
        for before, after in zip(_markdown_of(page, text), _markdown_of(page, read), strict=True):
            assert roles_to_links(after) == before, page.name


def test_every_page_keeps_its_code_as_written_when_its_citations_are_converted():
    """Issue 57: the conversion Sphinx reads each page through touches prose only. On every page, each code cell is
    byte-identical, and each Markdown cell's code spans and code blocks (found by markdown-it, not by the converter's
    own scanner) are the same before and after; every citation link outside them became a role."""
    for page in PAGES:
        text = page.read_text()
        read = page_links_to_roles(text, page.suffix)
        if page.suffix == ".py":
            code = [[c.source for c in jupytext.reads(t, fmt="py:percent").cells if c.cell_type == "code"]
                    for t in (text, read)]
            assert code[0] == code[1], page.name
        for before, after in zip(_markdown_of(page, text), _markdown_of(page, read), strict=True):
            assert _code_of(after) == _code_of(before), page.name
            left = CITE_LINK.findall(after)
            assert len(left) == sum(len(CITE_LINK.findall(c)) for c in _code_of(before)), (page.name, left)


def test_code_spans_and_code_blocks_are_left_alone_and_directive_bodies_are_prose():
    text = ("Cite as `[](#bib-KEY)` or ``([](#bib-a))``, not {code}`[](#bib-b)`; this one counts "
            "([](#bib-yu2023crate)).\n\n"
            "```markdown\n([](#bib-c)) stays\n```\n\n"
            "~~~~\n[](#bib-d) stays\n~~~~\n\n"
            "```{admonition} As [](#bib-boyd2011admm) puts it\nan admonition's body is prose ([](#bib-e))\n```\n\n"
            "```{math}\nx = [](#bib-f)\n```\n"
            ":::{figure} a.png\nA caption ([](#bib-g)).\n:::\n")
    assert links_to_roles(text) == (
        "Cite as `[](#bib-KEY)` or ``([](#bib-a))``, not {code}`[](#bib-b)`; this one counts "
        "{cite:p}`yu2023crate`.\n\n"
        "```markdown\n([](#bib-c)) stays\n```\n\n"
        "~~~~\n[](#bib-d) stays\n~~~~\n\n"
        "```{admonition} As {cite:t}`boyd2011admm` puts it\nan admonition's body is prose {cite:p}`e`\n```\n\n"
        "```{math}\nx = [](#bib-f)\n```\n"
        ":::{figure} a.png\nA caption {cite:p}`g`.\n:::\n")
    assert roles_to_links(links_to_roles(text)) == text
    # a lone double backtick (LaTeX quotes) opens no span across paragraphs; a directive's title keeps its code span
    quotes = "LaTeX ``comparable'' quotes.\n\nLater `[](#bib-k)` and ([](#bib-a)).\n\n```{note} As `[](#bib-x)` ([](#bib-y))\nb\n```\n"
    assert links_to_roles(quotes) == ("LaTeX ``comparable'' quotes.\n\nLater `[](#bib-k)` and {cite:p}`a`.\n\n"
                                      "```{note} As `[](#bib-x)` {cite:p}`y`\nb\n```\n")
    chapter = '# %% [markdown]\n# See ([](#bib-a)).\n\n# %%\nprint("[](#bib-b)")  # not a citation: code\n'
    assert page_links_to_roles(chapter, ".py") == chapter.replace("([](#bib-a))", "{cite:p}`a`")


def test_pages_cite_with_links_and_only_works_the_bibliography_holds():
    known = set(reference_texts(BIB))
    for page in PAGES:
        text = page.read_text()
        assert not re.search(r"\{cite(:\w+)?\}`", text), (
            f"{page.name} cites with a {{cite}} role, which JupyterLab shows as 'Citation Not Found': write "
            "([](#bib-KEY)) for (Author, year) or [](#bib-KEY) for Author (year)")
        unknown = set(CITE_LINK.findall(text)) - known
        assert not unknown, f"{page.name} cites {sorted(unknown)}, which book/references.bib does not hold"


def test_reference_texts_are_the_lists_labels_and_entries():
    refs = reference_texts(BIB)
    # labels as aot_book_build.citations.author_year_label writes them: one author, two, three or more
    assert refs["krizhevsky2009cifar"][0] == "Krizhevsky, 2009"
    assert refs["balestriero2025lejepa"][0] == "Balestriero and LeCun, 2025"
    assert refs["grill2020byol"] == ("Grill et al., 2020", (
        "Jean-Bastien Grill, Florian Strub, Florent Altché, Corentin Tallec, Pierre H. Richemond, Elena "
        "Buchatskaya, Carl Doersch, Bernardo Avila Pires, Zhaohan Daniel Guo, Mohammad Gheshlaghi Azar, Bilal "
        "Piot, Koray Kavukcuoglu, Rémi Munos, and Michal Valko. Bootstrap your own latent: a new approach to "
        "self-supervised learning. In Advances in Neural Information Processing Systems, volume 33, "
        "21271–21284. 2020."))
    # no LaTeX command left outside math in an entry (a \url once was): JupyterLab would show it as typed
    assert not [k for k, (_, ref) in refs.items() if "\\" in re.sub(r"\$[^$]*\$", "", ref)]
    # every label names one work: a label two works shared would send a citation to the wrong one
    labels = [label for label, _ in refs.values()]
    assert len(labels) == len(set(labels))


def test_every_reference_has_a_year_and_names_read_as_written():
    """Issue 59: the paper printed as "n.d." (no year) and "Jr. Pasiliao, Eduardo" (the suffix read as a first name)."""
    texts = reference_texts(BIB)
    assert not [k for k, (label, _) in texts.items() if "n.d." in label]
    assert texts["bai2026aotadmm"][0] == "Bai et al., 2026"
    assert "Eduardo Pasiliao, Jr." in texts["ouyang2015linearized"][1]
    assert not [k for k, (_, text) in texts.items() if "Jr. " in text.split(".")[0]]
