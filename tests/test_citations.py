"""How the chapters cite (aot_lib.book.citations): a link to ``#bib-KEY`` in the source, read by Sphinx as
sphinxcontrib-bibtex's ``{cite:p}``/``{cite:t}`` roles, and written back as links in the executed notebook the book
offers for download. The real build (CI, ``-W``) fails on a link it cannot resolve; these check the rewriting
itself, and that the chapters cite only works the bibliography holds."""
from __future__ import annotations

import re
from pathlib import Path

from aot_lib.book.citations import CITE_LINK, links_to_roles, reference_texts, roles_to_links

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


def test_the_download_gets_back_exactly_what_each_page_wrote():
    """roles_to_links undoes links_to_roles on every page, so the executed notebook offered for download cites as
    its chapter does (and JupyterLab resolves it through the chapter's key)."""
    for page in PAGES:
        text = page.read_text()
        assert roles_to_links(links_to_roles(text)) == text, page.name


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
    # labels as aot_lib.book.citations.author_year_label writes them: one author, two, three or more
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
