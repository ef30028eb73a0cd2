"""Seeds, spreads, intervals and verdicts: what the evidence chapters say about each claim of the paper.

A table cell is a set of runs that differ only in ``run.seed``: :func:`summarize` gives its mean, standard
deviation (``ddof=1``) and Student-t 95 % interval. Two families compared on the same seeds give a
:func:`paired_difference` (A - B per seed; the t interval of the mean difference, ``n - 1`` degrees of
freedom): pairing by seed removes what the seed does to both (data order, views, SIGReg directions). A
:func:`verdict` then reads the interval against the claim, as the analysis plan states the rules
(``results/cpu/plan.yaml``, read by :mod:`aot_lib.evidence.plan`, which also holds every margin: nothing here does):

* ``better`` (A beats B, e.g. AoT-ADMM vs AoT, Table 3): reproduced when the interval lies above 0,
  contradicted when it lies below 0, otherwise not settled;
* ``control`` (our own comparisons, a gain expected): the same rule, worded confirmed instead of reproduced;
* ``parity`` (A is comparable to B, e.g. AoT-ADMM vs CRATE, Tables 1 and 2): reproduced when the interval
  lies inside ``[-margin, margin]`` (a gap the paper itself calls comparable is inside), contradicted when it lies
  wholly outside it, otherwise not settled. A 95 % interval inside the margin is a stricter test than the usual
  equivalence test (two one-sided tests at 5 %, a 90 % interval): with two seeds (t quantile 12.7) parity is in
  practice never reproduced.

Whatever the verdict, an interval that excludes 0 says who is ahead (:func:`ahead`), and the sentence says it:
"not settled" with AoT-ADMM ahead by +0.80 to +2.45 is not the same finding as an interval around 0.

A parity claim of the paper is made for the smaller model ("maintains competitive performance while reducing the
parameter count"), so :func:`noninferiority` also reads it one-sided, as a secondary reading: the smaller model
trails by at most the margin anywhere in the interval. That is the usual non-inferiority test on the bound of the
two-sided 95 % interval, a one-sided test at 2.5 %. The two readings differ only when the smaller model may be
ahead by more than the margin. Where the plan was written after the data, the sentence labels the reading post hoc.

:func:`claim_sentence` writes the one sentence a chapter ends a section with, from these numbers alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from . import paper

__all__ = ["Summary", "Difference", "summarize", "paired_difference", "t_quantile", "verdict", "noninferiority",
           "noninferiority_spare", "ahead", "ahead_name", "claim_sentence", "PAPER_LARGEST_GAP", "VERDICTS",
           "p_value", "holm", "widened"]


def _paper_gaps() -> list[float]:
    """AoT-ADMM - CRATE in every cell of the paper's Tables 1 and 2 (points)."""
    gaps = []
    for table in (paper.LINEAR_PROBE_ACC, paper.FINETUNE_ACC):
        for accs in table.values():
            gaps += [accs[m] - accs[m.replace("aot_admm", "crate")] for m in accs if m.startswith("aot_admm")]
    return gaps


#: The largest |AoT-ADMM - CRATE| gap the paper calls "comparable" (Tables 1 and 2; 1.39 points, Tiny on
#: CIFAR-10): a number of the paper's, the tie rule of the one-seed recipe sweep (chapter 6), and the parity margin
#: of every verdict until the analysis plan (results/cpu/plan.yaml) gave each table its own.
PAPER_LARGEST_GAP = max(abs(g) for g in _paper_gaps())

#: reproduced (a claim of the paper) or confirmed (a control of ours); contradicted; not settled
VERDICTS = ("reproduced", "contradicted", "not settled", "confirmed")


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (scipy's)."""
    from scipy.stats import t

    return float(t.ppf(p, df))


@dataclass(frozen=True)
class Summary:
    """One table cell over seeds: ``n`` runs, mean, sample standard deviation, and the t interval of the
    mean at ``confidence`` (``low = high = mean`` and ``std = nan`` for one run: no spread is known)."""

    n: int
    mean: float
    std: float
    low: float
    high: float
    confidence: float = 0.95

    def __str__(self) -> str:
        return f"{self.mean:.2f}" if self.n < 2 else f"{self.mean:.2f} ± {self.std:.2f}"


@dataclass(frozen=True)
class Difference(Summary):
    """A - B paired by seed: the seeds paired, and the mean difference with its t interval."""

    seeds: tuple = ()

    def interval(self) -> str:
        pct = f"{self.confidence * 100:g} %"
        return f"{pct} CI [{self.low:+.2f}, {self.high:+.2f}]" if self.n >= 2 else "one seed: no interval"


def summarize(values: Sequence[float], confidence: float = 0.95) -> Summary:
    """Mean, sample standard deviation (``ddof=1``) and the two-sided Student-t interval of the mean."""
    values = [float(v) for v in values]
    n = len(values)
    if n == 0:
        raise ValueError("summarize needs at least one value (a cell with no finished run)")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    mean = math.fsum(values) / n
    if n == 1:
        return Summary(1, mean, math.nan, mean, mean, confidence)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.5 + confidence / 2, n - 1) * std / math.sqrt(n)
    return Summary(n, mean, std, mean - half, mean + half, confidence)


