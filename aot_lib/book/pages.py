"""Page helpers for the book's chapters: the build profile, the run-record box, HTML boxes, equations, data notes.

``AOT_BOOK_PROFILE=fast`` (what CI uses) shrinks Monte Carlo sizes and grids so the whole book
builds in minutes; the default ``full`` profile is what a reader on a laptop runs.

Nothing here prints a path of the machine: a page names the setting to change (``AOT_DATA``),
never where it looked, and :mod:`aot_book_build.check_html` fails a build whose HTML shows one.
Recorded runs and benchmarks are :mod:`aot_lib.book.recorded`'s job, the sample photographs
:mod:`aot_lib.book.photos`'s.
"""
from __future__ import annotations

import html
import os
import re
from typing import Any, Mapping, TypeVar

from ..runtime import git_commit, hardware_summary
from .tables import key_value_table

__all__ = ["PROFILE", "pick", "run_record", "open_chapter", "run_record_box", "Dropdown", "Admonition",
           "equation", "equations", "data_label", "data_missing_note", "show_source"]

T = TypeVar("T")

PROFILE = os.environ.get("AOT_BOOK_PROFILE", "full").strip().lower() or "full"
if PROFILE not in {"fast", "full"}:
    raise ValueError(f"AOT_BOOK_PROFILE must be 'fast' or 'full', got {PROFILE!r}")


def pick(fast: T, full: T) -> T:
    """The value for the current profile."""
    return fast if PROFILE == "fast" else full


def run_record(seed: int | None = None) -> dict:
    """Where and how a notebook's numbers were computed (shown by :func:`run_record_box`)."""
    commit = git_commit()
    short = commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")
    return {"profile": PROFILE, "commit": short, "seed": seed, **hardware_summary()}


# ----------------------------------------------------------------------------- page furniture

def show_source(obj):
    """The package's own code for ``obj`` (a function or class of ``aot_lib``), shown as the page's code listing:
    read from the installed source when the chapter runs, so the page cannot show code the package no longer has."""
    import inspect
    import textwrap

    from IPython.display import Markdown

    return Markdown(f"```python\n{textwrap.dedent(inspect.getsource(obj))}```")


class Dropdown:
    """A collapsed box (HTML ``<details>``): a sphinx-design dropdown in the book, a plain
    disclosure triangle in JupyterLab. ``body`` items are objects with ``_repr_html_``
    (tables) or plain strings (escaped, one paragraph each)."""

    def __init__(self, title: str, *body: Any, open: bool = False):
        self.title, self.body, self.open = title, body, open

    def _repr_html_(self) -> str:
        parts = []
        for item in self.body:
            if hasattr(item, "_repr_html_"):
                parts.append(item._repr_html_())
            else:
                parts.append(f"<p>{html.escape(str(item))}</p>")
        return (
            f'<details class="sd-sphinx-override sd-dropdown sd-card sd-mb-3 aot-dropdown"'
            f'{" open" if self.open else ""}>'
            f'<summary class="sd-summary-title sd-card-header">'
            f'<span class="sd-summary-text">{html.escape(self.title)}</span></summary>'
            f'<div class="sd-summary-content sd-card-body">{"".join(parts)}</div></details>'
        )

    def __repr__(self) -> str:
        return "\n".join([self.title] + [repr(b) if hasattr(b, "_repr_html_") else str(b)
                                         for b in self.body])


class Admonition:
    """A note or warning box: the theme's admonition style in the book."""

    def __init__(self, title: str, text: str, kind: str = "warning"):
        self.title, self.text, self.kind = title, text, kind

    def _repr_html_(self) -> str:
        return (f'<div class="admonition {html.escape(self.kind)}">'
                f'<p class="admonition-title">{html.escape(self.title)}</p>'
                f"<p>{html.escape(self.text)}</p></div>")

    def __repr__(self) -> str:
        return f"{self.title.upper()}: {self.text}"


def open_chapter(seed: int | None = None, **extra: Any) -> Dropdown:
    """What every chapter's first cell does: figures shown at two widths (the page's and a phone's,
    :mod:`aot_lib.book.two_widths`), and the record of how the page was computed (:func:`run_record_box`)."""
    from aot_lib.book.two_widths import show_at_two_widths

    show_at_two_widths()
    return run_record_box(seed, **extra)


def run_record_box(seed: int | None = None, **extra: Any) -> Dropdown:
    """The record every chapter shows under its imports, collapsed: profile, commit, seed,
    hardware, and whether a data folder was configured (never its path)."""
    r = run_record(seed)
    rows = [
        ("profile (AOT_BOOK_PROFILE)", r["profile"]),
        ("commit", r["commit"]),
        ("seed", "none (no randomness)" if seed is None else seed),
        ("PyTorch / Python", f"{r['torch']} / {r['python']}"),
        ("machine", f"{r['machine']}, {r['cpu_count']} CPU cores, "
                    f"{r['torch_threads']} PyTorch threads"),
    ]
    if r.get("gpus"):
        rows.append(("GPUs", ", ".join(r["gpus"])))
    rows.append(("data (AOT_DATA)", "set" if os.environ.get("AOT_DATA") else "not set"))
    rows += list(extra.items())
    return Dropdown("How this page was computed", key_value_table(rows))


def equation(lhs: str, rhs: Any, rel: str = "=") -> Any:
    """``lhs rel rhs`` as typeset math (IPython ``Math``); ``rhs`` a SymPy expression or LaTeX."""
    from IPython.display import Math

    if not isinstance(rhs, str):
        import sympy as sp

        rhs = sp.latex(rhs)
    return Math(f"{lhs} {rel} {rhs}")


def equations(*pairs: tuple[str, Any], rel: str = "=") -> Any:
    """Several ``(lhs, rhs)`` lines as one aligned display (``rhs`` SymPy or LaTeX)."""
    from IPython.display import Math

    lines = []
    for lhs, rhs in pairs:
        if not isinstance(rhs, str):
            import sympy as sp

            rhs = sp.latex(rhs)
        lines.append(f"{lhs} &{rel} {rhs}")
    return Math(r"\begin{aligned}" + r" \\ ".join(lines) + r"\end{aligned}")


def data_label(provenance: Mapping | None, fallback: str) -> str:
    """A data set's provenance label for a page, or ``fallback`` when there is none or it
    would show a path (the label of an unrecognised folder names it)."""
    label = (provenance or {}).get("label")
    if not label or re.search(r"\S[/\\]\S|(^|\s)[/~\\]\S", label):
        return fallback
    return label


def data_missing_note(*what: str) -> str:
    """What a page says when data sets are not on this machine: that the pictures stand in, not that anything
    failed (a page's recorded results never need the data), and the setting that brings the data in."""
    names = " and ".join(what) or "the data"
    verb, them = ("are", "them") if len(what) > 1 else ("is", "it")
    return (f"These pictures are sample photographs that ship with scikit-image, because {names} {verb} not on "
            "this machine; the page's recorded results do not need the data. To show "
            f"{them} here, set AOT_DATA to a folder holding {them} (see the README) and build again; "
            "data.download=true in a training config fetches CIFAR through torchvision once.")


# ----------------------------------------------------------------------------- real photographs
