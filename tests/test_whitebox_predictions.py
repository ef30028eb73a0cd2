"""The white-box chapter's prediction rules (aot_lib.book.whitebox_predictions) on hand-made numbers: the intervals
against a hand computation, the central region and the foreground share counted by hand, and each rule's three
outcomes."""
import math

import pytest
import torch

from aot_lib.book.whitebox_predictions import (central_mask, foreground_centre_share, judge_compression,
                                               judge_differences, t_interval)


def test_the_interval_is_students_t_by_hand():
    x = [1.0, 2.0, 4.0, 7.0]
    got = t_interval(x, 0.95)
    mean, sd = 3.5, math.sqrt(((2.5 ** 2) + (1.5 ** 2) + (0.5 ** 2) + (3.5 ** 2)) / 3)
    half = 3.182446305284263 * sd / 2  # t(0.975, 3), s / sqrt(4)
    assert got.n == 4 and abs(got.mean - mean) < 1e-12
    assert abs(got.low - (mean - half)) < 1e-9 and abs(got.high - (mean + half)) < 1e-9
    assert got.reading() == "includes 0" and t_interval([3.0, 4.0, 5.0, 4.0], 0.95).reading() == "above 0"
    assert t_interval([-3.0, -4.0, -5.0], 0.95).reading() == "below 0"
    with pytest.raises(ValueError, match="at least two units, got 1"):
        t_interval([1.0], 0.95)
    with pytest.raises(ValueError) as e:  # an attention row summing to 0 gives NaN: refused, not "not settled"
        t_interval([0.1, float("nan"), 0.2], 0.95)
    assert str(e.value) == ("an interval of 3 values with 1 not finite at confidence 0.95: a measure that cannot be "
                            "right is refused, not judged")


def test_the_central_region_is_the_middle_half_of_each_side():
    m = central_mask((8, 8)).reshape(8, 8)
    assert m.sum() == 16 and m[2:6, 2:6].all() and not m[:2].any() and not m[:, 6:].any()
    assert central_mask((14, 14)).sum() == 8 * 8  # rows 3..10 of 14: the middle, 3 left out at each side


def test_the_foreground_share_counts_the_top_quarter_in_the_centre():
    pc = torch.zeros(2, 64)
    centre = central_mask((8, 8)).nonzero().flatten()
    pc[0, centre] = 1.0  # image 0: its top 16 patches are the centre
    pc[1, :16] = 1.0  # image 1: the first two rows, none central
    assert foreground_centre_share(pc, (8, 8)).tolist() == [1.0, 0.0]


def _rates(drops, rc0=10.0):
    """layer_rates-like ``(B, L, 2)``: image b's layer k takes rc_in to rc_in - drops[b][k]."""
    out = []
    for image in drops:
        rows, rc = [], rc0
        for d in image:
            rows.append([rc, rc - d])
            rc -= d
        out.append(rows)
    return torch.tensor(out, dtype=torch.float64)


def test_compression_holds_fails_or_is_not_settled_by_its_rule():
    noise = [0.0, 0.1, -0.1, 0.05, -0.05]
    init = _rates([[0.1 + e, 0.1 - e] for e in noise])
    every = judge_compression(_rates([[1.0 + e, 1.0 - e] for e in noise]), init, 0.95)
    assert every["verdict"] == "holds" and every["lowering"] == 2 and every["gain"].low > 0
    assert abs(every["gain"].mean - 1.8) < 1e-12  # the stack drops 2.0 trained, 0.2 at initialisation
    one_up = judge_compression(_rates([[1.0 + e, -1.0 + e] for e in noise]), init, 0.95)
    assert one_up["verdict"] == "fails" and one_up["raising"] == 1
    unsure = judge_compression(_rates([[1.0 + e, 3 * e] for e in noise]), init, 0.95)
    assert unsure["verdict"] == "not settled"


def test_counting_every_interval_is_stricter_than_counting_verdicts():
    """AoT-ADMM and CRATE, each judged on the four predictions: 8 verdicts; compression reads 2 layers and the stack,
    so 3 + 3 + 6 = 12 intervals. The second layer raises Rc by 1 on 5 images (drops -1, -0.5, -1.5, -0.75, -1.25:
    t = -5.66 by hand). That is below 0 at 1 - 0.05/8 (|t| > t(0.996875, 4) = 5.26) but not at 1 - 0.05/12
    (t(0.9979, 4) = 5.89), so compression fails by the rule fixed beforehand and is not settled when every
    interval counts; the other predictions, clear either way, read alike."""
    from aot_lib.book.whitebox import judge_predictions

    noise = [0.0, 0.5, -0.5, 0.25, -0.25]
    base = torch.tensor([0.5, 0.52, 0.48, 0.5, 0.51], dtype=torch.float64)
    measures = {f: {"trained": {"rates": _rates([[2.0, -1.0 + e] for e in noise]), "zeros": base + 0.1,
                                "attention": base + 0.2, "foreground": base - 0.3},
                    "initial": {"rates": _rates([[0.1, 0.1] for _ in noise]), "zeros": base,
                                "attention": base, "foreground": base}}
                for f in ("aot_admm", "crate")}
    labels = {"aot_admm": "a", "crate": "b"}
    by_verdict = judge_predictions(measures, labels)
    by_interval = judge_predictions(measures, labels, count_intervals=True)
    assert {r["tests"] for r in by_verdict} == {8} and {r["tests"] for r in by_interval} == {12}
    read = [(v["prediction"].key, v["verdict"], w["verdict"]) for v, w in zip(by_verdict, by_interval)]
    assert read == [("compression", "fails", "not settled")] * 2 + [("sparsity", "holds", "holds")] * 2 + [
        ("attention", "holds", "holds")] * 2 + [("foreground", "fails", "fails")] * 2


def test_a_paired_prediction_reads_its_difference():
    trained = torch.tensor([0.5, 0.6, 0.55, 0.58])
    assert judge_differences(trained, trained - 0.1 + torch.tensor([0.0, 0.01, -0.01, 0.0]), 0.95)["verdict"] == "holds"
    assert judge_differences(trained, trained + 0.2 + torch.tensor([0.0, 0.01, -0.01, 0.0]), 0.95)["verdict"] == "fails"
    assert judge_differences(trained, trained + torch.tensor([0.1, -0.1, 0.1, -0.1]), 0.95)["verdict"] == "not settled"


def test_layer_rates_are_the_audits_rates_before_the_mean_over_images():
    """monitors.layer_rates (per image, one basis per layer) averages to audit_layers' rc_in / rc_out (orthonormal)."""
    import aot_lib
    from aot_lib.training.monitors import audit_layers, layer_rates

    torch.manual_seed(0)
    for name in ("aot_admm_tiny", "crate_tiny"):
        enc = aot_lib.create_model(name, img_size=32, depth=2).eval()
        x = torch.randn(3, 3, 32, 32)
        rates = layer_rates(enc, x)
        rows = audit_layers(enc, x, orthonormal=True)
        assert rates.shape == (3, 2, 2)
        for k, r in enumerate(rows):  # float64 throughout: equal to rounding
            assert abs(float(rates[:, k, 0].mean()) - r["rc_in"]) < 1e-9 and abs(float(rates[:, k, 1].mean()) - r["rc_out"]) < 1e-9