def paired_difference(a: Mapping[int, float], b: Mapping[int, float], confidence: float = 0.95) -> Difference:
    """A - B on the seeds both have (``{seed: accuracy}``), summarised as :func:`summarize` does. Refuses
    when no seed is shared: unpaired runs cannot be differenced seed by seed."""
    seeds = tuple(sorted(set(a) & set(b)))
    if not seeds:
        raise ValueError(f"no seed in common: A has {sorted(a)}, B has {sorted(b)}; run both on the same seeds")
    s = summarize([a[k] - b[k] for k in seeds], confidence)
    return Difference(s.n, s.mean, s.std, s.low, s.high, s.confidence, seeds)


def p_value(diff: Summary, claim: str, margin: float | None = None) -> float:
    """The p-value of a claim's test, as the plan's multiplicity rule defines it (``results/cpu/plan.yaml``): for a
    gain or a control the paired two-sided t-test of a mean difference of 0; for parity the two one-sided t-tests
    against -margin and +margin (TOST), the larger of their p-values. Needs two seeds or more."""
    from scipy.stats import t

    if diff.n < 2:
        raise ValueError("a p-value needs two paired seeds or more")
    se, df = diff.std / math.sqrt(diff.n), diff.n - 1
    if claim in ("better", "control"):
        return float(2 * t.sf(abs(diff.mean) / se, df))
    if margin is None:
        raise ValueError("a parity claim is tested against a margin: give the one results/cpu/plan.yaml sets")
    return float(max(t.sf((diff.mean + margin) / se, df), t.sf((margin - diff.mean) / se, df)))


def holm(p_values: Mapping[str, float], alpha: float = 0.05) -> dict[str, bool]:
    """Holm's step-down procedure at familywise ``alpha``: the p-values sorted ascending, the k-th of m (from 0)
    rejected while it is at most ``alpha / (m - k)``; the first that is not stops it, and no later one is rejected.
    ``{name: rejected}``."""
    ranked = sorted(p_values, key=p_values.get)
    rejected, m = {}, len(ranked)
    for k, name in enumerate(ranked):
        rejected[name] = p_values[name] <= alpha / (m - k) and all(rejected.values())
    return {name: rejected[name] for name in p_values}


def widened(diff: Summary, confidence: float) -> Summary:
    """The same mean difference with its t interval at another ``confidence`` (a Bonferroni interval: 1 - alpha/m)."""
    half = t_quantile(0.5 + confidence / 2, diff.n - 1) * diff.std / math.sqrt(diff.n)
    return Summary(diff.n, diff.mean, diff.std, diff.mean - half, diff.mean + half, confidence)


def verdict(diff: Summary, claim: str, margin: float | None = None) -> str:
    """One of :data:`VERDICTS` for ``claim`` about A - B (``better``, ``parity`` or ``control``, see the module
    docstring), read from the interval; one seed gives no interval and so no verdict but "not settled"."""
    if claim not in ("better", "parity", "control"):
        raise ValueError(f"claim must be 'better', 'parity' or 'control', got {claim!r}")
    if claim == "parity" and margin is None:
        raise ValueError("a parity claim is judged against a margin: give the one results/cpu/plan.yaml sets")
    if diff.n < 2:
        return VERDICTS[2]
    if claim in ("better", "control"):
        held = VERDICTS[3] if claim == "control" else VERDICTS[0]
        return held if diff.low > 0 else VERDICTS[1] if diff.high < 0 else VERDICTS[2]
    if -margin <= diff.low and diff.high <= margin:  # the margin is a gap the paper calls comparable: inside
        return VERDICTS[0]
    return VERDICTS[1] if diff.low > margin or diff.high < -margin else VERDICTS[2]


