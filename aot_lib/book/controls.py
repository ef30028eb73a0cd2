"""Controls a reader can move in the built book — offline, without a kernel — and the same cells live in JupyterLab.

A control panel is a few widgets (sliders over a uniform grid, drop-down lists) and what they drive (Bokeh figures,
an HTML table). Every combination of the widgets' values is computed in Python when the chapter runs (the grids are
small) and shipped in the page; moving a widget looks the combination up in the browser (:data:`LOOKUP_JS`, ten
lines) and swaps the figures' data. Nothing is computed in the browser, so the page shows exactly what the package
computed, as a static figure does.

Why Bokeh: its widgets and figures are one standalone document whose callbacks (``CustomJS``) read *all* widgets at
once, which a grid over several parameters needs; its JavaScript ships inside the wheel (no npm, no CDN) and is
loaded only by the pages that hold a panel (bokeh.min.js, bokeh-widgets.min.js, bokeh-tables.min.js: 1.9 MB, about
0.55 MB compressed, :data:`BOKEH_FILES`). The alternatives cost more: ipywidgets' embedded state has no
client-side link from a slider to a precomputed figure (``jslink`` ties widget to widget) and its HTML manager
loads from a CDN; plotly's sliders each drive their own frames (no lookup over two sliders together) and its bundle
is 4.6 MB; anywidget needs the same HTML manager as ipywidgets.

In the built book (``book/_ext/aot_book_build/bokeh_pages.py``, listed in ``_config.yml``) the chapters run with ``AOT_BOOK_BUILD=1``: a panel's
output is a ``<div>`` and a ``<script>`` that renders it, and the page loads BokehJS from ``_static/bokeh/``. In
JupyterLab the output carries BokehJS inline, so the same cell works there without a JupyterLab extension.
"""
from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

__all__ = ["Choice", "Panel", "lookup_panel", "plain_column", "BOKEH_FILES", "CONTROL_TAG", "VIEW_NAME", "LOOKUP_JS", "BUILD_ENV", "PAGE_ENV", "bokeh_js_dir",
           "building_book", "html_table"]

#: BokehJS files a page with a panel loads, in order (from ``bokeh/server/static/js`` in the installed wheel).
BOKEH_FILES = ("bokeh.min.js", "bokeh-widgets.min.js", "bokeh-tables.min.js")
#: Tag on every widget of a panel: ``scripts/check_controls.py`` moves each widget carrying it.
CONTROL_TAG = "aot-control"
#: Name of the part of a panel that the widgets drive (everything but the widgets).
VIEW_NAME = "aot-control-view"
#: Set while the book builds (by the ``bokeh_pages`` extension); the chapters' kernels inherit it.
BUILD_ENV = "AOT_BOOK_BUILD"
#: The page being read while the book builds (set by ``bokeh_pages`` before each chapter runs): a refusal names it.
PAGE_ENV = "AOT_BOOK_PAGE"

# The only JavaScript the panels run: the state of every widget together names one precomputed state, which
# replaces the data of each figure's source and the text of each Div. Slider values are matched to the nearest
# grid value, so a float typed by the browser (0.30000000000000004) finds its state.
LOOKUP_JS = """
const key = widgets.map((w, i) => {
  const opts = options[i];
  if (typeof w.value === "string") return opts.indexOf(w.value);
  let best = 0;
  opts.forEach((o, j) => { if (Math.abs(o - w.value) < Math.abs(opts[best] - w.value)) best = j; });
  return best;
}).join(",");
const state = states[key];
for (const [name, model] of Object.entries(targets)) {
  if (typeof state[name] === "string") model.text = state[name]; else model.data = state[name];
}
"""


@dataclass(frozen=True)
class Choice:
    """One widget: a slider when ``values`` are numbers on a uniform grid, else a drop-down list of strings."""

    name: str
    label: str
    values: Sequence[Any]
    default: Any

    def __post_init__(self):
        if self.default not in self.values:
            raise ValueError(f"control {self.name!r}: default {self.default!r} is not one of its values "
                             f"{list(self.values)}; add it to the grid or pick one of them")
        if self.numeric and len(self.values) > 1:
            steps = [b - a for a, b in zip(self.values, self.values[1:])]
            if min(steps) <= 0 or max(steps) - min(steps) > 1e-9 * max(abs(v) for v in self.values):
                raise ValueError(f"control {self.name!r}: slider values must rise in equal steps, got "
                                 f"{list(self.values)}; use strings for a drop-down list")

    @property
    def numeric(self) -> bool:
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in self.values)

    def widget(self):
        from bokeh.models import Select, Slider

        if self.numeric:
            step = (self.values[1] - self.values[0]) if len(self.values) > 1 else 1
            return Slider(title=self.label, start=self.values[0], end=self.values[-1], step=step, value=self.default,
                          tags=[CONTROL_TAG], sizing_mode="stretch_width", min_width=120)
        return Select(title=self.label, options=list(self.values), value=self.default, tags=[CONTROL_TAG],
                      sizing_mode="stretch_width", min_width=120)


def building_book() -> bool:
    """True while ``jupyter-book build`` runs the chapter (the page then loads BokehJS itself)."""
    return os.environ.get(BUILD_ENV) == "1"


def bokeh_js_dir() -> Path:
    import bokeh

    return Path(bokeh.__file__).parent / "server" / "static" / "js"


