"""aot_lib.book.controls and scripts/check_controls.py: a panel's widgets look up states computed in Python, and the
browser check moves every widget in headless Chromium and names the one that drives nothing."""
import importlib.util
import os
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


def test_a_state_that_cannot_be_drawn_is_refused_while_the_chapter_runs(monkeypatch):
    """Issue 57: one state (a = 3.0, cos) gives y one value short of x: refused when the panel is built, naming the
    chapter (set by the book's build, book/_ext/aot_book_build/bokeh_pages.py), the panel and the widgets' values,
    not shipped for the reader to meet as a broken figure; in JupyterLab it names the notebook instead."""
    def ragged_demo_panel():
        def state(a, kind):
            got = _curve(a, kind)
            if (a, kind) == (3.0, "cos"):
                got["curve"]["y"] = got["curve"]["y"][:-1]
            return got
        return lookup_panel([Choice("a", "a (scale)", [1.0, 2.0, 3.0], 2.0), Choice("kind", "kind", ["sin", "cos"],
                                                                                  "cos")], state, _draw)

    monkeypatch.setenv(controls.PAGE_ENV, "notebooks/03_admm_unrolled")
    with pytest.raises(ValueError) as e:
        ragged_demo_panel()
    assert str(e.value) == ("chapter notebooks/03_admm_unrolled: control panel ragged_demo_panel cannot draw its state at "
                            "a (scale) = 3.0, kind = 'cos': the columns of 'curve' differ in length (x 9, y 8); fix what "
                            "the panel's state function returns for these values")
    monkeypatch.delenv(controls.PAGE_ENV)
    with pytest.raises(ValueError, match=r"^this notebook: control panel ragged_demo_panel cannot draw"):
        ragged_demo_panel()


def test_a_state_that_renames_a_column_is_refused():
    """A state whose source lacks a column the figure reads (y renamed acc for one value) draws nothing in the
    browser: refused, naming the state and both column lists."""
    def state(a, kind):
        got = _curve(a, kind)
        if a == 3.0:
            got["curve"]["acc"] = got["curve"].pop("y")
        return got

    with pytest.raises(ValueError) as e:
        lookup_panel([Choice("a", "a", [1.0, 2.0, 3.0], 2.0), Choice("kind", "kind", ["sin", "cos"], "cos")], state,
                     _draw)
    assert str(e.value) == ("state 2,0 gives 'curve' the columns ['acc', 'x'], the default ['x', 'y']: every state "
                            "must give the same columns")


def test_the_books_build_names_each_page_before_its_chapter_runs(monkeypatch):
    """The Sphinx extension sets AOT_BOOK_PAGE on every page it reads (the kernel myst-nb starts inherits it) and
    AOT_BOOK_BUILD once; these are the names a refusal and a panel read."""
    import aot_book_build.bokeh_pages as ext

    events = {}

    class App:
        def connect(self, event, fn):
            events[event] = fn

    monkeypatch.delenv(controls.BUILD_ENV, raising=False)
    monkeypatch.delenv(controls.PAGE_ENV, raising=False)
    ext.setup(App())
    assert os.environ[controls.BUILD_ENV] == "1" and set(events) == {"source-read", "html-page-context",
                                                                      "build-finished"}
    events["source-read"](App(), "notebooks/10_white_box", [""])
    assert os.environ[controls.PAGE_ENV] == "notebooks/10_white_box"


def test_in_the_book_the_panel_leaves_bokehjs_to_the_page_and_in_jupyterlab_carries_it(monkeypatch):
    panel = lookup_panel([Choice("a", "a", [1.0, 2.0], 1.0)], lambda a: _curve(a, "sin"), _draw)
    monkeypatch.setenv(controls.BUILD_ENV, "1")
    book = panel._repr_html_()
    monkeypatch.delenv(controls.BUILD_ENV)
    lab = panel._repr_html_()
    bokeh_js = (controls.bokeh_js_dir() / "bokeh.min.js").read_text()
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
        shutil.copyfile(controls.bokeh_js_dir() / f, static / f)
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


