"""Each chapter's key for JupyterLab: the targets of its references, with the book's titles and numbers.

In the built book a reference to another chapter ("{ref}`ch-admm`"), to an equation of another chapter, or to a
numbered figure or table resolves through Sphinx. Opened as a notebook in JupyterLab, jupyterlab-myst resolves only
what the notebook itself defines in Markdown: every other reference showed as a "Cross Reference Not Found" warning
(figures and tables are cell outputs, so even the chapter's own were not found). The key is the chapter's last cell,
a Markdown cell tagged ``remove-cell`` (myst-nb leaves such a cell out of the book, so its labels never clash with
the real ones): it defines each of those targets once more, as jupyterlab-myst reads them, with the number and title
the book gives it, so that in JupyterLab "{ref}`ch-admm`" reads "ADMM, unrolled step by step", "{eq}`eq-srr`" reads
"(1.1)" and "{numref}`tbl-table1-cpu`" reads "Table 8.2".

The numbers and titles come from the built book itself (its HTML, where Sphinx wrote them), so a key is written
after a build and checked against it::

    python book/_ext/aot_book_build jupyterlab-key book/_build/html --write   # rewrite every chapter's key
    python book/_ext/aot_book_build jupyterlab-key book/_build/html           # check: exit 1 naming a stale key

Citations too: a chapter cites with a link to ``#bib-KEY`` (``aot_book_build.citations`` turns it into a
``{cite:p}``/``{cite:t}`` role for the book), because jupyterlab-myst 2.7 marks every citation role "Citation Not
Found" (it resolves one only through a DOI it fetches online). The key defines each ``bib-KEY`` the chapter cites,
titled with the label of the book's reference list ("Yu et al., 2023", checked against the built list) and followed
by the reference in full, so in JupyterLab "([](#bib-yu2023crate))" reads "(Yu et al., 2023)".
"""
from __future__ import annotations

import html
import re
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KEY_MARK", "KEY_HEADER", "Target", "chapters", "needed_targets", "own_equations", "book_targets", "key_cell",
           "chapter_key", "write_key", "main"]

#: The first line of a key cell (a MyST comment, so neither JupyterLab nor the book shows it).
KEY_MARK = "% aot-jupyterlab-key"
#: The key cell's header in the percent format: a Markdown cell myst-nb leaves out of the book.
KEY_HEADER = '# %% [markdown] tags=["remove-cell"]'
_LABEL = re.compile(r"^\((?P<label>[\w-]+)\)=\s*$", re.M)
_EQ_LABEL = re.compile(r"\$\$\s*\((?P<label>[\w-]+)\)\s*$", re.M)
_ROLE = re.compile(r"\{(?P<role>ref|numref|eq)\}`(?:[^`<]*<)?(?P<label>[\w-]+)>?`")
_CITE = re.compile(r"\[\]\(#(?P<label>bib-[\w-]+)\)")


@dataclass(frozen=True)
class Target:
    """One reference target as the book shows it: ``kind`` (section, equation, figure, table, citation), the
    label, the number (``1.1``; none for a section or a citation), and the text: a section's title, a figure's
    or table's caption, an equation's LaTeX, a citation's label in the reference list; a citation's ``reference``
    is the list's entry in full."""

    kind: str
    label: str
    number: str | None
    text: str
    reference: str = ""


def _markdown_cells(path: Path) -> list[str]:
    import jupytext

    return [c.source for c in jupytext.read(path).cells
            if c.cell_type == "markdown" and not c.source.lstrip().startswith(KEY_MARK)]


def needed_targets(path: Path) -> list[tuple[str, str]]:
    """``(role, label)`` of every reference in the chapter's Markdown that jupyterlab-myst cannot resolve in the
    notebook: a {ref} or {eq} to a label the chapter's Markdown does not define, every {numref} (figures and
    tables are cell outputs) and every citation (role ``cite``, label ``bib-KEY``). In order of first use."""
    cells = _markdown_cells(path)
    text = "\n".join(cells)
    local = set(_LABEL.findall(text)) | set(_EQ_LABEL.findall(text))
    out: dict[str, str] = {}
    found = [(m.start(), m["role"], m["label"]) for m in _ROLE.finditer(text)]
    found += [(m.start(), "cite", m["label"]) for m in _CITE.finditer(text)]
    for _, role, label in sorted(found):
        if role in ("numref", "cite") or label not in local:
            out.setdefault(label, role)
    return [(role, label) for label, role in out.items()]


