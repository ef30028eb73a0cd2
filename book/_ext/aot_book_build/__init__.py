"""The book's build plumbing: Sphinx extensions that ``_config.yml`` loads (``local_extensions``) and the checks of
the built HTML. Kept beside the book, not in :mod:`aot_lib`: a user who imports the package never loads Sphinx.

* ``kernels_first`` — aot_lib's CPU kernels built (or loaded) once before any chapter runs;
* ``bokeh_pages`` — BokehJS shipped in ``_static/bokeh/`` and loaded by the pages that hold a control panel;
* ``ipynb_download`` — each executed chapter offered as ``.ipynb`` with its outputs;
* ``citations`` — the reference list labelled as the text cites ("Grill et al., 2020");
* ``wide_cells`` — outputs wider than the text column become full-width cells;
* ``numbered_tables`` — named tables numbered by the build and cited with ``{numref}``;
* ``check_html``, ``jupyterlab_key`` — ``python book/_ext/aot_book_build check-html|jupyterlab-key BUILD_HTML_DIR``.

May import :mod:`aot_lib` (the book's helpers); nothing in :mod:`aot_lib` imports it.
"""