class Panel:
    """A Bokeh layout shown as HTML: in the built book a ``<div>`` and its ``<script>``, in JupyterLab with BokehJS
    inline before them (a trusted output runs its scripts; nothing to install in JupyterLab)."""

    def __init__(self, layout, states: Mapping[str, Any] | None = None):
        self.layout = layout
        self.states = states or {}

    def _repr_html_(self) -> str:
        from bokeh.embed import components

        script, div = components(self.layout)
        if building_book():
            return f'<div class="aot-control">{div}{script}</div>'
        inline = "".join(f"<script>{(bokeh_js_dir() / f).read_text()}</script>" for f in BOKEH_FILES)
        return f'<div class="aot-control">{inline}{div}{script}</div>'


def lookup_panel(choices: Sequence[Choice], state: Callable[..., Mapping[str, Any]],
                 draw: Callable[[Mapping[str, Any]], Any], columns: int = 4, name: str | None = None) -> Panel:
    """A panel whose widgets pick one of the precomputed states.

    ``state(*values)`` is called for every combination of the choices' values and returns, per target name, either
    a dict of columns (the data of a ``ColumnDataSource``) or a string (the HTML of a ``Div``); every state has the
    same names. ``draw(targets)`` builds the figures from those targets (made from the defaults' state) and returns
    one Bokeh layout. The widgets sit above it, ``columns`` to a row (one column each on a phone: rows wrap).

    A state that cannot be drawn (a source whose columns differ in length) is refused here, while the chapter runs,
    naming the chapter, the panel (``name``, default the calling function's) and the widgets' values: the reader
    would otherwise meet it as a broken figure on moving the control.
    """
    from bokeh.layouts import column, row
    from bokeh.models import ColumnDataSource, CustomJS, Div

    if not choices:
        raise ValueError("a control panel needs at least one Choice")
    name = name or sys._getframe(1).f_code.co_name  # the panel builder that called, e.g. attention_panel
    states: dict[str, Any] = {}
    for idx in itertools.product(*(range(len(c.values)) for c in choices)):
        values = [c.values[i] for c, i in zip(choices, idx)]
        value = state(*values)
        states[",".join(map(str, idx))] = {k: (v if isinstance(v, str) else {c: plain_column(x) for c, x in v.items()})
                                           for k, v in value.items()}
        _check_drawable(states[",".join(map(str, idx))], name, choices, values)
    default = states[",".join(str(list(c.values).index(c.default)) for c in choices)]
    names = set(default)
    for key, s in states.items():
        if set(s) != names:
            raise ValueError(f"state {key} names {sorted(s)}, the default names {sorted(names)}: every state must "
                             f"give the same targets")
        for target in names:  # a column the figure reads but a state lacks draws nothing in the browser
            if not isinstance(s[target], str) and set(s[target]) != set(default[target]):
                raise ValueError(f"state {key} gives {target!r} the columns {sorted(s[target])}, the default "
                                 f"{sorted(default[target])}: every state must give the same columns")
    targets = {k: Div(text=v, sizing_mode="stretch_width") if isinstance(v, str) else ColumnDataSource(v)
               for k, v in default.items()}
    widgets = [c.widget() for c in choices]
    options = [list(c.values) for c in choices]
    callback = CustomJS(args=dict(widgets=widgets, options=options, states=states, targets=targets), code=LOOKUP_JS)
    for w in widgets:
        w.js_on_change("value", callback)
    view = draw(targets)
    view.name = VIEW_NAME
    for w in widgets:  # a row that wraps: four widgets side by side at 1280 px, one above the other on a phone
        w.styles = {"flex": f"1 1 {max(140, 640 // columns)}px"}
    controls = row(*widgets, sizing_mode="stretch_width", styles={"flex-wrap": "wrap", "column-gap": "16px"})
    return Panel(column(controls, view, sizing_mode="stretch_width"), states)


def _check_drawable(state: Mapping[str, Any], name: str, choices: Sequence[Choice], values: Sequence[Any]) -> None:
    for target, data in state.items():
        if isinstance(data, str):
            continue
        lengths = {column: len(x) for column, x in data.items()}
        if len(set(lengths.values())) > 1:
            page = os.environ.get(PAGE_ENV)
            where = f"chapter {page}" if page else "this notebook"
            at = ", ".join(f"{c.label} = {v!r}" for c, v in zip(choices, values))
            raise ValueError(f"{where}: control panel {name} cannot draw its state at {at}: the columns of {target!r} "
                             f"differ in length ({', '.join(f'{c} {n}' for c, n in lengths.items())}); fix what the "
                             "panel's state function returns for these values")


def plain_column(x):
    """A column as JSON-able lists: floats rounded to 5 significant digits (the page weight of a grid), NaN as
    None (a gap in a line); strings, and ragged lists already made plain, as they are; a column of 2-D images as
    float32 arrays (Bokeh sends them as typed arrays)."""
    import numpy as np

    if not hasattr(x, "dtype") and any(isinstance(v, str) for v in x):  # labels stay text, even "1" or "nan"
        return list(x)
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):  # strings, or a ragged list of lists
        return [v.tolist() if hasattr(v, "tolist") else v for v in x]
    if arr.ndim == 3:  # a column of images: BokehJS draws an image from a typed array only (not nested lists)
        return [np.asarray(a, dtype=np.float32) for a in arr]
    return np.vectorize(lambda v: float(f"{v:.5g}") if np.isfinite(v) else None, otypes=[object])(arr).tolist()


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "") -> str:
    """A small HTML table for a ``Div`` target (escaped; the book's table style applies)."""
    from html import escape

    head = "".join(f"<th>{escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f'<table class="table aot-control-table">{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
