"""The book: its structure, how its chapters present results, and the checks of the built HTML.

Fast by design: the chapters' sources are checked statically, the introduction is executed
in a kernel (seconds), and the HTML checker is tested on small strings. Every chapter is
executed top to bottom by the book build itself (``.ci/run``: ``jupyter-book build -W``,
then ``python book/_ext/aot_book_build check-html``); ``AOT_TEST_ALL_CHAPTERS=1`` executes all of
them here too (minutes).
"""
import ast
import json
import os
import re
from pathlib import Path

import pytest
import yaml

from aot_book_build.check_html import check_html
from aot_book_build.jupyterlab_key import KEY_MARK
from aot_lib.book.pages import Dropdown, data_label, data_missing_note, run_record_box
from aot_lib.book.recorded import is_recorded, load_recorded_run
from aot_lib.book.tables import Col, Table
from helpers import raises_exactly, require

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "notebooks").glob("*.py"))
PAGE_WIDTH = 88  # characters of code a page shows without clipping
jupytext = require("jupytext", "jupytext")


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [toc["root"]] + [c["file"] for c in toc["chapters"]]


def chapter_id(p):
    return p.name


def book_cells(path):
    """The chapter's cells as the book shows them: without its JupyterLab key (aot_book_build.jupyterlab_key), a
    remove-cell the build leaves out."""
    return [c for c in jupytext.read(path).cells if not c.source.lstrip().startswith(KEY_MARK)]


def code_cells(path):
    return [c for c in book_cells(path) if c.cell_type == "code"]


def markdown_text(path):
    return "\n\n".join(c.source for c in book_cells(path) if c.cell_type == "markdown")


# ----------------------------------------------------------------------------- structure

def test_book_links_to_root_config():
    for name in ("_config.yml", "_toc.yml", "notebooks"):
        link = ROOT / "book" / name
        assert link.is_symlink() and link.resolve() == (ROOT / name).resolve()


def test_the_theme_starts_in_a_mode_it_knows():
    """pydata-sphinx-theme reads the colour mode from the page context; left empty it logged "Got invalid theme
    mode: ." in the console of a first visit (issue 59; CI's browser check reads every page's console)."""
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["config"]["html_context"]["default_mode"] in ("light", "dark", "auto")
    # (that the theme reads it by this name is checked where the theme is installed: CI's browser check of the
    # built book reads every page's console, scripts/check_tables.py)


@pytest.mark.parametrize("entry", toc_files())
def test_toc_entry_exists(entry):
    candidates = [ROOT / "book" / f"{entry}{ext}" for ext in (".md", ".py", ".ipynb")]
    assert any(p.exists() for p in candidates), f"{entry} listed in _toc.yml but missing"


def test_every_chapter_is_in_the_toc():
    listed = set(toc_files())
    for path in CHAPTERS:
        assert f"notebooks/{path.stem}" in listed, f"{path.name} is not in _toc.yml"


