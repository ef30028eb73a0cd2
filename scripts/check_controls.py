"""Move every control of the built book in headless Chromium, offline, and check that what it drives changes.

    python scripts/check_controls.py book/_build/html [--report book/_build/controls.json] [--min-panels 6 --min-pages 4]

Each page is served from a local HTTP server (the book loads nothing from another host: ``python book/_ext/aot_book_build check-html``)
and opened at 1280 px. On a page that holds control panels (``aot_lib.book.controls``: one Bokeh document each),
every widget tagged ``aot-control`` is moved the way a reader would leave it — a slider to the other end of its
range, a drop-down list to its next option — through Bokeh's own model API (the same change a drag or a click makes;
the widgets themselves sit in shadow DOM). Before and after, the script takes what the panel shows besides its
widgets: every figure rendered to a PNG by its view (``export``), the text of every HTML box. A widget whose move
changes none of it drives nothing, and fails the check; so does a page that logs a JavaScript error, a panel that
never rendered, and a book with fewer than ``--min-panels`` panels on fewer than ``--min-pages`` pages.

The report (JSON) lists each page's panels, their widgets, the value moved to and whether the view changed, and the
bytes the controls add to each page (BokehJS, loaded once per page, and the panels' inline data). Needs the
``[browser]`` extra and Debian's ``chromium`` and ``chromium-driver``. Exit status: 0 when every control drives its
view, 1 when one does not, 2 when the browser or the build is missing.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location("check_tables", Path(__file__).with_name("check_tables.py"))
check_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_tables)

TAG = "aot-control"  # aot_lib.book.controls.CONTROL_TAG (the script runs without importing the package)
VIEW = "aot-control-view"  # aot_lib.book.controls.VIEW_NAME

# Runs in the page once Bokeh has rendered: the panels (one document each) and their widgets.
PANELS_JS = r"""
if (typeof Bokeh === "undefined") return JSON.stringify({bokeh: false, panels: []});
const panels = Bokeh.documents.map((doc, i) => {
  const widgets = [...doc.all_models].filter(m => (m.tags || []).includes(TAG));
  const view = doc.get_model_by_name(VIEW);
  return {doc: i, view: view ? view.id : null, rendered: !!(view && findView(view.id)),
          widgets: widgets.map(w => ({id: w.id, type: w.type, title: w.title, value: w.value,
                                      options: w.options || null, start: w.start ?? null, end: w.end ?? null}))};
});
return JSON.stringify({bokeh: true, panels});
"""

# Shared by the snippets below: the view of a model, found by walking every root view's children.
FIND_VIEW_JS = r"""
function findView(id) {
  const walk = v => { if (v.model.id === id) return v;
                      for (const c of (v.child_views || [])) { const f = walk(c); if (f) return f; } return null; };
  for (const v of Object.values(Bokeh.index)) { const f = walk(v); if (f) return f; }
  return null;
}
"""

# What a panel shows besides its widgets: each figure as a PNG, each HTML box's text.
SNAPSHOT_JS = r"""
const root = findView(arguments[0]);
const shots = [];
const walk = v => {
  if (typeof v.export === "function" && v.model.type !== "Div") shots.push(v.export("png").canvas.toDataURL());
  else if ("text" in v.model) shots.push(v.model.text);
  else if (v.model.source) shots.push(JSON.stringify(v.model.source.data));
  for (const c of (v.child_views || [])) walk(c);
};
walk(root);
return shots;
"""

# Set a widget's value, then wait two animation frames: Bokeh repaints on the next frame, and a snapshot taken
# before it would compare a half-drawn figure.
# Wait (up to 20 s) until every panel's view is rendered: Bokeh embeds the documents after the page's load event.
RENDERED_JS = r"""
const done = arguments[arguments.length - 1];
const start = Date.now();
const ready = () => typeof Bokeh !== "undefined" && Bokeh.documents.every(doc => {
  const view = doc.get_model_by_name(VIEW);
  return view && findView(view.id);
});
const poll = () => (ready() || Date.now() - start > 20000) ? done(ready()) : setTimeout(poll, 100);
poll();
"""

SET_JS = r"""
const [docIndex, id, value, done] = arguments;
Bokeh.documents[docIndex].get_model_by_id(id).value = value;
requestAnimationFrame(() => requestAnimationFrame(() => done(true)));
"""


def _js(body: str) -> str:
    return FIND_VIEW_JS + body.replace("TAG", json.dumps(TAG)).replace("VIEW", json.dumps(VIEW))


def moved_value(widget: dict):
    """Where a reader would move the widget: a slider to the far end of its range, a list to its next option."""
    if widget["options"] is not None:
        opts = widget["options"]
        return opts[(opts.index(widget["value"]) + 1) % len(opts)]
    return widget["start"] if abs(widget["value"] - widget["end"]) < 1e-12 else widget["end"]


def problems_of(report: dict, min_panels: int, min_pages: int) -> list[str]:
    """One line per control that drives nothing, per page that logs an error, and for too few panels."""
    out = []
    for page, entry in report["pages"].items():
        for err in entry["errors"]:
            out.append(f"{page}: the browser logged an error: {err}")
        for p in entry["panels"]:
            if not p["rendered"]:
                out.append(f"{page}: panel {p['doc'] + 1} was not rendered (its view {p['view']} is missing)")
                continue
            for w in p["widgets"]:
                if not w["changed"]:
                    out.append(f"{page}: panel {p['doc'] + 1}, control '{w['title']}' moved to {w['moved_to']!r} "
                               f"changes nothing it shows")
    pages = [p for p, e in report["pages"].items() if e["panels"]]
    panels = sum(len(e["panels"]) for e in report["pages"].values())
    if panels < min_panels or len(pages) < min_pages:
        out.append(f"the book has {panels} control panel(s) on {len(pages)} page(s); at least {min_panels} on "
                   f"{min_pages} pages are asked for")
    return out


def _errors(driver) -> list[str]:
    """The browser's SEVERE log entries since the last call (a missing favicon is not one)."""
    return [e["message"] for e in driver.get_log("browser")
            if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]]


