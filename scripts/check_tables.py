"""Measure every table and figure of the built book in headless Chromium at a desktop and a phone width; fail when one
does not fit.

    python scripts/check_tables.py book/_build/html [--report book/_build/tables.json] [--screenshots DIR]

Each page is served from a local HTTP server (the book reads offline; MathJax typesets the headers before the
measurement) and opened at 1280 px and at 420 px. For every table the script records its scroll width and the
box it has to fit: of the boxes around it that clip (``overflow-x`` not ``visible``: its own scroll box, the cell
output's), the one whose content is widest past its edge; with none, the article's text column. A table
overflows when that box's scroll width exceeds its client width (1 px of rounding allowed): the reader then has
to scroll sideways to see its right-hand columns.

* at every width the page itself must not scroll sideways (a table that fits its box can still run past the
  window's edge, its last columns cut off with no scroll bar in view);
* at 1280 px every table must fit: none may need sideways scrolling;
* at 420 px a wide table may scroll inside its own box (a phone cannot show 8 columns), but no cell text may be
  smaller than 11 px, a scroll box must not hide the first column, and no header may wrap into more than 4 lines
  (a tower that leaves a blank gap above the headers beside it).

Every image on a page must be a numbered, captioned figure (a chapter cell's ``mystnb.figure`` metadata), and at
1280 px be shown at no less than 90 % of the width it was drawn at: the book draws figures at most 900 px wide
(``aot_lib.book.plotting.FIGURE_WIDTH_IN``) and lets them grow into the margin as tables do, so its 9-10 pt text
stays at least the 11 px asked of tables; a figure drawn wider is scaled down, text and all. At 420 px no figure
may be shown below 60 % of its drawn width: the book's figures carry a phone rendering (``aot_lib.book.two_widths``).

The report (JSON) lists every table and figure of every page at both widths, with its caption, columns and widths, so that
a before/after comparison is a diff of two reports. Needs the ``[browser]`` extra (selenium) and Debian's
``chromium`` and ``chromium-driver`` (``apt-get install chromium chromium-driver``). Exit status: 0 when every
table fits, 1 when one does not, 2 when the browser or the build is missing.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import sys
import threading
from pathlib import Path

WIDTHS = (1280, 420)
PHONE_WIDTH = 420
MIN_FONT_PX = 11  # smaller text is not readable on a phone without zooming
# A figure's 9 pt text is 12.5 px at 100 dpi; shown at 90 % it stays above MIN_FONT_PX.
MIN_FIGURE_SCALE = 0.9
# On a phone a 9-pt label shrunk below 0.6 is under 7.5 px: no figure may be shown smaller (each has a phone
# rendering, aot_lib.book.two_widths).
PHONE_FIGURE_SCALE = 0.6
MAX_HEADER_LINES = 4  # a taller header leaves a blank gap above the short headers beside it
HEIGHT = 900
#: Pages with no content tables of their own (Sphinx's index and search pages).
SKIP_PAGES = {"genindex.html", "search.html", "py-modindex.html"}

# Runs in the page: every table in the article, the box it must fit in, and what a reader sees of it.
MEASURE_JS = r"""
const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
const out = [];
article.querySelectorAll('table').forEach((t, i) => {
  if (t.closest('.MathJax, mjx-container')) return;  // MathJax's own layout tables
  // every box between the table and the article that clips (overflow-x not visible) can hide part of it:
  // the one that hides most is what the reader has to scroll; with none, the article's column is the box
  let box = article, overflow = Math.round(t.getBoundingClientRect().right - article.getBoundingClientRect().right);
  for (let a = t.parentElement; a && a !== article; a = a.parentElement) {
    if (getComputedStyle(a).overflowX === 'visible') continue;
    const hidden = a.scrollWidth - a.clientWidth;
    if (box === article || hidden > overflow) { box = a; overflow = hidden; }
  }
  const title = t.closest('.aot-table-wrap')?.querySelector('.aot-table-title')?.innerText
             || t.querySelector('caption')?.innerText || '';
  const heads = [...t.querySelectorAll('thead th')].map((h) => h.innerText.trim().replace(/\s+/g, ' '));
  const first = [...t.querySelectorAll('tr')].find(r => r.getClientRects().length)?.cells[0];  // a shown row
  const cell = t.querySelector('td') || t.querySelector('th');
  const boxRect = box.getBoundingClientRect();
  out.push({
    index: i,
    title: title.trim().replace(/\s+/g, ' ').slice(0, 120),
    columns: heads.length || (t.querySelector('tr')?.cells.length || 0),
    headers: heads.slice(0, 12),
    table_width: Math.round(t.scrollWidth),
    box_width: Math.round(box.clientWidth),
    overflow: Math.max(0, overflow),
    box: box === article ? 'article' : (box.className || box.tagName.toLowerCase()).toString().slice(0, 60),
    first_column_visible: first ? first.getBoundingClientRect().left >= boxRect.left - 1 : true,
    font_px: cell ? parseFloat(getComputedStyle(cell).fontSize) : null,
    header_lines: Math.max(0, ...[...t.querySelectorAll('thead th')].map((h) => {
      const s = getComputedStyle(h);
      const text = h.getBoundingClientRect().height - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom);
      return Math.round(text / (parseFloat(s.lineHeight) || 1.5 * parseFloat(s.fontSize)));
    })),
  });
});
const figures = [];
article.querySelectorAll('img').forEach((img, i) => {
  if (img.closest('.MathJax, mjx-container')) return;
  const fig = img.closest('figure');
  figures.push({
    index: figures.length,
    src: (img.getAttribute('src') || '').split('/').pop().slice(0, 20),
    number: (fig?.querySelector('.caption-number')?.innerText || '').trim(),
    caption: (fig?.querySelector('.caption-text')?.innerText || '').trim().replace(/\s+/g, ' ').slice(0, 120),
    drawn_width: img.naturalWidth,
    shown_width: Math.round(img.getBoundingClientRect().width),
    // drawn at two widths (aot_lib.book.two_widths): the browser picked the phone's rendering below its width
    two_widths: !!img.closest('picture.aot-two-widths'),
    // a tap opens the image itself at full size (aot_book_build.wide_cells.link_images)
    enlarge: (img.closest('a')?.getAttribute('href') || '') === (img.getAttribute('src') || '-'),
  });
});
// as JSON: a NaN (a header without a line height) would otherwise fail the whole page's result
return JSON.stringify({
  tables: out,
  figures: figures,
  page_scroll_width: document.documentElement.scrollWidth,
  viewport_width: document.documentElement.clientWidth,
  article_width: Math.round(article.clientWidth),
});
"""

# At 1280 px: scroll each table and figure to a quarter of the window's height, let the theme react (it collapses
# the contents column to its title while a full-width cell is in view, sphinx-book-theme's own rule), and
# measure how far the element is drawn into the contents column's box: the pixels a reader sees covered.
COVER_JS = r"""
const done = arguments[arguments.length - 1];
const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
const side = document.querySelector('.bd-sidebar-secondary');
const items = [...article.querySelectorAll('table')].filter(t => !t.closest('.MathJax, mjx-container'))
  .map((t, i) => ['table', i, t.closest('.aot-table-wrap') || t]);
