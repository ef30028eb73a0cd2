"""Sphinx extension: each of a page's scripts once. sphinx-thebe adds its configuration, an inline script declaring
``const THEBE_JS_URL``, each time the environment reads documents, so a page could carry it twice and the browser
logged "Identifier 'THEBE_JS_URL' has already been declared" on every page (issue 59). A script added twice, the
same file or the same inline body with the same attributes, is kept once, in its first place."""
from __future__ import annotations


def _key(script) -> tuple:
    attributes = getattr(script, "attributes", {}) or {}
    # an inline script is filed with filename None when added and "" when Sphinx re-adds it from its registry
    return (getattr(script, "filename", str(script)) or "", tuple(sorted((k, str(v)) for k, v in attributes.items())))


def each_script_once(scripts: list) -> list:
    """``scripts`` (the builder's or a page's) without repeats, in order: the same file or inline body with the same
    attributes is one script, whatever priority each copy was added with (Sphinx keeps both then)."""
    seen, kept = set(), []
    for script in scripts:
        key = _key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    return kept


def _dedupe_builder(app, env) -> list:
    # after every document is read (sphinx-thebe adds its scripts as reading starts) and before the HTML builder
    # copies its list of scripts for the pages: every page then carries each once
    if hasattr(app.builder, "_js_files"):
        app.builder._js_files[:] = each_script_once(app.builder._js_files)
    return []


def _dedupe_page(app, pagename, templatename, context, doctree) -> None:
    if "script_files" in context:  # and a script an extension adds to one page only
        context["script_files"][:] = each_script_once(context["script_files"])


def setup(app):
    app.connect("env-updated", _dedupe_builder, priority=900)
    app.connect("html-page-context", _dedupe_page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
