"""scripts/check_tables.py: what counts as a table that does not fit (exact messages, no browser), and the book's
table CSS measured in headless Chromium on a small page laid out like the book's (a 688 px text column beside the
contents sidebar at 1280 px; the whole width at 420 px), with tables rendered by aot_lib.book.tables."""
import importlib.util
import re
import shutil
from pathlib import Path

import pytest

from aot_lib.book.tables import Col, Table

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_tables", ROOT / "scripts" / "check_tables.py")
check_tables = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_tables)


def _table(**over):
    t = {"index": 0, "title": "Table 1 at CPU scale", "columns": 12, "headers": [], "table_width": 900,
         "box_width": 688, "overflow": 212, "box": "aot-table-wrap", "first_column_visible": True,
         "font_px": 12.8, "header_lines": 3}
    return {**t, **over}


def _page(tables, page_width=1280, viewport=1280):
    return {"tables": tables, "page_scroll_width": page_width, "viewport_width": viewport, "article_width": 688}


def test_a_table_that_needs_sideways_scrolling_at_1280_px_is_named():
    assert check_tables.problems_of("ch.html", 1280, _page([_table()])) == [
        "ch.html at 1280 px: table 1 (Table 1 at CPU scale) is 900 px wide in a 688 px box: "
        "212 px need sideways scrolling"]
    # one pixel is rounding, not scrolling
    assert check_tables.problems_of("ch.html", 1280, _page([_table(overflow=1, title="")])) == []
    assert check_tables.problems_of("ch.html", 1280, _page([_table(overflow=2, title="", index=4)])) == [
        "ch.html at 1280 px: table 5 is 900 px wide in a 688 px box: 2 px need sideways scrolling"]


def test_a_page_that_scrolls_sideways_at_1280_px_is_named_though_every_table_fits_its_box():
    """A table as wide as its box passes the box check, yet the box can run past the window's edge: the page then
    scrolls sideways and the last columns are cut off at the edge (the built book's wide tables at 1280 px before
    the full-width cells capped them)."""
    fits = _table(table_width=1273, box_width=1273, overflow=0)
    assert check_tables.problems_of("ch.html", 1280, _page([fits], 1561, 1280)) == [
        "ch.html at 1280 px: the page is 1561 px wide in a 1280 px window: it scrolls sideways"]
    assert check_tables.problems_of("ch.html", 1280, _page([fits], 1281, 1280)) == []  # 1 px is rounding


def test_on_a_phone_a_table_may_scroll_in_its_box_but_must_stay_readable():
    assert check_tables.problems_of("ch.html", 420, _page([_table()], 420, 420)) == []  # scrolls in its own box
    bad = _table(font_px=10.5, first_column_visible=False, header_lines=7)
    assert check_tables.problems_of("ch.html", 420, _page([bad], 505, 420)) == [
        "ch.html at 420 px: table 1 (Table 1 at CPU scale) has 10.5 px text, under 11 px",
        "ch.html at 420 px: table 1 (Table 1 at CPU scale) hides its first column",
        "ch.html at 420 px: table 1 (Table 1 at CPU scale) has a header 7 lines tall (at most 4): "
        "a blank gap above the other columns",
        "ch.html at 420 px: the page is 505 px wide in a 420 px window: it scrolls sideways"]


def _figure(**over):
    fig = {"index": 0, "src": "ab12.png", "number": "Fig. 3.1", "caption": "The three ADMM runs",
           "drawn_width": 900, "shown_width": 900}
    return {**fig, **over}