article.querySelectorAll('img').forEach(img => {
  if (!img.closest('.MathJax, mjx-container')) items.push(['figure', items.filter(x => x[0] === 'figure').length,
                                                           img.closest('figure') || img]);
});
const wait = ms => new Promise(r => setTimeout(r, ms));
(async () => {
  const out = [];
  for (const [kind, index, el] of items) {
    window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - window.innerHeight / 4);
    await wait(650);  // the theme's observer, then its 0.4 s collapse
    let over = 0;
    if (side && getComputedStyle(side).display !== 'none' && side.getBoundingClientRect().width > 0) {
      const a = el.getBoundingClientRect(), b = side.getBoundingClientRect();
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      over = (w > 0 && h > 0) ? Math.round(w) : 0;
    }
    out.push({kind, index, over_contents_px: over});
  }
  window.scrollTo(0, 0);
  done(JSON.stringify(out));
})();
"""

# MathJax typesets after load; measure when it is done (the headers' math changes their width).
WAIT_JS = r"""
const done = arguments[arguments.length - 1];
const ready = () => (window.MathJax && MathJax.startup && MathJax.startup.promise)
  ? MathJax.startup.promise.then(() => done(true), () => done(false)) : done(true);
if (document.readyState === 'complete') ready(); else window.addEventListener('load', ready);
"""


def problems_of(page: str, width: int, measured: dict) -> list[str]:
    """What does not fit on one page at one width, and each error its console showed (one line each, empty when
    everything fits and the console is clean)."""
    out = [f"{page} at {width} px: the browser's console shows an error: {message[:200]}"
           for message in measured.get("console_errors", [])]
    for t in measured["tables"]:
        what = f"{page} at {width} px: table {t['index'] + 1}" + (f" ({t['title'][:60]})" if t["title"] else "")
        if t.get("over_contents_px", 0) > 0:
            out.append(f"{what} is drawn {t['over_contents_px']} px into the contents column: tag its cell "
                       "full-width (the theme then folds the column away while it is in view)")
        if width != PHONE_WIDTH and t["overflow"] > 1:
            out.append(f"{what} is {t['table_width']} px wide in a {t['box_width']} px box: "
                       f"{t['overflow']} px need sideways scrolling")
        if width == PHONE_WIDTH:
            if t["font_px"] is not None and t["font_px"] < MIN_FONT_PX:
                out.append(f"{what} has {t['font_px']:g} px text, under {MIN_FONT_PX} px")
            if not t["first_column_visible"]:
                out.append(f"{what} hides its first column")
            if t["header_lines"] > MAX_HEADER_LINES:
                out.append(f"{what} has a header {t['header_lines']} lines tall (at most {MAX_HEADER_LINES}): "
                           "a blank gap above the other columns")
    for fig in measured.get("figures", []):
        if width == PHONE_WIDTH:
            # a phone shows a figure shrunk to the page; shrunk past PHONE_FIGURE_SCALE its labels are unreadable
            # unless a tap opens it at full size
            shown = fig["shown_width"] / fig["drawn_width"] if fig["drawn_width"] else 1
            if shown < PHONE_FIGURE_SCALE:  # a tap to enlarge does not excuse it (issue 59): a phone reads the page
                out.append(f"{page} at {width} px: {fig['number'] or 'image ' + str(fig['index'] + 1)} is shown at "
                           f"{shown:.0%} of its size: display it as a matplotlib figure after open_chapter() "
                           "(aot_lib.book.two_widths draws it narrow for a phone)")
            continue
        what = f"{page} at {width} px: " + (f"{fig['number']} ({fig['caption'][:50]})" if fig["number"]
                                            else f"image {fig['index'] + 1} ({fig['src']})")
        if fig.get("over_contents_px", 0) > 0:
            out.append(f"{what} is drawn {fig['over_contents_px']} px into the contents column: tag its cell "
                       "full-width (the theme then folds the column away while it is in view)")
        if not (fig["number"] and fig["caption"]):
            out.append(f"{what} is not a numbered, captioned figure: give its cell mystnb.figure metadata "
                       "(caption and name)")
        if fig["drawn_width"] and fig["shown_width"] < MIN_FIGURE_SCALE * fig["drawn_width"]:
            out.append(f"{what} is drawn {fig['drawn_width']} px wide but shown at {fig['shown_width']} px "
                       f"({fig['shown_width'] / fig['drawn_width']:.0%}): draw it at most FIGURE_WIDTH_IN wide "
                       "(aot_lib.book.plotting)")
    if measured["page_scroll_width"] > measured["viewport_width"] + 1:  # at any width: a column past the edge
        out.append(f"{page} at {width} px: the page is {measured['page_scroll_width']} px wide in a "
                   f"{measured['viewport_width']} px window: it scrolls sideways")
    return out


def browser():
    """Headless Chromium through selenium, or a one-line reason why not."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None, "selenium is not installed: pip install -e '.[browser]'"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (chromium and driver):
        return None, "chromium and chromedriver are not installed: apt-get install chromium chromium-driver"
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    opts.set_capability("goog:loggingPrefs", {"browser": "SEVERE"})  # the console's errors, read per page
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--hide-scrollbars", "--force-device-scale-factor=1", f"--window-size=1280,{HEIGHT}"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(driver), options=opts), ""


