"""``python -m aot_lib.book check-html BUILD_HTML_DIR``: the checks of the built book's HTML."""
import sys

from .check_html import main

sys.exit(main())
