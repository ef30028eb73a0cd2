"""``python -m aot_lib.book COMMAND``: ``check-html BUILD_HTML_DIR`` (the checks of the built book's HTML) and
``jupyterlab-key BUILD_HTML_DIR [--write]`` (each chapter's key to its references for JupyterLab, checked or
written from the built book)."""
import sys

if sys.argv[1:2] == ["jupyterlab-key"]:
    from .jupyterlab_key import main

    sys.exit(main(sys.argv[2:]))
from .check_html import main

sys.exit(main())
