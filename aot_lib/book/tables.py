"""Tables for the book: rows of values rendered as an HTML table (no pandas needed).

A :class:`Table` is what a notebook cell returns or ``display``\\ s: JupyterLab and the built
book render its ``_repr_html_``, a terminal its plain-text ``repr``. Columns say how their
values are formatted and whether they hold **the paper's printed numbers** (``paper=True``):
those columns are shaded and their header is marked, so a computed number and the paper's
never share a column::

    from aot_lib.book.tables import Col, Table

    Table(
        [{"model": "aot_admm_tiny", "params": 3.637, "paper": 3.64}],
        [Col("model"), Col("params", "params (M)", ".3f"),
         Col("paper", "params (M)", ".2f", paper=True)],
        caption="Encoder parameters",
    )

Headers may hold inline math as ``\\( ... \\)``: the book's MathJax typesets it (the table sits
in a ``tex2jax_process`` block), and so does JupyterLab.

How a table fits the page is the book's CSS (``book/_static/aot.css``), from two things the HTML
says: which cells hold numbers (class ``num``: they never wrap; text cells may) and whether the
table is wide (class ``aot-table-wide`` on its box: more than :data:`WIDE_CHARS` characters across,
set in a smaller type); words longer than :data:`LONG_WORD` may break after ``/`` and ``_``, shorter
hyphenated words never break (``aot-word``), and headers longer than :data:`LONG_HEADER` are ``long``. A table
wider than the text column grows into the right margin on a desktop screen.
"""
from __future__ import annotations

import html
import numbers
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = ["Col", "Table", "key_value_table", "format_value", "PAPER_STYLE", "WIDE_CHARS", "sweep_table", "verdict_table",
           "edge_pick_note"]

#: A table's name: the label ``{numref}`` cites (lower case, digits and hyphens, after ``tbl-``); the build numbers
#: a named table (:mod:`aot_book_build.numbered_tables`).
NAME_PATTERN = r"tbl-[a-z0-9]+(?:-[a-z0-9]+)*"

# Inline styles (not only classes) so that the shading also shows in JupyterLab, which does
# not load the book's CSS. A translucent tint reads on light and dark themes alike.
PAPER_STYLE = "background-color: rgba(255, 176, 0, 0.16);"
MISSING = "\N{EM DASH}"
PAPER_MARK = "\N{LEFT-POINTING DOUBLE ANGLE QUOTATION MARK}paper" \
             "\N{RIGHT-POINTING DOUBLE ANGLE QUOTATION MARK}"
#: Characters across (cells, plus two a column for its padding) above which a table is set in the
#: smaller type of ``aot-table-wide``: about what the text column beside the contents sidebar holds
#: at 1280 px (690 px of the table's 14 px type, 7.7 px a character on average).
WIDE_CHARS = 88
#: A word longer than this (a path, a run's name) may break after its slashes and underscores
#: (``<wbr>``), so that it does not hold its column wider than the page; shorter ones never break.
LONG_WORD = 20
#: A header longer than this (with the paper's mark) is marked ``long``: on a phone its column gets
#: room for about 14 characters a line, so it does not wrap into a tower above the other headers.
LONG_HEADER = 16


@dataclass(frozen=True)
class Col:
    """One column: the row key it reads, its header (with units), how values are written.

    ``fmt`` is a format spec (``".3f"``, ``",d"``) or a callable returning text; without one,
    integers get thousands separators and floats four significant digits. ``paper=True``
    marks a column of the paper's printed numbers. ``align`` is ``"left"`` or ``"right"``
    (default: right for numbers, left otherwise).
    """

    key: str
    header: str | None = None
    fmt: str | Callable[[Any], str] | None = None
    paper: bool = False
    align: str | None = None


