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
