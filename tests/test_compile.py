"""Regional compilation (aot_lib.models.compile): one compiled layer per family, no recompilation, eager's values."""
import copy
import time

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters

from aot_lib import create_model
from aot_lib.models.compile import compile_blocks, encoder_blocks, uncompile_blocks
from aot_lib.objectives.heads import LeJEPAProjector
from aot_lib.objectives.lejepa import LeJEPALoss, LeJEPAModel
from helpers import one_per_family

TINY = {"embed_dim": 32, "depth": 3, "num_heads": 2, "num_classes": 0}
# the two view sizes of a LeJEPA step: global 32 px (17 tokens) and local 16 px (5 tokens)
SIZES = ((4, 32), (12, 16))


@pytest.fixture(autouse=True)
def _fresh_dynamo(monkeypatch):
    # the eager copies use the fused update's eager kernel: its compiled CPU kernels (aot_lib.models.fused) are
    # graphs of their own, which the counts below would include
    monkeypatch.setenv("AOT_FUSED_KERNEL", "eager")
    torch._dynamo.reset()
    counters.clear()
    yield
    torch._dynamo.reset()


def unique_graphs() -> int:
    return int(counters["stats"]["unique_graphs"])


def step(model, batch, size, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, 3, size, size, generator=g)
    model.zero_grad(set_to_none=True)
    out = model.forward_features(x)
    out.square().mean().backward()
    return out.detach(), {n: p.grad for n, p in model.named_parameters()}


def assert_matches(compiled, eager, batch, size, seed):
    out_c, grads_c = step(compiled, batch, size, seed)
    out_e, grads_e = step(eager, batch, size, seed)
    # float32 rounding: the compiled layer computes the same operations in another order (and
    # AoT-ADMM's eager layer uses the fused state update, the compiled one the plain operations)
    torch.testing.assert_close(out_c, out_e, rtol=1e-4, atol=1e-5)
    for name, g in grads_e.items():
        # relative to each gradient's largest entry: sums over many terms, see test_fused
        torch.testing.assert_close(grads_c[name], g, rtol=1e-4, atol=1e-5 * g.abs().max().item(), msg=name)


@pytest.mark.parametrize("name", one_per_family())
def test_one_graph_per_view_size_and_eager_values(name):
    torch.manual_seed(0)
    model = create_model(name, **TINY)
    eager = copy.deepcopy(model)
    keys = list(model.state_dict())
    assert compile_blocks(model, backend="aot_eager") is model
    assert list(model.state_dict()) == keys  # no _orig_mod. prefix: checkpoints load either way
    for i, (batch, size) in enumerate(SIZES):  # warm-up: the first step of each size compiles
        assert_matches(model, eager, batch, size, seed=i)
        assert unique_graphs() == i + 1  # one graph per size, shared by the 3 layers
    for seed in range(2, 6):  # later steps: new data, same sizes, nothing compiled
        batch, size = SIZES[seed % 2]
        assert_matches(model, eager, batch, size, seed=seed)
    assert unique_graphs() == len(SIZES)
    assert not counters["graph_break"]
    if name == "aot_admm_tiny":  # another size (an evaluation batch) runs in the second, dynamic-shape graph
        assert_matches(model, eager, 6, 24, seed=9)
        assert unique_graphs() == len(SIZES)


def test_lejepa_model_and_uncompile():
    torch.manual_seed(0)
    enc = create_model("aot_admm_tiny", **TINY)
    model = LeJEPAModel(enc, LeJEPAProjector(enc.num_features, 16, 8), LeJEPALoss(num_slices=8))
    eager = copy.deepcopy(model)
    blocks = encoder_blocks(model)
    assert blocks == list(enc.blocks)
    compile_blocks(model, backend="aot_eager")
    assert all("forward" in vars(b) for b in blocks)
    views = [torch.randn(2, 3, 32, 32) for _ in range(2)] + [torch.randn(2, 3, 16, 16) for _ in range(3)]
    compiled_loss = model(views).loss
    compiled_loss.backward()
    assert unique_graphs() == 2
    torch.testing.assert_close(compiled_loss, eager(views).loss, rtol=1e-5, atol=1e-6)  # float32 rounding
    copied = copy.deepcopy(model)  # a compiled model can still be copied, its blocks bound to the copy
    assert all(vars(b)["forward"].__self__ is b for b in encoder_blocks(copied))
    uncompile_blocks(model)
    assert not any("forward" in vars(b) for b in blocks)
    with pytest.raises(ValueError, match="no aot_lib encoder"):
        compile_blocks(torch.nn.Linear(2, 2))


def test_inductor_smoke():
    """The default backend on the tiny AoT-ADMM: both view sizes, eager's values, no recompilation."""
    torch.manual_seed(0)
    model = create_model("aot_admm_tiny", **TINY)
    eager = copy.deepcopy(model)
    compile_blocks(model)
    t = time.perf_counter()
    for i, (batch, size) in enumerate(SIZES):
        assert_matches(model, eager, batch, size, seed=i)
    compile_s = time.perf_counter() - t
    assert_matches(model, eager, *SIZES[0], seed=7)
    assert unique_graphs() == len(SIZES)
    assert compile_s < 300  # about 35 s cold on 2 busy cores, 10 s with inductor's cache warm


def test_compiled_layers_under_bf16_autocast_match_eager():
    """fabric.precision=bf16-mixed runs the step under autocast: the compiled layer (one graph per view size, traced
    under autocast) gives eager-under-autocast's values to bf16 rounding (8 significant bits: 2^-8 = 0.4 %
    relative per rounding, a few roundings deep), and nothing recompiles on a second step."""
    torch.manual_seed(0)
    model = create_model("aot_admm_tiny", **TINY)
    eager = copy.deepcopy(model)
    compile_blocks(model, backend="aot_eager")
    for seed in range(2):
        for batch, size in SIZES:
            x = torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(seed))
            with torch.autocast("cpu", dtype=torch.bfloat16):
                out_c, out_e = model.forward_features(x), eager.forward_features(x)
            assert out_c.dtype == out_e.dtype
            torch.testing.assert_close(out_c.float(), out_e.float(), rtol=0.05, atol=0.05)
    assert unique_graphs() == len(SIZES)