def test_chapters_and_sections_are_numbered():
    """The text cites "chapter 5": the toc numbers every chapter and its sections (Jupyter Book 1.x)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    assert toc["options"] == {"numbered": True}


def test_executed_chapters_are_offered_as_ipynb(tmp_path):
    """The download menu of sphinx-book-theme offers ``_sources/<page>.ipynb`` when the page context names it;
    the extension copies myst-nb's executed notebook (outputs included) there, named by the chapter's number in
    the book (a hand-made 05_training is chapter 6), its citations written back as the chapter's links (myst-nb wrote the
    roles Sphinx read). A page that was not executed keeps its source download only."""
    from types import SimpleNamespace

    from aot_book_build.ipynb_download import offer_executed_notebook

    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["local_extensions"]["aot_book_build.ipynb_download"] == "_ext"
    executed = tmp_path / "jupyter_execute" / "notebooks" / "05_training.ipynb"
    executed.parent.mkdir(parents=True)
    cells = [{"cell_type": "markdown", "source": ["As in {cite:t}`wang2025aot` and\n",
                                                  "{cite:p}`chen2020simclr,grill2020byol`."]},
             {"cell_type": "code", "source": "{cite:p}`a` in code stays", "outputs": ["executed"]}]
    executed.write_text(json.dumps({"cells": cells}))
    numbers = {"notebooks/05_training": {"": (6,), "#sec-views": (6, 1)}}  # Sphinx's env.toc_secnumbers
    app = SimpleNamespace(outdir=str(tmp_path / "html"), builder=SimpleNamespace(format="html"),
                          env=SimpleNamespace(toc_secnumbers=numbers))
    context: dict = {}
    offer_executed_notebook(app, "notebooks/05_training", "page.html", context, None)
    assert context == {"ipynb_source": "notebooks/06_training.ipynb"}
    copied = tmp_path / "html" / "_sources" / "notebooks" / "06_training.ipynb"
    assert json.loads(copied.read_text()) == {"cells": [
        {"cell_type": "markdown",
         "source": "As in [](#bib-wang2025aot) and\n([](#bib-chen2020simclr); [](#bib-grill2020byol))."},
        cells[1]]}
    intro: dict = {}
    offer_executed_notebook(app, "intro", "page.html", intro, None)
    assert intro == {} and not (tmp_path / "html" / "_sources" / "intro.ipynb").exists()


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_notebook_opens_with_jupytext(path):
    nb = jupytext.read(path)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    kinds = {c.cell_type for c in nb.cells}
    assert kinds == {"markdown", "code"}
    first = nb.cells[0]
    assert first.cell_type == "markdown"
    lines = first.source.splitlines()
    assert re.fullmatch(r"\(ch-[a-z0-9-]+\)=", lines[0]), "a chapter starts with its label"
    assert lines[1].startswith("# "), "then its title"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_chapter_opens_with_a_summary_and_ends_with_what_we_learned(path):
    nb = jupytext.read(path)
    first = nb.cells[0].source
    summary = first.split("**This chapter:**", 1)
    assert len(summary) == 2, "the first cell says what the chapter shows (**This chapter:**)"
    paragraph = summary[1].split("\n\n")[0].strip()
    assert 1 <= len(paragraph.splitlines()) <= 2, "the summary is at most two lines"
    last_md = [c for c in book_cells(path) if c.cell_type == "markdown"][-1].source
    assert "## What we learned" in last_md


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_open_chapter_comes_right_after_the_summary(path):
    """The intro promises each page's run record 'in a collapsed box at its top': the cell
    after the title and summary shows it (its code, page furniture, removed), before any
    other code runs -- and before any figure, which it sets to be drawn at two widths."""
    nb = jupytext.read(path)
    second = nb.cells[1]
    assert second.cell_type == "code" and "remove-input" in second.metadata.get("tags", [])
    last = second.source.strip().splitlines()[-1]
    assert re.fullmatch(r"open_chapter\([^()]*\)", last), second.source
    assert sum("open_chapter(" in c.source for c in code_cells(path)) == 1


def test_cross_references_resolve():
    """Every {ref}, {numref} and {eq} target is defined in some chapter or page (the build checks
    this too, with -n; here it costs milliseconds)."""
    texts = [markdown_text(p) for p in CHAPTERS]
    texts += [p.read_text() for p in (ROOT / "book").glob("*.md")]
    text = "\n".join(texts)
    labels = set(re.findall(r"^\(([\w-]+)\)=\s*$", text, re.M))
    equations = set(re.findall(r"^\$\$\s*\(([\w-]+)\)\s*$", text, re.M))
    figures = {figure_of(c)["name"] for p in CHAPTERS for c in code_cells(p) if figure_of(c)}
    # numbered tables: Table(..., name="tbl-...") in a chapter's code (aot_book_build.numbered_tables)
    # ... or in the aot_lib.book module a chapter's table comes from (aot_lib.book.sweeps, paper_tables)
    tables = {n for p in [*CHAPTERS, *(ROOT / "aot_lib" / "book").glob("*.py")]
              for n in re.findall(r'name="(tbl-[a-z0-9-]+)"', p.read_text())}
    for target in re.findall(r"\{ref\}`(?:[^`<]*<)?([\w-]+)>?`", text):
        assert target in labels, f"{{ref}} to an undefined label {target}"
    for target in re.findall(r"\{numref\}`(?:[^`<]*<)?([\w-]+)>?`", text):
        assert target in figures | tables, f"{{numref}} to an undefined figure or table {target}"
    for target in re.findall(r"\{eq\}`([\w-]+)`", text):
        assert target in equations, f"{{eq}} to an undefined equation {target}"
    assert equations, "the book restates the paper's equations with labels"


# ----------------------------------------------------------------------------- presentation

@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_no_line_wider_than_the_page(path):
    """Code and prose fit the page; a cell's header line (``# %% ...``, its metadata: tags
    and figure captions, which the page never shows) is the exception."""
    wide = [(i, len(line)) for i, line in enumerate(path.read_text().splitlines(), 1)
            if len(line) > PAGE_WIDTH and not line.startswith("# %%")]
    assert not wide, f"{path.name}: lines wider than {PAGE_WIDTH} characters: {wide}"


_RAW = {"dumps", "run_record", "hardware_summary", "vars", "dict"}


def _call_name(node):
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _raw_dict_nodes(node):
    """Whether an expression handed to print/display is itself a dict or JSON text: a dict
    literal or comprehension, ``dict(...)``, ``json.dumps(...)``, ``run_record()``, also
    inside f-strings, slices and operators, but not inside other calls (``Table(rows)``)."""
    if isinstance(node, (ast.Dict, ast.DictComp)):
        yield "a dict"
    elif isinstance(node, ast.Call):
        if _call_name(node) in _RAW:
            yield f"{_call_name(node)}(...)"
    else:
        for child in ast.iter_child_nodes(node):
            yield from _raw_dict_nodes(child)


def raw_dict_output(source: str) -> list[str]:
    """What a code cell prints or shows as a raw dict/JSON: ``print`` of a dict literal,
    comprehension, ``json.dumps``, ``run_record()`` ...; or a cell ending in one."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("print", "display"):
            for arg in node.args:
                found += [f"line {node.lineno}: prints {what}" for what in _raw_dict_nodes(arg)]
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1].value
        if list(_raw_dict_nodes(last)):
            found.append(f"line {last.lineno}: the cell shows a raw dict")
    return found