def format_value(value: Any, fmt: str | Callable[[Any], str] | None = None) -> str:
    """``value`` as table text; ``None`` is an em dash."""
    if value is None:
        return MISSING
    if callable(fmt):
        return str(fmt(value))
    if fmt:
        return format(value, fmt)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{value:,}"
    if isinstance(value, numbers.Real):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return " \N{MULTIPLICATION SIGN} ".join(str(v) for v in value)
    return str(value)


def _breakable(text: str) -> str:
    """``text`` escaped for HTML, its long words given a line-break opportunity after each ``/`` and ``_``,
    its short hyphenated words (``AoT-ADMM``, ``CIFAR-10``) kept whole."""
    def word(w: str) -> str:
        if len(w) > LONG_WORD:
            return re.sub(r"([/_])", r"\1<wbr>", html.escape(w))
        return f'<span class="aot-word">{html.escape(w)}</span>' if "-" in w else html.escape(w)
    return " ".join(word(w) for w in text.split(" "))


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


class Table:
    """Rows (mappings keyed by column key, or sequences in column order) and their columns."""

    def __init__(
        self,
        rows: Iterable[Mapping[str, Any] | Sequence[Any]],
        columns: Sequence[Col | str],
        caption: str | None = None,
        notes: Sequence[str] | str = (),
        phone: str = "scroll",
        name: str | None = None,
    ):
        if name is not None:
            if not re.fullmatch(NAME_PATTERN, name):
                raise ValueError(f"table name {name!r}: give tbl- and lower-case words joined by hyphens, e.g. "
                                 "'tbl-final-losses' (the label {numref} cites)")
            if not caption:
                raise ValueError(f"table {name}: a numbered table needs a caption (its title under the number)")
        #: The label the book numbers this table by and ``{numref}`` cites (:mod:`aot_book_build.numbered_tables`);
        #: a table without one is not numbered (the tables folded into a page's record boxes).
        self.name = name
        if phone not in ("scroll", "list"):
            raise ValueError(f"phone must be 'scroll' (the table scrolls in its box) or 'list' (each row a list of "
                             f"labelled lines), got {phone!r}")
        #: On a phone: "scroll" keeps the grid and lets it scroll in its box; "list" shows each row as its cells
        #: one under the other, each labelled with its header (a table of commands reads as a list).
        self.phone = phone
        self.columns = [c if isinstance(c, Col) else Col(c) for c in columns]
        keys = [c.key for c in self.columns]
        self.rows: list[dict[str, Any]] = []
        for row in rows:
            if isinstance(row, Mapping):
                self.rows.append({k: row.get(k) for k in keys})
            else:
                row = list(row)
                if len(row) != len(keys):
                    raise ValueError(f"row has {len(row)} values for {len(keys)} columns")
                self.rows.append(dict(zip(keys, row)))
        self.caption = caption
        self.notes = [notes] if isinstance(notes, str) else list(notes)
        if any(c.paper for c in self.columns):
            self.notes.append(f"Shaded columns marked {PAPER_MARK} are the paper's printed "
                              "numbers; the others are computed.")

    def header(self, col: Col) -> str:
        return col.header if col.header is not None else col.key

    def text_cells(self) -> list[list[str]]:
        """The formatted cells, row by row (what both renderings show)."""
        return [[format_value(r[c.key], c.fmt) for c in self.columns] for r in self.rows]

    def _align(self, col: Col) -> str:
        if col.align:
            return col.align
        values = [r[col.key] for r in self.rows if r[col.key] is not None]
        return "right" if values and all(_is_number(v) for v in values) else "left"

    def width_chars(self) -> int:
        """How many characters across the table is when nothing wraps: per column its longest cell, or
        its header's longest word (headers wrap), plus two for the padding; the paper's mark counts."""
        cells = self.text_cells()
        width = 0
        for i, c in enumerate(self.columns):
            words = (self.header(c) + (" " + PAPER_MARK if c.paper else "")).split() or [""]
            width += max([len(w) for w in words] + [len(row[i]) for row in cells]) + 2
        return width

    def _classes(self, col: Col, head: bool = False) -> str:
        names = (["paper"] if col.paper else []) + (["num"] if self._align(col) == "right" else [])
        if head and len(self.header(col)) + (len(PAPER_MARK) + 1 if col.paper else 0) > LONG_HEADER:
            names.append("long")  # a wider column on a phone, so the header does not stack into a tower
        return f' class="{" ".join(names)}"' if names else ""

    def _repr_html_(self) -> str:
        esc = html.escape
        # The title sits above the table rather than in <caption>, which a narrow table
        # would squeeze into its own width.
        wide = " aot-table-wide" if self.width_chars() > WIDE_CHARS else ""
        mark = f' data-aot-table="{self.name}"' if self.name else ""
        out = [f'<div class="aot-table-wrap{wide} tex2jax_process"{mark}>']
        if self.caption:
            out.append(f'<p class="aot-table-title"><strong>{esc(self.caption)}</strong></p>')
        out.append('<table class="aot-table aot-table-list">' if self.phone == "list" else '<table class="aot-table">')
        if any(self.header(c) for c in self.columns):
            out.append("<thead><tr>")
            for c in self.columns:
                style = f"text-align: {self._align(c)};" + (PAPER_STYLE if c.paper else "")
                mark = f' <span class="aot-paper-mark">{PAPER_MARK}</span>' if c.paper else ""
                out.append(f'<th{self._classes(c, head=True)} style="{style}">{esc(self.header(c))}{mark}</th>')
            out.append("</tr></thead>")
        out.append("<tbody>")
        for cells in self.text_cells():
            out.append("<tr>")
            for c, text in zip(self.columns, cells):
                style = f"text-align: {self._align(c)};" + (PAPER_STYLE if c.paper else "")
                label = f' data-label="{esc(self.header(c))}"' if self.phone == "list" else ""
                out.append(f'<td{self._classes(c)}{label} style="{style}">{_breakable(text)}</td>')
            out.append("</tr>")
        out.append("</tbody></table>")
        for note in self.notes:
            out.append(f'<p class="aot-table-note">{esc(note)}</p>')
        out.append("</div>")
        return "\n".join(out)

    def __repr__(self) -> str:
        heads = [self.header(c) + (" [paper]" if c.paper else "") for c in self.columns]
        cells = self.text_cells()
        widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(heads)]

        def line(values):
            parts = []
            for c, v, w in zip(self.columns, values, widths):
                parts.append(v.rjust(w) if self._align(c) == "right" else v.ljust(w))
            return "  ".join(parts).rstrip()

        out = [self.caption] if self.caption else []
        out += [line(heads), "  ".join("-" * w for w in widths)]
        out += [line(row) for row in cells]
        return "\n".join(out + self.notes)