def test_a_figure_must_be_numbered_captioned_and_shown_at_the_size_it_was_drawn():
    page = _page([])
    page["figures"] = [_figure(), _figure(index=1, drawn_width=1540, shown_width=936),
                       _figure(index=2, number="", caption="", src="cd34.png", drawn_width=489,
                               shown_width=489)]
    assert check_tables.problems_of("ch.html", 1280, page) == [
        "ch.html at 1280 px: Fig. 3.1 (The three ADMM runs) is drawn 1540 px wide but shown at 936 px "
        "(61%): draw it at most FIGURE_WIDTH_IN wide (aot_lib.book.plotting)",
        "ch.html at 1280 px: image 3 (cd34.png) is not a numbered, captioned figure: give its cell "
        "mystnb.figure metadata (caption and name)"]
    # 90 % of the drawn width is still readable (9 pt text at 100 dpi stays above 11 px)
    page["figures"] = [_figure(shown_width=810)]
    assert check_tables.problems_of("ch.html", 1280, page) == []
    # on a phone a figure shrinks to the page: under 60 % it is named, a tap to enlarge or not (issue 59)
    phone = _page([], 420, 420) | {"figures": [_figure(shown_width=380, enlarge=False),
                                               _figure(index=1, shown_width=380, enlarge=True),
                                               _figure(index=2, shown_width=560, enlarge=False)]}
    assert check_tables.problems_of("ch.html", 420, phone) == [
        "ch.html at 420 px: Fig. 3.1 is shown at 42% of its size: display it as a matplotlib figure after "
        "open_chapter() (aot_lib.book.two_widths draws it narrow for a phone)"] * 2
    # at 1280 px a figure or table drawn into the contents column is named
    page["figures"] = [_figure(over_contents_px=186)]
    assert check_tables.problems_of("ch.html", 1280, page) == [
        "ch.html at 1280 px: Fig. 3.1 (The three ADMM runs) is drawn 186 px into the contents column: tag its "
        "cell full-width (the theme then folds the column away while it is in view)"]


# ----------------------------------------------------------------------------- in Chromium

# The book's layout at the two widths, as sphinx-book-theme draws it (measured on the built book: a 688 px
# article column between a 256 px navigation bar and the contents sidebar at 1280 px; at 420 px the column is
# the window less 16 px a side) and myst-nb's scrolling output box; the tables' own CSS is the book's.
LAYOUT = """
body { margin: 0; font-family: sans-serif; }
main { display: flex; }
.nav { width: 256px; flex: none; }
article.bd-article { width: 688px; flex: none; }
.toc { width: 300px; flex: none; position: relative; z-index: 2; }
@media (max-width: 1199.98px) {
  .nav, .toc { display: none; }
  article.bd-article { width: auto; flex: 1; padding: 0 16px; min-width: 0; }
}
div.output.text_html { overflow-x: auto; }
@media (min-width: 992px) { div.cell.tag_full-width { width: 136%; max-width: 136%; position: relative; } }
"""


def _book_page(folder: Path, *tables: Table, figures: tuple[int, ...] = ()) -> None:
    """The book's layout with these tables as cell outputs, then one figure per width in ``figures``: a PNG of
    that many pixels wide in a numbered, captioned figure as myst-nb writes it."""
    from PIL import Image

    shutil.copy(ROOT / "book" / "_static" / "aot.css", folder / "aot.css")
    from aot_book_build.wide_cells import link_images, widen_cells

    outputs = "".join(f'<div class="output text_html">{t._repr_html_()}</div>' for t in tables)
    for i, width in enumerate(figures):
        Image.new("RGB", (width, 200), "white").save(folder / f"fig{i}.png")
        outputs += (f'<div class="cell_output docutils container"><figure class="align-default" id="fig-{i}">'
                    f'<img alt="" src="fig{i}.png" /><figcaption><p><span class="caption-number">Fig. 1.{i + 1} '
                    f'</span><span class="caption-text">{"A caption long enough to wrap. " * 12}</span></p>'
                    '</figcaption></figure></div>')
    # as the book's build does (aot_book_build.wide_cells): a tap enlarges, a wide output's cell is full-width
    outputs = widen_cells(link_images(f'<div class="cell docutils container">{outputs}</div>'),
                          lambda src: Image.open(folder / src).width)
    (folder / "index.html").write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<style>{LAYOUT}</style><link rel="stylesheet" href="aot.css"></head><body><main>'
        f'<div class="nav"></div><article class="bd-article"><h1>A chapter</h1>{outputs}</article>'
        '<div class="toc">Contents</div></main></body></html>')