def test_raw_dict_check_catches_what_it_should():
    assert raw_dict_output("print({'a': 1})")
    assert raw_dict_output("import json\nprint(json.dumps(x)[:600])")
    assert raw_dict_output("print(run_record(seed=0))")
    assert raw_dict_output("print({k: v for k, v in d.items()}, note)")
    assert raw_dict_output("print(f'{json.dumps(b)}')")
    assert raw_dict_output("x = 1\n{'a': x}")
    assert raw_dict_output("run_record()")
    assert not raw_dict_output("print(f'loss {x:.3f}')")
    assert not raw_dict_output("Table(rows, cols)")
    assert not raw_dict_output("run_record_box(seed=0)")
    assert not raw_dict_output("d = dict(a=1)\nprint(d['a'])")
    assert not raw_dict_output("display(Table([dict(a=1)], cols))")


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_chapters_print_no_raw_dict_or_json(path):
    problems = []
    for cell in code_cells(path):
        problems += raw_dict_output(cell.source)
    assert not problems, f"{path.name}: show tables, not dicts: {problems}"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_plot_only_cells_hide_their_input(path):
    """A cell that only draws (plt.show, no assert, nothing else shown) is tagged
    hide-input; cells that compute or check stay visible."""
    for cell in code_cells(path):
        src = cell.source
        draws = "plt.show()" in src
        checks = "assert" in src or "Table(" in src or "display(" in src
        tags = cell.metadata.get("tags", [])
        if draws and not checks:
            assert "hide-input" in tags, f"{path.name}: plot cell without hide-input:\n{src}"


def figure_of(cell) -> dict:
    """A code cell's figure options (myst-nb's ``mystnb.figure`` metadata), or {}."""
    return cell.metadata.get("mystnb", {}).get("figure", {})


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_every_figure_is_numbered_and_captioned(path):
    """A cell that draws (plt.show) is a figure: myst-nb wraps its output in a numbered figure
    with the caption of its metadata, so the text can cite it ({numref}) and the reader sees
    what it shows. It shows one thing, its figure or a note in its place (a second output
    would be a second figure with the same name), and its name is unique in the book."""
    names = []
    for cell in code_cells(path):
        if "plt.show()" not in cell.source or "skip-execution" in cell.metadata.get("tags", []):
            continue
        fig = figure_of(cell)
        assert fig.get("caption") and re.fullmatch(r"fig-[a-z0-9-]+", fig.get("name", "")), (
            f"{path.name}: a figure cell without mystnb.figure caption and name:\n{cell.source}")
        assert cell.source.count("plt.show()") == 1 and "Table(" not in cell.source
        shown = cell.source.count("display(")
        assert shown == 0 or (shown == 1 and "else:" in cell.source), cell.source
        names.append(fig["name"])
    others = [figure_of(c).get("name") for p in CHAPTERS if p != path for c in code_cells(p)]
    assert not set(names) & set(others) and len(set(names)) == len(names)


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_chapter_names_no_machine_path(path):
    """Messages name the setting to change (AOT_DATA), never where something was looked
    for; the sources must not hard-code one either."""
    problems = check_html(path.read_text(), path.name)
    assert not [p for p in problems if "path of the build machine" in p], problems


def test_first_chapter_executes_in_a_kernel(monkeypatch):
    _execute(CHAPTERS[0], monkeypatch)


