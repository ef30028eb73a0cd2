"""The chapters' JupyterLab keys (aot_book_build.jupyterlab_key): which references need one, what the built book's
HTML says each target is, and the key cell written into a chapter and read back. Against the real build, CI runs
``python book/_ext/aot_book_build jupyterlab-key book/_build/html`` (exit 1 names a stale key)."""
from __future__ import annotations

from pathlib import Path

import jupytext

from aot_book_build import jupyterlab_key as K

ROOT = Path(__file__).resolve().parent.parent

CHAPTER = '''# %% [markdown]
# (ch-x)=
# # X
#
# See {ref}`ch-y`, {ref}`sec-local`, {eq}`eq-here`, {eq}`eq-there`, {numref}`fig-a` and
# {numref}`Tab. %s <tbl-b>`; {ref}`ch-y` again, as [](#bib-wang2025aot) did
# ([](#bib-chen2020simclr); [](#bib-grill2020byol)).
#
# $$ a = b $$ (eq-here)
#
# (sec-local)=
# ## Local

# %%
print(1)
'''

# the forms Sphinx 7 and aot_book_build.numbered_tables write (copied from the built book)
HTML = '''<p><a class="reference internal" href="y.html#ch-y"><span class="std std-ref">Why &amp; how</span></a></p>
<div class="math notranslate nohighlight" id="equation-eq-here">
<span class="eqno">(1.1)<a class="headerlink" href="#equation-eq-here" title="Link to this equation">#</a></span>\\[
a = b
\\]</div>
<div class="math notranslate nohighlight" id="equation-eq-there">
<span class="eqno">(2.3)<a class="headerlink" href="#equation-eq-there" title="Link to this equation">#</a></span>\\[
c = d
\\]</div>
<figure class="align-default" id="fig-a">
<a class="aot-enlarge" href="../_images/a.png"><img alt="" src="../_images/a.png" /></a>
<figcaption>
<p><span class="caption-number">Fig. 1.2 </span><span class="caption-text">Loss of <span class="math notranslate nohighlight">\\(Z\\)</span>, per step</span><a class="headerlink" href="#fig-a" title="Link to this image">#</a></p>
</figcaption>
</figure>
<div class="aot-numbered-table tex2jax_process" id="tbl-b">
<p><span class="caption-number">Table 1.3 </span><span class="caption-text">The paper's Table 1</span></p>
<div class="output text_html"></div></div>
<div class="citation" id="id6" role="doc-biblioentry">
<span class="label"><span class="fn-bracket">[</span>Wang et al., 2025a<span class="fn-bracket">]</span></span>
<p>Peng Wang, Yifu Lu, Yaodong Yu, Druv Pai, Qing Qu, and Yi Ma. Attention-only transformers via unrolled subspace denoising. In <em>Proceedings of the 42nd International Conference on Machine Learning</em>, volume 267 of Proceedings of Machine Learning Research, 63840–63859. 2025.</p>
</div>
<div class="citation" id="id8" role="doc-biblioentry">
<span class="label"><span class="fn-bracket">[</span>Chen et al., 2020<span class="fn-bracket">]</span></span>
<p>Ting Chen, Simon Kornblith, Mohammad Norouzi, and Geoffrey Hinton. A simple framework for contrastive learning of visual representations. In <em>Proceedings of the 37th International Conference on Machine Learning</em>, volume 119 of Proceedings of Machine Learning Research, 1597–1607. PMLR, 2020.</p>
</div>
<div class="citation" id="id7" role="doc-biblioentry">
<span class="label"><span class="fn-bracket">[</span>Grill et al., 2020<span class="fn-bracket">]</span></span>
<p>Jean-Bastien Grill, Florian Strub, Florent Altché, Corentin Tallec, Pierre H. Richemond, Elena Buchatskaya, Carl Doersch, Bernardo Avila Pires, Zhaohan Daniel Guo, Mohammad Gheshlaghi Azar, Bilal Piot, Koray Kavukcuoglu, Rémi Munos, and Michal Valko. Bootstrap your own latent: a new approach to self-supervised learning. In <em>Advances in Neural Information Processing Systems</em>, volume 33, 21271–21284. 2020.</p>
</div>
'''
BIB = ROOT / "book" / "references.bib"


def test_needed_targets_are_what_jupyterlab_cannot_resolve_in_the_notebook(tmp_path):
    path = tmp_path / "x.py"
    path.write_text(CHAPTER)
    # ch-y and eq-there are other chapters'; every numref (figures and tables are outputs) and every citation;
    # the local ones are not
    assert K.needed_targets(path) == [("ref", "ch-y"), ("eq", "eq-there"), ("numref", "fig-a"), ("numref", "tbl-b"),
                                      ("cite", "bib-wang2025aot"), ("cite", "bib-chen2020simclr"),
                                      ("cite", "bib-grill2020byol")]


