"""The package's layout as its docstrings and the README promise it (issue 56): what each part may import, no file
past its size, the evidence engine usable without the trainer or the book, and no Sphinx at ``import aot_lib``."""
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "aot_lib"
MODULES = sorted(PACKAGE.rglob("*.py"))


def _module_imports(path: Path) -> list[tuple[str, bool]]:
    """Every ``aot_lib``/third-party module ``path`` imports, resolved to a dotted name, with whether the import sits
    at module level (run by importing the file) or inside a function (run only when called)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    out = []
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module
            out.append((name, id(node) in top))
    return out


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_file_of_the_package_is_longer_than_500_lines(path):
    limit = 400 if path.parent.name == "evidence" else 500  # the evidence engine: one job per module (issue 56)
    lines = len(path.read_text().splitlines())
    assert lines <= limit, f"{path.relative_to(ROOT)} has {lines} lines (at most {limit}): split it by job"


def test_nothing_in_the_package_imports_the_books_build_plumbing_or_sphinx():
    """Sphinx extensions live in book/_ext/aot_book_build, loaded by _config.yml; the package never imports them."""
    found = [(p.relative_to(ROOT).as_posix(), name) for p in MODULES for name, _ in _module_imports(p)
             if name.split(".")[0] in ("aot_book_build", "sphinx", "docutils", "myst_nb")]
    assert not found


def test_the_evidence_engine_imports_only_the_base_modules_at_import_time():
    """aot_lib.evidence: at module level only files, config_format, probe_grid (torch-free) and its own modules; the
    one exception, inside the search readers, is the trainer's config loader, and the step-time reader's CPU label
    (the docstring says so)."""
    allowed = ("aot_lib.files", "aot_lib.config_format", "aot_lib.probe_grid", "aot_lib.evidence")
    for path in sorted((PACKAGE / "evidence").glob("*.py")):
        for name, at_top in _module_imports(path):
            if name.startswith("aot_lib") and not name.startswith(allowed):
                assert not at_top and name in ("aot_lib.training.config", "aot_lib.runtime"), (path.name, name)


def test_nothing_below_the_book_imports_the_book():
    """The book's helpers sit on top: models, data, training, objectives, theory and evidence never import them."""
    for path in MODULES:
        part = path.relative_to(PACKAGE).parts[0]
        if part in ("book", "cli.py", "train.py", "__init__.py"):
            continue
        upward = [n for n, _ in _module_imports(path) if n.startswith("aot_lib.book") or n == "aot_lib.cli"]
        assert not upward, f"{path.relative_to(ROOT)} imports {upward}"


def test_reading_the_verdicts_loads_no_trainer_book_or_sphinx_module():
    """In a fresh process: what `import aot_lib` loads, then what reading every verdict adds. The verdicts add only
    the evidence engine and the base modules, and neither step loads Sphinx or the book's build plumbing."""
    code = (
        "import json, sys\n"
        "import aot_lib\n"
        "before = set(sys.modules)\n"
        "from aot_lib import evidence\n"
        f"rows = evidence.verdicts({str(ROOT / 'results' / 'cpu')!r})\n"
        "print(json.dumps({'before': sorted(before), 'added': sorted(set(sys.modules) - before), 'n': len(rows)}))\n")
    out = json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                                    cwd=ROOT).stdout)
    assert out["n"] == 15  # the plan's claims: chapter 1's results table
    loaded = out["before"] + out["added"]
    assert not [m for m in loaded if m.split(".")[0] in ("sphinx", "docutils", "myst_nb", "aot_book_build")]
    ours = [m for m in out["added"] if m.startswith("aot_lib")]
    assert ours and all(m == "aot_lib.evidence" or m.startswith(("aot_lib.evidence.", "aot_lib.config_format",
                                                                 "aot_lib.probe_grid")) for m in ours), ours
    assert not [m for m in loaded if m.startswith("aot_lib.book")]
