"""aot_book_build.page_scripts: a page's scripts each once (issue 59: sphinx-thebe's inline configuration twice made
the browser log "Identifier 'THEBE_JS_URL' has already been declared" on every page)."""
from sphinx.builders.html._assets import _JavaScript

from aot_book_build.page_scripts import each_script_once


def test_a_script_added_twice_is_kept_once_in_its_first_place():
    config = _JavaScript("", body='const THEBE_JS_URL = "x"')
    other = _JavaScript("", body='const thebe_selector = ".thebe"')
    scripts = [_JavaScript("_static/a.js"), config, _JavaScript("_static/sphinx-thebe.js", **{"async": "async"}),
               config, _JavaScript("_static/a.js"), other, _JavaScript("_static/sphinx-thebe.js")]
    kept = each_script_once(scripts)
    assert kept == [scripts[0], config, scripts[2], other, scripts[6]]
    # the same file with other attributes (async or not) is another script: both kept
    assert [getattr(s, "attributes", {}) for s in kept if s.filename == "_static/sphinx-thebe.js"] == [
        {"async": "async"}, {}]


def test_a_sphinx_build_with_an_inline_script_added_twice_ships_it_once(tmp_path):
    """A real (tiny) Sphinx build in which an extension adds one inline script twice as documents are read, with two
    priorities (Sphinx then keeps both): the page carries it once with page_scripts loaded, more than once without."""
    import subprocess
    import sys
    from pathlib import Path

    ext = Path(__file__).resolve().parent.parent / "book" / "_ext"
    (tmp_path / "twice.py").write_text(
        "def _add(app, env, docnames):\n"
        "    app.add_js_file(None, body='const ONCE = 1')\n"
        "    app.add_js_file(None, body='const ONCE = 1', priority=400)\n"
        "def setup(app):\n"
        "    app.connect('env-before-read-docs', _add)\n")
    (tmp_path / "index.rst").write_text("Page\n====\n\ntext\n")
    counts = {}
    for name, extensions in (("with", ["twice", "aot_book_build.page_scripts"]), ("without", ["twice"])):
        (tmp_path / "conf.py").write_text(f"extensions = {extensions!r}\n")
        out = tmp_path / f"_build_{name}"
        subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(tmp_path), str(out)], check=True,
                       env={"PYTHONPATH": f"{tmp_path}:{ext}", "PATH": "/usr/bin:/bin"})
        counts[name] = (out / "index.html").read_text().count("const ONCE = 1")
    # without it Sphinx 7.4 ships four copies (each added with filename None, then re-added from its registry with "")
    assert counts["with"] == 1 and counts["without"] > 1, counts
