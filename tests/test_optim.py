"""aot_lib.training.optim by value: the learning-rate schedule computed by hand, the exact membership of the two
weight-decay groups of every model family, the data order over epochs and processes, the gradient norm."""
import math

import pytest
import torch
from torch import nn

from aot_lib import create_model, list_models
from aot_lib.objectives.heads import LeJEPAProjector
from aot_lib.models import ADMMLayer
from aot_lib.models.layers import ISTA
from aot_lib.training.optim import batch_indices, epoch_order, grad_norm, param_groups, warmup_cosine

# ----------------------------------------------------------------------------- warm-up + cosine


def test_warmup_cosine_by_hand():
    # 13 steps (0..12), 2 of warm-up: the cosine runs over steps 2..12, a span of 10 steps
    f = warmup_cosine(13, 2, min_ratio=0.1)
    assert f(0) == pytest.approx(1 / 2)  # (s + 1) / warmup
    assert f(1) == pytest.approx(1.0)  # the end of the warm-up
    assert f(2) == pytest.approx(1.0)  # cos(0): the first step after it
    # step 4: t = 2/10, cos(pi/5) = (1 + sqrt 5) / 4
    assert f(4) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + (1 + math.sqrt(5)) / 4), rel=1e-12)
    assert f(7) == pytest.approx(0.1 + 0.9 * 0.5, rel=1e-12)  # t = 1/2: halfway between 1 and min_ratio
    assert f(12) == pytest.approx(0.1, rel=1e-12)  # the last step
    assert f(20) == pytest.approx(0.1, rel=1e-12)  # past the end it stays there
    values = [f(s) for s in range(2, 13)]
    assert all(a > b for a, b in zip(values, values[1:]))  # strictly decreasing after the warm-up


def test_warmup_cosine_edges():
    f = warmup_cosine(5, 0)  # no warm-up, min_ratio 0: starts at 1, ends at 0
    assert f(0) == 1.0 and f(4) == pytest.approx(0.0, abs=1e-15) and f(2) == pytest.approx(0.5, rel=1e-12)
    g = warmup_cosine(4, 10)  # warm-up longer than the run: clamped to the run
    assert [g(s) for s in range(4)] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    h = warmup_cosine(1, 0, min_ratio=0.3)  # a one-step run: the first step has the full rate
    assert h(0) == 1.0
    with pytest.raises(ValueError, match="total_steps must be >= 1"):
        warmup_cosine(0, 0)


def test_warmup_cosine_drives_lambdalr():
    p = nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=2.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(6, 2, min_ratio=0.25))
    lrs = []
    for _ in range(6):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs == pytest.approx([1.0, 2.0, 2.0, 2 * (0.25 + 0.75 * 0.5 * (1 + math.cos(math.pi / 3))),
                                 2 * (0.25 + 0.75 * 0.5 * (1 + math.cos(2 * math.pi / 3))), 0.5])


# ----------------------------------------------------------------------------- parameter groups

def expected_decay(module: nn.Module) -> tuple[set[str], set[str]]:
    """By rule, from the module tree: weight decay on the weight matrices of Linear layers, the kernels of
    convolutions and the ISTA dictionaries; none on anything else (biases, LayerNorm / BatchNorm scales,
    ``tau``, ``coef_logits``, the cls token and the position embedding)."""
    decay, no_decay = set(), set()
    for mname, mod in module.named_modules():
        for pname, _ in mod.named_parameters(recurse=False):
            full = f"{mname}.{pname}" if mname else pname
            is_matrix = pname == "weight" and isinstance(mod, (nn.Linear, nn.Conv2d, ISTA))
            (decay if is_matrix else no_decay).add(full)
    return decay, no_decay


def group_names(module: nn.Module, groups: list[dict]) -> list[set[str]]:
    name_of = {id(p): n for n, p in module.named_parameters()}
    return [{name_of[id(p)] for p in g["params"]} for g in groups]