def _needs_chromium():
    _, why = check_tables.browser()  # a browser started only to learn whether one can be: quit at once
    if _ is not None:
        _.quit()
    else:
        pytest.skip(f"needs chromium, chromedriver and selenium: {why}")


def table_one() -> Table:
    """Shaped like chapter 7's Table 1: 12 columns, text and numbers, three of the paper's with long headers."""
    rows = [("AoT-ADMM", "CIFAR-100", seed, 0.49, 0.018, 30.6, 51.02, 50.04, "recorded", 3.64, 0.13, 84.22)
            for seed in (0, 1)]
    cols = [Col("model"), Col("data"), Col("seed"), Col("p", "params (M)", ".2f"), Col("g", "GFLOPs", ".3f"),
            Col("t", "pretraining (min)", ".1f"), Col("lin", "linear top-1 (%)", ".2f"),
            Col("knn", "k-NN top-1 (%)", ".2f"), Col("run"), Col("pp", "params (M), Tiny", ".2f", paper=True),
            Col("pg", "GFLOPs, Tiny", ".2f", paper=True),
            Col("pl", "linear top-1 (%), Tiny, 800 ep.", ".2f", paper=True)]
    return Table(rows, cols, caption="Table 1 at CPU scale", notes=["A note long enough to wrap " * 8])


def test_the_book_css_fits_a_wide_table_at_1280_px_and_keeps_it_readable_at_420_px(tmp_path):
    """Table 1's shape is 996 px wide in the book's 688 px column with the old CSS; with the book's CSS it fits
    (grown into the margin, smaller type) at 1280 px, and at 420 px scrolls inside its box, first column in
    view, text of 12.8 px (0.8 rem), no header taller than 4 lines, the page itself not scrolling."""
    _needs_chromium()
    _book_page(tmp_path, table_one())
    measured = check_tables.measure(tmp_path)["index.html"]
    for width in check_tables.WIDTHS:
        assert check_tables.problems_of("index.html", width, measured[width]) == [], measured[width]
    wide, phone = measured[1280]["tables"][0], measured[420]["tables"][0]
    assert measured[1280]["article_width"] == 688
    assert wide["box"].startswith("aot-table-wrap aot-table-wide") and 688 < wide["box_width"] <= 936
    assert wide["font_px"] == phone["font_px"] == 12.8  # 0.8 rem of 16 px
    assert phone["overflow"] > 0 and phone["first_column_visible"]  # it scrolls, in its own box
    assert measured[420]["page_scroll_width"] == 420


def test_chromium_names_a_table_too_wide_even_for_the_margin(tmp_path):
    """Thirty columns of numbers cannot fit 136 % of the column: the check says by how much, with the box's
    width (grown past the 688 px column) and the table's."""
    _needs_chromium()
    many = Table([tuple(range(10**6, 10**6 + 30))], [Col(f"c{i}", f"c{i}") for i in range(30)],
                 caption="Thirty columns")
    _book_page(tmp_path, many)
    measured = check_tables.measure(tmp_path, widths=(1280,))["index.html"]
    (problem,) = check_tables.problems_of("index.html", 1280, measured[1280])
    m = re.fullmatch(r"index\.html at 1280 px: table 1 \(Thirty columns\) is (\d+) px wide in a (\d+) px box: "
                     r"(\d+) px need sideways scrolling", problem)
    assert m, problem
    table, box, hidden = map(int, m.groups())
    assert 688 < box <= 936 and table - box == hidden > 0