def check(html_dir: Path, pages: list[str] | None = None) -> dict:
    pages = pages or sorted(str(p.relative_to(html_dir)) for p in html_dir.rglob("*.html")
                            if "_static" not in p.relative_to(html_dir).parts
                            and p.name not in check_tables.SKIP_PAGES)
    driver, why = check_tables.browser()
    if driver is None:
        raise RuntimeError(why)
    server = check_tables.serve(html_dir)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    report: dict = {"pages": {}}
    try:
        for page in pages:
            text = (html_dir / page).read_text(errors="replace")
            if 'class="aot-control"' not in text:
                continue
            driver.get(base + page)
            driver.execute_async_script(check_tables.WAIT_JS)
            driver.execute_async_script(_js(RENDERED_JS))
            found = json.loads(driver.execute_script(_js(PANELS_JS)))
            # errors the page logs as it loads (the theme's own) are reported apart; the check fails on those
            # logged while the controls are moved
            entry = {"panels": [], "errors": [], "page_errors": _errors(driver), "bytes": {}}
            if not found["bokeh"]:
                entry["errors"].append("BokehJS did not load (is _static/bokeh/ in the build?)")
            for panel in found["panels"]:
                if not panel["rendered"]:
                    entry["panels"].append(panel)
                    continue
                for w in panel["widgets"]:
                    before = driver.execute_script(_js(SNAPSHOT_JS), panel["view"])
                    w["moved_to"] = moved_value(w)
                    driver.execute_async_script(SET_JS, panel["doc"], w["id"], w["moved_to"])
                    after = driver.execute_script(_js(SNAPSHOT_JS), panel["view"])
                    w["changed"] = bool(before) and before != after
                    driver.execute_async_script(SET_JS, panel["doc"], w["id"], w["value"])  # back to the default
                entry["panels"].append(panel)
            entry["errors"] += _errors(driver)
            static = html_dir / "_static" / "bokeh"
            entry["bytes"] = {"bokehjs": sum(f.stat().st_size for f in static.glob("*.js")) if static.is_dir() else 0,
                              "page_html": len(text.encode())}
            report["pages"][page] = entry
    finally:
        driver.quit()
        server.shutdown()
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("html_dir", type=Path, help="the built book (book/_build/html)")
    ap.add_argument("--report", type=Path, default=None, help="JSON report (default HTML_DIR/../controls.json)")
    ap.add_argument("--page", action="append", default=None, help="only this page (relative to HTML_DIR); repeatable")
    ap.add_argument("--min-panels", type=int, default=6, help="fewest control panels the book must hold")
    ap.add_argument("--min-pages", type=int, default=4, help="fewest pages they must be spread over")
    args = ap.parse_args(argv)
    if not (args.html_dir / "index.html").exists():
        print(f"check_controls: no built book in {args.html_dir}: build it first (README command 1)", file=sys.stderr)
        return 2
    try:
        report = check(args.html_dir, pages=args.page)
    except RuntimeError as e:
        print(f"check_controls: {e}", file=sys.stderr)
        return 2
    problems = problems_of(report, args.min_panels, args.min_pages)
    report["problems"] = problems
    out = args.report or args.html_dir.parent / "controls.json"
    out.write_text(json.dumps(report, indent=1))
    for p in problems:
        print(p, file=sys.stderr)
    n_w = sum(len(p["widgets"]) for e in report["pages"].values() for p in e["panels"])
    n_p = sum(len(e["panels"]) for e in report["pages"].values())
    print(f"check_controls: {n_w} controls in {n_p} panels on {len(report['pages'])} pages moved, "
          f"{len(problems)} problem(s); report {out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