# ----------------------------------------------------------------------------- the book's panels (aot_lib.book.panels)
# Each panel's states are checked against the package function that the panel claims to show, computed here apart.

def test_the_admm_panel_shows_admm_iterations_at_each_setting_and_refuses_none_silently():
    import torch

    from aot_lib.book import panels
    from aot_lib.theory.admm import admm_iterations, mixture_of_subspaces

    Z0, U, labels = mixture_of_subspaces(d=6, p=2, K=2, n_per=4, noise=0.1, basis="coordinate", nonnegative=True,
                                         generator=torch.Generator().manual_seed(0))
    panel = panels.admm_panel(Z0, U, labels, iters=3, eta=(0.2, 0.4), gamma=(1.0, 2.0), rho=(1.0,), lambd=(0.1,),
                              defaults=(0.2, 1.0, 1.0, 0.1))
    h = admm_iterations(Z0, U, iters=3, gradient="mssa", labels=labels, eta=0.2, gamma=2.0, rho=1.0, lambd=0.1)
    # state "0,1,0,0": eta 0.2, gamma 2.0; values rounded to 5 significant digits (the page's JSON)
    assert panel.states["0,1,0,0"]["mssa"]["zeros"] == [float(f"{v:.5g}") for v in h.sparsity]
    # eta 0.4 with gamma 2.0, rho 1.0: eta*(gamma+rho) = 1.2, no iteration, and the note says why
    bad = panel.states["1,1,0,0"]
    assert bad["exact"]["align"] == [None] * 4
    assert "<b>η(γ+ρ) = 1.20 ≥ 1:</b>" in bad["note"]


def test_the_spectrum_panel_reads_theorem_1s_functions_and_its_ratio_tends_to_the_limit():
    import torch

    from aot_lib.book import panels
    from aot_lib.objectives.sigreg import sample_directions
    from aot_lib.theory import theorem1

    dirs = sample_directions(4, 4000, seed=1, dtype=torch.float64)
    panel = panels.spectrum_panel(4, 0.5, dirs, distances=(0.01, 0.5), default=0.5)
    sigma = torch.diag(torch.as_tensor(panels._spectrum(panels.SPECTRUM_SHAPES[1], 0.5, 4), dtype=torch.float64))
    here = panel.states["1,1"]["here"]
    assert here["gap"] == [float(f"{float(theorem1.rate_gap(sigma, 0.5)):.5g}")]
    assert here["sigreg"] == [float(f"{float(theorem1.population_sigreg(sigma, dirs)):.5g}")]
    assert abs(float(sigma.diagonal().sum()) - 4) < 1e-12  # on the trace-d set
    # near I the population ratio is the limit up to the directions' Monte Carlo error (4,000 directions: ~2 %)
    near = panel.states["1,0"]["here"]
    ratio = near["sigreg"][0] / near["gap"][0] / theorem1.limit_ratio(4, 0.5)
    assert abs(ratio - 1) < 0.1


def test_the_size_panel_extends_depth_1_and_2_counts_exactly_to_any_depth():
    import aot_lib
    from aot_lib.book import panels

    panel = panels.size_panel({"aot_admm": "AoT-ADMM", "crate": "CRATE"}, scales=("tiny",), depths=(1, 2, 3),
                              default_depth=3)
    state = panel.states["0,1,2"]  # tiny, ImageNet setting, depth 3
    m = aot_lib.create_model("crate_tiny", depth=3, num_classes=0, img_size=128, patch_size=16)
    headed = aot_lib.create_model("crate_tiny", depth=3, img_size=128, patch_size=16)
    assert state["bars"]["params"][1] == float(f"{aot_lib.count_params(m) / 1e6:.5g}")
    assert state["bars"]["flops"][1] == float(f"{aot_lib.count_flops(headed) / 1e9:.5g}")


