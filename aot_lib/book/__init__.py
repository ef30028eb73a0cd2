"""What the book's chapters share: page helpers and recorded runs (``pages``), figures (``plotting``),
tables (``tables``), the paper's numbers (``paper``) and seed statistics (``stats``).

The top layer: may import every other sub-package; nothing in ``aot_lib`` imports it.
``python -m aot_lib.book check-html BUILD_HTML_DIR`` checks the built book (``.ci/run``).
"""