@pytest.mark.parametrize("name", list_models())
def test_param_groups_of_every_family(name):
    m = create_model(name, img_size=16, patch_size=4, embed_dim=8, num_heads=2, depth=2)
    groups = param_groups(m, 0.05)
    assert [g["weight_decay"] for g in groups] == [0.05, 0.0]
    decay, no_decay = group_names(m, groups)
    want_decay, want_no_decay = expected_decay(m)
    assert decay == want_decay and no_decay == want_no_decay
    assert sum(len(g["params"]) for g in groups) == len(list(m.parameters()))  # every parameter once
    # the rule's exceptions by name, so a rule that missed them would not pass unnoticed
    for special in ("stem.cls_token", "stem.pos_embed", "head.norm.weight", "head.fc.bias"):
        assert special in no_decay
    assert "head.fc.weight" in decay and "stem.proj.weight" in decay
    if any(isinstance(b, ADMMLayer) for b in m.blocks):
        assert {"blocks.0.tau_raw", "blocks.0.coef_logits", "blocks.1.tau_raw", "blocks.1.coef_logits"} <= no_decay
    if any(isinstance(mod, ISTA) for mod in m.modules()):
        assert {f"{n}.weight" for n, mod in m.named_modules() if isinstance(mod, ISTA)} <= decay


def test_param_groups_of_the_lejepa_model_and_frozen_parameters():
    m = nn.ModuleDict({"encoder": create_model("aot_admm_tiny", img_size=16, patch_size=4, embed_dim=8, num_heads=2,
                                               depth=1, num_classes=0),
                       "projector": LeJEPAProjector(8, hidden_dim=16, out_dim=4)})
    decay, no_decay = group_names(m, param_groups(m, 0.1))
    assert (decay, no_decay) == expected_decay(m)
    assert {"projector.net.0.weight", "projector.net.3.weight", "projector.net.6.weight"} <= decay
    assert {"projector.net.1.weight", "projector.net.1.bias", "projector.net.0.bias"} <= no_decay  # BatchNorm, bias
    m["encoder"].stem.requires_grad_(False)  # frozen parameters are in no group
    decay, no_decay = group_names(m, param_groups(m, 0.1))
    assert not any(n.startswith("encoder.stem.") for n in decay | no_decay)
    assert decay | no_decay == {n for n, p in m.named_parameters() if p.requires_grad}


# ----------------------------------------------------------------------------- data order

