"""``python book/_ext/aot_book_build COMMAND``: ``check-html BUILD_HTML_DIR`` (the checks of the built book's HTML) and
``jupyterlab-key BUILD_HTML_DIR [--write]`` (each chapter's key to its references for JupyterLab, checked or
written from the built book). Run as a folder, so the book's build plumbing stays out of the package users import."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # book/_ext: import this folder as its package

if sys.argv[1:2] == ["jupyterlab-key"]:
    from aot_book_build.jupyterlab_key import main

    sys.exit(main(sys.argv[2:]))
from aot_book_build.check_html import main

sys.exit(main())
