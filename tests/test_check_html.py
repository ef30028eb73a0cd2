"""The checks of the built book's HTML (``python book/_ext/aot_book_build check-html``, run by ``.ci/run``), fed small
pages that hold each problem, and pages that look alike but are fine."""
from aot_book_build.check_html import check_built_book, check_html, main

CELL = '<td style="text-align: left;">{}</td>'


def test_check_html_flags_other_hosts_and_local_paths():
    ok = ('<script src="_static/mathjax/tex-chtml.js"></script>'
          '<link rel="stylesheet" href="_static/aot.css"/>'
          '<a href="https://arxiv.org/abs/1">paper</a><p>set AOT_DATA</p>')
    assert check_html(ok) == []
    cdn = '<script defer="defer" src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex.js"></script>'
    assert any("cdn.jsdelivr.net" in p for p in check_html(cdn))
    assert check_html('<script src="//unpkg.com/x.js"></script>')
    assert check_html('<link href="https://fonts.example/x.css" rel="stylesheet">')
    for leak in ["cifar10 not found under /root/.cache/aot_lib/data",
                 "File /home/alice/aot/aot_lib/data.py, line 3",
                 "/work/main/notebooks", "/tmp/tmpab12/x.png", "~/.cache/aot_lib",
                 "/usr/lib/python3/site-packages/torch/x.py", r"C:\Users\bob\data"]:
        assert check_html(f"<pre>{leak}</pre>"), leak
    for fine in ["results/cpu/run", "https://example.org/home/page", "../work/x",
                 "configs/base/cifar.yaml", "40,000 train / 10,000 test"]:
        assert not check_html(f"<p>{fine}</p>"), fine


def test_check_html_flags_raw_dicts_in_outputs():
    out = ('<div class="output stream highlight-myst-ansi notranslate"><div class="highlight">'
           "<pre><span></span>{&#39;profile&#39;: &#39;fast&#39;}\n</pre></div></div>")
    assert any("raw dict" in p for p in check_html(out))
    fine = ('<div class="output stream highlight-myst-ansi notranslate"><div class="highlight">'
            "<pre><span></span>loss 0.1 {not a dict}\n</pre></div></div>")
    assert not check_html(fine)
    wide = ('<div class="output stream highlight-myst-ansi notranslate"><div class="highlight">'
            f"<pre><span></span>{'x' * 120}\n</pre></div></div>")
    assert any("wider than the page" in p for p in check_html(wide))


def test_check_built_book_walks_the_pages(tmp_path):
    assert check_built_book(tmp_path), "an empty folder is not a built book"
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "index.html").write_text("<p>ok</p>")
    (tmp_path / "notebooks" / "05.html").write_text("<pre>no data under /root/.cache</pre>")
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "x.html").write_text('<script src="https://x.org/a.js">')
    problems = check_built_book(tmp_path)
    assert len(problems) == 1 and "05.html" in problems[0]
    # the executed notebooks offered for download are searched for paths too (their $...$ is Markdown, not HTML)
    (tmp_path / "_sources" / "notebooks").mkdir(parents=True)
    (tmp_path / "_sources" / "notebooks" / "05.ipynb").write_text(
        '{"cells": [{"source": "width $a$"},\n {"outputs": [{"text": "File /work/main/aot_lib/x.py"}]}]}')
    assert check_built_book(tmp_path)[1:] == [
        '_sources/notebooks/05.ipynb:2: shows a path of the build machine: ...dth $a$"},'
        ' {"outputs": [{"text": "File /work/main/aot_lib/x.py"}]}]}...']


def test_table_cells_holding_python_reprs_are_named_with_their_line():
    """Chapter 5's benchmark table printed whole dicts into its cells; a list, a nested list, a list of
    three or more numbers and a tensor are reprs too. The message gives the page, the line and the cell."""
    dump = ("{&#x27;config&#x27;: &#x27;table1/aot_admm_base_cifar10&#x27;, "
            "&#x27;hours_8xA100&#x27;: 0.0745, &#x27;gpus&#x27;: 8}")
    page = "<table>\n<tr>\n" + CELL.format(dump) + "</tr>\n</table>"
    assert check_html(page, "05.html") == [
        "05.html:3: a table cell shows a Python dict/list repr (give each value its own column or row): "
        "{'config': 'table1/aot_admm_base_cifar10', 'hours_8xA100': 0.0745, 'gpus': 8}"]
    for cell, shown in [("{0: 1.5}", "{0: 1.5}"),
                        ("datasets: [&#39;cifar10&#39;, &#39;cifar100&#39;]", "datasets: ['cifar10', 'cifar100']"),
                        ('["x"]', '["x"]'),
                        ("<span>[[1, 2], [3, 4]]</span>", "[[1, 2], [3, 4]]"),
                        ("[30, 60, 90]", "[30, 60, 90]"),
                        ("[1e-3, 2e-3, 4e-3]", "[1e-3, 2e-3, 4e-3]"),
                        ("tensor([1., 2.])", "tensor([1., 2.])")]:
        assert check_html("<tr>" + CELL.format(cell) + "</tr>", "p.html") == [
            "p.html:1: a table cell shows a Python dict/list repr (give each value its own column or row): "
            + shown], cell
    head = '<th class="paper">{&#39;top1&#39;: 41.2}</th>'
    assert check_html(head, "h.html") == [
        "h.html:1: a table cell shows a Python dict/list repr (give each value its own column or row): "
        "{'top1': 41.2}"]