def test_the_size_panel_prints_the_flops_chapter_4s_table_prints():
    """Figure 4.2 said 0.308 GFLOPs for CRATE-Tiny where tables 4.2/4.4 say 0.309 (the head's 3,840 FLOPs move
    0.30850 across the rounding): the panel counts with the 10-class head, as the tables and the paper do."""
    import aot_lib
    from aot_lib.book import panels

    panel = panels.size_panel({"crate": "CRATE"}, scales=("tiny",), depths=(12,), default_depth=12)
    table = aot_lib.count_flops(aot_lib.create_model("crate_tiny")) / 1e9  # the chapter's table: 0.3085041
    assert f"<td>{table:.3f}</td>" in panel.states["0,0,0"]["note"] and f"{table:.3f}" == "0.309"


def test_the_margin_panel_gives_statss_verdict_at_every_margin():
    from types import SimpleNamespace

    from aot_lib.book import panels
    from aot_lib.evidence import stats

    d = stats.paired_difference({0: 50.0, 1: 51.0, 2: 50.4}, {0: 49.0, 1: 49.5, 2: 49.8})  # +1.03, CI about ±1.3
    rows = [{"claim": SimpleNamespace(claim="parity", key="t1_x"), "diff": d, "margin": 1.5},
            {"claim": SimpleNamespace(claim="better", key="t3_x"), "diff": d, "margin": None}]
    panel = panels.margin_panel(rows, margins=(0.5, 1.5, 2.5), default=1.5)
    for i, m in enumerate((0.5, 1.5, 2.5)):
        assert f"<td>{stats.verdict(d, 'parity', m)}</td>" in panel.states[str(i)]["table"]
    assert stats.verdict(d, "parity", 2.5) == "reproduced" and stats.verdict(d, "parity", 0.5) != "reproduced"
    assert panel.states["0"]["claims"]["key"] == ["t1_x"]  # the better-claim has no margin to move
    with pytest.raises(ValueError) as e:
        panels.margin_panel(rows[1:])
    assert str(e.value) == "no parity claim has two seeds yet: nothing for the margin to move"


def test_the_attention_panel_shows_the_chosen_layer_and_head_with_the_first_patch_row_on_top():
    import torch

    from aot_lib.book import panels

    att = torch.arange(2 * 1 * 2 * 4, dtype=torch.float32).reshape(2, 1, 2, 4)  # (L, B, K, N-1), a 2x2 grid
    panel = panels.attention_panel({"trained": att, "at initialisation": att * 0}, grid=(2, 2),
                                   images=torch.rand(1, 3, 8, 8), n_images=1)
    heads = ["mean of the heads", "head 1", "head 2"]
    layer2_head2 = att[1, 0, 1].reshape(2, 2)  # patches 12, 13 (row 1) and 14, 15 (row 2)
    # images travel as float32 arrays (BokehJS draws typed arrays only); these values are exact in float32
    assert [a.tolist() for a in panel.states[f"0,1,{heads.index('head 2')}"]["img0"]["image"]] == [
        layer2_head2.flip(0).tolist()]
    assert [a.tolist() for a in panel.states["0,0,0"]["img0"]["image"]] == [
        att[0, 0].mean(0).reshape(2, 2).flip(0).tolist()]


