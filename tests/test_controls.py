"""aot_lib.book.controls and scripts/check_controls.py: a panel's widgets look up states computed in Python, and the
browser check moves every widget in headless Chromium and names the one that drives nothing."""
import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("bokeh", reason="the controls need bokeh: pip install -e '.[book]' (or '.[dev]')")

from aot_lib.book import controls  # noqa: E402
from aot_lib.book.controls import Choice, lookup_panel  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_controls", ROOT / "scripts" / "check_controls.py")
check_controls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_controls)


def _curve(a, kind):
    x = np.linspace(0.0, 1.0, 9)
    return {"curve": {"x": x, "y": np.sin(a * x) if kind == "sin" else np.cos(a * x)}}


def _draw(targets):
    from bokeh.plotting import figure

    fig = figure(height=200, sizing_mode="stretch_width")
    fig.line("x", "y", source=targets["curve"])
    return fig


def test_every_combination_is_precomputed_and_keyed_by_the_widgets_positions():
    panel = lookup_panel([Choice("a", "a", [1.0, 2.0, 3.0], 2.0), Choice("kind", "kind", ["sin", "cos"], "cos")],
                         _curve, _draw)
    assert sorted(panel.states) == ["0,0", "0,1", "1,0", "1,1", "2,0", "2,1"]
    # state "2,1" is a = 3.0 with cos: the values Python computed, rounded to 5 significant digits
    expected = [float(f"{v:.5g}") for v in np.cos(3.0 * np.linspace(0.0, 1.0, 9))]
    assert panel.states["2,1"]["curve"]["y"] == expected
    # the figure starts at the defaults (a = 2.0, cos)
    source = panel.layout.children[1].renderers[0].data_source
    assert source.data["y"] == panel.states["1,1"]["curve"]["y"]


def test_a_choice_refuses_a_default_off_its_grid_and_a_slider_with_unequal_steps():
    with pytest.raises(ValueError) as e:
        Choice("eta", "η", [0.1, 0.2], 0.25)
    assert str(e.value) == ("control 'eta': default 0.25 is not one of its values [0.1, 0.2]; add it to the grid or "
                            "pick one of them")
    with pytest.raises(ValueError) as e:
        Choice("m", "margin", [0.5, 1.0, 2.0], 1.0)
    assert str(e.value) == ("control 'm': slider values must rise in equal steps, got [0.5, 1.0, 2.0]; use strings "
                            "for a drop-down list")


def test_states_that_name_different_targets_are_refused():
    with pytest.raises(ValueError) as e:
        lookup_panel([Choice("k", "k", ["a", "b"], "a")], lambda k: {"curve": {"x": [0], "y": [0]}} if k == "a"
                     else {"other": "<p>b</p>"}, _draw)
    assert str(e.value) == ("state 1 names ['other'], the default names ['curve']: every state must give the same "
                            "targets")


def test_in_the_book_the_panel_leaves_bokehjs_to_the_page_and_in_jupyterlab_carries_it(monkeypatch):
    panel = lookup_panel([Choice("a", "a", [1.0, 2.0], 1.0)], lambda a: _curve(a, "sin"), _draw)
    monkeypatch.setenv(controls.BUILD_ENV, "1")
    book = panel._repr_html_()
    monkeypatch.delenv(controls.BUILD_ENV)
    lab = panel._repr_html_()
    bokeh_js = (controls._bokeh_js_dir() / "bokeh.min.js").read_text()
    assert bokeh_js[:200] not in book and bokeh_js[:200] in lab
    assert "http://" not in book and "https://" not in book  # nothing loaded from another host
    assert book.startswith('<div class="aot-control">')


def _needs_chromium():
    driver, why = check_controls.check_tables.browser()
    if driver is None:
        pytest.skip(f"needs chromium, chromedriver and selenium: {why}")
    driver.quit()


def test_chromium_moves_each_control_and_names_the_one_that_drives_nothing(tmp_path, monkeypatch):
    """Two panels on one page: in the first both widgets change the curve; in the second the drop-down list is
    ignored by its states (a control wired to nothing), which the check must name."""
    _needs_chromium()
    monkeypatch.setenv(controls.BUILD_ENV, "1")
    good = lookup_panel([Choice("a", "a", [1.0, 2.0, 3.0], 2.0), Choice("kind", "kind", ["sin", "cos"], "sin")],
                        _curve, _draw)
    dead = lookup_panel([Choice("a", "a", [1.0, 2.0], 1.0), Choice("kind", "ignored", ["sin", "cos"], "sin")],
                        lambda a, kind: _curve(a, "sin"), _draw)
    static = tmp_path / "_static" / "bokeh"
    static.mkdir(parents=True)
    for f in controls.BOKEH_FILES:
        shutil.copyfile(controls._bokeh_js_dir() / f, static / f)
    scripts = "".join(f'<script src="_static/bokeh/{f}"></script>' for f in controls.BOKEH_FILES)
    (tmp_path / "index.html").write_text(f"<html><head>{scripts}</head><body style='width:800px'>"
                                         f"{good._repr_html_()}{dead._repr_html_()}</body></html>")
    report = check_controls.check(tmp_path)
    widgets = [(w["title"], w["moved_to"], w["changed"]) for p in report["pages"]["index.html"]["panels"]
               for w in p["widgets"]]
    assert widgets == [("a", 3.0, True), ("kind", "cos", True), ("a", 2.0, True), ("ignored", "cos", False)]
    assert check_controls.problems_of(report, min_panels=2, min_pages=1) == [
        "index.html: panel 2, control 'ignored' moved to 'cos' changes nothing it shows"]
    assert check_controls.problems_of(report, min_panels=6, min_pages=4)[-1] == (
        "the book has 2 control panel(s) on 1 page(s); at least 6 on 4 pages are asked for")
    assert report["pages"]["index.html"]["errors"] == []
