"""Mixed precision: one pretraining step of every family under ``bf16-mixed`` (CPU autocast) against ``32-true``."""
import csv

import pytest
import torch

from aot_lib import list_models, train
from helpers import make_imagefolder, tiny_config

# every registered model, built small
FAMILIES = {name: "{embed_dim: 32, depth: 2, num_heads: 2, patch_size: 4}" for name in list_models()}


def _first_row(run):
    with open(run / "metrics.csv") as f:
        return {k: float(v) for k, v in next(csv.DictReader(f)).items() if v != ""}


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_bf16_mixed_step_matches_float32(name, tmp_path, monkeypatch):
    """One step under 32-true and under bf16-mixed, at the same initial weights and views, with the loss's input
    (the projector's embeddings) captured. bf16-mixed really computes the network in bf16: every embedding lies on
    bf16's grid (8 significant bits), where float32 ones almost never do (a chance of 2^-16 each). The loss is then
    computed in float32 from those embeddings: it equals a float64 evaluation of the same embeddings to float32
    rounding, where a bf16 loss would be off by bf16's rounding, 2^-9 = 2e-3 relative. So the two runs' losses differ
    by what their embeddings' difference dy makes of the loss: at most |grad L| |dy| to first order (Cauchy-Schwarz),
    with a factor 2 for the second-order remainder (|dy| is a few % of |y|, so that remainder is a few % of the
    first-order term)."""
    import copy

    from aot_lib.objectives.lejepa import LeJEPALoss

    monkeypatch.setenv("AOT_CACHE", str(tmp_path / "cache"))
    data = make_imagefolder(tmp_path / "data")
    real = LeJEPALoss.forward
    captured = []

    def capture(self, y, directions=None):  # the embeddings and the loss module as the step sees them (step 0)
        captured.append((y.detach().clone(), copy.deepcopy(self)))
        return real(self, y, directions)

    monkeypatch.setattr(LeJEPALoss, "forward", capture)
    rows, ys, refs = {}, {}, {}
    for precision in ("32-true", "bf16-mixed"):
        captured.clear()
        cfg = tiny_config(data, tmp_path / "runs", f"run.name={precision}", "optim.max_steps=1", f"model.name={name}",
                          f"model.overrides={FAMILIES[name]}", f"fabric.precision={precision}", "fabric.accelerator=cpu")
        train.pretrain(cfg)
        rows[precision] = _first_row(tmp_path / "runs" / precision)
        (y, loss_module), = captured
        ys[precision] = y.double().requires_grad_(True)
        refs[precision] = real(loss_module.double(), ys[precision])  # float64, same SIGReg directions (seed + step 0)
        # the logged loss is the float32 loss of these embeddings: float32 sums of ~1e3 terms, 1e-5 relative
        assert rows[precision]["loss"] == pytest.approx(refs[precision].loss.item(), rel=1e-5)
        assert rows[precision]["sigreg_loss"] == pytest.approx(refs[precision].sigreg_loss.item(), rel=1e-5)
    y32, y16 = ys["32-true"].detach(), ys["bf16-mixed"].detach()
    assert (y16.to(torch.bfloat16).double() == y16).all()
    assert (y32.to(torch.bfloat16).double() == y32).double().mean() < 0.01
    dy = y16 - y32
    # not the float32 embeddings: rounding each entry to bf16 alone moves it by up to 2^-9 (~2^-11 on average),
    # where two float32 computations would differ by ~1e-7
    assert dy.norm() > 2**-12 * y32.norm()
    (grad,) = torch.autograd.grad(refs["32-true"].loss, ys["32-true"])
    assert abs(rows["bf16-mixed"]["loss"] - rows["32-true"]["loss"]) <= 2 * (grad.norm() * dy.norm()).item()