@pytest.mark.parametrize("world", [1, 2, 4])
def test_batch_indices_cover_every_image_once_per_epoch(world):
    n, gb = 24, 8
    for epoch in range(3):
        seen = torch.cat([batch_indices(7, epoch, i, n, gb, rank, world) for i in range(n // gb) for rank in range(world)])
        assert sorted(seen.tolist()) == list(range(n))
        for i in range(n // gb):
            parts = [batch_indices(7, epoch, i, n, gb, rank, world) for rank in range(world)]
            assert all(len(p) == gb // world for p in parts)
            # the same global batch whatever the number of processes, split in rank order
            assert torch.equal(torch.cat(parts), batch_indices(7, epoch, i, n, gb))


def test_data_order_depends_on_seed_and_epoch_only():
    a = epoch_order(3, 0, 50)
    assert torch.equal(a, epoch_order(3, 0, 50).clone()) and sorted(a.tolist()) == list(range(50))
    assert not torch.equal(a, epoch_order(3, 1, 50)) and not torch.equal(a, epoch_order(4, 0, 50))
    assert torch.equal(a, torch.randperm(50, generator=torch.Generator().manual_seed(3 * 1_000_003)))
    assert torch.equal(batch_indices(3, 0, 1, 50, 10), a[10:20])
    assert torch.equal(batch_indices(3, 0, 1, 50, 10, rank=1, world=2), a[15:20])


def test_grad_norm_is_the_global_l2_norm():
    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    assert grad_norm(m).item() == 0.0  # no gradients yet
    grads = [torch.tensor([[3.0, 0.0], [0.0, 4.0]]), torch.tensor([1.0, 2.0]), torch.tensor([[2.0, 0.0]])]
    for p, g in zip(m.parameters(), grads):
        p.grad = g
    # the last bias has no gradient and is left out: sqrt(9 + 16 + 1 + 4 + 4) = sqrt(34)
    assert grad_norm(m).item() == pytest.approx(math.sqrt(34), rel=1e-6)
    m[0].bias.grad = torch.tensor([float("nan"), 0.0])
    assert math.isnan(grad_norm(m).item())


def test_cosine_over_a_single_step_span():
    f = warmup_cosine(3, 1, min_ratio=0.2)  # warm-up step 0, then steps 1..2: a span of one step
    assert [f(s) for s in range(3)] == pytest.approx([1.0, 1.0, 0.2])


def test_epoch_order_formula():
    # the recorded data order: a permutation from the seed seed * 1_000_003 + epoch (resumed runs rely on it)
    for seed, epoch in ((3, 1), (0, 5)):
        want = torch.randperm(40, generator=torch.Generator().manual_seed(seed * 1_000_003 + epoch))
        assert torch.equal(epoch_order(seed, epoch, 40), want)


# ----------------------------------------------------------------------------- layer-wise lr decay

def test_layer_id_by_name():
    from aot_lib.training.optim import layer_id

    assert [layer_id(n, 4) for n in ("stem.pos_embed", "blocks.0.norm.weight", "blocks.3.mssa.qkv.weight",
                                     "head.fc.weight", "head")] == [0, 1, 4, 5, 5]
    # the same names one level down (an encoder inside a LeJEPA model or a wrapper)
    assert [layer_id(n, 4) for n in ("encoder.stem.cls_token", "encoder.blocks.2.tau_raw", "encoder.head.fc.bias",
                                     "encoder.head", "projector.net.0.weight")] == [0, 3, 5, 5, 0]


@pytest.mark.parametrize("decay", [0.5, 2.0])
def test_layer_decay_rates_by_rule(decay):
    from aot_lib.training.optim import layer_id

    enc = create_model("aot_admm_tiny", img_size=16, patch_size=4, embed_dim=8, num_heads=2, depth=2, num_classes=3)
    for module in (enc, nn.ModuleDict({"encoder": enc, "projector": nn.Linear(8, 4)})):
        groups = param_groups(module, 0.05, layer_decay=decay, lr=2.0)
        name_of = {id(p): n for n, p in module.named_parameters()}
        decays = expected_decay(module)[0]
        seen = set()
        for g in groups:
            for p in g["params"]:
                n = name_of[id(p)]
                seen.add(n)
                want = 2.0 * decay ** (2 + 1 - layer_id(n, 2))  # depth 2, read from the encoder
                assert g["lr"] == pytest.approx(want), n
                assert g["weight_decay"] == (0.05 if n in decays else 0.0), n
        assert seen == set(name_of.values())
    # a module without a depth: everything at layer 0 of a depth-0 stack
    (g,) = [g for g in param_groups(nn.Linear(2, 2, bias=False), 0.1, layer_decay=decay, lr=1.0) if g["params"]]
    assert g["lr"] == pytest.approx(decay)
    with pytest.raises(ValueError, match=r"^param_groups: pass the base lr when layer_decay != 1$"):
        param_groups(enc, 0.05, layer_decay=decay)


def test_param_groups_keep_both_groups_and_read_top_level_names():
    norm = nn.LayerNorm(4)  # nothing to decay: the decay group is there, empty
    assert param_groups(norm, 0.1) == [{"params": [], "weight_decay": 0.1},
                                        {"params": [norm.weight, norm.bias], "weight_decay": 0.0}]
    lin = nn.Linear(2, 2, bias=False)  # nothing without decay
    assert param_groups(lin, 0.1) == [{"params": [lin.weight], "weight_decay": 0.1}, {"params": [], "weight_decay": 0.0}]

    class Bare(nn.Module):  # parameters with no dot in their names, one exempt by the module's own word
        def __init__(self):
            super().__init__()
            self.pos_embed = nn.Parameter(torch.zeros(1, 5, 4))
            self.weight = nn.Parameter(torch.zeros(4, 4))

        def no_weight_decay(self):
            return {"pos_embed"}

    bare = Bare()
    decay, no_decay = group_names(bare, param_groups(bare, 0.1))
    assert (decay, no_decay) == ({"weight"}, {"pos_embed"})
    del Bare.no_weight_decay  # a name alone exempts nothing: the model says what takes no decay
    assert group_names(bare, param_groups(bare, 0.1)) == [{"pos_embed", "weight"}, set()]
    # the highest module that answers speaks for everything under it: a wrapper may override its encoder's word
    wrapper = nn.ModuleDict({"encoder": create_model("aot_admm_tiny", img_size=16, patch_size=4, embed_dim=8,
                                                     num_heads=2, depth=1, num_classes=0)})
    assert "encoder.stem.pos_embed" in group_names(wrapper, param_groups(wrapper, 0.1))[1]
    wrapper.no_weight_decay = lambda: set()
    assert "encoder.stem.pos_embed" in group_names(wrapper, param_groups(wrapper, 0.1))[0]
