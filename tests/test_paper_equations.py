"""aot_lib.evidence.paper.EQUATION_NUMBERS against the paper's LaTeX source, counted independently here: numbered
environments in order (equation: one number; align: one per row not marked \\nonumber; starred: none), the appendix
numbered within its sections (A.1, ...). And the chapters cite the paper's equations by these numbers, never by a
source label."""
import re
from pathlib import Path

import pytest

from aot_lib.evidence.paper import EQUATION_NUMBERS

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT.parent / "shared" / "paper" / "000_fd6c372c43a01129.txt"


def latex_equation_numbers(tex: str) -> dict[str, str]:
    tex = re.sub(r"(?<!\\)%.*", "", tex)
    parts = re.finditer(r"\\begin\{(equation\*?|align\*?)\}(.*?)\\end\{\1\}|\\appendix|\\section\*?\{", tex, re.S)
    appendix, section, n, numbers = False, 0, 0, {}
    for m in parts:
        text = m.group(0)
        if text == "\\appendix":
            appendix = True
        elif text.startswith("\\section"):
            if appendix and text == "\\section{":
                section, n = section + 1, 0
        elif not m.group(1).endswith("*"):
            rows = re.split(r"\\\\(?![a-zA-Z])", m.group(2)) if m.group(1) == "align" else [m.group(2)]
            for row in (r for r in rows if r.strip() and "\\nonumber" not in r):
                n += 1
                for label in re.findall(r"\\label\{eq:([^}]*)\}", row):
                    numbers[label] = f"{chr(64 + section)}.{n}" if appendix else str(n)
    return numbers


def test_equation_numbers_are_the_papers():
    if not PAPER.exists():
        pytest.skip(f"LOUD SKIP: the paper's source is not beside the repository ({PAPER}); CI has it")
    counted = latex_equation_numbers(PAPER.read_text())
    assert {k: counted[k] for k in EQUATION_NUMBERS} == EQUATION_NUMBERS
    assert counted["zupdate"] == "14"  # an align whose first row is \nonumber: one number, on its last row


def test_chapters_cite_the_papers_equations_by_number():
    # the package's docstrings too: the book shows their source beside the formulas
    texts = {str(p.relative_to(ROOT)): p.read_text()
             for p in [*(ROOT / "notebooks").glob("*.py"), *(ROOT / "book").glob("*.md"),
                       *(ROOT / "aot_lib").rglob("*.py")]}
    for name, text in texts.items():
        assert not re.search(r"Eqs?\.\s+(#\s*)?`", text), f"{name} cites an equation by its source label"
    cited = {n for text in texts.values() for n in re.findall(r"Eqs?\. \(([A-Z]?\.?\d+)\)", text)}
    assert cited and cited <= set(EQUATION_NUMBERS.values()), cited - set(EQUATION_NUMBERS.values())