def ahead(diff: Summary) -> str | None:
    """``"a"`` when the interval of A - B lies above 0, ``"b"`` when below, else None (one seed: None)."""
    if diff.n < 2:
        return None
    return "a" if diff.low > 0 else "b" if diff.high < 0 else None


def ahead_name(diff: Summary | None, names: tuple[str, str] | None) -> str | None:
    """The name (of ``names``, A's and B's) of the side the interval of A - B puts ahead; None when it puts neither
    ahead, when there is no interval (one seed, or no ``diff`` yet) or no ``names`` to say it with."""
    side = ahead(diff) if diff is not None else None
    return names[0 if side == "a" else 1] if side and names else None


def noninferiority_spare(diff: Summary, smaller: str, margin: float) -> float:
    """How far the smaller model's worst case stays inside the margin (points): the lower bound of the interval of
    smaller - larger, plus ``margin``. At or above 0 the smaller model trails by at most the margin anywhere in the
    interval. ``smaller`` is ``"a"`` or ``"b"``: the side of A - B with fewer parameters."""
    if smaller not in ("a", "b"):
        raise ValueError(f"smaller must be 'a' or 'b' (the side of A - B with fewer parameters), got {smaller!r}")
    return (diff.low if smaller == "a" else -diff.high) + margin


def noninferiority(diff: Summary, smaller: str, margin: float) -> str:
    """One of :data:`VERDICTS` for a parity claim read one-sided: the smaller model (``smaller``, ``"a"`` or
    ``"b"`` of A - B) trails the other by at most ``margin``. Reproduced when the whole interval says so
    (:func:`noninferiority_spare` >= 0), contradicted when the whole interval trails by more, otherwise not
    distinguishable; one seed gives no interval and so no verdict."""
    spare = noninferiority_spare(diff, smaller, margin)
    if diff.n < 2:
        return VERDICTS[2]
    best = (diff.high if smaller == "a" else -diff.low) + margin  # the smaller model's best case, against the margin
    return VERDICTS[0] if spare >= 0 else VERDICTS[1] if best < 0 else VERDICTS[2]


def claim_sentence(what: str, diff: Difference, claim: str, paper_value: float | None,
                   margin: float | None = None, claimant: str = "the paper claims",
                   smaller: str | None = None, smaller_name: str | None = None, post_hoc: bool = False,
                   names: tuple[str, str] | None = None) -> str:
    """The sentence that closes a section, e.g. ``"AoT-ADMM − CRATE on CIFAR-10: +1.20 points, 95 % CI
    [-0.40, +2.80] over 3 seeds; the paper claims parity (within ±1.50 points); its gap: -1.39; verdict: not
    settled; read one-sided (non-inferiority: AoT-ADMM, the smaller model, trails by at most 1.50 points anywhere in
    the 95 % CI): reproduced."`` With the ``names`` of A and B, an interval that excludes 0 says who is ahead. A
    parity claim names its ``smaller`` side (``"a"`` or ``"b"``) and that model's name to get the one-sided reading
    (:func:`noninferiority`), given when there is an interval to read (two seeds or more). A claim the analysis plan
    judges ``post_hoc`` (written after its runs) says so, at its verdict and at its one-sided reading."""
    said = {"better": "a gain", "control": "a gain"}.get(claim) or f"parity (within ±{margin:.2f} points)"
    paper = f"; its gap: {paper_value:+.2f}" if paper_value is not None else ""
    spread = f"{diff.interval()} over {diff.n} seeds" if diff.n >= 2 else "one seed, so no interval"
    who_leads = ahead_name(diff, names)
    lead = f"; {who_leads} ahead (the interval excludes 0)" if who_leads else ""
    one_sided = ""
    if claim == "parity" and smaller and diff.n >= 2:
        who = f"{smaller_name}, the smaller model," if smaller_name else "the smaller model"
        when = ", post hoc" if post_hoc else ""
        one_sided = (f"; read one-sided{when} (non-inferiority: {who} trails by at most {margin:.2f} points "
                     f"anywhere in the {diff.confidence * 100:g} % CI): {noninferiority(diff, smaller, margin)}")
    judged = " (post hoc: the plan that judges it was written after its runs)" if post_hoc else ""
    return (f"{what}: {diff.mean:+.2f} points, {spread}; {claimant} {said}{paper}; verdict{judged}: "
            f"{verdict(diff, claim, margin)}{lead}{one_sided}.")
