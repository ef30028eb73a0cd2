"""Sphinx extension: the reference list labelled the way the text cites, author and year.

The text cites author-year (``bibtex_reference_style: author_year``: "(Grill et al., 2020)"), but pybtex's default
``alpha`` labels gave the list keys like "GSAltche+20" (Grill, Strub, Altché ... 2020, the accent mangled). This
registers a pybtex style, ``author_year_labels``, whose labels are "Grill et al., 2020", "Krizhevsky and Hinton,
2009", "Boyd, 2011" (a letter added when two entries would share one: "2020a", "2020b"), sorted by author, year and
title; ``_config.yml`` names it in ``bibtex_default_style``.
"""
from __future__ import annotations

__all__ = ["author_year_label", "setup"]

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


def setup(app):
    from pybtex.plugin import find_plugin, register_plugin

    try:
        find_plugin("pybtex.style.formatting", STYLE_NAME)
    except Exception:  # not registered yet in this process
        register_plugin("pybtex.style.formatting", STYLE_NAME, _style())
    return {"parallel_read_safe": True, "parallel_write_safe": True}