def test_the_attention_panel_refuses_a_repeated_image_or_a_repeated_map():
    """Issue 58: figure 10.2 once showed one photograph four times (every pick was image 0) and identical maps for
    every encoder setting. Two equal images, or two equal maps of different images in one state, are refused."""
    import torch

    from aot_lib.book import panels

    images = torch.rand(3, 3, 8, 8)
    att = torch.rand(2, 3, 2, 4)
    same = images.clone()
    same[2] = same[0]
    with pytest.raises(ValueError) as e:
        panels.attention_panel({"trained": att}, grid=(2, 2), images=same, n_images=3)
    assert str(e.value) == "images 1 and 3 are the same; show distinct ones (pick images of distinct classes)"
    repeated = att.clone()
    repeated[1, 1] = repeated[1, 0]  # layer 2: image 2's maps copy image 1's
    with pytest.raises(ValueError) as e:
        panels.attention_panel({"trained": repeated}, grid=(2, 2), images=images, n_images=3)
    assert str(e.value) == ("trained, layer 2, mean of the heads: maps of images 1 and 2 are the same; show distinct "
                            "ones (pick images of distinct classes)")
    panels.attention_panel({"trained": att, "at initialisation": att * 0}, grid=(2, 2), images=images, n_images=3)


def test_the_curves_panel_shows_every_run_of_the_chosen_family():
    from aot_lib.book import panels

    curves = {("A", "seed 0"): {"step": [0, 10], "loss": [2.0, 1.0], "pred": [1.5, 0.8], "sigreg": [5.0, 2.0]},
              ("A", "seed 1"): {"step": [0, 10], "loss": [2.1, 1.1], "pred": [1.6, 0.9], "sigreg": [5.1, 2.1]},
              ("B", "seed 0"): {"step": [0, 10], "loss": [3.0, 2.0], "pred": [2.5, 1.8], "sigreg": [6.0, 3.0]}}
    panel = panels.curves_panel(curves)
    quantities = list(panels.QUANTITIES)
    a_sigreg = panel.states[f"0,{quantities.index('SIGReg statistic')}"]["lines"]
    assert a_sigreg["ys"] == [[5.0, 2.0], [5.1, 2.1]] and a_sigreg["label"] == ["seed 0", "seed 1"]
    b_loss = panel.states["1,0"]["lines"]  # B has one run: the second line is empty, so the lines' count is fixed
    assert b_loss["ys"] == [[3.0, 2.0], [None]] and b_loss["label"] == ["seed 0", ""]
    # issue 59: the runs' colours are not the families' (figure 8.3 reused figure 8.2's), and a legend names them
    assert not set(a_sigreg["colour"]) & set(panels.COLOURS) and len(set(a_sigreg["colour"])) == 2
    from bokeh.models import Legend
    from bokeh.plotting import figure

    (plot,) = panel.layout.select({"type": figure})
    (legend,) = plot.select({"type": Legend})
    assert legend in plot.right and legend.items[0].label.field == "label"  # named by run, beside the plot


def test_a_column_of_labels_stays_text_and_numbers_are_rounded_with_gaps():
    from aot_lib.book.controls import plain_column

    assert plain_column(["1", "2.5", "nan"]) == ["1", "2.5", "nan"]  # labels that look like numbers stay labels
    assert plain_column([1.234567, float("nan"), 3]) == [1.2346, None, 3.0]  # NaN: a gap in a line
    assert plain_column([[1.0, 2.0], [3.0]]) == [[1.0, 2.0], [3.0]]  # ragged lines, already plain


def test_the_admm_panel_opens_at_chapter_3s_setting():
    """Issue 59: figure 3.4's η slider could not reach the chapter's η = 0.25 (its grid was 0.1, 0.2, 0.3). The
    panel's default setting is chapter 3's `defaults`, read from the chapter's own code."""
    import inspect
    import re
    from pathlib import Path

    from aot_lib.book import panels

    chapter = (Path(__file__).resolve().parent.parent / "notebooks" / "03_admm_unrolled.py").read_text()
    m = re.search(r"^defaults = dict\(eta=([\d.]+), gamma=([\d.]+), rho=([\d.]+), lambd=([\d.]+)", chapter, re.M)
    chapter_defaults = tuple(float(x) for x in m.groups())
    signature = inspect.signature(panels.admm_panel).parameters
    assert signature["defaults"].default == chapter_defaults
    for name, value in zip(("eta", "gamma", "rho", "lambd"), chapter_defaults):
        assert value in signature[name].default, (name, value)
