"""``python -m aot_lib.book check-html BUILD_HTML_DIR``: the checks of the built book's HTML."""
import sys

from .pages import main

sys.exit(main())