def _plain(fragment: str) -> str:
    """HTML of a title or caption as MyST text: typeset math back to $...$, tags dropped, entities decoded."""
    fragment = re.sub(r'<span class="math notranslate nohighlight">\\\((.*?)\\\)</span>', r"$\1$", fragment, flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", "", fragment))
    return re.sub(r"\s+", " ", text).strip()


def book_targets(html_dir: Path, bib: Path | None = None) -> dict[str, Target]:
    """Every label the built book links to, with its number and text as the pages show them: sections (their
    titles, as a reference's link text), equations (number and LaTeX), figures and tables (number and caption);
    with ``bib`` (the book's ``references.bib``), every entry the built reference list shows, as ``bib-KEY``,
    with the list's label."""
    html_dir = Path(html_dir)
    pages = {p: p.read_text() for p in html_dir.rglob("*.html") if "_static" not in p.parts}
    out: dict[str, Target] = {}
    if bib is not None:
        from .citations import reference_texts

        # the list's label for each entry it shows, found by the entry's text (a label depends on which works
        # the list holds: "Yu et al., 2023" alone, "2023a" beside another)
        # (compared up to its URL, which the page shows shortened)
        def sans_url(ref: str) -> str:
            return ref.split(" URL: ")[0]

        listed = {sans_url(_plain(m["text"])): _plain(m["label"]) for text in pages.values() for m in re.finditer(
            r'<div class="citation"[^>]*>\s*<span class="label"><span class="fn-bracket">\[</span>(?P<label>.*?)'
            r'<span class="fn-bracket">\]</span></span>\s*<p>(?P<text>.*?)</p>', text, re.S)}
        for key, (_, reference) in reference_texts(bib).items():
            if sans_url(reference) in listed:
                out[f"bib-{key}"] = Target("citation", f"bib-{key}", None, listed[sans_url(reference)], reference)
    for text in pages.values():  # a section's own heading first: a link may give it other words
        for m in re.finditer(r'<span id="(?P<id>[\w-]+)"></span>\s*<h[1-6][^>]*>(?:<span class="section-number">'
                             r'[^<]*</span>)?(?P<title>.*?)<a class="headerlink"', text, re.S):
            out.setdefault(m["id"], Target("section", m["id"], None, _plain(m["title"])))
    for text in pages.values():
        for m in re.finditer(r'<a class="reference internal" href="[^"#]*#(?P<id>[\w-]+)"><span class="std std-ref">'
                             r'(?P<title>.*?)</span></a>', text, re.S):
            out.setdefault(m["id"], Target("section", m["id"], None, _plain(m["title"])))
        for m in re.finditer(r'<div class="math notranslate nohighlight" id="equation-(?P<label>[\w-]+)">\s*'
                             r'<span class="eqno">\((?P<number>[\d.]+)\).*?</span>\\\[(?P<latex>.*?)\\\]</div>',
                             text, re.S):
            out[m["label"]] = Target("equation", m["label"], m["number"], m["latex"].strip())
        for kind, pattern in (("figure", r'<figure[^>]*id="(?P<label>[\w-]+)"[^>]*>.*?<figcaption>'),
                              ("table", r'<div class="aot-numbered-table[^"]*" id="(?P<label>[\w-]+)">')):
            for m in re.finditer(pattern, text, re.S):
                cap = re.match(r'\s*(?:<p>)?\s*<span class="caption-number">[^<]*?(?P<number>[\d.]+)\s*</span>'
                               r'<span class="caption-text">(?P<text>.*?)</span>\s*(?:<a class="headerlink"[^>]*>[^<]*</a>)?'
                               r'\s*</p>', text[m.end():], re.S)
                if cap:
                    out[m["label"]] = Target(kind, m["label"], cap["number"], _plain(cap["text"]))
    return out


def _entry(t: Target) -> str:
    if t.kind == "citation":
        return f"({t.label})=\n###### {t.text}\n\n{_wrap(t.reference)}"
    if t.kind == "section":
        return f"({t.label})=\n###### {t.text}"
    if t.kind == "equation":
        return f"```{{math}}\n:label: {t.label}\n:enumerator: {t.number}\n{t.text}\n```"
    kind = "\n:kind: table" if t.kind == "table" else ""
    return f":::{{figure}}\n:label: {t.label}{kind}\n:enumerator: {t.number}\n{_wrap(t.text)}\n:::"


def _wrap(text: str) -> str:
    """A caption as lines that fit the chapters' 88 characters (with the ``# `` of the percent format)."""
    import textwrap

    return "\n".join(textwrap.wrap(text, 86, break_long_words=False, break_on_hyphens=False))


def own_equations(path: Path) -> list[str]:
    """The labels of the equations the chapter's own Markdown numbers (``$$ (eq-...)``), in order: jupyterlab-myst
    numbers them (1), (2), ... where the book says (3.1), (3.2)."""
    return [m["label"] for m in _EQ_LABEL.finditer("\n".join(_markdown_cells(path)))]


def key_cell(targets: list[Target], own: list[Target] = ()) -> str:
    """The key cell's Markdown (without the ``# `` prefixes of the percent format): the targets in the order given,
    the works cited last; with ``own`` (the chapter's own equations), a line that says which number JupyterLab
    gives each and which the book does (their labels are the chapter's, so they are not defined again here)."""
    head = [KEY_MARK,
            "% Written after a build by `python book/_ext/aot_book_build jupyterlab-key`;",
            "% the book leaves this cell out (its tag remove-cell).",
            "##### This chapter's references, as the book numbers them",
            "",
            "In the book these are links; in JupyterLab this cell gives them their numbers and",
            "titles, and the works the chapter cites their full references."]
    numbered = [t for t in targets if t.kind != "citation"]
    cited = [t for t in targets if t.kind == "citation"]
    parts = [_entry(t) for t in numbered] + (["**Works cited**"] + [_entry(t) for t in cited] if cited else [])
    if own:
        parts.append(_wrap("**This chapter's own equations**, numbered here in order and in the book by chapter: "
                           + "; ".join(f"({k}) is the book's ({t.number})" for k, t in enumerate(own, 1)) + "."))
    return "\n".join(head + [""] + ["\n\n".join(parts)])


def chapter_key(path: Path, targets: dict[str, Target]) -> str:
    """The key cell chapter ``path`` needs, from the book's ``targets``; refuses a reference the book does not
    show (the build resolved it, so a missing one means the build and the chapter differ: build again)."""
    missing = [label for _, label in needed_targets(path) if label not in targets]
    if missing:
        raise ValueError(f"{path.name}: the built book shows no target {', '.join(missing)}; build the book from "
                         "this checkout, then write the keys")
    own = [label for label in own_equations(path) if label in targets]
    if len(own) < len(own_equations(path)):
        raise ValueError(f"{path.name}: the built book shows no number for one of its equations; build the book "
                         "from this checkout, then write the keys")
    return key_cell([targets[label] for _, label in needed_targets(path)], [targets[label] for label in own])


def _split(path: Path) -> tuple[str, str | None]:
    """The chapter's text before its key cell, and the key cell's Markdown (None without one)."""
    text = path.read_text()
    m = re.search("\n" + re.escape(KEY_HEADER) + "\n# " + re.escape(KEY_MARK) + r".*\Z", text, re.S)
    if not m:
        return text, None
    body = "\n".join(line[2:] if line.startswith("# ") else line[1:] for line in m.group(0).splitlines()[2:])
    return text[:m.start()], body.rstrip("\n")


def write_key(path: Path, key: str) -> bool:
    """Put ``key`` as the chapter's last cell (replacing the old key); True when the file changed."""
    before, _ = _split(path)
    lines = [("# " + line) if line else "#" for line in key.splitlines()]
    new = before.rstrip("\n") + "\n\n" + KEY_HEADER + "\n" + "\n".join(lines) + "\n"
    if new == path.read_text():
        return False
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(new)
    tmp.replace(path)
    return True


def chapters(root: Path) -> list[Path]:
    """The book's notebook chapters, in table-of-contents order."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    return [root / (c["file"] + ".py") for c in toc["chapters"] if c["file"].startswith("notebooks/")]


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python book/_ext/aot_book_build jupyterlab-key", description=__doc__.split("\n\n")[0])
    p.add_argument("html_dir", help="the built book's HTML (book/_build/html)")
    p.add_argument("--write", action="store_true", help="rewrite each chapter's key (else: check them)")
    p.add_argument("--root", default=".", help="the checkout (default: here)")
    args = p.parse_args(argv)
    root, html_dir = Path(args.root), Path(args.html_dir)
    if not (html_dir / "index.html").exists():
        print(f"jupyterlab-key: {html_dir} holds no built book; build it first (jupyter-book build book/)",
              file=sys.stderr)
        return 2
    targets = book_targets(html_dir, root / "book" / "references.bib")
    stale = []
    for path in chapters(root):
        try:
            key = chapter_key(path, targets)
        except ValueError as e:
            print(f"jupyterlab-key: {e}", file=sys.stderr)
            return 1
        if args.write:
            if write_key(path, key):
                print(f"jupyterlab-key: wrote {path}")
        elif _split(path)[1] != key:
            stale.append(path.name)
    if stale:
        print(f"jupyterlab-key: the JupyterLab key of {', '.join(stale)} differs from the built book; run "
              f"python book/_ext/aot_book_build jupyterlab-key {html_dir} --write", file=sys.stderr)
        return 1
    print(f"jupyterlab-key: {len(chapters(root))} chapters, keys {'written' if args.write else 'current'}")
    return 0