def key_value_table(
    items: Mapping[str, Any] | Iterable[tuple[str, Any]],
    caption: str | None = None,
    key_header: str = "",
    value_header: str = "",
    name: str | None = None,
) -> Table:
    """A two-column table of named values (a run record, a benchmark's settings)."""
    pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
    return Table(
        [(k, format_value(v)) for k, v in pairs],
        [Col("key", key_header, align="left"), Col("value", value_header, align="left")],
        caption=caption,
        name=name,
    )


def edge_pick_note(runs: Iterable, why: str) -> list[str]:
    """A table note naming the runs (:class:`aot_lib.evidence.SeedRun`, or a pretraining run's folder) whose newest
    probe picked an end of the learning rates it tried (:func:`aot_lib.evidence.probe_lr_picks`), grouped by pick,
    then ``why`` (what the number is for, and what was done about it); ``[]`` when none did. A probe of one rate
    has no end to pick and is named as such."""
    from ..evidence import probe_lr_picks

    runs = list(runs)
    groups: dict[str, list[str]] = {}
    for p in probe_lr_picks(runs):
        if len(p["grid"]) == 1:
            groups.setdefault(f"{p['lr']:g}, the only rate tried", []).append(p["run"])
        elif p["at_top"] or p["at_bottom"]:
            end = "top" if p["at_top"] else "bottom"
            groups.setdefault(f"{p['lr']:g}, the {end} of {p['grid'][0]:g} … {p['grid'][-1]:g}", []).append(p["run"])
    if not groups:
        return []
    n = sum(len(names) for names in groups.values())
    who = "The run picked an end of its" if len(runs) == 1 else f"{n} of the {len(runs)} runs picked an end of their"
    return [f"{who} probe's learning-rate grid: "
            + "; ".join(f"{', '.join(names)} ({pick})" for pick, names in groups.items())
            + f". A wider grid could pick another rate and move {'its' if n == 1 else 'their'} score. {why}"]