def test_the_book_css_shows_a_figure_drawn_for_the_page_at_full_size(tmp_path):
    """A figure drawn 900 px wide (FIGURE_WIDTH_IN at 100 dpi) is shown at 900 px beside the contents sidebar at
    1280 px (it grows past the 688 px column, its long caption does not widen it) and shrinks to the page at
    420 px without the page scrolling sideways; one drawn 1540 px wide is capped at 136 % of the column and
    named."""
    _needs_chromium()
    _book_page(tmp_path, figures=(900, 1540))
    measured = check_tables.measure(tmp_path)["index.html"]
    fit, wide = measured[1280]["figures"]
    assert (fit["drawn_width"], fit["shown_width"], fit["number"]) == (900, 900, "Fig. 1.1")
    assert wide["shown_width"] == round(1.36 * 688)
    (problem,) = check_tables.problems_of("index.html", 1280, measured[1280])
    assert problem.startswith("index.html at 1280 px: Fig. 1.2 (A caption long enough to wrap.")
    assert "is drawn 1540 px wide but shown at 936 px (61%)" in problem
    assert [f["shown_width"] for f in measured[420]["figures"]] == [420 - 32] * 2
    # a PNG alone shrinks on a phone, 900 px to 388 (43 %): named, a tap to enlarge or not
    assert check_tables.problems_of("index.html", 420, measured[420]) == [
        f"index.html at 420 px: Fig. 1.{i} is shown at {388 / w:.0%} of its size: display it as a matplotlib "
        "figure after open_chapter() (aot_lib.book.two_widths draws it narrow for a phone)"
        for i, w in ((1, 900), (2, 1540))]


def test_a_figure_at_two_widths_shows_its_phone_rendering_on_a_phone(tmp_path):
    """aot_lib.book.two_widths in Chromium: a three-panel figure shows its 9 in rendering at 1280 px (a full-width
    cell: its img names its drawn width) and at 420 px the stacked 4 in one, shown at no less than 90 % of it."""
    _needs_chromium()
    matplotlib = pytest.importorskip("matplotlib", reason="matplotlib draws the figure")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from aot_book_build.wide_cells import widen_cells
    from aot_lib.book.two_widths import two_width_html

    fig, axes = plt.subplots(1, 3, figsize=(9, 3))
    for ax in axes:
        ax.plot([0, 1], [1, 0])
    html = two_width_html(fig)
    plt.close(fig)
    shutil.copy(ROOT / "book" / "_static" / "aot.css", tmp_path / "aot.css")
    cell = widen_cells('<div class="cell docutils container"><div class="cell_output docutils container"><figure '
                       'class="align-default" id="fig-0"><div class="output text_html">' + html + '</div><figcaption>'
                       '<p><span class="caption-number">Fig. 1.1 </span><span class="caption-text">Three panels'
                       '</span></p></figcaption></figure></div></div>', lambda src: 0)
    assert "tag_full-width" in cell
    (tmp_path / "index.html").write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<style>{LAYOUT}</style><link rel="stylesheet" href="aot.css"></head><body><main>'
        f'<div class="nav"></div><article class="bd-article"><h1>A chapter</h1>{cell}</article>'
        '<div class="toc">Contents</div></main></body></html>')
    measured = check_tables.measure(tmp_path)["index.html"]
    (wide,), (phone,) = measured[1280]["figures"], measured[420]["figures"]
    assert wide["two_widths"] and phone["two_widths"]
    assert wide["drawn_width"] > 600 and phone["drawn_width"] <= 400  # a different rendering at each width
    assert phone["shown_width"] >= 0.9 * phone["drawn_width"]
    for width in check_tables.WIDTHS:
        assert check_tables.problems_of("index.html", width, measured[width]) == [], measured[width]


