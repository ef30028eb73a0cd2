"""Seeds, intervals and verdicts (aot_lib.evidence.stats) against textbook values and hand computation."""
import math

import pytest

from aot_lib.evidence import paper
from aot_lib.evidence.stats import (PAPER_LARGEST_GAP, Difference, ahead as ahead_of, ahead_name, claim_sentence, noninferiority,
                                noninferiority_spare, paired_difference, summarize, t_quantile, verdict)
from helpers import raises_exactly

# Student-t two-sided 95 % critical values as printed in statistics tables (3 decimals): df 1, 2, 3, 4, 10, 1000
T_TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 10: 2.228, 1000: 1.962}


@pytest.mark.parametrize("df, printed", sorted(T_TABLE.items()))
def test_t_quantile_matches_the_printed_table(df, printed):
    assert t_quantile(0.975, df) == pytest.approx(printed, abs=5e-4)  # the table rounds to 3 decimals


def test_summary_of_four_seeds_by_hand():
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert (s.n, s.mean) == (4, 2.5)
    assert s.std == pytest.approx(math.sqrt(5 / 3), rel=1e-15)  # sum of squares 5 over n - 1 = 3
    half = 3.182 * math.sqrt(5 / 3) / 2
    assert (s.low, s.high) == (pytest.approx(2.5 - half, abs=3e-4), pytest.approx(2.5 + half, abs=3e-4))
    assert str(s) == "2.50 ± 1.29"


def test_one_seed_has_no_spread_and_no_interval():
    s = summarize([51.02])
    assert (s.n, s.mean, s.low, s.high) == (1, 51.02, 51.02, 51.02) and math.isnan(s.std) and str(s) == "51.02"
    with raises_exactly(ValueError, "summarize needs at least one value (a cell with no finished run)"):
        summarize([])
    with raises_exactly(ValueError, "confidence must be in (0, 1), got 1.0"):
        summarize([1, 2], confidence=1.0)


def test_paired_difference_pairs_by_seed_and_ignores_unpaired_runs():
    a = {0: 51.0, 1: 52.0, 2: 50.0, 7: 99.0}  # seed 7 has no partner: left out
    b = {0: 50.0, 1: 50.5, 2: 50.0, 5: 0.0}
    d = paired_difference(a, b)
    assert d.seeds == (0, 1, 2) and d.n == 3
    assert d.mean == pytest.approx(2.5 / 3, rel=1e-15)  # differences 1.0, 1.5, 0.0
    diffs = [1.0, 1.5, 0.0]
    sd = math.sqrt(sum((x - 2.5 / 3) ** 2 for x in diffs) / 2)
    assert d.std == pytest.approx(sd, rel=1e-12)
    assert d.high - d.mean == pytest.approx(4.303 * sd / math.sqrt(3), abs=5e-4 * sd / math.sqrt(3) + 1e-12)
    with raises_exactly(ValueError, "no seed in common: A has [0], B has [1]; run both on the same seeds"):
        paired_difference({0: 1.0}, {1: 1.0})


def _diff(low, high, n=3):
    return Difference(n, (low + high) / 2, 1.0, low, high, 0.95, tuple(range(n)))


@pytest.mark.parametrize("low, high, claim, want", [
    (0.1, 2.0, "better", "reproduced"),
    (-2.0, -0.1, "better", "contradicted"),
    (-0.5, 2.0, "better", "not settled"),
    (-1.0, 1.0, "parity", "reproduced"),
    (1.5, 3.0, "parity", "contradicted"),  # wholly above the margin
    (-4.0, -1.4, "parity", "contradicted"),  # wholly below it
    (-1.0, 2.0, "parity", "not settled"),  # crosses the margin
    (-1.39, 1.0, "parity", "reproduced"),  # the paper's own largest gap is one it calls comparable: inside
    (1.39, 3.0, "parity", "not settled"),  # touches the margin: not wholly outside
    (0.1, 2.0, "control", "confirmed"),  # a control of ours: confirmed, not reproduced
    (-2.0, -0.1, "control", "contradicted"),
    (-0.5, 2.0, "control", "not settled"),
])
def test_verdict_reads_the_interval_against_the_claim(low, high, claim, want):
    assert verdict(_diff(low, high), claim, margin=1.39) == want


