"""The evidence engine: recorded runs, the analysis plan, seed statistics and the verdicts they give.

It reads files under ``results/`` and judges the paper's claims the way the plan (``results/cpu/plan.yaml``) says,
before anyone reads the numbers: the book's evidence chapters and ``aot verdicts`` call the same functions, so they
cannot disagree. A researcher who records one more seed (``aot record``) or adds a claim to a copy of the plan sees
the verdict move with ``aot verdicts RESULTS``; no book build is needed.

One module, one job:

* :mod:`~aot_lib.evidence.records` — a recorded run's files, read strictly (a key twice, a value out of range, a
  re-evaluation filed beside another run's encoder: one line naming the file and the fix);
* :mod:`~aot_lib.evidence.cells` — a table cell's seeds, checked to be seeds of one recipe; wider grids, floors;
* :mod:`~aot_lib.evidence.plan` — the analysis plan: rules, margins, seeds, what was written after the data;
* :mod:`~aot_lib.evidence.stats` — summaries, paired intervals, verdicts, multiplicity;
* :mod:`~aot_lib.evidence.claims` — the paper's claims as comparisons of cells, and the verdict rows;
* :mod:`~aot_lib.evidence.search` — the learning-rate sweeps and the recipe searches;
* :mod:`~aot_lib.evidence.timing` — time to accuracy: k-NN curves, the step clock, the 30-minute goal;
* :mod:`~aot_lib.evidence.paper` — the paper's own numbers, transcribed from its tables.

Layering: imports the base modules (:mod:`aot_lib.files`, :mod:`aot_lib.config_format`, :mod:`aot_lib.probe_grid`)
and nothing from ``training``, ``data``, ``models`` or ``book`` at import time; reading the verdicts loads none of
them (tested). One exception, inside the functions that need it: the recipe search's readers read candidate config files with the
trainer's own loader (:func:`aot_lib.training.config.load_config`: inheritance and defaults), so that a config is
never read two ways; and the step-time reader labels a CPU as every page does (:func:`aot_lib.runtime.cpu_label`). Within it: ``records`` < ``cells`` < ``search`` < ``timing``, and
``paper`` < ``stats``, ``plan`` < ``claims``.
"""
from . import paper, plan, stats  # noqa: F401  (sub-modules used as evidence.paper, evidence.stats, …)
from .cells import *  # noqa: F401,F403
from .cells import __all__ as _cells
from .claims import *  # noqa: F401,F403
from .claims import __all__ as _claims
from .records import *  # noqa: F401,F403
from .records import __all__ as _records
from .search import *  # noqa: F401,F403
from .search import __all__ as _search
from .timing import *  # noqa: F401,F403
from .timing import __all__ as _timing

__all__ = ["paper", "plan", "stats", *_records, *_cells, *_claims, *_search, *_timing]
