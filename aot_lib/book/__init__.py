"""What the book's chapters share: page helpers (``pages``), recorded or smoke-trained runs (``recorded``), recorded
benchmarks (``benchmarks``), sample photographs (``photos``), figures (``plotting``), tables (``tables``), control
panels (``controls``, ``panels``) and the white-box chapter's subjects (``whitebox``). The evidence the chapters judge
(claims, seeds, verdicts) is :mod:`aot_lib.evidence`'s; the book's Sphinx extensions and HTML checks live beside the
book, in ``book/_ext/aot_book_build``.

The top layer: may import every other sub-package; nothing in ``aot_lib`` imports it.
"""
