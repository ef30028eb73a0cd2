"""Numbers for the chapters' prose: a markdown cell says ``{eval}`t1.diff` points`` and the number is the code's.

The chapters' sentences are markdown, not Python strings (issue 59): a code cell computes the values (from the
records), and the text names them with MyST's ``{eval}`` role, which myst-nb evaluates when it builds the book
(``_config.yml``: ``execute_notebooks: inline``) and jupyterlab-myst when the chapter runs in JupyterLab. A value
is a :class:`Phrase` so that both show it as the text it is, without the quotes of a ``str``'s repr.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Sequence

__all__ = ["Phrase", "phrases", "and_list"]


class Phrase(str):
    """A ``str`` whose repr is itself: ``{eval}`` shows an expression's ``text/plain`` repr."""

    def __repr__(self) -> str:
        return str(self)


def phrases(**values: Any) -> SimpleNamespace:
    """The values a paragraph names (``{eval}`name.key```), each as a :class:`Phrase` of its ``str``: format numbers
    before (``diff=f"{d.mean:+.2f}"``), so the digits shown are the ones chosen here, not a float's repr."""
    return SimpleNamespace(**{k: Phrase(v) for k, v in values.items()})


def and_list(words: Sequence[str]) -> str:
    """``["a", "b", "c"]`` as prose: ``"a, b and c"`` (one word: itself)."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