def serve(root: Path) -> http.server.ThreadingHTTPServer:
    """The built book on a free local port (quietly), so that pages load as from a web server."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            pass  # the browser dropped a connection (a favicon it stopped waiting for): nothing to report

    server = Server(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def measure(html_dir: Path, widths=WIDTHS, screenshots: Path | None = None, pages: list[str] | None = None):
    """``{page: {width: measurement}}`` for every page of the built book (or the given ``pages``)."""
    pages = pages or sorted(str(p.relative_to(html_dir)) for p in html_dir.rglob("*.html")
                            if "_static" not in p.relative_to(html_dir).parts and p.name not in SKIP_PAGES)
    driver, why = browser()
    if driver is None:
        raise RuntimeError(why)
    server = serve(html_dir)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    result: dict = {}
    try:
        driver.set_script_timeout(600)  # COVER_JS scrolls to every table and figure of a page in turn
        for width in widths:
            # the viewport itself, not the window: the page lays out for exactly this many CSS pixels
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": width, "height": HEIGHT, "deviceScaleFactor": 1,
                                    "mobile": width == PHONE_WIDTH})
            for page in pages:
                driver.get(base + page)
                driver.execute_async_script(WAIT_JS)
                result.setdefault(page, {})[width] = json.loads(driver.execute_script(MEASURE_JS))
                # what the page's scripts reported as errors while it loaded (issue 59: one on every page)
                # (the browser's own request for /favicon.ico, which no page asks for, is not the page's error)
                result[page][width]["console_errors"] = [e["message"] for e in driver.get_log("browser")
                                                         if e.get("level") == "SEVERE"
                                                         and "/favicon.ico " not in e["message"]]
                if width != PHONE_WIDTH:
                    covered = json.loads(driver.execute_async_script(COVER_JS))
                    m = result[page][width]
                    for c in covered:
                        m["tables" if c["kind"] == "table" else "figures"][c["index"]]["over_contents_px"] = \
                            c["over_contents_px"]
                if screenshots is not None:
                    shot = screenshots / f"{page.replace('/', '_').removesuffix('.html')}_{width}.png"
                    shot.parent.mkdir(parents=True, exist_ok=True)
                    driver.save_screenshot(str(shot))
    finally:
        driver.quit()
        server.shutdown()
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("html_dir", type=Path, help="the built book (book/_build/html)")
    ap.add_argument("--report", type=Path, default=None, help="JSON report (default HTML_DIR/../tables.json)")
    ap.add_argument("--screenshots", type=Path, default=None, help="a folder for one screenshot per page and width")
    ap.add_argument("--page", action="append", default=None, help="only this page (relative to HTML_DIR); repeatable")
    args = ap.parse_args(argv)
    if not (args.html_dir / "index.html").exists():
        print(f"check_tables: no built book in {args.html_dir}: build it first (README command 1)", file=sys.stderr)
        return 2
    try:
        measured = measure(args.html_dir, screenshots=args.screenshots, pages=args.page)
    except RuntimeError as e:
        print(f"check_tables: {e}", file=sys.stderr)
        return 2
    problems = [p for page, by_width in measured.items() for w, m in by_width.items()
                for p in problems_of(page, w, m)]
    report = args.report or args.html_dir.parent / "tables.json"
    report.write_text(json.dumps({"widths": list(WIDTHS), "pages": measured, "problems": problems}, indent=1))
    for p in problems:
        print(p, file=sys.stderr)
    n = sum(len(m["tables"]) for by_width in measured.values() for m in by_width.values())
    n_fig = sum(len(m.get("figures", [])) for by_width in measured.values() for m in by_width.values())
    print(f"check_tables: {len(measured)} pages, {n} tables and {n_fig} figures measured at {' and '.join(map(str, WIDTHS))} px, "
          f"{len(problems)} problem(s); report {report}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