def test_a_long_repr_is_cut_to_80_characters_in_the_message():
    cell = "{'" + "k" * 100 + "': 1}"
    assert check_html(CELL.format(cell), "p.html") == [
        "p.html:1: a table cell shows a Python dict/list repr (give each value its own column or row): "
        "{'" + "k" * 78]


def test_table_cells_that_are_not_reprs_pass():
    for cell in ["[41.20, 43.50]",  # an interval: two numbers
                 "3 × 32 × 32", "{not a dict}", "lr 2e-3, 4e-3", "\\(R^c - R\\)",
                 "<code>{'lr': 2e-3}</code>",  # a literal the page shows on purpose
                 "<code class=\"docutils literal\"><span class=\"pre\">[1,</span> <span class=\"pre\">2,</span>"
                 " <span class=\"pre\">3]</span></code>"]:
        assert check_html("<tr>" + CELL.format(cell) + "</tr>") == [], cell


def test_dollar_latex_outside_typeset_math_is_named_with_its_line():
    """Chapter 6's Markdown() output kept ``$a$`` as text. Sphinx turns the book's ``$...$`` into math spans (no
    dollar sign left), so a dollar pair in the page's text is LaTeX nobody typeset."""
    page = ('<div class="output text_markdown">\n<p>the best run has <strong>$a$</strong> and '
            "$\\lambda = 0.1$</p></div>")
    assert check_html(page, "06.html") == [
        "06.html:2: raw LaTeX outside typeset math (write it in a Markdown cell or show it with IPython's "
        "Math): $a$",
        "06.html:2: raw LaTeX outside typeset math (write it in a Markdown cell or show it with IPython's "
        "Math): $\\lambda = 0.1$"]
    display = "<p>x</p>\n<p>$$\nR^c = \\frac{1}{2}\n$$</p>"
    assert check_html(display, "p.html") == [
        "p.html:2: raw LaTeX outside typeset math (write it in a Markdown cell or show it with IPython's "
        "Math): $$ R^c = \\frac{1}{2} $$"]
    cell = CELL.format("$\\tau$")  # in a table cell too
    assert check_html(cell, "t.html") == [
        "t.html:1: raw LaTeX outside typeset math (write it in a Markdown cell or show it with IPython's "
        "Math): $\\tau$"]


def test_typeset_math_code_and_lone_dollars_pass():
    fine = ['<span class="math notranslate nohighlight">\\(a\\)</span>',
            '<div class="math notranslate nohighlight">\n\\[R^c = $x$\\]\n</div>',
            "<pre>export AOT_DATA=$HOME/data; cd $PWD</pre>",
            "<p>run <code class=\"docutils literal\">echo $a$</code></p>",
            "<script>window.MathJax = {tex: {inlineMath: [['$', '$']]}}</script>",
            "<style>a::after { content: '$x$'; }</style>",
            '<a title="$x$" href="#">link</a>',
            "<p>a fee of $ 5 and of $ 6</p>", "<p>costs US$5</p>"]
    for page in fine:
        assert check_html(page) == [], page


def test_the_command_line_prints_each_problem_and_fails(tmp_path, capsys):
    (tmp_path / "index.html").write_text("<p>ok</p>")
    (tmp_path / "ch.html").write_text("<p>\n$a$</p>")
    assert main(["check-html", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == "check-html: 2 files, 1 problem(s)\n"
    assert err == ("ch.html:2: raw LaTeX outside typeset math (write it in a Markdown cell or show it with IPython's "
                   "Math): $a$\n")
    (tmp_path / "ch.html").write_text("<p>fine</p>")
    assert main(["check-html", str(tmp_path)]) == 0
    assert main(["check-htm", str(tmp_path)]) == 2
    assert capsys.readouterr().err.endswith("usage: python book/_ext/aot_book_build check-html BUILD_HTML_DIR\n")


def test_check_html_flags_a_titled_table_the_build_did_not_number():
    from aot_book_build.check_html import check_html

    loose = '<p>text</p>\n<div class="aot-table-wrap"><p class="aot-table-title"><strong>Final &amp; losses</strong></p>'
    assert check_html(loose, "p.html") == [
        "p.html:2: the table 'Final & losses' is not numbered: give it Table(..., name='tbl-...') and cite it "
        "with {numref}"]
    # in a dropdown box (a page's record) a table is titled by its box; after the box closes the rule applies again
    boxed = f"<details><summary>How</summary>{loose}</details>"
    assert check_html(boxed) == []
    assert len(check_html(boxed + loose)) == 1
    numbered = ('<div class="aot-numbered-table" id="tbl-x"><p><span class="caption-number">Table 1 </span>'
                '<span class="caption-text">Final</span></p><div class="aot-table-wrap"><table></table></div></div>')
    assert check_html(numbered) == []


def test_a_cell_that_printed_to_stderr_is_named_with_its_line_and_first_words():
    """Issue 59: torch's "No CUDA runtime is found" and Bokeh's W-1005 warning reached the pages as stderr outputs;
    a page holding one fails the check (the HTML as myst-nb writes a stderr stream; a stdout stream passes)."""
    page = ('<p>text</p>\n<div class="output stream highlight-myst-ansi notranslate"><div class="highlight"><pre>'
            'fine</pre></div></div>\n<div class="output stderr highlight-myst-ansi notranslate"><div class="highlight">'
            '<pre><span></span>WARNING:bokeh.core.validation.check:W-1005 (FIXED_SIZING_MODE)</pre></div></div>')
    assert check_html(page, "ch.html") == [
        "ch.html:3: a cell printed to stderr (fix its cause, or catch it where it is expected): "
        "WARNING:bokeh.core.validation.check:W-1005 (FIXED_SIZING_MODE)"]
