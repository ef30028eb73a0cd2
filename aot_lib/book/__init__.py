"""What the book's chapters share: page helpers (``pages``), recorded runs and benchmarks (``recorded``),
sample photographs (``photos``), figures (``plotting``), tables (``tables``), the paper's numbers (``paper``),
seed statistics (``stats``) and the checks of the built HTML (``check_html``).

The top layer: may import every other sub-package; nothing in ``aot_lib`` imports it.
``python -m aot_lib.book check-html BUILD_HTML_DIR`` checks the built book (``.ci/run``).
"""