@pytest.mark.parametrize("low, high, smaller, want", [
    (0.8, 2.5, "a", "reproduced"),  # A, the smaller model, is ahead: no loss at all
    (-1.36, 3.3, "a", "reproduced"),  # trails by at most 1.36 < 1.39 anywhere in the interval
    (-1.39, 0.0, "a", "reproduced"),  # the margin is a gap the paper calls comparable: inside
    (-2.0, 1.0, "a", "not settled"),  # may trail by more than the margin
    (-4.0, -1.5, "a", "contradicted"),  # trails by more than the margin throughout
    (-2.5, -0.8, "b", "reproduced"),  # B, the smaller model, is ahead throughout
    (0.5, 1.39, "b", "reproduced"),  # B trails A by at most 1.39
    (0.5, 2.0, "b", "not settled"),
    (1.5, 4.0, "b", "contradicted"),
])
def test_noninferiority_reads_the_bound_on_the_smaller_models_side(low, high, smaller, want):
    assert noninferiority(_diff(low, high), smaller, margin=1.39) == want


def test_noninferiority_spare_is_the_worst_case_of_the_smaller_model_inside_the_margin():
    # A smaller, A - B in [-1.36, 3.31]: A trails by at most 1.36, 0.03 inside the 1.39 margin
    assert noninferiority_spare(_diff(-1.36, 3.31), "a", 1.39) == pytest.approx(0.03, abs=1e-12)
    # B smaller, A - B in [0.5, 2.0]: B trails by up to 2.0, 0.61 beyond the margin
    assert noninferiority_spare(_diff(0.5, 2.0), "b", 1.39) == pytest.approx(-0.61, abs=1e-12)


def test_noninferiority_of_one_seed_is_no_verdict_and_the_side_is_named():
    assert noninferiority(_diff(5.0, 5.0, n=1), "a", 1.39) == "not settled"
    message = "smaller must be 'a' or 'b' (the side of A - B with fewer parameters), got 'c'"
    with raises_exactly(ValueError, message):
        noninferiority(_diff(0, 1), "c", 1.39)
    with raises_exactly(ValueError, message):
        noninferiority(_diff(5.0, 5.0, n=1), "c", 1.39)  # refused even where one seed gives no verdict


def test_one_seed_is_never_a_verdict_and_claims_are_named():
    assert verdict(_diff(5.0, 5.0, n=1), "better") == "not settled"
    with raises_exactly(ValueError, "claim must be 'better', 'parity' or 'control', got 'worse'"):
        verdict(_diff(0, 1), "worse")
    # a parity claim has no built-in margin: the analysis plan sets it (tests/test_plan.py)
    with raises_exactly(ValueError, "a parity claim is judged against a margin: give the one results/cpu/plan.yaml sets"):
        verdict(_diff(0, 1), "parity")


def test_paper_largest_gap_is_the_largest_gap_the_paper_calls_comparable():
    c10 = paper.LINEAR_PROBE_ACC["cifar10"]
    assert PAPER_LARGEST_GAP == pytest.approx(c10["crate_tiny"] - c10["aot_admm_tiny"], abs=1e-12)  # 85.61 - 84.22
    assert PAPER_LARGEST_GAP == pytest.approx(1.39, abs=1e-9)