def test_a_cell_with_a_table_or_a_figure_wider_than_the_column_becomes_a_full_width_cell():
    """aot_book_build.wide_cells: the theme folds its contents column away while a full-width cell is in view; a cell
    with a table or an image drawn wider than 688 px gets the tag, a cell with a narrow image or plain text not."""
    from aot_book_build.wide_cells import widen_cells

    widths = {"../_images/wide.png": 900, "../_images/narrow.png": 500}
    body = ('<div class="cell tag_hide-input docutils container"><div class="aot-table-wrap"><table></table></div>'
            '</div><div class="cell docutils container"><div class="cell_output docutils container"><figure>'
            '<img alt="x" src="../_images/wide.png"/></figure></div></div><div class="cell docutils container"><img src="../_images/narrow.png"/></div>'
            '<div class="cell docutils container"><pre>text</pre></div>')
    got = widen_cells(body, lambda src: widths.get(src, 0))
    assert [c.split('"')[1] for c in got.split('<div class=')[1:] if c.startswith('"cell')] == [
        "cell tag_full-width tag_hide-input docutils container", "cell tag_full-width docutils container",
        "cell_output docutils container", "cell docutils container", "cell docutils container"]
    assert widen_cells(got, lambda src: widths.get(src, 0)) == got  # tagged once
    # a figure at two widths is a data URI: its img names the page rendering's width
    for drawn, tagged in ((900, True), (500, False)):
        cell = (f'<div class="cell docutils container"><picture><img src="data:image/png;base64,AAAA" alt="figure" '
                f'data-drawn-width="{drawn}"></picture></div>')
        assert ("tag_full-width" in widen_cells(cell, lambda src: 0)) is tagged


def test_every_figure_image_opens_at_full_size_on_a_tap():
    from aot_book_build.wide_cells import link_images

    body = ('<figure class="align-default" id="fig-a">\n<img alt="../_images/a.png" src="../_images/a.png" />\n'
            '<figcaption>A</figcaption></figure><p><img src="../_images/inline.png"/></p>')
    assert link_images(body) == (
        '<figure class="align-default" id="fig-a">\n<a class="aot-enlarge" href="../_images/a.png" title="open '
        'the figure at full size"><img alt="../_images/a.png" src="../_images/a.png" /></a>\n'
        '<figcaption>A</figcaption></figure><p><img src="../_images/inline.png"/></p>')


def test_on_a_phone_a_list_table_reads_as_labelled_lines_where_a_grid_would_scroll(tmp_path):
    """Table(..., phone="list") (chapter 10's GPU commands): at 420 px each row becomes its cells one under the
    other, labelled by their headers, so nothing scrolls sideways; the same rows as a grid need scrolling there.
    At 1280 px both are the same grid."""
    _needs_chromium()
    rows = [("Table 1", f"paper_t1_run{i}", "aot_admm_tiny", "cifar10",
             f"aot pretrain -c configs/paper/table1/run{i}.yaml && aot probe -c configs/paper/table1/run{i}.yaml",
             "") for i in range(3)]
    cols = [Col("table"), Col("run"), Col("model"), Col("data"), Col("command"), Col("after", "reads")]
    _book_page(tmp_path, Table(rows, cols, caption="as a grid"), Table(rows, cols, caption="as a list", phone="list"))
    measured = check_tables.measure(tmp_path)["index.html"]
    grid, listed = measured[420]["tables"]
    assert grid["overflow"] > 0 and listed["overflow"] == 0, measured[420]["tables"]
    assert measured[420]["page_scroll_width"] == 420
    assert measured[1280]["tables"][0]["table_width"] == measured[1280]["tables"][1]["table_width"]
    with pytest.raises(ValueError) as e:
        Table(rows, cols, phone="stack")
    assert str(e.value) == ("phone must be 'scroll' (the table scrolls in its box) or 'list' (each row a list of "
                            "labelled lines), got 'stack'")


def test_a_console_error_of_a_page_is_named_with_its_width():
    """Issue 59: every page logged "Identifier 'THEBE_JS_URL' has already been declared". The browser's SEVERE
    console entries are read per page and width, and each is a problem."""
    m = {**_page([]), "console_errors": ["http://127.0.0.1/ch.html 12:5 Uncaught SyntaxError: Identifier "
                                         "'THEBE_JS_URL' has already been declared"]}
    assert check_tables.problems_of("ch.html", 1280, m) == [
        "ch.html at 1280 px: the browser's console shows an error: http://127.0.0.1/ch.html 12:5 Uncaught "
        "SyntaxError: Identifier 'THEBE_JS_URL' has already been declared"]