@pytest.mark.skipif(os.environ.get("AOT_TEST_ALL_CHAPTERS") != "1",
                    reason="takes minutes, and the book build (README command 1, run by CI) executes every chapter; "
                           "AOT_TEST_ALL_CHAPTERS=1 runs them here too")
@pytest.mark.parametrize("path", CHAPTERS[1:], ids=chapter_id)
def test_chapter_executes_in_a_kernel(path, monkeypatch):
    _execute(path, monkeypatch)


def _execute(path, monkeypatch):
    nbclient = require("nbclient", "nbclient")
    require("ipykernel", "ipykernel")
    monkeypatch.setenv("AOT_BOOK_PROFILE", "fast")
    nb = jupytext.read(path)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    html = "\n".join(o.get("data", {}).get("text/html", "") for o in outputs
                     if o.output_type in ("display_data", "execute_result"))
    assert "How this page was computed" in html
    text = "\n".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert not re.search(r"^\s*\{['\"]", text, re.M), "a raw dict was printed"


# ----------------------------------------------------------------------------- helpers

def test_table_renders_html_with_units_and_paper_columns():
    t = Table(
        [{"model": "a<b", "params": 3.6371, "paper": 3.64, "n": 1234567}],
        [Col("model"), Col("params", "params (M)", ".3f"), Col("n", "exact"),
         Col("paper", "params (M)", ".2f", paper=True)],
        caption="Encoder parameters",
    )
    html = t._repr_html_()
    assert "<table" in html and "<strong>Encoder parameters</strong>" in html
    assert "a&lt;b" in html, "cells are escaped"
    assert "3.637" in html and "1,234,567" in html and "3.64" in html
    assert html.count('<th class="paper num long"') == 1, "the paper's column of numbers: its header (long) ..."
    assert html.count('<td class="paper num"') == 1, "... and its cell"
    assert "paper&#x27;s printed numbers" in html
    text = repr(t)
    assert "params (M) [paper]" in text and "3.637" in text


def test_table_html_says_which_cells_hold_numbers_and_whether_the_table_is_wide():
    """What the book's CSS fits a table by: number cells (class num) never wrap; a table more than WIDE_CHARS
    characters across is set smaller (aot-table-wide); a long word may break after / and _ (<wbr>), a short
    one with a hyphen never (aot-word); a header longer than LONG_HEADER is long (a wider column on a phone)."""
    from aot_lib.book.tables import LONG_HEADER, LONG_WORD, WIDE_CHARS

    cols = [Col("run"), Col("top1", "linear top-1 (%)", ".2f")]
    narrow = Table([("aot_admm", 51.02)], cols)
    # run: "aot_admm", 8 characters, + 2 of padding; the second column: its header's longest word, "linear" (6),
    # is longer than its cell "51.02" (5), + 2
    assert narrow.width_chars() == (8 + 2) + (6 + 2)
    assert narrow._repr_html_().splitlines()[:7] == [
        '<div class="aot-table-wrap tex2jax_process">', '<table class="aot-table">', "<thead><tr>",
        '<th style="text-align: left;">run</th>', '<th class="num" style="text-align: right;">linear top-1 (%)</th>',
        "</tr></thead>", "<tbody>"]
    assert '<td class="num" style="text-align: right;">51.02</td>' in narrow._repr_html_()
    path = "configs/paper/table1/aot_admm_base_cifar10.yaml"  # 47 characters: longer than LONG_WORD
    assert len(path) > LONG_WORD and len("aot_admm_base") <= LONG_WORD
    wide = Table([(f"aot probe -c {path}", 1.5)] * 2, [Col("command"), Col("x", "x")])
    assert wide.width_chars() == (len("aot probe -c ") + len(path) + 2) + (3 + 2) and wide.width_chars() <= WIDE_CHARS
    assert ('<td style="text-align: left;">aot probe <span class="aot-word">-c</span> configs/<wbr>paper/<wbr>'
            'table1/<wbr>aot_<wbr>admm_<wbr>base_<wbr>cifar10.yaml</td>') in wide._repr_html_()
    assert len("linear top-1 (%)") == LONG_HEADER  # not longer: not long
    long_head = Table([("AoT-ADMM", 1.0)], [Col("m", "model"), Col("x", "linear top-1 (%), Tiny")])
    assert long_head._repr_html_().splitlines()[3:7] == [
        '<th style="text-align: left;">model</th>',
        '<th class="num long" style="text-align: right;">linear top-1 (%), Tiny</th>', "</tr></thead>", "<tbody>"]
    assert '<td style="text-align: left;"><span class="aot-word">AoT-ADMM</span></td>' in long_head._repr_html_()
    many = Table([tuple(range(30))], [Col(f"c{i}", f"column {i}") for i in range(30)])
    assert many.width_chars() == 30 * (len("column") + 2) > WIDE_CHARS
    assert many._repr_html_().startswith('<div class="aot-table-wrap aot-table-wide tex2jax_process">')


