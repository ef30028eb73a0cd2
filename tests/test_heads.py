"""GlobalBatchNorm1d's dtypes: one rule with and without a process group."""
import pytest
import torch
import torch.distributed as dist
from torch import nn

from aot_lib import distributed
from aot_lib.objectives.heads import GlobalBatchNorm1d
from helpers import raises_exactly


@pytest.fixture
def two_identical_ranks(monkeypatch):
    """GlobalBatchNorm1d's DDP path as on two processes holding the same batch: every all-reduce doubles,
    and so does the backward of the autograd-aware one (torch.distributed.nn sums the gradients over ranks, and
    the other rank's are equal). The global batch is then this batch twice."""
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 2)
    monkeypatch.setattr(dist, "all_reduce", lambda t, op=None, group=None, async_op=False: t.mul_(2))
    monkeypatch.setattr(distributed, "all_reduce_sum", lambda t: t * 2)


def batchnorms(dtype):
    """A GlobalBatchNorm1d of ``dtype`` with random affine parameters and an nn.BatchNorm1d copy of it."""
    ours = GlobalBatchNorm1d(5, momentum=0.3).to(dtype)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(5))
        ours.bias.copy_(torch.randn(5))
    ref = nn.BatchNorm1d(5, momentum=0.3).to(dtype)
    ref.load_state_dict(ours.state_dict())
    return ours, ref


@pytest.mark.parametrize("ddp", [False, True])
def test_float64_model_computes_in_float64_on_both_paths(ddp, request):
    """A float64 model on float64 input is float64 throughout, with or without a process group: its output,
    gradient and running statistics are nn.BatchNorm1d's on the global batch (under DDP this one twice) to float64
    rounding. Before, the DDP path computed the statistics in float32 (off by ~1e-7, far above the 1e-12 here)."""
    if ddp:
        request.getfixturevalue("two_identical_ranks")
    ours, ref = batchnorms(torch.float64)
    x = 3 + 2 * torch.randn(16, 5, dtype=torch.float64)
    xa, xb = x.clone().requires_grad_(True), torch.cat([x, x] if ddp else [x]).requires_grad_(True)
    ya, yb = ours(xa), ref(xb)
    assert ya.dtype == torch.float64
    # float64: the same statistics summed in another order, a few ulps of O(1) values
    torch.testing.assert_close(ya, yb[:16], rtol=1e-12, atol=1e-12)
    weights = torch.arange(5.0, dtype=torch.float64)
    (ya * weights).sum().backward()  # this rank's loss; the other rank's is equal, the fixture sums the two
    (yb * weights).sum().backward()
    torch.testing.assert_close(xa.grad, xb.grad[:16], rtol=1e-12, atol=1e-12)
    for k in ("running_mean", "running_var"):
        assert getattr(ours, k).dtype == torch.float64
        torch.testing.assert_close(getattr(ours, k), getattr(ref, k), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16])
def test_half_input_of_a_float32_model_on_both_paths(half, monkeypatch, request):
    """Half-precision input with float32 parameters (autocast's case): half output on both paths, the float32
    statistics of the half values rounded once to the half dtype."""
    ours, ref = batchnorms(torch.float32)
    x = (3 + 2 * torch.randn(16, 5)).to(half)
    single = ours(x)
    request.getfixturevalue("two_identical_ranks")
    ddp = ours(x)
    expected = ref(torch.cat([x, x]).float())[:16]
    for y in (single, ddp):
        assert y.dtype == half
        # the same float32 value up to float32 rounding (1e-5 relative to O(1) outputs), then one rounding to
        # half precision: within one half ulp (2^-8 relative for bf16, 2^-11 for fp16) of the float32 value
        torch.testing.assert_close(y.float(), expected, rtol=torch.finfo(half).eps, atol=1e-5)


@pytest.mark.parametrize("model, data", [(torch.float32, torch.float64), (torch.float64, torch.float32),
                                         (torch.bfloat16, torch.float32), (torch.float64, torch.bfloat16)])
@pytest.mark.parametrize("ddp", [False, True])
def test_mismatched_dtypes_refused_alike_on_both_paths(model, data, ddp, request):
    """Before, float64 input of a float32 model failed in nn.BatchNorm1d without a process group (its own
    message) and ran in float32 on the DDP path; now one refusal, the same on both, training or not."""
    if ddp:
        request.getfixturevalue("two_identical_ranks")
    bn = GlobalBatchNorm1d(5).to(model)
    message = (f"GlobalBatchNorm1d got {data} input with {model} parameters: cast the model or the input to one dtype "
               f"(model.to({data}) or x.to({model}))")
    for training in (True, False):
        with raises_exactly(TypeError, message):
            bn.train(training)(torch.randn(8, 5, dtype=data))
    assert bn.num_batches_tracked.item() == 0  # refused before any running statistic moved