def test_chromium_reads_a_pages_console_errors(tmp_path):
    """A page whose script declares one name twice shows the browser's error; a clean page shows none."""
    _needs_chromium()
    _book_page(tmp_path)
    clean = check_tables.measure(tmp_path, widths=(1280,))["index.html"][1280]
    assert clean["console_errors"] == []
    page = (tmp_path / "index.html").read_text()
    (tmp_path / "index.html").write_text(page.replace("</body>", "<script>const X = 1;</script>"
                                                                  "<script>const X = 2;</script></body>"))
    noisy = check_tables.measure(tmp_path, widths=(1280,))["index.html"][1280]
    assert len(noisy["console_errors"]) == 1 and "Identifier 'X' has already been declared" in noisy["console_errors"][0]


def test_on_a_phone_code_in_a_table_keeps_its_words_and_a_filled_in_path_wraps(tmp_path):
    """Two things a phone showed in the built book (390 px, chapter 1 and chapter 7). A Markdown table whose last
    column is code: breaking code anywhere let the browser shrink that column to one letter, `aot_lib` one letter
    a line and the header 6 lines tall; the book's CSS breaks a cell's code only at its spaces. A run's config path
    filled into a sentence ({eval}, myst-nb's span.output.text_plain) could not break and widened the page; it now
    wraps. At 420, 390 and 360 px every code word keeps to one line and the page does not scroll sideways."""
    _needs_chromium()
    shutil.copy(ROOT / "book" / "_static" / "aot.css", tmp_path / "aot.css")

    def code(text):
        return f'<code class="docutils literal notranslate"><span class="pre">{text}</span></code>'
    rows = "".join(f"<tr><td><p>term {i}</p></td><td><p>compression</p></td><td><p><strong>network</strong>: ADMM "
                   f"step = MSSA</p></td><td><p>{code('SIGReg')}, {code('LeJEPALoss')}</p></td></tr>"
                   for i in range(3))
    table = (f'<div class="pst-scrollable-table-container"><table class="table"><thead><tr><th class="head"><p>term'
             f'</p></th><th class="head"><p>role</p></th><th class="head"><p>where it goes</p></th><th class="head">'
             f'<p>in {code("aot_lib")}</p></th></tr></thead><tbody>{rows}</tbody></table></div>')
    path = "results/cpu/search2/search2_r11_w256_d4_aot_admm/reprobes/1.json"
    sentence = f'<p>The run (<span class="output text_plain">{path}</span>) was probed again.</p>'
    (tmp_path / "index.html").write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<style>{LAYOUT} .pst-scrollable-table-container {{ overflow-x: auto; }}</style>'
        '<link rel="stylesheet" href="aot.css"></head><body><main><div class="nav"></div><article class="bd-article">'
        f'<h1>A chapter</h1>{sentence}{table}</article><div class="toc">Contents</div></main></body></html>')
    driver, why = check_tables.browser()
    server = check_tables.serve(tmp_path)
    try:
        for width in (check_tables.PHONE_WIDTH, 390, 360):  # the check's phone width, an iPhone's, an Android's
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": True})
            driver.get(f"http://127.0.0.1:{server.server_address[1]}/index.html")
            # each code word's line boxes (an inline element broken across lines has one rect a line)
            lines = driver.execute_script(
                "return Array.from(document.querySelectorAll('table code span.pre'), s => s.getClientRects().length)")
            assert lines == [1] * 7, (width, lines)  # aot_lib, then SIGReg and LeJEPALoss in each of 3 rows
            assert driver.execute_script("return document.documentElement.scrollWidth") == width
    finally:
        driver.quit()
        server.shutdown()