def test_table_from_sequences_and_missing_values():
    t = Table([("x", None)], [Col("k"), Col("v", "value", ".2f")])
    assert "\N{EM DASH}" in t._repr_html_()
    with raises_exactly(ValueError, "row has 1 values for 2 columns"):
        Table([("x",)], [Col("k"), Col("v")])


def test_run_record_box_is_a_collapsed_table_without_paths(monkeypatch):
    monkeypatch.setenv("AOT_DATA", "/some/where/data")
    box = run_record_box(seed=3)
    assert isinstance(box, Dropdown)
    html = box._repr_html_()
    assert html.startswith("<details") and " open" not in html.split(">")[0]
    assert "How this page was computed" in html and "<table" in html
    assert "AOT_DATA" in html and "/some/where" not in html
    assert not check_html(html)


def test_data_messages_name_the_setting_not_the_path():
    note = data_missing_note("CIFAR-10")
    assert "AOT_DATA" in note and not check_html(note)
    # a note, not an error: it says what stands in and that the recorded results do not need the data
    assert note.startswith("These pictures are sample photographs that ship with scikit-image, because CIFAR-10 is "
                           "not on this machine; the page's recorded results do not need the data.")
    assert "not configured" not in note
    assert data_label({"label": "CIFAR-10 (official)"}, "x") == "CIFAR-10 (official)"
    assert data_label({"label": "ImageFolder folder /root/data/x"}, "fallback") == "fallback"
    assert data_label(None, "fallback") == "fallback"