def test_claim_sentence_states_number_interval_seeds_claim_and_verdict():
    d = paired_difference({0: 51.0, 1: 52.0, 2: 50.0}, {0: 50.0, 1: 50.5, 2: 50.0})
    s = claim_sentence("AoT-ADMM − CRATE on CIFAR-10", d, "parity", -1.39, 1.39)
    assert s == (f"AoT-ADMM − CRATE on CIFAR-10: +0.83 points, 95 % CI [{d.low:+.2f}, {d.high:+.2f}] over 3 seeds; "
                 "the paper claims parity (within ±1.39 points); its gap: -1.39; verdict: not settled.")
    assert (round(d.low, 2), round(d.high, 2)) == (-1.06, 2.73)  # 0.833 ± 4.303 * 0.7638 / sqrt(3) = ± 1.897
    # the parity claim read one-sided as well: A, the smaller model, trails by at most 1.06 < 1.39 anywhere
    assert claim_sentence("AoT-ADMM − CRATE on CIFAR-10", d, "parity", -1.39, 1.39, smaller="a",
                          smaller_name="AoT-ADMM") == (
        s[:-1] + "; read one-sided (non-inferiority: AoT-ADMM, the smaller model, trails by at most 1.39 points "
                 "anywhere in the 95 % CI): reproduced.")
    assert claim_sentence("A − B", d, "parity", -1.39, 1.39, smaller="b").endswith(
        "; read one-sided (non-inferiority: the smaller model trails by at most 1.39 points anywhere in the 95 % CI): "
        "not settled.")  # B may trail by up to 2.73
    assert claim_sentence("A − B", d, "better", None, smaller="a").endswith("; verdict: not settled.")
    # one seed: no interval to read either way, so no second reading
    assert claim_sentence("A − B", paired_difference({0: 45.0}, {0: 46.0}), "parity", -1.0, 1.39, smaller="a") == (
        "A − B: -1.00 points, one seed, so no interval; the paper claims parity (within ±1.39 points); its gap: "
        "-1.00; verdict: not settled.")
    one = paired_difference({0: 45.0}, {0: 40.0})
    assert claim_sentence("AoT-ADMM − AoT", one, "better", 4.91) == (
        "AoT-ADMM − AoT: +5.00 points, one seed, so no interval; the paper claims a gain; its gap: +4.91; "
        "verdict: not settled.")
    # who is ahead, when the interval excludes 0, whatever the verdict
    ahead = paired_difference({0: 52.0, 1: 52.5, 2: 53.0}, {0: 50.0, 1: 50.1, 2: 50.5})  # +2.30, CI [+1.64, +2.96]
    assert ahead_of(ahead) == "a" and ahead_of(d) is None and ahead_of(one) is None  # one seed: no interval
    # the name the book prints for it (chapter 1's ahead column, chapter 7's summary, the sentence below)
    behind = paired_difference({0: 50.0, 1: 50.1, 2: 50.5}, {0: 52.0, 1: 52.5, 2: 53.0})
    names = ("AoT-ADMM", "CRATE")
    assert (ahead_name(ahead, names), ahead_name(behind, names)) == ("AoT-ADMM", "CRATE")
    assert [ahead_name(x, y) for x, y in ((d, names), (one, names), (None, names), (ahead, None))] == [None] * 4
    assert claim_sentence("A − B", ahead, "parity", 0.0, 2.0, names=("AoT-ADMM", "CRATE")).endswith(
        "verdict: not settled; AoT-ADMM ahead (the interval excludes 0).")  # crosses the margin, above 0
    assert claim_sentence("A − B", ahead, "parity", 0.0, 1.5, names=("AoT-ADMM", "CRATE")).endswith(
        "verdict: contradicted; AoT-ADMM ahead (the interval excludes 0).")  # wholly beyond it
    assert claim_sentence("A − B", behind, "better", 1.0, names=("AoT-ADMM", "AoT")).endswith(
        "verdict: contradicted; AoT ahead (the interval excludes 0).")
    assert claim_sentence("A − B", ahead, "control", None, claimant="a control expects").endswith(
        "a control expects a gain; verdict: confirmed.")  # no names given: no direction said
    # a claim the analysis plan judges post hoc (written after its runs) says so where the verdict is given
    assert claim_sentence("AoT-ADMM − AoT", one, "better", 4.91, post_hoc=True) == (
        "AoT-ADMM − AoT: +5.00 points, one seed, so no interval; the paper claims a gain; its gap: +4.91; "
        "verdict (post hoc: the plan that judges it was written after its runs): not settled.")


