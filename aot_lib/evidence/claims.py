"""The paper's claims as comparisons of two cells, judged by the analysis plan (``results/cpu/plan.yaml``): the
paired difference, its interval, the seeds against the plan's, the verdict, and the rows ``aot verdicts`` and the
chapters print (:func:`verdicts`, :func:`verdict_rows`: one function for both, so they cannot disagree).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from . import paper, plan, stats
from .cells import (BASELINES_DIR, PRETRAIN_SUFFIX, cell, cell_runs, floor_cells, mixed_numerics, wide_probe,
                    wide_probe_file)

__all__ = ["Claim", "CLAIMS", "CLAIMS_30MIN", "TABLE13_NAMES", "TABLE13_DATA", "TABLE13_CELLS", "CELLS_30MIN",
           "BASELINES_30MIN", "planned", "claim_rows", "compare", "wide_claims", "floor_rows", "verdict_label",
           "MARGINS_SHOWN", "margin_sensitivity", "seeds_label", "one_sided_tally", "one_sided_sentence", "CHAPTER_OF",
           "PLAN_DEFINED", "plan_claims",
           "all_claim_rows", "verdicts", "verdict_rows", "holm_rows"]


def wide_claims(root: str | Path, rows: list[dict], wide_root: str | Path | Sequence[str | Path]) -> list[dict]:
    """Each recorded claim among ``rows`` (:func:`claim_rows` of ``root``) judged again on the wider learning-rate
    grid's probes (:func:`wide_probe`, under ``wide_root``'s folders): a check beside the verdict, never the verdict (the plan
    fixed the recorded grid). One row per claim with runs: ``{"claim", "verdict0"`` (the recorded verdict),
    ``"diff"`` and ``"verdict"`` (paired on the wider grid's test top-1, judged by the plan's rule and margin),
    ``"same"``, ``"missing"`` (runs not yet probed on the wider grid: then ``diff`` and ``same`` are None and
    ``verdict`` is "pending")}``."""
    out = []
    for r in rows:
        if r["verdict"] == "pending":
            continue
        c = r["claim"]
        runs = {side: cell_runs(root, name) for side, name in (("a", c.a), ("b", c.b))}
        missing = [x.name for side in runs.values() for x in side if wide_probe_file(x.name, wide_root) is None]
        row = {"claim": c, "verdict0": r["verdict"], "missing": missing, "diff": None, "verdict": "pending",
               "same": None}
        if not missing:
            a, b = ({k: w["top1"] for k, w in wide_probe(runs[side], wide_root).items()} for side in "ab")
            row["diff"] = stats.paired_difference(a, b)
            row["verdict"] = stats.verdict(row["diff"], r["plan"].rule, r["margin"])
            row["same"] = row["verdict"] == r["verdict"]
        out.append(row)
    return out


def compare(root: str | Path, a: str, b: str, what: str, claim: str, paper_value: float | None,
            margin: float | None = None, smaller: str | None = None, smaller_name: str | None = None,
            post_hoc: bool = False, names: tuple[str, str] | None = None) -> dict:
    """A − B paired by seed (cells ``a`` and ``b``), with the verdict on the paper's ``claim`` and the sentence
    that states it: ``{"a", "b", "diff", "verdict", "noninferiority", "sentence"}``. Without a ``paper_value`` the
    comparison is one of our controls, and the sentence says what the control expects instead of what the paper
    claims. A parity claim (judged against ``margin``, the plan's) that names its ``smaller`` side is read one-sided
    too (``noninferiority``, else None). ``ahead``: the side (``"a"``, ``"b"``) the interval puts ahead, or None;
    with ``names`` the sentence says it."""
    ra, rb = cell_runs(root, a), cell_runs(root, b)
    ca, cb = {r.seed: r.top1 for r in ra}, {r.seed: r.top1 for r in rb}
    diff = stats.paired_difference(ca, cb)
    claimant = "the paper claims" if paper_value is not None else "a control expects"
    one_sided = stats.noninferiority(diff, smaller, margin) if claim == "parity" and smaller else None
    sentence = stats.claim_sentence(what, diff, claim, paper_value, margin, claimant=claimant, smaller=smaller,
                                    smaller_name=smaller_name, post_hoc=post_hoc, names=names)
    mixed = mixed_numerics(ra, rb)
    if mixed:  # float results differ between torch versions and CPU kinds: a pair that mixes them is flagged
        sentence = sentence[:-1] + f"; flagged: paired runs trained with different numerics ({'; '.join(mixed)})."
    return {"a": stats.summarize(list(ca.values())), "b": stats.summarize(list(cb.values())), "diff": diff,
            "verdict": stats.verdict(diff, claim, margin), "noninferiority": one_sided, "ahead": stats.ahead(diff),
            "mixed_numerics": mixed, "sentence": sentence, "seeds": sorted(set(ca) | set(cb))}


#: The pretrained cells of Tables 1 and 3 at CPU scale, ``(family, data set) -> run name``, with the names the book
#: gives them; AoT was not trained on CIFAR-100 with the first recipe (chapter 7 says so).
TABLE13_NAMES = {"aot_admm": "AoT-ADMM", "crate": "CRATE", "aot": "AoT"}


TABLE13_DATA = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}


TABLE13_CELLS = {(fam, data): f"cpu_{fam}_{data}" for fam in TABLE13_NAMES for data in TABLE13_DATA
                 if (fam, data) != ("aot", "cifar100")}

#: The 30-minute cells (every family, both data sets) and their floors' folder (a wider probe grid: plan.yaml)
CELLS_30MIN, BASELINES_30MIN = {(f, d): f"cpu30_{f}_{d}" for f in TABLE13_NAMES for d in TABLE13_DATA}, "baselines_cpu30"


def floor_rows(root: str | Path, cells: Mapping[tuple[str, str], str], names: Mapping[str, str],
               datasets: Mapping[str, str], baselines: str = BASELINES_DIR) -> list[dict]:
    """For each pretrained cell ``cells[(family, data set)]``: what pretraining adds over its floor (``root/baselines``),
    paired by seed (pretrained − untrained encoder of the same seed; pretrained − raw pixels probed with the same seed's
    split): ``{"label", "family", "data", "floor", "diff", "trained", "floor_top1"}`` (each side by seed); not judged."""
    rows = []
    for (fam, data), name in cells.items():
        if not (Path(root) / name).exists():
            continue
        trained = cell(root, name)
        for floor, runs in floor_cells(root, name, data, baselines).items():
            if runs:
                what, low = "untrained encoder" if floor == "untrained" else "raw pixels", {r.seed: r.top1 for r in runs}
                rows.append(dict(label=f"{names[fam]} {datasets[data]}: pretrained − {what}", family=fam, data=data,
                                 floor=floor, diff=stats.paired_difference(trained, low), trained=trained, floor_top1=low))
    return rows


@dataclass(frozen=True)
class Claim:
    """One claim of the paper (or one control of ours) as a comparison of two cells: A − B should be ``claim``
    (``better`` or ``parity``, :func:`aot_lib.evidence.stats.verdict`). ``paper_gap`` is the paper's own A − B
    (``None`` for a control the paper does not report). How it is judged (margin, seeds, post hoc) is the analysis
    plan's entry of the same ``key`` (:mod:`aot_lib.evidence.plan`)."""

    key: str
    what: str
    a: str
    b: str
    claim: str
    paper_gap: float | None
    where: str
    smaller: str | None = None  # of a parity claim: the side ("a" or "b") with fewer parameters, read one-sided too
    smaller_name: str | None = None  # and that model's name, for the sentence
    names: tuple[str, str] | None = None  # A's and B's names, for the sentence that says who is ahead
    paper_b: float | None = None  # the paper's accuracy of the B side (the accuracy-relative margin's scale)


def _gap(table: Mapping, data: str, a: str, b: str) -> float:
    return round(table[data][a] - table[data][b], 2)


#: Every comparison the evidence chapters close with, in book order. The paper's gaps are from
#: :mod:`aot_lib.evidence.paper` (Tiny for Tables 1/3: our CPU-scale width 192 is closest to it; Base for Table 2).
CLAIMS = (
    Claim("t1_cifar10", "AoT-ADMM − CRATE, linear probe on CIFAR-10 (Table 1)", "cpu_aot_admm_cifar10",
          "cpu_crate_cifar10", "parity", _gap(paper.LINEAR_PROBE_ACC, "cifar10", "aot_admm_tiny", "crate_tiny"),
          "ch-tables-1-3", smaller="a", smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"),
          paper_b=paper.LINEAR_PROBE_ACC["cifar10"]["crate_tiny"]),
    Claim("t1_cifar100", "AoT-ADMM − CRATE, linear probe on CIFAR-100 (Table 1)", "cpu_aot_admm_cifar100",
          "cpu_crate_cifar100", "parity", _gap(paper.LINEAR_PROBE_ACC, "cifar100", "aot_admm_tiny", "crate_tiny"),
          "ch-tables-1-3", smaller="a", smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"),
          paper_b=paper.LINEAR_PROBE_ACC["cifar100"]["crate_tiny"]),
    Claim("t3_cifar10", "AoT-ADMM − AoT, linear probe on CIFAR-10 (Table 3)", "cpu_aot_admm_cifar10",
          "cpu_aot_cifar10", "better", _gap(paper.LINEAR_PROBE_ACC, "cifar10", "aot_admm_tiny", "aot_tiny"),
          "ch-tables-1-3", names=("AoT-ADMM", "AoT")),
    Claim("t2_cifar10", "AoT-ADMM − CRATE, fine-tuned on CIFAR-10 after Imagenette pretraining (Table 2)",
          "cpu_aot_admm_imagenette_lr4e-3_ft_cifar10", "cpu_crate_imagenette_ft_cifar10", "parity",
          _gap(paper.FINETUNE_ACC, "cifar10", "aot_admm_base", "crate_base"), "ch-transfer", smaller="a",
          smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"), paper_b=paper.FINETUNE_ACC["cifar10"]["crate_base"]),
    Claim("t2_cifar100", "AoT-ADMM − CRATE, fine-tuned on CIFAR-100 after Imagenette pretraining (Table 2)",
          "cpu_aot_admm_imagenette_lr4e-3_ft_cifar100", "cpu_crate_imagenette_ft_cifar100", "parity",
          _gap(paper.FINETUNE_ACC, "cifar100", "aot_admm_base", "crate_base"), "ch-transfer", smaller="a",
          smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"), paper_b=paper.FINETUNE_ACC["cifar100"]["crate_base"]),
    *(Claim(f"t2_control_{fam}_{data}", f"{label} pretrained on Imagenette − from scratch, fine-tuned on "
            f"{data.upper().replace('CIFAR', 'CIFAR-')} (our control)", f"cpu_{fam}_imagenette{PRETRAIN_SUFFIX[fam]}_ft_{data}",
            f"cpu_{fam}_scratch_{data}", "better", None, "ch-transfer", names=("pretraining", "training from scratch"))
      for fam, label in (("aot_admm", "AoT-ADMM"), ("crate", "CRATE")) for data in ("cifar10", "cifar100")),
    Claim("t4_teacher", "ViT-T teacher − its distilled MLP-free (ReLU) student, CIFAR-10 (Table 4)",
          "cpu_vit_tiny_teacher", "cpu_vit_tiny_relu_kd", "parity",
          round(paper.KD_ACC_CIFAR10["vit_tiny"] - paper.KD_ACC_CIFAR10["vit_tiny_relu"], 2), "ch-table4",
          smaller="b", smaller_name="the student", names=("the teacher", "the student"),
          paper_b=paper.KD_ACC_CIFAR10["vit_tiny_relu"]),
    Claim("t4_kd", "ReLU ViT-T student distilled − trained on labels only, CIFAR-10 (our control)",
          "cpu_vit_tiny_relu_kd", "cpu_vit_tiny_relu_nokd", "better", None, "ch-table4",
          names=("distillation", "labels only")),
)


def planned(root: str | Path, claims=CLAIMS, plan_file: str | Path | None = None) -> dict[str, "plan.PlannedClaim"]:
    """The analysis plan's entry for each of ``claims`` (``plan_file``, default ``<root>/plan.yaml``); refuses a claim
    the plan does not judge, or judges by another rule, naming the key."""
    path = Path(plan_file) if plan_file is not None else Path(root) / "plan.yaml"
    entries = plan.load_plan(path)
    out = {}
    for c in claims:
        if c.where == PLAN_DEFINED:  # the plan says what the claim is: its rule is the claim's
            out[c.key] = entries[c.key]
            continue
        entry = entries.get(c.key)
        if entry is None:
            raise ValueError(f"{path} has no entry for claim {c.key!r}: add how it is judged (rule, table, seeds) "
                             "before its runs")
        expected = "control" if c.paper_gap is None else c.claim
        if entry.rule != expected:
            raise ValueError(f"{path}: claims.{c.key}.rule is {entry.rule!r}, but {c.key} is a {expected} claim: "
                             "fix the plan")
        out[c.key] = entry
    return out


def claim_rows(root: str | Path, claims=CLAIMS, plan_file: str | Path | None = None) -> list[dict]:
    """One row per claim: the paper's gap, ours (mean over paired seeds with its interval), the verdict and its
    sentence, judged as the analysis plan (``<root>/plan.yaml``) says (``plan``: its entry), and B's cell summarised
    (``b``); a claim whose cells are not all recorded yet says which (``verdict`` "pending"), never a number."""
    rows, entries = [], planned(root, claims, plan_file)
    for c in claims:
        entry = entries[c.key]
        margin = entry.margin.points if entry.margin else None
        missing = [name for name in (c.a, c.b) if not (Path(root) / name).exists()]  # a damaged one is refused
        if missing:
            rows.append({"claim": c, "plan": entry, "margin": margin, "diff": None, "verdict": "pending",
                         "noninferiority": None, "ahead": None, "b": None, "missing_seeds": list(range(entry.seeds)),
                         "sentence": f"{c.what}: pending ({' and '.join(missing)} not recorded yet)."})
            continue
        got = compare(root, c.a, c.b, c.what, entry.rule, c.paper_gap, margin,
                      c.smaller if "noninferiority" in entry.secondary else None, c.smaller_name, entry.post_hoc,
                      c.names)
        extra = [k for k in got["seeds"] if not 0 <= k < entry.seeds]  # either side: B's summary counts them too
        if extra:  # records the plan never asked for would move the interval without a word: refused
            raise ValueError(f"{c.key}: seed{'s' if len(extra) > 1 else ''} {', '.join(map(str, extra))} of "
                             f"{c.a}/{c.b} {'are' if len(extra) > 1 else 'is'} outside the plan's seeds 0-"
                             f"{entry.seeds - 1} (claims.{c.key}.seeds: {entry.seeds}): move the extra runs out of "
                             f"{root}, or plan them (claims.{c.key}.seeds), which makes the claim post hoc")
        absent = [k for k in range(entry.seeds) if k not in got["diff"].seeds]
        if absent:  # the plan's seeds not (yet) paired: said, never silently judged on fewer
            got["sentence"] = (got["sentence"][:-1] + f" ({got['diff'].n} of the {entry.seeds} seeds the plan asks "
                               f"for; missing: seed{'s' if len(absent) > 1 else ''} "
                               f"{', '.join(map(str, absent))}).")
        rows.append({"claim": c, "plan": entry, "margin": margin, "missing_seeds": absent,
                     **{k: got[k] for k in ("diff", "verdict", "noninferiority", "ahead", "b", "sentence",
                                            "mixed_numerics")}})
    return rows


def verdict_label(row: Mapping, key: str = "verdict") -> str | None:
    """A :func:`claim_rows` row's verdict (or its one-sided reading, ``key="noninferiority"``) as a table shows it:
    marked post hoc when the plan was written after the claim's runs, and interim while some of the seeds the plan
    asks for are not paired yet (a verdict on fewer seeds than planned is never shown as final). None when the row
    has no such reading."""
    verdict = row[key]
    if verdict is None:
        return None
    marks = ["post hoc"] if row["plan"].post_hoc else []
    if row["missing_seeds"] and verdict != "pending":
        have = row["plan"].seeds - len(row["missing_seeds"])
        marks.append(f"interim, {have} of {row['plan'].seeds} seeds")
    return verdict + "".join(f" ({m})" for m in marks)


#: The margins the sensitivity table reads each parity claim against (points), beside the plan's own.
MARGINS_SHOWN = (0.5, 1.0, 1.5, 2.0)


def margin_sensitivity(rows: list[dict], margins=MARGINS_SHOWN) -> list[dict]:
    """How each parity claim's verdict moves with the margin: one row per parity claim with an interval, its
    verdict at each of ``margins`` (points), at the plan's margin, and at the accuracy-relative margin (the plan's
    margin scaled by our B side's mean accuracy over the paper's B accuracy: ``relative`` and its verdict). A reading,
    not a verdict: the plan's margin is the one that judges."""
    out = []
    for r in rows:
        c, d = r["claim"], r["diff"]
        if c.claim != "parity" or d is None or d.n < 2:
            continue
        row = {"claim": c.what, "key": c.key, "plan": r["margin"],
               **{f"m{m:g}": stats.verdict(d, "parity", m) for m in margins}}
        ours_b, theirs_b = r["b"].mean, c.paper_b  # B's summary as claim_rows read it: no second read
        relative = r["margin"] * ours_b / theirs_b if theirs_b else None
        row.update(relative=relative, relative_verdict=stats.verdict(d, "parity", relative) if relative else None)
        out.append(row)
    return out


def one_sided_tally(rows: list[dict]) -> dict:
    """The secondary, one-sided reading of the parity claims among ``rows`` (:func:`claim_rows`) that have an
    interval (two seeds or more): ``{"judged", "held", "spare"}``, ``spare`` being the least
    :func:`aot_lib.evidence.stats.noninferiority_spare` of those that hold (points; None when none does)."""
    judged = [r for r in rows if r["claim"].claim == "parity" and r["claim"].smaller and r["diff"] is not None
              and r["diff"].n >= 2]
    held = [r for r in judged if r["noninferiority"] == stats.VERDICTS[0]]
    spares = [stats.noninferiority_spare(r["diff"], r["claim"].smaller, r["margin"]) for r in held]
    return {"judged": len(judged), "held": len(held), "spare": min(spares) if spares else None}


def one_sided_sentence(rows: list[dict]) -> str:
    """The sentence a chapter's summary gives the one-sided reading of its parity claims (:func:`one_sided_tally`)."""
    t = one_sided_tally(rows)
    if not t["judged"]:
        return "No parity claim here has two seeds yet, so none is read one-sided."
    closest = f", the closest with {t['spare']:.2f} points to spare" if t["held"] else ""
    return (f"Read one-sided (non-inferiority, a secondary reading), {t['held']} of the {t['judged']} parity claims "
            f"with an interval hold{closest}.")


#: Tables 1 and 3 at the 30-minute recipe (issue 37): the plan's cpu30 claims, judged as the first recipe's are.
CLAIMS_30MIN = (
    Claim("t1_cifar10_30min", "AoT-ADMM − CRATE, linear probe on CIFAR-10 (Table 1, 30-minute recipe)",
          "cpu30_aot_admm_cifar10", "cpu30_crate_cifar10", "parity", CLAIMS[0].paper_gap, "ch-tables-1-3",
          smaller="a", smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"), paper_b=CLAIMS[0].paper_b),
    Claim("t1_cifar100_30min", "AoT-ADMM − CRATE, linear probe on CIFAR-100 (Table 1, 30-minute recipe)",
          "cpu30_aot_admm_cifar100", "cpu30_crate_cifar100", "parity", CLAIMS[1].paper_gap, "ch-tables-1-3",
          smaller="a", smaller_name="AoT-ADMM", names=("AoT-ADMM", "CRATE"), paper_b=CLAIMS[1].paper_b),
    Claim("t3_cifar10_30min", "AoT-ADMM − AoT, linear probe on CIFAR-10 (Table 3, 30-minute recipe)",
          "cpu30_aot_admm_cifar10", "cpu30_aot_cifar10", "better", CLAIMS[2].paper_gap, "ch-tables-1-3",
          names=("AoT-ADMM", "AoT")),
    Claim("t3_cifar100_30min", "AoT-ADMM − AoT, linear probe on CIFAR-100 (Table 3, 30-minute recipe)",
          "cpu30_aot_admm_cifar100", "cpu30_aot_cifar100", "better",
          _gap(paper.LINEAR_PROBE_ACC, "cifar100", "aot_admm_tiny", "aot_tiny"), "ch-tables-1-3",
          names=("AoT-ADMM", "AoT")),
)


#: The ``where`` of a claim the plan defines itself (an entry with ``compare``: one's own cells).
PLAN_DEFINED = "plan"

#: The chapter that tells each table's claims (a claim's ``where``), as the results table names it.
CHAPTER_OF = {"ch-tables-1-3": "Tables 1 and 3", "ch-transfer": "Table 2", "ch-table4": "Table 4",
              PLAN_DEFINED: "the plan's own claim"}


def plan_claims(root: str | Path, plan_file: str | Path | None = None) -> tuple[Claim, ...]:
    """The claims the plan defines itself (entries with ``compare``, :class:`aot_lib.evidence.plan.Comparison`), in
    the plan's order: no paper gap; judged by the entry's rule, margin and seeds as the book's claims are."""
    path = Path(plan_file) if plan_file is not None else Path(root) / "plan.yaml"
    builtin = {c.key for c in (*CLAIMS, *CLAIMS_30MIN)}
    out = []
    for key, entry in plan.load_plan(path).items():
        if entry.compare is None:
            continue
        if key in builtin:
            raise ValueError(f"{path}: claims.{key}.compare: {key} is one of the book's claims, which compares its own "
                             "cells; give your claim another key")
        claim = "better" if entry.rule == "control" else entry.rule
        out.append(Claim(key, entry.compare.what, entry.compare.a, entry.compare.b, claim, None, PLAN_DEFINED,
                         names=entry.compare.names))
    return tuple(out)


def all_claim_rows(root: str | Path, plan_file: str | Path | None = None) -> list[dict]:
    """:func:`claim_rows` of every claim judged: the first recipe's, the 30-minute recipe's, then those the plan
    defines itself (:func:`plan_claims`). ``plan_file``: another plan than ``<root>/plan.yaml`` (a copy of it)."""
    return (claim_rows(root, CLAIMS, plan_file) + claim_rows(root, CLAIMS_30MIN, plan_file)
            + claim_rows(root, plan_claims(root, plan_file), plan_file))


def verdicts(root: str | Path, plan_file: str | Path | None = None) -> list[dict]:
    """Every claim at a glance (:func:`verdict_rows` of :func:`all_claim_rows`): what chapter 1's results table and
    ``aot verdicts`` show. ``root``: the results folder holding ``plan.yaml`` (``results/cpu``); ``plan_file``:
    another plan (a copy of it, with seeds or claims of one's own)."""
    return verdict_rows(all_claim_rows(root, plan_file))


def seeds_label(r: dict) -> str:
    """A claim's seeds as its row says them: "3 of 5" (recorded, of the plan's); a post-hoc claim's plan asks only
    the seeds it had, so "2 of 2" would read complete: "2, as recorded" (issue 59; the verdict says post hoc)."""
    n = 0 if r["diff"] is None else r["diff"].n
    return f"{n}, as recorded" if r["plan"].post_hoc else f"{n} of {r['plan'].seeds}"


def verdict_rows(rows: list[dict]) -> list[dict]:
    """One row per claim of ``rows`` (:func:`claim_rows`), as the results table shows it: ``claim`` (what is
    compared), ``verdict`` (:func:`verdict_label`), ``ahead`` (who the interval puts ahead, "neither", or None while
    pending), ``ours`` and ``interval`` (A − B, points), ``paper`` (the paper's gap), ``seeds`` (:func:`seeds_label`),
    ``one_sided`` (a parity claim's non-inferiority reading), ``rule``, ``table``, ``margin``, ``post_hoc``,
    ``chapter`` and ``key`` (the plan's), ``mixed_numerics`` (paired seeds trained with different torch versions)."""
    out = []
    for r in rows:
        c, d = r["claim"], r["diff"]
        out.append(dict(
            claim=c.what, verdict=verdict_label(r),
            ahead=None if d is None else stats.ahead_name(d, c.names) or "neither",
            ours=None if d is None else f"{d.mean:+.2f}",
            interval=None if d is None or d.n < 2 else f"[{d.low:+.2f}, {d.high:+.2f}]",
            paper=c.paper_gap, seeds=seeds_label(r),
            one_sided=verdict_label(r, "noninferiority"), rule=r["plan"].rule, table=r["plan"].table,
            margin=r["margin"], post_hoc=r["plan"].post_hoc, chapter=CHAPTER_OF[c.where], key=c.key,
            mixed_numerics=r.get("mixed_numerics") or []))
    return out


def holm_rows(root: str | Path, family: str = "cpu30", plan_file: str | Path | None = None) -> list[dict]:
    """One family of claims read by the plan's multiplicity rule (``plan.yaml``'s ``multiplicity``: Holm's step-down
    at a familywise alpha): per claim its test's p-value (:func:`aot_lib.evidence.stats.p_value`), whether Holm
    rejects it, the verdict that gives (a test not rejected reads "not settled" whatever the 95 % interval says; a
    rejected one keeps the direction its mean gives), the Bonferroni interval (level 1 - alpha/m) with who it puts
    ahead, and the claim's own 95 % verdict and ahead beside. ``post_hoc``: the family was recorded before the rule (``multiplicity.post_hoc``)."""
    from .records import read_yaml

    path = Path(plan_file) if plan_file is not None else Path(root) / "plan.yaml"
    spec = read_yaml(path)["multiplicity"]
    if spec["rule"] != "holm":
        raise ValueError(f"{path}: multiplicity rule {spec['rule']!r}; only 'holm' is implemented")
    families = {**spec.get("families", {}), **spec.get("post_hoc", {})}
    if family not in families:
        raise ValueError(f"{path} names no multiplicity family {family!r}: one of {sorted(families)}")
    keys, alpha = families[family], spec["familywise_alpha"]
    rows = {r["claim"].key: r for r in all_claim_rows(root, plan_file) if r["claim"].key in keys}
    unjudged = [k for k in keys if k not in rows or rows[k]["diff"] is None or rows[k]["diff"].n < 2]
    if unjudged:
        raise ValueError(f"family {family!r}: {', '.join(unjudged)} not recorded with two seeds or more yet")
    ps = {k: stats.p_value(rows[k]["diff"], rows[k]["claim"].claim, rows[k]["margin"]) for k in keys}
    rejected = stats.holm(ps, alpha)
    out = []
    for k in keys:
        r, d = rows[k], rows[k]["diff"]
        held = stats.VERDICTS[3] if r["claim"].claim == "control" else stats.VERDICTS[0]
        reading = (stats.VERDICTS[2] if not rejected[k] else held if r["claim"].claim == "parity" or d.mean > 0
                   else stats.VERDICTS[1])
        wide = stats.widened(d, 1 - alpha / len(keys))
        out.append({"key": k, "claim": r["claim"].what, "p": ps[k], "rejected": rejected[k], "holm": reading,
                    "verdict": r["verdict"], "bonferroni": f"[{wide.low:+.2f}, {wide.high:+.2f}]",
                    "ahead": stats.ahead_name(d, r["claim"].names) or "neither",
                    "ahead_bonferroni": stats.ahead_name(wide, r["claim"].names) or "neither",
                    "level": wide.confidence, "post_hoc": family in spec.get("post_hoc", {})})
    return out
