"""Sphinx extension: each of a page's scripts once. sphinx-thebe adds its configuration, an inline script declaring
``const THEBE_JS_URL``, each time the environment reads documents, so a page could carry it twice and the browser
logged "Identifier 'THEBE_JS_URL' has already been declared" on every page (issue 59). A script added twice, the
same file or the same inline body with the same attributes, is kept once, in its first place."""
from __future__ import annotations


def _key(script) -> tuple:
    attributes = getattr(script, "attributes", {}) or {}
    return (getattr(script, "filename", str(script)), tuple(sorted((k, str(v)) for k, v in attributes.items())))


def each_script_once(scripts: list) -> list:
    """``scripts`` (a page context's ``script_files``) without repeats, in order."""
    seen, kept = set(), []
    for script in scripts:
        key = _key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    return kept


def _dedupe(app, pagename, templatename, context, doctree) -> None:
    if "script_files" in context:
        context["script_files"][:] = each_script_once(context["script_files"])


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)  # after every extension has added its scripts
    return {"parallel_read_safe": True, "parallel_write_safe": True}