def test_book_targets_read_titles_numbers_captions_and_latex(tmp_path):
    (tmp_path / "x.html").write_text(HTML)
    got = K.book_targets(tmp_path)
    assert got == {"ch-y": K.Target("section", "ch-y", None, "Why & how"),
                   "eq-here": K.Target("equation", "eq-here", "1.1", "a = b"),
                   "eq-there": K.Target("equation", "eq-there", "2.3", "c = d"),
                   "fig-a": K.Target("figure", "fig-a", "1.2", "Loss of $Z$, per step"),
                   "tbl-b": K.Target("table", "tbl-b", "1.3", "The paper's Table 1")}
    # a link with its own words ({ref}`text <label>`) does not retitle its section: the heading's title wins,
    # wherever the heading's page comes in the walk (the section number Sphinx prints is not part of it)
    (tmp_path / "a.html").write_text('<p><a class="reference internal" href="z.html#sec-z"><span class="std std-ref">'
                                     'the other chapter</span></a></p>')
    (tmp_path / "z.html").write_text('<section id="views">\n<span id="sec-z"></span><h2><span class="section-number">'
                                     '6.1. </span>The views of <span class="math notranslate nohighlight">\\(X\\)'
                                     '</span><a class="headerlink" href="#views" title="Link to this heading">#</a></h2>')
    assert K.book_targets(tmp_path)["sec-z"] == K.Target("section", "sec-z", None, "The views of $X$")
    for name in ("a.html", "z.html"):
        (tmp_path / name).unlink()
    # with the bibliography: only the works the built list shows (the .bib holds 34), found by their text, with
    # the list's label (a label depends on what the list holds: here a made-up "2025a")
    cited = {k: t for k, t in K.book_targets(tmp_path, BIB).items() if t.kind == "citation"}
    assert sorted(cited) == ["bib-chen2020simclr", "bib-grill2020byol", "bib-wang2025aot"]
    assert cited["bib-wang2025aot"] == K.Target("citation", "bib-wang2025aot", None, "Wang et al., 2025a", (
        "Peng Wang, Yifu Lu, Yaodong Yu, Druv Pai, Qing Qu, and Yi Ma. Attention-only transformers via unrolled "
        "subspace denoising. In Proceedings of the 42nd International Conference on Machine Learning, volume 267 "
        "of Proceedings of Machine Learning Research, 63840–63859. 2025."))


def test_the_key_is_written_as_the_last_cell_read_back_and_rewritten_in_place(tmp_path):
    path = tmp_path / "x.py"
    path.write_text(CHAPTER)
    (tmp_path / "x.html").write_text(HTML)
    key = K.chapter_key(path, K.book_targets(tmp_path, BIB))
    assert "(ch-y)=\n###### Why & how" in key and ":label: eq-there\n:enumerator: 2.3\nc = d" in key
    assert ":label: fig-a\n:enumerator: 1.2\nLoss of $Z$, per step\n:::" in key
    assert ":label: tbl-b\n:kind: table\n:enumerator: 1.3\nThe paper's Table 1\n:::" in key
    # the works cited come last, in order of first use
    assert key.index(":label: tbl-b") < key.index("**Works cited**") < key.index("(bib-wang2025aot)=") \
        < key.index("(bib-chen2020simclr)=") < key.index("(bib-grill2020byol)=")
    assert "(bib-wang2025aot)=\n###### Wang et al., 2025a\n\nPeng Wang, Yifu Lu," in key
    # the chapter's own equation is not defined again (its label is the chapter's): a line says its two numbers
    assert ":label: eq-here" not in key and key.endswith(
        "**This chapter's own equations**, numbered here in order and in the book by chapter:\n(1) is the book's "
        "(1.1).")
    assert K.write_key(path, key) and not K.write_key(path, key)  # the second time nothing changes
    cells = jupytext.read(path).cells
    assert cells[-1].metadata["tags"] == ["remove-cell"] and cells[-1].source == key
    assert K._split(path)[1] == key and all(len(line) <= 88 for line in path.read_text().splitlines())
    assert K.write_key(path, key.replace("Why & how", "Why")) and path.read_text().count(K.KEY_MARK) == 1
    # the chapter's own text is untouched by writing its key
    assert K._split(path)[0].rstrip("\n") == CHAPTER.rstrip("\n")


def test_a_target_the_build_does_not_show_is_refused_by_name(tmp_path):
    path = tmp_path / "x.py"
    path.write_text(CHAPTER)
    try:
        K.chapter_key(path, {})
    except ValueError as e:
        assert str(e) == ("x.py: the built book shows no target ch-y, eq-there, fig-a, tbl-b, bib-wang2025aot, "
                          "bib-chen2020simclr, bib-grill2020byol; build the book from this checkout, then write the "
                          "keys")
    else:
        raise AssertionError("a key with no targets was written")


def test_every_chapter_has_a_key_for_exactly_the_references_it_needs():
    """Without a build: each chapter's key defines the labels its references need, in order of first use, so a
    reference added without rewriting the key is caught here (the numbers and titles: CI, against the build)."""
    import re

    for path in K.chapters(ROOT):
        _, key = K._split(path)
        assert key is not None, f"{path.name} has no JupyterLab key: build the book, then run python -m " \
                                "book/_ext/aot_book_build jupyterlab-key book/_build/html --write"
        defined = re.findall(r"^\(([\w-]+)\)=$|^:label: ([\w-]+)$", key, re.M)
        needed = K.needed_targets(path)
        in_order = [label for role, label in needed if role != "cite"] + [label for role, label in needed if role == "cite"]
        assert [a or b for a, b in defined] == in_order, path.name