def sweep_table(root: str | Path, table: str, names: Mapping[str, str], caption: str, name: str | None = None):
    """One table's equal sweep as a book table (every point's validation linear probe and k-NN, each family's pick
    marked; a family with a point not recorded yet has no pick) and the picks: ``(Table, picked_lr(rows))``."""
    from ..evidence import picked_lr, read_test_note, sweep_rows

    rows = [r for r in sweep_rows(root) if r["table"] == table]
    picks = picked_lr(rows)
    missing = any(r["val"] is None for r in rows)
    shown = Table(
        [dict(model=names[r["family"]], lr=r["lr"], val=r["val"], knn=r["knn_val"],
              picked="◀ picked" if r["val"] is not None and r["lr"] == picks[table, r["family"]] else "")
         for r in rows],
        [Col("model"), Col("lr", "learning rate", ".0e"), Col("val", "linear probe, val. (%)", ".2f"),
         Col("knn", "k-NN, val. (%)", ".2f"), Col("picked", "")],
        caption=caption,
        notes=[*(["— : the point is not recorded yet (no pick is made on part of the grid)."] if missing else []),
               read_test_note(rows),
               *edge_pick_note([Path(root) / r["folder"] for r in rows if r["val"] is not None],
                               "The sweep's pick between pretraining rates is made on these scores.")],
        name=name)
    return shown, picks


def _rule_cell(row: Mapping) -> str:
    """A claim's rule as its verdict row says it (:func:`aot_lib.evidence.stats.verdict`)."""
    if row["rule"] == "parity":
        return f"parity, ±{row['margin']:.1f} points"
    return "a gain: CI above 0" if row["rule"] == "better" else "control: CI above 0"


def verdict_table(rows: Sequence[Mapping], caption: str, name: str | None = None, notes: Sequence[str] = (),
                  where: bool = False) -> Table:
    """One line per claim (issue 59): rows of :func:`aot_lib.evidence.verdict_rows` as a table -- what is compared,
    the verdict, who the interval puts ahead, our A − B with its 95 % interval, the paper's gap, the rule, the seeds
    and the parity claims' one-sided reading; with ``where``, the chapter and the plan's key (chapter 1's summary).
    The verdict comes first after the claim: on a phone it shows before any scroll."""
    cols = [Col("claim", "comparison (A − B, points)"), Col("verdict"), Col("ahead", "ahead (CI excludes 0)"),
            Col("ours"), Col("interval", "95 % CI"), Col("paper", "paper's gap", "+.2f", paper=True),
            Col("rule_cell", "rule"), Col("seeds"), Col("one_sided", "as non-inferiority")]
    if where:
        cols += [Col("chapter", "where"), Col("key", "plan key")]
    # a claim whose paired seeds were trained with different numerics says so (the claim sentences used to)
    flagged = [f"{r['claim']}: {'; '.join(r['mixed_numerics'])}" for r in rows if r.get("mixed_numerics")]
    notes = list(notes) + ([f"Flagged, paired runs trained with different numerics: {' · '.join(flagged)}."]
                           if flagged else [])
    return Table([{**r, "rule_cell": _rule_cell(r)} for r in rows], cols, caption=caption, name=name, notes=notes)
