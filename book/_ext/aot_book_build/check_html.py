"""The checks of the built book's HTML: ``python book/_ext/aot_book_build check-html BUILD_HTML_DIR`` (``.ci/run`` runs it).

A page must read offline (nothing loaded from another host), show no path of the machine that
built it, and show results as tables and typeset math, not as data dumps or raw LaTeX.
"""
from __future__ import annotations

import html
import os
import re
import sys
from pathlib import Path

__all__ = ["PAGE_WIDTH", "check_html", "machine_paths", "check_built_book", "main"]


#: A ``<script src>``, stylesheet ``<link href>`` or ``<img src>`` on another host.
_EXTERNAL = re.compile(
    r"""<(?:script|img)\b[^>]*?\bsrc\s*=\s*["']?\s*((?:https?:)?//[^"'\s>]+)"""
    r"""|<link\b(?=[^>]*\brel\s*=\s*["']?stylesheet)[^>]*?\bhref\s*=\s*["']?\s*"""
    r"""((?:https?:)?//[^"'\s>]+)""",
    re.IGNORECASE,
)
#: Paths of the machine that built the book: home, work, temporary and cache folders, and
#: installed packages.
_MACHINE_PATHS = re.compile(
    r"(?<![\w.~/-])/(?:root|home|work|tmp|Users|private/var|var/folders|opt/conda)/"
    r"|~/\.cache|/\.cache/|site-packages|dist-packages|[A-Za-z]:\\+Users\\+",
)


#: Characters of code or text output a page shows without clipping (ruff's line length
#: for notebooks/).
PAGE_WIDTH = 88

#: A cell's text output (stream or text/plain) as myst-nb renders it.
_TEXT_OUTPUT = re.compile(
    r'<div class="output (?:stream|text_plain)[^"]*">(.*?)</pre>', re.DOTALL)

#: A cell's stderr as myst-nb renders it (a warning, a progress bar, a library's log line): machine noise on a page.
_STDERR = re.compile(r'<div class="output stderr[^"]*">(.*?)</pre>', re.DOTALL)

#: A table cell and its content.
_CELL = re.compile(r"<(t[dh])\b[^>]*>(.*?)</\1>", re.DOTALL | re.IGNORECASE)
#: Code a page shows on purpose (a literal, not a dump), and what is no text at all.
_CODE = re.compile(r"<(code|pre|script|style)\b[^>]*>.*?</\1>", re.DOTALL | re.IGNORECASE)
#: A Python dict or list repr, or a tensor's/array's: ``{'key': ...``, ``{0: ...``, ``['a', ...``,
#: ``[[...``, ``[1, 2, 3]``, ``tensor(...``. (Two numbers in brackets read as an interval: allowed.)
_NUMBER = r"-?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
_REPR = re.compile(
    r"""\{\s*(?:'[^']*'|"[^"]*"|-?\d+)\s*:|\[\s*(?:'[^']*'|"[^"]*")\s*[,\]]|\[\s*\["""
    rf"|\[\s*{_NUMBER}(?:\s*,\s*{_NUMBER}){{2,}}\s*,?\s*\]|\b(?:tensor|array)\(",
    re.IGNORECASE)
#: Math MathJax typesets: the spans and divs of class ``math`` that Sphinx writes for ``$...$``,
#: ``$$...$$`` and ``{math}`` (their dollar signs already turned into ``\(...\)``).
_MATH = re.compile(r"""<(span|div)\b[^>]*\bclass\s*=\s*["'][^"']*\bmath\b[^"']*["'][^>]*>.*?</\1>""",
                   re.DOTALL | re.IGNORECASE)
#: LaTeX between dollar signs, which only the book's Markdown parser turns into typeset math:
#: left in the HTML it is shown raw.
_DOLLAR_MATH = re.compile(r"\$\$.+?\$\$|\$(?!\s)[^$\n]+?(?<!\s)\$", re.DOTALL)


# the title a Table keeps in its HTML when the build did not number it (aot_book_build.numbered_tables lifts a
# numbered table's title into its caption)
_TABLE_TITLE = re.compile(r'<p class="aot-table-title"><strong>(.*?)</strong></p>', re.S)


def _blank(m: re.Match) -> str:
    """A match replaced by spaces (newlines kept), so that offsets and line numbers stay."""
    return re.sub(r"[^\n]", " ", m.group(0))


