"""The book's structure: every toc entry exists, every notebook opens through jupytext."""
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
jupytext = pytest.importorskip("jupytext")


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [toc["root"]] + [c["file"] for c in toc["chapters"]]


def test_book_links_to_root_config():
    for name in ("_config.yml", "_toc.yml", "notebooks"):
        link = ROOT / "book" / name
        assert link.is_symlink() and link.resolve() == (ROOT / name).resolve()


@pytest.mark.parametrize("entry", toc_files())
def test_toc_entry_exists(entry):
    candidates = [ROOT / "book" / f"{entry}{ext}" for ext in (".md", ".py", ".ipynb")]
    assert any(p.exists() for p in candidates), f"{entry} listed in _toc.yml but missing"


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.py")), ids=lambda p: p.name)
def test_notebook_opens_with_jupytext(path):
    nb = jupytext.read(path)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    kinds = {c.cell_type for c in nb.cells}
    assert kinds == {"markdown", "code"}
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")