def test_the_p_value_of_a_gain_is_the_paired_t_test_and_of_parity_the_larger_tost_side():
    """Against scipy's one-sample t-test on the differences themselves (an independent reference): a gain's test is
    two-sided of mean 0; parity's is the two one-sided tests against -margin and +margin, the larger p."""
    from scipy.stats import ttest_1samp

    from aot_lib.evidence.stats import p_value, paired_difference

    a, b = {0: 51.0, 1: 50.2, 2: 52.4, 3: 50.9}, {0: 50.1, 1: 50.0, 2: 51.0, 3: 50.8}
    d = paired_difference(a, b)
    diffs = [a[k] - b[k] for k in a]
    assert p_value(d, "better") == pytest.approx(ttest_1samp(diffs, 0.0).pvalue, rel=1e-9)
    low = ttest_1samp(diffs, -1.5, alternative="greater").pvalue
    high = ttest_1samp(diffs, 1.5, alternative="less").pvalue
    assert p_value(d, "parity", 1.5) == pytest.approx(max(low, high), rel=1e-9)
    with pytest.raises(ValueError, match="a parity claim is tested against a margin"):
        p_value(d, "parity")


def test_holm_steps_down_and_stops_at_the_first_test_it_keeps():
    """The textbook case: m = 4 at 0.05, thresholds 0.0125, 0.0167, 0.025, 0.05 for the sorted p-values. 0.03 fails
    its 0.025, so 0.04 (under 0.05) is not rejected either: the procedure stopped."""
    from aot_lib.evidence.stats import holm

    assert holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.005}) == {"a": True, "b": False, "c": False, "d": True}
    assert holm({"a": 0.012, "b": 0.001}) == {"a": True, "b": True}  # 0.012 <= 0.05 / 1 at the second step
    assert holm({"a": 0.03, "b": 0.026}) == {"a": False, "b": False}  # 0.026 > 0.05 / 2: nothing is rejected


def test_the_30_minute_claims_under_holm_read_as_the_issue_computed_them():
    """Issue 55's audit: with Bonferroni over the 4 planned 30-minute claims, AoT-ADMM − CRATE on CIFAR-10
    ([+0.08, +0.91] at 95 %) becomes [-0.15, +1.14]: no longer ahead. Recomputed here from the cells' probes."""
    from pathlib import Path

    from aot_lib import evidence
    from aot_lib.evidence.stats import paired_difference, t_quantile

    root = Path(__file__).resolve().parent.parent / "results" / "cpu"
    rows = {r["key"]: r for r in evidence.holm_rows(root)}
    assert set(rows) == {"t1_cifar10_30min", "t1_cifar100_30min", "t3_cifar10_30min", "t3_cifar100_30min"}
    assert all(r["post_hoc"] and r["level"] == pytest.approx(1 - 0.05 / 4) for r in rows.values())
    a, b = evidence.cell(root, "cpu30_aot_admm_cifar10"), evidence.cell(root, "cpu30_crate_cifar10")
    d = paired_difference(a, b)
    half = t_quantile(1 - 0.05 / 8, d.n - 1) * d.std / math.sqrt(d.n)
    t1 = rows["t1_cifar10_30min"]
    assert t1["bonferroni"] == f"[{d.mean - half:+.2f}, {d.mean + half:+.2f}]" == "[-0.15, +1.14]"
    assert (t1["ahead"], t1["ahead_bonferroni"]) == ("AoT-ADMM", "neither")
    assert [rows[k]["holm"] for k in sorted(rows)] == [rows[k]["verdict"] for k in sorted(rows)]  # no verdict moves