def test_sample_photos_are_real_images_of_the_asked_size():
    """scikit-image's photographs, centre-cropped to a square and resized by antialiased bicubic: against PIL's
    bicubic resize of the same crop, in float (mode "F", no uint8 rounding between its two passes), rounded. Two
    float32 computations of a value near a half may round to neighbouring levels: 1 level."""
    skdata = require("skimage.data", "scikit-image")
    import numpy as np
    import torch
    from PIL import Image

    from aot_lib.book.photos import PHOTO_CREDITS, sample_photos

    for size, names in ((32, list(PHOTO_CREDITS)), (160, ["chelsea"])):
        got = sample_photos(size, names=names)
        assert got.shape == (len(names), 3, size, size) and got.dtype == torch.uint8
        for image, name in zip(got, names):
            photo = getattr(skdata, name)()[..., :3].astype(np.float32)
            h, w = photo.shape[:2]
            side = min(h, w)
            crop = photo[(h - side) // 2:(h - side) // 2 + side, (w - side) // 2:(w - side) // 2 + side]
            ref = np.stack([np.asarray(Image.fromarray(np.ascontiguousarray(crop[..., c]), mode="F")
                                       .resize((size, size), Image.BICUBIC)) for c in range(3)])
            want = torch.from_numpy(np.clip(np.round(ref), 0, 255))
            torch.testing.assert_close(image.double(), want.double(), atol=1, rtol=0, msg=name)


def test_example_images_fall_back_to_photographs_without_data(monkeypatch, tmp_path):
    require("skimage", "scikit-image")
    import torch

    from aot_lib.book.photos import example_images, sample_photos

    monkeypatch.setenv("AOT_DATA", str(tmp_path))  # an empty data folder
    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    for setting, size, name in [("cifar", 32, "CIFAR-10"), ("imagenet", 160, "Imagenette")]:
        images, source, missing = example_images(setting)
        assert torch.equal(images, sample_photos(size))  # the four photographs, at the setting's size
        assert "photographs" in source and name in missing
        assert not check_html(source) and str(tmp_path) not in source


def test_jupyterlab_opens_chapters_as_notebooks():
    """README command 3 points JUPYTER_CONFIG_PATH at book/jupyter, whose override makes
    jupytext's notebook the default viewer for .py files."""
    import json

    path = ROOT / "book" / "jupyter" / "labconfig" / "default_setting_overrides.json"
    viewers = json.loads(path.read_text())["@jupyterlab/docmanager-extension:plugin"]
    assert viewers["defaultViewers"]["python"] == "Jupytext Notebook"
    readme = (ROOT / "README.md").read_text()
    assert 'JUPYTER_CONFIG_PATH="$PWD/book/jupyter"' in readme and "[lab]" in readme


def test_jupyterlab_starts_as_root_and_renders_myst():
    """As root (containers, rented GPU machines) Jupyter refuses to start unless allowed: README command 3's
    config folder allows it; and the lab extra brings jupyterlab-myst, which renders the chapters' labels,
    {ref} and {eq} instead of showing the markup. (Checked in headless Chromium as root: JupyterLab 4.6.6,
    jupyterlab-myst 2.7.0.)"""
    server = json.loads((ROOT / "book" / "jupyter" / "jupyter_server_config.json").read_text())
    assert server == {"ServerApp": {"allow_root": True,  # and chapters open unmodified (tests/test_jupyterlab.py)
                                    "contents_manager_class": "aot_lib.book.jupyterlab.ChapterContentsManager"}}
    lab = re.search(r"^lab = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.M | re.S).group(1)
    assert re.search(r'^\s*"jupyterlab-myst>=', lab, re.M)  # (tomllib is Python 3.11+; we support 3.10)


def _recorded(root: Path, name: str, files: dict, csv_text: str) -> None:
    d = root / "results" / "cpu" / name
    d.mkdir(parents=True)
    for f, obj in files.items():
        (d / f).write_text(json.dumps(obj))
    (d / "metrics.csv").write_text(csv_text)
    (d / "config.yaml").write_text("run: {name: %s}\n" % name)


def test_load_recorded_run_reads_each_stage_and_refuses_a_finetune_without_its_start(tmp_path):
    cpu = tmp_path / "configs" / "cpu"
    cpu.mkdir(parents=True)
    (cpu / "pre.yaml").write_text("run: {name: pre}\n")
    (cpu / "ft.yaml").write_text("run: {name: ft}\nfinetune: {epochs: 1}\n")
    common = {"run.json": {"status": "finished", "wall_time_s": 60.0}, "metrics.json": {"step": 20}}
    # a monitor-only row (no loss) is not part of the curve; the old column names still read
    _recorded(tmp_path, "pre", {**common, "probe.json": {"linear_top1": 51.5}},
              "step,loss,pred,sigreg,rankme\n10,2.5,1.5,20.0,\n20,2.0,1.25,10.0,\n20,,,,33.0\n")
    _recorded(tmp_path, "ft", {"run.json": common["run.json"], "finetune.json": {"top1": 70.25}},
              "step,loss\n10,1.5\n20,1.0\n")  # fine-tuning writes no metrics.json
    pre = load_recorded_run(tmp_path, "pre", "pre.yaml", smoke_steps=5)
    assert (pre["recorded"], pre["stage"], pre["source"]) == (True, "pretrain", "recorded in results/cpu/pre")
    assert is_recorded(tmp_path, "pre", "pre.yaml") and not is_recorded(tmp_path, "ft", "pre.yaml")
    assert pre["curve"] == {"step": [10.0, 20.0], "loss": [2.5, 2.0], "pred": [1.5, 1.25], "sigreg": [20.0, 10.0]}
    assert pre["probe"] == pre["result"] == {"linear_top1": 51.5} and pre["metrics"]["step"] == 20
    ft = load_recorded_run(tmp_path, "ft", "ft.yaml", smoke_steps=0)
    assert (ft["stage"], ft["result"]["top1"], ft["curve"]) == ("finetune", 70.25, {"step": [10.0, 20.0],
                                                                                    "loss": [1.5, 1.0]})
    assert "probe" not in ft and ft["metrics"] == {}
    with pytest.raises(ValueError, match=r"ft\.yaml is a finetune config: give start_from"):
        load_recorded_run(tmp_path, "not_recorded", "ft.yaml", smoke_steps=0)


def test_smoke_distillation_starts_from_every_checkpoint_it_is_given(tmp_path, monkeypatch):
    """Table 4's students need a teacher and an init: a mapping ``start_from`` sets both config keys (a
    plain path sets only the teacher), with the smoke schedule, before the distillation is called."""
    from aot_lib import train

    cpu = tmp_path / "configs" / "cpu"
    cpu.mkdir(parents=True)
    (cpu / "kd.yaml").write_text("run: {name: kd}\nmodel: {name: vit_tiny_relu}\ndistill: {epochs: 9}\n")
    seen = []

    def fake_distill(cfg):
        seen.append(cfg)
        d = Path(cfg["run"]["out_dir"]) / cfg["run"]["name"]
        d.mkdir(parents=True, exist_ok=True)
        for f, obj in {"run.json": {"status": "finished"}, "distill.json": {"top1": 12.5}}.items():
            (d / f).write_text(json.dumps(obj))
        (d / "metrics.csv").write_text("step,loss\n1,2.0\n")
        (d / "config.yaml").write_text("run: {name: kd}\n")

    monkeypatch.setattr(train, "distill", fake_distill)
    both = {"distill.teacher": tmp_path / "t.ckpt", "distill.student_init": tmp_path / "s.ckpt"}
    run = load_recorded_run(tmp_path, "kd", "kd.yaml", smoke_steps=0, start_from=both)
    d = seen[0]["distill"]
    assert (d["teacher"], d["student_init"]) == (str(tmp_path / "t.ckpt"), str(tmp_path / "s.ckpt"))
    assert (d["epochs"], d["warmup_epochs"], d["batch_size"]) == (1, 0, 64)
    assert (run["recorded"], run["stage"], run["result"]["top1"]) == (False, "distill", 12.5)
    load_recorded_run(tmp_path, "kd", "kd.yaml", smoke_steps=0, start_from=tmp_path / "t.ckpt")
    assert seen[1]["distill"]["teacher"] == str(tmp_path / "t.ckpt") and seen[1]["distill"]["student_init"] is None


def test_run_status_and_notices():
    from aot_lib.book.recorded import run_notices, run_status

    rec = {"recorded": True, "dir": Path("a"), "run": {}}
    old = {"recorded": True, "dir": Path("b"), "run": {"superseded": "the code changed"}}
    smoke = {"recorded": False, "dir": Path("c"), "run": {}}
    assert [run_status(r) for r in (rec, old, smoke)] == ["recorded", "superseded", "smoke"]
    notes = run_notices([rec, old, smoke], missing=["d"])
    assert [n.title for n in notes] == ["Not recorded yet", "Trained now, at smoke scale", "Superseded"]
    assert [n.kind for n in notes[:2]] == ["warning", "note"]
    assert notes[0].text.startswith("d: not recorded yet") and notes[1].text.startswith("c: no recorded run")
    assert notes[2].text == "b: the code changed"
    assert run_notices([rec]) == []


def test_training_curves_draw_the_panels_every_run_has():
    """Pretraining curves get three panels (SIGReg on a log axis); supervised curves, which log only the
    loss, one; a mix of the two draws only what all of them have. Each line is the data it was given."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from aot_lib.book.plotting import plot_training_curves

    pre = {"step": [1, 2], "loss": [3.0, 2.0], "pred": [1.0, 0.5], "sigreg": [10.0, 1.0]}
    sup = {"step": [1, 2, 3], "loss": [2.3, 1.9, 1.5]}
    fig = plot_training_curves(pre)
    assert [a.get_title() for a in fig.axes] == ["total loss", "prediction loss", "SIGReg statistic"]
    assert [a.get_yscale() for a in fig.axes] == ["linear", "linear", "log"]
    assert list(fig.axes[1].lines[0].get_ydata()) == [1.0, 0.5]
    fig = plot_training_curves({"a": sup, "b": pre})
    assert [a.get_title() for a in fig.axes] == ["total loss"]
    assert [list(line.get_ydata()) for line in fig.axes[0].lines] == [[2.3, 1.9, 1.5], [3.0, 2.0]]
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["a", "b"]
    # chapter 11 (issue 59): losses of different scales, each on a panel and a scale of its own
    fig = plot_training_curves({"teacher": sup, "distilled": {"step": [1, 2], "loss": [9.0, 8.0]}},
                               panel_each=True)
    assert [a.get_title() for a in fig.axes] == ["teacher", "distilled"]
    assert [[list(line.get_ydata()) for line in a.lines] for a in fig.axes] == [[[2.3, 1.9, 1.5]], [[9.0, 8.0]]]
    assert fig.axes[0].get_ylim()[1] < 3 < fig.axes[1].get_ylim()[0]  # not one shared axis
    plt.close("all")


def test_the_wall_clock_figure_greys_out_the_runs_that_do_not_count():
    """plot_wall_curves (chapter 7's goal): a counted run solid and in colour, one that does not count dashed and
    grey; each run's final marker at (its wall minutes, its test top-1); the limit and the target dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from aot_lib.book.plotting import plot_wall_curves

    fig = plot_wall_curves({"seed 0": dict(minutes=[1.0, 20.0], acc=[40.0, 55.0], counts=True, final=(28.0, 61.0)),
                            "seed 1": dict(minutes=[1.0, 22.0], acc=[39.0, 54.0], counts=False, final=(33.0, 60.5))},
                           limit_min=30.0, target=60.0)
    (ax,) = fig.axes
    curve0, end0, curve1, end1, limit, target = ax.lines
    assert (curve0.get_linestyle(), curve1.get_linestyle(), curve1.get_color()) == ("-", "--", "0.55")
    assert (list(end0.get_xdata()), list(end0.get_ydata()), list(end1.get_xdata())) == ([28.0], [61.0], [33.0])
    assert (list(limit.get_xdata()), list(target.get_ydata())) == ([30.0, 30.0], [60.0, 60.0])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["seed 0", "seed 1"]
    plt.close("all")


def test_every_figure_is_cited_by_its_number():
    """A numbered figure the text never cites is a figure the reader meets unannounced: every name a chapter gives
    a figure (its cell's mystnb.figure metadata) is cited with {numref} somewhere in the chapters."""
    texts = {p.name: p.read_text() for p in CHAPTERS}
    names = {(f, n) for f, t in texts.items() for n in re.findall(r'"name": "(fig-[^"]+)"', t)}
    cited = {n for t in texts.values() for n in re.findall(r"\{numref\}`([^`<]+)`", t)}
    assert names, "no figures found: the metadata pattern changed"
    assert sorted((f, n) for f, n in names if n not in cited) == []


def test_every_numbered_table_is_cited_by_its_number():
    """Likewise every table a chapter names (``Table(..., name="tbl-...")``, numbered by the build: tests/
    test_numbered_tables.py) is cited with {numref}; a name given twice would number two tables alike."""
    texts = {p.name: p.read_text() for p in CHAPTERS}
    named = [(f, n) for f, t in texts.items() for n in re.findall(r'name="(tbl-[a-z0-9-]+)"', t)]
    cited = {n for t in texts.values() for n in re.findall(r"\{numref\}`(?:[^`<]*<)?(tbl-[a-z0-9-]+)>?`", t)}
    assert len(named) >= 40, f"only {len(named)} named tables found: the pattern changed, or tables lost their names"
    assert sorted((f, n) for f, n in named if n not in cited) == []
    assert sorted(n for n in {n for _, n in named} if sum(m == n for _, m in named) > 1) == []


def test_each_chapter_file_is_named_by_its_chapter_number():
    """JupyterLab shows the files, the book their numbers: a reader told 'chapter 8' opens ``notebooks/08_*.py``.
    The chapters are the numbered pages of ``_toc.yml`` that live under notebooks/, numbered from 1 in order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for c in toc["chapters"] if c["file"].startswith("notebooks/")]
    assert [f.split("/")[1].split("_")[0] for f in files] == [f"{n:02d}" for n in range(1, len(files) + 1)]


EVAL_ROLE = re.compile(r"\{eval\}`([^`]*)`")


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_every_eval_in_the_text_names_a_value_an_earlier_cell_computes(path):
    """Issue 59: a chapter's sentences are markdown naming the code's values with {eval}. Each names a variable (or
    an attribute of one) as _config.yml's nb_eval_name_regex allows, assigned by a code cell above it: an {eval}
    before its value, or of a name no cell sets, would print nothing in JupyterLab and fail the build."""
    import ast

    import yaml

    allowed = re.compile(yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]["nb_eval_name_regex"])
    assigned: set[str] = set()
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "code":
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    assigned.add(node.id)
        elif cell.cell_type == "markdown":
            for expr in EVAL_ROLE.findall(cell.source):
                assert allowed.fullmatch(expr), f"{path.name}: {{eval}}`{expr}` is not a name (nb_eval_name_regex)"
                assert expr.split(".")[0] in assigned, f"{path.name}: {{eval}}`{expr}` before any cell sets it"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_no_code_cell_is_tagged_remove_cell(path):
    """The book executes inline (_config.yml), and myst-nb drops a cell tagged remove-cell before it runs it: such a
    code cell would never run in the build while it runs in JupyterLab. Hide a cell's input and output instead."""
    tagged = [i for i, c in enumerate(jupytext.read(path).cells)
              if c.cell_type == "code" and "remove-cell" in c.metadata.get("tags", [])]
    assert not tagged, f"{path.name}: code cells {tagged} tagged remove-cell: use remove-input (and remove-output)"


@pytest.mark.parametrize("path", CHAPTERS, ids=chapter_id)
def test_no_text_line_starts_with_a_percent_sign(path):
    """In MyST a line starting with % is a comment: a sentence wrapped so that "... {eval}`x`\\n% of ..." starts a
    line with its percent sign loses the rest of that line from the page. Only the JupyterLab key's own comment
    lines may."""
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "markdown" and "aot-jupyterlab-key" not in cell.source:
            hidden = [line for line in cell.source.splitlines() if line.lstrip().startswith("%")]
            assert not hidden, f"{path.name}: a text line starts with % (a MyST comment): {hidden}"