def _excerpt(text: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", text))).strip()


def check_html(text: str, name: str = "<html>") -> list[str]:
    """Problems in one built page: scripts, stylesheets or images loaded from another host
    (the book must read offline), paths of the machine that built it, cell outputs that
    print a raw dict or JSON object instead of a table or a line wider than the page, table
    cells holding a Python dict/list repr, ``$...$`` LaTeX outside typeset math, and a titled table in the text
    that the build did not number."""
    problems = []
    for m in _TEXT_OUTPUT.finditer(text):
        out = html.unescape(re.sub(r"<[^>]+>", "", m.group(1)))
        line = text.count("\n", 0, m.start()) + 1
        if re.search(r"^\s*\{\s*['\"][^'\"]*['\"]\s*:", out, re.MULTILINE):
            problems.append(f"{name}:{line}: a cell prints a raw dict/JSON: {out.strip()[:80]}")
        wide = [w for w in out.splitlines() if len(w) > PAGE_WIDTH]
        if wide:
            problems.append(f"{name}:{line}: an output line is wider than the page "
                            f"({len(wide[0])} > {PAGE_WIDTH} characters): {wide[0][:60]}...")
    for m in _CELL.finditer(text):
        cell = _excerpt(_CODE.sub("", m.group(2)))
        if _REPR.search(cell):
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{name}:{line}: a table cell shows a Python dict/list repr (give each value "
                            f"its own column or row): {cell[:80]}")
    prose = re.sub(r"<[^>]+>", _blank, _MATH.sub(_blank, _CODE.sub(_blank, text)))
    for m in _DOLLAR_MATH.finditer(prose):
        line = text.count("\n", 0, m.start()) + 1
        problems.append(f"{name}:{line}: raw LaTeX outside typeset math (write it in a Markdown cell or "
                        f"show it with IPython's Math): {_excerpt(m.group(0))[:80]}")
    for m in _STDERR.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        problems.append(f"{name}:{line}: a cell printed to stderr (fix its cause, or catch it where it is expected): "
                        f"{_excerpt(m.group(1))[:100]}")
    for m in _EXTERNAL.finditer(text):
        problems.append(f"{name}: loads {m.group(1) or m.group(2)} from another host")
    for m in _TABLE_TITLE.finditer(text):
        if text.count("<details", 0, m.start()) > text.count("</details>", 0, m.start()):
            continue  # a table folded into a dropdown box (a page's record) is titled by its box, not numbered
        line = text.count("\n", 0, m.start()) + 1
        problems.append(f"{name}:{line}: the table '{_excerpt(m.group(1))[:60]}' is not numbered: give it "
                        "Table(..., name='tbl-...') and cite it with {numref}")
    return problems + machine_paths(text, name)


def machine_paths(text: str, name: str = "<text>") -> list[str]:
    """Paths of the machine that built the book in ``text`` (a page, or a notebook offered for download)."""
    problems = []
    for m in _MACHINE_PATHS.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        start = max(0, m.start() - 40)
        excerpt = re.sub(r"\s+", " ", text[start:m.end() + 40])
        problems.append(f"{name}:{line}: shows a path of the build machine: ...{excerpt}...")
    return problems


def check_built_book(html_dir: str | os.PathLike) -> list[str]:
    """:func:`check_html` over every page of a built book (``book/_build/html``), and :func:`machine_paths` over
    the executed notebooks it offers for download (``_sources/**/*.ipynb``: their outputs are the pages')."""
    root = Path(html_dir)
    pages = sorted(p for p in root.rglob("*.html") if "_static" not in p.relative_to(root).parts)
    if not pages:
        return [f"no HTML pages under {root}: build the book first"]
    problems = []
    for page in pages:
        problems += check_html(page.read_text(encoding="utf-8", errors="replace"),
                               str(page.relative_to(root)))
    for notebook in sorted((root / "_sources").rglob("*.ipynb")):
        problems += machine_paths(notebook.read_text(encoding="utf-8", errors="replace"),
                                  str(notebook.relative_to(root)))
    return problems


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "check-html":
        print("usage: python book/_ext/aot_book_build check-html BUILD_HTML_DIR", file=sys.stderr)
        return 2
    problems = check_built_book(argv[1])
    for p in problems:
        print(p, file=sys.stderr)
    n = len(list(Path(argv[1]).rglob("*.html")))
    print(f"check-html: {n} files, {len(problems)} problem(s)")
    return 1 if problems else 0
