"""What the book's chapters share: page helpers (``pages``), recorded runs (``recorded``), recorded benchmarks
(``benchmarks``), the seeds, claims and verdicts of the evidence chapters (``evidence``), sample photographs
(``photos``), figures (``plotting``), tables (``tables``), the paper's numbers (``paper``), seed statistics
(``stats``), the checks of the built HTML (``check_html``) and the .ipynb downloads (``ipynb_download``).

The top layer: may import every other sub-package; nothing in ``aot_lib`` imports it.
``python -m aot_lib.book check-html BUILD_HTML_DIR`` checks the built book (``.ci/run``).
"""
