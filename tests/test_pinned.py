"""Values pinned against independent references (issue #11): where the suite only smoke-tested a
function, a planted bug (a flipped sign, a wrong threshold, another interpolation kernel, a
misassembled batch) passed. Every reference here is written from the definition, not from the code.

Float64 throughout where the code allows it, so the tolerances are rounding, not modelling, errors.
"""
import functools
import math

import pytest
import torch
from torch import nn

from aot_lib import create_model, list_models
from aot_lib.data.datasets import ImageData
from aot_lib.objectives.heads import GlobalBatchNorm1d, LeJEPAProjector
from aot_lib.models.layers import ISTA, ConvPatchStem, PatchStem, interpolate_pos_embed
from aot_lib.objectives.lejepa import LeJEPALoss, LeJEPAModel
from aot_lib.models import CRATELayer
from helpers import raises_exactly
from aot_lib.training.runs import encoder_state_dict
from aot_lib.training.supervised import evaluate, hard_label_distillation_loss

F64 = dict(rtol=1e-12, atol=1e-12)  # float64 references: a few ulps of O(1) values


# ----------------------------------------------------------------------------- CRATE's ISTA step

def ista_reference(x: torch.Tensor, D: torch.Tensor, eta: float, lambd: float) -> torch.Tensor:
    """CRATE's ISTA step in the paper's column convention, token by token:
    ``Z+ = ReLU(Z + eta * D^T (Z - D Z) - eta * lambda)`` for ``Z`` = the tokens of one image as columns."""
    out = torch.empty_like(x)
    for b in range(x.shape[0]):
        Z = x[b].T  # (d, N): tokens are columns
        out[b] = torch.relu(Z + eta * D.T @ (Z - D @ Z) - eta * lambd).T
    return out


@pytest.mark.parametrize("fused", [False, True])
def test_ista_step_is_the_definition(fused):
    # eta, lambda away from 1 (where eta*lambda = lambda) and from the defaults 0.1 / 0.1 (eta = lambda)
    eta, lambd, d = 0.3, 0.7, 6
    g = torch.Generator().manual_seed(0)
    ista = ISTA(d, step_size=eta, lambd=lambd, fused=fused).double()
    with torch.no_grad():
        ista.weight.copy_(torch.randn(d, d, generator=g, dtype=torch.float64) / math.sqrt(d))  # not symmetric
    x = torch.randn(2, 5, d, generator=g, dtype=torch.float64)
    out = ista(x)
    ref = ista_reference(x, ista.weight.detach(), eta, lambd)
    torch.testing.assert_close(out, ref, **F64)
    # the check has teeth: the threshold bites somewhere but not everywhere
    assert 0.2 < (ref == 0).double().mean() < 0.8


def test_crate_layer_and_model_pass_the_ista_settings_through():
    torch.manual_seed(0)
    layer = CRATELayer(8, 2, step_size=0.3, lambd=0.7).double()
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(0.1 * torch.randn_like(p))  # LayerNorm affine and MSSA bias off their initial values
    z = torch.randn(2, 5, 8, dtype=torch.float64)
    half = z + layer.mssa(layer.norm1(z))
    ref = ista_reference(layer.norm2(half), layer.ista.weight, 0.3, 0.7)
    torch.testing.assert_close(layer(z), ref, **F64)
    m = create_model("crate_tiny", embed_dim=8, num_heads=2, depth=2, step_size=0.3, lambd=0.7, fused_ista=True)
    assert all((b.ista.step_size, b.ista.lambd, b.ista.fused) == (0.3, 0.7, True) for b in m.blocks)
    d = create_model("crate_tiny", embed_dim=8, num_heads=2, depth=1).blocks[0].ista
    assert (d.step_size, d.lambd, d.fused) == (0.1, 0.1, False)  # official CRATE's values


def test_ista_refuses_a_non_shrinking_step():
    with pytest.raises(ValueError, match="step_size > 0 and lambd >= 0"):
        ISTA(4, step_size=0.0)
    with pytest.raises(ValueError, match="step_size > 0 and lambd >= 0"):
        ISTA(4, lambd=-0.1)
    ISTA(4, lambd=0.0)  # no threshold is allowed


# ----------------------------------------------------------------------------- position-embedding resize

def keys_cubic(x: float, a: float) -> float:
    """Keys' cubic convolution kernel with parameter ``a``."""
    x = abs(x)
    if x <= 1:
        return (a + 2) * x**3 - (a + 3) * x**2 + 1
    if x < 2:
        return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a
    return 0.0


def bicubic_matrix(n_in: int, n_out: int) -> torch.Tensor:
    """``(n_out, n_in)`` weights of plain bicubic resampling, half-pixel centres (align_corners=False):
    output ``i`` samples source coordinate ``(i + 0.5) n_in / n_out - 0.5`` with Keys' a = -0.75 and the
    four taps clamped to the border."""
    m = torch.zeros(n_out, n_in, dtype=torch.float64)
    for i in range(n_out):
        src = (i + 0.5) * n_in / n_out - 0.5
        f = math.floor(src)
        for k in range(-1, 3):
            m[i, min(max(f + k, 0), n_in - 1)] += keys_cubic(src - f - k, -0.75)
    return m


def antialiased_bicubic_matrix(n_in: int, n_out: int) -> torch.Tensor:
    """PIL's bicubic resampling (what torch's ``antialias=True`` and timm's ``resample_abs_pos_embed`` do):
    Keys' a = -0.5, the kernel stretched by the scale when shrinking, the weights of each output renormalised."""
    scale = n_in / n_out
    stretch = max(scale, 1.0)
    m = torch.zeros(n_out, n_in, dtype=torch.float64)
    for i in range(n_out):
        centre = (i + 0.5) * scale
        lo, hi = max(int(centre - 2 * stretch + 0.5), 0), min(int(centre + 2 * stretch + 0.5), n_in)
        w = torch.tensor([keys_cubic((j - centre + 0.5) / stretch, -0.5) for j in range(lo, hi)], dtype=torch.float64)
        m[i, lo:hi] = w / w.sum()
    return m


def resize_reference(pos: torch.Tensor, grid: tuple[int, int], antialias: bool) -> torch.Tensor:
    """``(1, 1 + g*g, d)`` -> ``(1, 1 + grid[0]*grid[1], d)``: the cls entry kept, the grid resampled
    separably (rows, then columns) with the matrices above."""
    g0 = math.isqrt(pos.shape[1] - 1)
    mk = antialiased_bicubic_matrix if antialias else bicubic_matrix
    patch = pos[0, 1:].reshape(g0, g0, -1)
    out = torch.einsum("ij,jkc,lk->ilc", mk(g0, grid[0]), patch, mk(g0, grid[1]))
    return torch.cat([pos[:, :1], out.reshape(1, grid[0] * grid[1], -1)], dim=1)


def test_reference_kernels_are_what_they_claim():
    # the matrices interpolate constants exactly and reproduce the grid at scale 1
    for mk in (bicubic_matrix, antialiased_bicubic_matrix):
        for n in (2, 3, 6):
            torch.testing.assert_close(mk(4, n).sum(1), torch.ones(n, dtype=torch.float64), **F64)
        torch.testing.assert_close(mk(4, 4), torch.eye(4, dtype=torch.float64), **F64)
    # Keys' kernel: 1 at 0, 0 at the other integers, continuous at 1
    for a in (-0.5, -0.75):
        assert keys_cubic(0, a) == 1 and keys_cubic(1, a) == keys_cubic(2, a) == 0


@pytest.mark.parametrize("antialias", [False, True])
@pytest.mark.parametrize("grid", [(2, 2), (6, 6), (3, 5)])
def test_pos_embed_resize_is_bicubic(antialias, grid):
    pos = torch.randn(1, 17, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)  # 4x4 grid + cls
    out = interpolate_pos_embed(pos, grid, antialias=antialias)
    torch.testing.assert_close(out, resize_reference(pos, grid, antialias), **F64)
    assert torch.equal(out[:, 0], pos[:, 0])  # the cls entry is not resampled


# every registered model (built small: its stem is what is checked)
FAMILIES = list_models()


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("img", [16, 48])  # 4x4 position grid -> 2x2 and -> 6x6
def test_every_family_adds_the_resized_pos_embed(name, img):
    """What a stem adds at another resolution: plain bicubic for the CRATE-style stem (DINO), PIL's
    antialiased bicubic for the ViT's convolutional stem (timm)."""
    m = create_model(name, img_size=32, patch_size=8, embed_dim=8, num_heads=2, depth=1).double()
    stem = m.stem
    antialias = isinstance(stem, ConvPatchStem)
    assert isinstance(stem, PatchStem) != antialias
    x = torch.randn(2, 3, img, img, dtype=torch.float64)
    with torch.no_grad():
        stem.pos_embed.copy_(torch.randn_like(stem.pos_embed))
        with_pos = stem(x)
        pos = stem.pos_embed.clone()
        stem.pos_embed.zero_()
        added = with_pos - stem(x)
    g = img // 8
    torch.testing.assert_close(added, resize_reference(pos, (g, g), antialias).expand_as(added), **F64)


# ----------------------------------------------------------------------------- GlobalBatchNorm1d, LeJEPAModel

def test_global_batchnorm_without_process_group_is_batchnorm1d():
    torch.manual_seed(0)
    ours, ref = GlobalBatchNorm1d(5, momentum=0.3), nn.BatchNorm1d(5, momentum=0.3)
    with torch.no_grad():
        ours.weight.copy_(torch.randn(5))
        ours.bias.copy_(torch.randn(5))
    ref.load_state_dict(ours.state_dict())
    for _ in range(2):  # training: batch statistics, running averages updated
        x = 3 + 2 * torch.randn(16, 5)
        xa, xb = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        ya, yb = ours(xa), ref(xb)
        torch.testing.assert_close(ya, yb, rtol=0, atol=0)
        (ya * torch.arange(5.0)).sum().backward()
        (yb * torch.arange(5.0)).sum().backward()
        torch.testing.assert_close(xa.grad, xb.grad, rtol=0, atol=0)
    for k, v in ref.state_dict().items():
        torch.testing.assert_close(ours.state_dict()[k], v, rtol=0, atol=0)
    assert ours.num_batches_tracked.item() == 2
    ours.eval(), ref.eval()
    x = torch.randn(4, 5)
    torch.testing.assert_close(ours(x), ref(x), rtol=0, atol=0)


def test_lejepa_model_groups_views_by_size_without_mixing_them():
    """Views of one size go through the encoder together; the projector must see every view's features
    where the view was, as if each had been encoded on its own."""
    torch.manual_seed(0)
    enc = create_model("aot_admm_tiny", img_size=16, patch_size=4, embed_dim=16, num_heads=2, depth=1, num_classes=0)
    proj = LeJEPAProjector(16, hidden_dim=32, out_dim=8, num_layers=2)
    model = LeJEPAModel(enc, proj, LeJEPALoss(num_global=2, num_slices=16))
    seen = []
    proj.register_forward_hook(lambda mod, inp, out: seen.append(inp[0].detach()))
    # sizes interleaved, so grouping reorders them: 16, 8, 16, 8, 8 px
    views = [torch.randn(4, 3, s, s) for s in (16, 8, 16, 8, 8)]  # batch 4 != 3 channels
    out = model(views)
    model.loss.sigreg.step.zero_()  # the same SIGReg directions for the reference
    with torch.no_grad():
        feats = torch.cat([enc.forward_features(v) for v in views])
    # float32: one batched matmul against five smaller ones rounds differently (a few ulps of O(1) values)
    torch.testing.assert_close(seen[0], feats, rtol=1e-5, atol=1e-5)
    ref = model.loss(proj(feats).view(5, 4, -1))
    for a, b in zip(out[:3], ref[:3]):  # loss, pred_loss, sigreg_loss
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- checkpoints

def test_encoder_state_dict_of_every_checkpoint_kind():
    t = {k: torch.tensor(float(i)) for i, k in enumerate(
        ["encoder.stem.w", "encoder.blocks.0.w", "encoder.head.fc.weight", "projector.net.0.weight",
         "loss.sigreg.step", "projector.encoder.x"])}
    for ckpt in ({"kind": "pretrain", "model": t}, {"model": t}):  # no kind: a pretraining checkpoint
        assert encoder_state_dict(ckpt) == {"stem.w": t["encoder.stem.w"], "blocks.0.w": t["encoder.blocks.0.w"]}
        assert encoder_state_dict(ckpt, with_head=True) == {"stem.w": t["encoder.stem.w"], "blocks.0.w": t["encoder.blocks.0.w"],
                                                           "head.fc.weight": t["encoder.head.fc.weight"]}
    sup = {"stem.w": t["encoder.stem.w"], "head.fc.weight": t["encoder.head.fc.weight"], "head.norm.bias": t["loss.sigreg.step"]}
    for kind in ("finetune", "distill"):
        assert encoder_state_dict({"kind": kind, "model": sup}) == {"stem.w": t["encoder.stem.w"]}
        assert encoder_state_dict({"kind": kind, "model": sup}, with_head=True) == sup
    assert all(v is t["encoder.stem.w"] for k, v in encoder_state_dict({"model": t}).items() if k == "stem.w")  # not copied


# ----------------------------------------------------------------------------- distillation loss

def test_hard_label_distillation_loss_against_a_float64_reference():
    """(1 - alpha) CE(label) + alpha CE(teacher's argmax), the DeiT loss of Table 4, written out by hand in
    float64: log-softmax of the logits picked at the label and at the teacher's top class."""
    g = torch.Generator().manual_seed(0)
    logits, teacher = torch.randn(6, 5, generator=g), torch.randn(6, 5, generator=g)
    labels = torch.tensor([0, 1, 2, 3, 4, 0])
    teacher[:, 2] += 10  # the teacher says class 2 for every image, so its label differs from most true ones
    logp = logits.double() - logits.double().exp().sum(1, keepdim=True).log()
    ce_label = -logp[torch.arange(6), labels].mean()
    ce_teacher = -logp[:, 2].mean()
    label_loss = torch.nn.functional.cross_entropy(logits, labels)
    for alpha in (0.0, 0.25, 0.5, 1.0):
        got = hard_label_distillation_loss(logits, label_loss, teacher, alpha)
        want = (1 - alpha) * ce_label + alpha * ce_teacher
        assert got.item() == pytest.approx(want.item(), rel=1e-6)  # float32 log-softmax of 5 logits
    assert hard_label_distillation_loss(logits, label_loss, teacher) == hard_label_distillation_loss(logits, label_loss, teacher, 0.5)
    # the pseudo-label is the argmax, not the teacher's distribution: rescaling its logits changes nothing
    assert hard_label_distillation_loss(logits, label_loss, teacher * 7) == hard_label_distillation_loss(logits, label_loss, teacher)


# ----------------------------------------------------------------------------- supervised evaluation

class _CornerLogits(nn.Module):
    """Logits = the three channels of the top-left pixel; remembers what it was given."""

    def __init__(self):
        super().__init__()
        self.inputs, self.modes = [], []

    def forward(self, x):
        self.inputs.append(x)
        self.modes.append(self.training)
        return x[:, :, 0, 0]


def test_evaluate_counts_top1_in_percent():
    # seven constant images; the argmax after normalisation is known for each
    values = torch.tensor([[200, 10, 10], [10, 200, 10], [10, 10, 200], [200, 10, 10], [10, 200, 10],
                           [100, 110, 10], [110, 100, 10]], dtype=torch.uint8)
    images = values.view(7, 3, 1, 1).expand(7, 3, 8, 8).contiguous()
    labels = torch.tensor([0, 1, 2, 1, 1, 0, 0])
    data = ImageData(images, labels, ["a", "b", "c"], "memory")
    model = _CornerLogits().train()
    mean, std = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    # predictions 0 1 2 0 1 1 0 -> correct: 0 1 2 _ 4 _ 6 = 5 of 7
    assert evaluate(model, data, 8, mean, std, "cpu", batch_size=3) == pytest.approx(5 / 7 * 100, rel=1e-12)
    assert model.modes == [False] * 3 and [len(x) for x in model.inputs] == [3, 3, 1]  # eval mode, batches of 3
    torch.testing.assert_close(torch.cat(model.inputs)[:, :, 0, 0], values.float() / 255)
    # the normalisation is applied: a channel-0 mean of 0.1 turns images 5 and 6 to class 1 -> 4 of 7
    model.inputs.clear()
    mean, std = (0.1, 0.0, 0.0), (1.0, 1.0, 2.0)
    assert evaluate(model, data, 8, mean, std, "cpu") == pytest.approx(4 / 7 * 100, rel=1e-12)
    x = torch.cat(model.inputs)
    torch.testing.assert_close(x[:, :, 0, 0], (values.float() / 255 - torch.tensor(mean)) / torch.tensor(std))
    # another size: the images are resized first (constant images stay constant)
    model.inputs.clear()
    assert evaluate(model, data, 4, (0.0,) * 3, (1.0,) * 3, "cpu") == pytest.approx(5 / 7 * 100, rel=1e-12)
    assert model.inputs[0].shape[-2:] == (4, 4)


# ----------------------------------------------------------------------------- coding rates

def test_coding_rates_default_precision_batches_and_dtypes():
    from aot_lib import coding_rate, subspace_coding_rate

    g = torch.Generator().manual_seed(0)
    Z = torch.randn(3, 6, 10, generator=g, dtype=torch.float64)  # a batch of three (d, N) = (6, 10)
    U = torch.linalg.qr(torch.randn(6, 6, generator=g, dtype=torch.float64))[0].reshape(6, 2, 3).permute(1, 0, 2)
    # the default precision is eps = 0.5 (the paper's): R = 1/2 logdet(I + d/(N eps^2) Z Z^T)
    ref = torch.stack([0.5 * torch.logdet(torch.eye(6, dtype=torch.float64) + 6 / (10 * 0.25) * z @ z.T) for z in Z])
    torch.testing.assert_close(coding_rate(Z), ref, **F64)
    # R^c: one rate per subspace, summed over subspaces, per batch entry (N = 10 tokens, not the batch size)
    ref_c = torch.stack([sum(0.5 * torch.logdet(torch.eye(3, dtype=torch.float64) + 3 / (10 * 0.25) * u.T @ z @ z.T @ u)
                             for u in U) for z in Z])
    got = subspace_coding_rate(Z, U)
    assert got.shape == (3,)
    torch.testing.assert_close(got, ref_c, **F64)
    # bases in another dtype are cast to Z's
    torch.testing.assert_close(subspace_coding_rate(Z, U.float()), subspace_coding_rate(Z, U.float().double()), **F64)


# ----------------------------------------------------------------------------- layers: defaults, messages, edges

def test_layer_defaults_are_the_official_ones():
    from aot_lib.models.layers import MSSA, ClassifierHead

    ista = ISTA(4)
    assert (ista.step_size, ista.lambd, ista.fused) == (0.1, 0.1, False)  # official CRATE
    assert ClassifierHead(8, 3).norm.eps == 1e-5  # torch's default, as CRATE's mlp_head
    assert MSSA(8, 2).qkv.bias is None and MSSA(8, 2).proj.bias is not None
    # a head with one output is still LayerNorm -> Linear; num_classes=0 is the identity
    head = ClassifierHead(8, 1)
    x = torch.randn(4, 8)
    assert isinstance(head.norm, nn.LayerNorm) and head.fc.out_features == 1
    torch.testing.assert_close(head(x), head.fc(head.norm(x)))  # logits by default
    torch.testing.assert_close(head(x, pre_logits=True), head.norm(x))
    assert list(ClassifierHead(8, 0).parameters()) == [] and torch.equal(ClassifierHead(8, 0)(x), x)


def test_stem_initialisation_is_truncated_normal_002():
    # timm / DINO: trunc_normal_(std=0.02) for the position embedding and the cls token
    stem = create_model("aot_admm_tiny", depth=1).stem  # 17 x 384 position entries, 384 cls entries
    assert 0.018 < stem.pos_embed.std().item() < 0.022 and stem.pos_embed.abs().max() <= 2.0
    assert 0.016 < stem.cls_token.std().item() < 0.024


def test_interpolate_pos_embed_keeps_every_prefix_token():
    pos = torch.randn(1, 4 + 16, 3, dtype=torch.float64)  # 4 prefix tokens (e.g. registers), a 4x4 grid
    out = interpolate_pos_embed(pos, (2, 2), num_prefix=4)
    assert out.shape == (1, 8, 3) and torch.equal(out[:, :4], pos[:, :4])
    ref = resize_reference(torch.cat([pos[:, :1], pos[:, 4:]], dim=1), (2, 2), antialias=False)
    torch.testing.assert_close(out[:, 4:], ref[:, 1:], **F64)


def test_input_and_width_errors_name_the_problem():
    from aot_lib.models.layers import check_heads_divide

    stem = create_model("aot_admm_tiny", img_size=16, patch_size=4, embed_dim=8, num_heads=2, depth=1).stem
    with pytest.raises(ValueError, match=r"^expected images of shape \(B, C, H, W\), got shape \(3, 16, 16\)$"):
        stem(torch.randn(3, 16, 16))
    for h, w in ((18, 16), (16, 18)):  # either side alone not a multiple of the patch
        with pytest.raises(ValueError, match=f"input of size {h}x{w} is not divisible by patch_size=4"):
            stem(torch.randn(1, 3, h, w))
    # the suggested head counts are the divisors of the width up to 24
    with pytest.raises(ValueError, match=r"\(e\.g\. 1, 2, 5, 10\)\.$"):
        check_heads_divide(50, 3)
    with pytest.raises(ValueError, match=r"\(e\.g\. 1, 2, 3, 4, 6, 8, 12, 16, 24\)\.$"):
        check_heads_divide(48, 5)


# ----------------------------------------------------------------------------- AoT-ADMM: both layer paths, defaults, refusals

def _layer_and_states(fused: bool):
    from aot_lib.models import ADMMLayer

    torch.manual_seed(0)
    layer = ADMMLayer(8, 2, fused=fused).double()
    with torch.no_grad():
        layer.coef_logits.add_(torch.randn(3, dtype=torch.float64))
        layer.tau_raw.add_(0.05 * torch.randn(8, dtype=torch.float64))
    z, v, w = (torch.randn(2, 5, 8, dtype=torch.float64) for _ in range(3))
    return layer, z, v, w


@pytest.mark.parametrize("fused", [False, True])
def test_admm_layer_state_fields_by_definition(fused):
    layer, z, v, w = _layer_and_states(fused)
    attn = layer.mssa(layer.norm(z))
    a, b, c = layer.coefficients()
    pre = a * z + b * attn + c * (v - w)
    z1 = pre / pre.square().mean(-1, keepdim=True).add(layer.rms_eps).sqrt()
    v1 = torch.relu(z1 + w - layer.tau)
    w_raw = w + z1 - v1
    w1 = w_raw / w_raw.square().mean(-1, keepdim=True).add(layer.rms_eps).sqrt()
    for s in (layer.forward_state(z, v, w), layer.step(z, v, w)):
        for got, want in ((s.z, z1), (s.v, v1), (s.w, w1), (s.w_raw, w_raw), (s.mssa, attn),
                          (s.coefficients, torch.stack([a, b, c]))):
            torch.testing.assert_close(got, want, **F64)
        assert s.tokens is s.v
    for got, want in zip(layer(z, v, w), (z1, v1, w1)):
        torch.testing.assert_close(got, want, **F64)


def test_admm_layer_takes_the_path_it_is_asked_for(monkeypatch):
    import aot_lib.models.aot_admm as mod

    calls = []
    real = mod.admm_state_update
    monkeypatch.setattr(mod, "admm_state_update", lambda *a: calls.append(1) or real(*a))
    for fused in (False, True):
        layer, z, v, w = _layer_and_states(fused)
        layer(z, v, w)
        layer.forward_state(z, v, w)
        assert len(calls) == (2 if fused else 0)


@pytest.mark.parametrize("fused", [False, True])
def test_admm_first_state_and_intermediates(fused):
    m = create_model("aot_admm_tiny", img_size=16, patch_size=4, embed_dim=8, num_heads=2, depth=2, fused=fused).double()
    x = torch.randn(2, 3, 16, 16, dtype=torch.float64)
    states = m.forward_intermediates(x)
    s0 = states[0]
    assert torch.equal(s0.w_raw, torch.zeros_like(s0.z)) and torch.equal(s0.mssa, torch.zeros_like(s0.z))
    assert s0.coefficients.shape == (3,) and torch.isnan(s0.coefficients).all()
    z, v, w = s0.z, s0.v, s0.w
    for layer, s in zip(m.blocks, states[1:]):
        ref = layer.step(z, v, w)
        torch.testing.assert_close(s.mssa, ref.mssa, **F64)
        torch.testing.assert_close(s.w_raw, ref.w_raw, **F64)
        z, v, w = ref.z, ref.v, ref.w
    torch.testing.assert_close(m.forward_features(x), v[:, 0], **F64)


def test_admm_defaults_and_refusals():
    from aot_lib.models import ADMMLayer, AoTADMM, admm_coefficients

    assert ADMMLayer(8, 2).tau.detach().tolist() == pytest.approx([0.1] * 8)  # lambda = 0.1, rho = 1
    m = create_model("aot_admm_tiny", img_size=16, patch_size=4, embed_dim=8, num_heads=2, depth=1, lambd=0.3, rho=2.0,
                     eta=0.2)
    assert m.blocks[0].tau.detach().tolist() == pytest.approx([0.15] * 8)  # tau = lambda / rho
    d = AoTADMM(depth=1)  # the class defaults are AoT-ADMM-Tiny's
    assert (d.embed_dim, d.num_heads, d.img_size, d.patch_size, d.num_classes) == (384, 6, 32, 8, 10)
    for bad in (0.0, -0.1, float("nan")):  # a softplus threshold is positive: lambda <= 0 cannot be its start
        with pytest.raises(ValueError, match=r"^lambd must be > 0 \(the V-step's threshold tau = lambd/rho is learned"):
            AoTADMM(depth=1, lambd=bad)
        with pytest.raises(ValueError, match=r"use aot_lib.theory.admm.admm_iterations\(lambd=0\)$"):
            ADMMLayer(8, 2, lambd=bad)
    # eta, gamma, rho > 0 (NaN refused too); all three negative gives positive weights (0.5, 0.25, 0.25) but a
    # negative threshold lambda / rho
    nan, inf = float("nan"), float("inf")
    makers = (admm_coefficients, functools.partial(ADMMLayer, 8, 2), functools.partial(AoTADMM, depth=1))
    for eta, gamma, rho in ((0.0, 1.0, 1.0), (0.25, 0.0, 1.0), (0.25, 1.0, 0.0), (-0.25, -1.0, -1.0), (nan, 1.0, 1.0),
                            (0.1, nan, 1.0), (0.1, 1.0, nan)):
        message = (f"eta, gamma and rho must all be positive, got eta={eta}, gamma={gamma}, rho={rho}; "
                   "choose eta*(gamma+rho) < 1 with eta, gamma, rho > 0.")
        for make in makers:
            with raises_exactly(ValueError, message):
                make(eta=eta, gamma=gamma, rho=rho)
    # every branch weight must be positive: a = 1 - eta*(gamma+rho) <= 0, or a product that underflows to 0
    # (a softmax of finite logits is never exactly 0)
    for eta, gamma, rho, shown in ((0.5, 1.0, 1.0, "0, 0.5, 0.5"), (0.6, 1.0, 1.0, "-0.2, 0.6, 0.6"),
                                   (0.1, inf, 1.0, "-inf, inf, 0.1"), (1e-200, 1e-200, 1.0, "1, 0, 1e-200"),
                                   (1e-200, 1.0, 1e-200, "1, 1e-200, 0")):
        message = (f"eta={eta}, gamma={gamma}, rho={rho} give branch coefficients ({shown}); all three "
                   "must be positive: choose eta*(gamma+rho) < 1 with eta, gamma, rho > 0.")
        for make in makers:
            with raises_exactly(ValueError, message):
                make(eta=eta, gamma=gamma, rho=rho)


def test_admm_threshold_is_a_softplus_started_at_lambda_over_rho():
    """tau = softplus(tau_raw): lambda/rho at initialisation (float64: to rounding, over six decades), positive
    whatever tau_raw becomes, and its gradient is the chain rule through softplus. The layer holds tau_raw in
    float32: its rounding (|tau_raw| <= 10 here, so <= 10 * 6e-8 absolute) moves tau by at most that relative
    amount (d log tau / d tau_raw <= 1), hence rtol 2e-6; the float64 map itself is checked to 1e-12."""
    from aot_lib.models import ADMMLayer
    from aot_lib.models.aot_admm import inverse_softplus

    for y in (1e-4, 0.05, 0.1, 1.0, 7.5, 40.0):
        assert math.log1p(math.exp(inverse_softplus(y))) == pytest.approx(y, rel=1e-12)  # float64 round trip
        layer = ADMMLayer(8, 2, lambd=y, rho=0.5)
        torch.testing.assert_close(layer.tau.detach(), torch.full((8,), 2 * y), rtol=2e-6, atol=0)
    layer = ADMMLayer(8, 2).double()
    with torch.no_grad():  # whatever training does to tau_raw, the threshold stays positive: V^+ <= ReLU(U)
        layer.tau_raw.copy_(torch.linspace(-30.0, 3.0, 8, dtype=torch.float64))
    assert (layer.tau > 0).all()
    z, v, w = (torch.randn(2, 5, 8, dtype=torch.float64) for _ in range(3))
    s = layer.step(z, v, w)
    assert (s.v <= torch.relu(s.z + w)).all() and (s.v >= 0).all()
    # d tau / d tau_raw = sigmoid(tau_raw), through both paths
    for fused in (False, True):
        layer.fused = fused
        tau = layer.tau.detach().requires_grad_()
        g_tau, = torch.autograd.grad(torch.relu(s.z + w - tau).sum(), tau)
        g_raw, = torch.autograd.grad(layer(z, v, w)[1].sum(), layer.tau_raw)
        torch.testing.assert_close(g_raw, g_tau * torch.sigmoid(layer.tau_raw.detach()), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- CRATE: defaults, the official loader's edges

def test_crate_defaults_are_crate_tiny():
    from aot_lib.models import CRATE

    m = CRATE(depth=1)
    assert (m.embed_dim, m.num_heads, m.img_size, m.patch_size, m.num_classes) == (384, 6, 32, 8, 10)
    ista = CRATELayer(8, 2).ista
    assert (ista.step_size, ista.lambd, ista.fused) == (0.1, 0.1, False)


def test_official_crate_output_map_half_present_is_not_invented():
    """Official CRATE's to_out is absent (one full-width head: the identity) or complete; a state dict with
    only its weight or only its bias is broken, and must be reported, not patched with an identity."""
    from aot_lib.models.crate import convert_official_crate_state_dict, load_official_crate
    from test_model_loaders import official_crate_state_dict

    for drop in ("weight", "bias"):
        sd = official_crate_state_dict(depth=1)
        del sd[f"transformer.layers.0.0.fn.to_out.0.{drop}"]
        model = create_model("crate_tiny", embed_dim=64, depth=1, num_heads=2).double()
        with pytest.raises(ValueError, match=f"1 keys missing from the checkpoint: blocks.N.mssa.proj.{drop}"):
            load_official_crate(model, sd)
    # absent altogether: the identity map, in the checkpoint's dtype
    sd = official_crate_state_dict(depth=1)
    for k in [k for k in sd if "to_out" in k]:
        del sd[k]
    out = convert_official_crate_state_dict(sd)
    assert torch.equal(out["blocks.0.mssa.proj.weight"], torch.eye(64, dtype=torch.float64))
    assert torch.equal(out["blocks.0.mssa.proj.bias"], torch.zeros(64, dtype=torch.float64))
    assert out["blocks.0.mssa.proj.weight"].dtype == out["blocks.0.mssa.proj.bias"].dtype == torch.float64
    with pytest.raises(TypeError, match=r"loads into a CRATE model \(crate_\*\), got AoT$"):
        load_official_crate(create_model("aot_tiny", embed_dim=64, depth=1, num_heads=2), sd)


# ----------------------------------------------------------------------------- SIGReg: defaults, dtypes, messages

def test_sigreg_defaults_and_quadrature():
    from aot_lib.objectives.sigreg import SIGReg, quadrature

    s = SIGReg()
    assert (s.num_slices, s.t_max, s.n_points, s.seed) == (1024, 3.0, 17, 0)  # LeJEPA's
    assert s.step.dtype == torch.long and s.step.item() == 0  # an exact counter, however long the run
    t, w = quadrature()
    torch.testing.assert_close(t, torch.linspace(0, 3, 17))
    # trapezoid weights on [0, t_max] doubled by symmetry, times exp(-t^2/2), in the asked dtype
    # (t_max = 1, 4 nodes: dt = 1/3 is not a float32 number, so float32 weights would show)
    t, w = quadrature(1.0, 4, dtype=torch.float64)
    dt = 1 / 3
    want = torch.tensor([dt, 2 * dt, 2 * dt, dt], dtype=torch.float64) * torch.exp(-0.5 * t**2)
    assert t.dtype == w.dtype == torch.float64
    torch.testing.assert_close(w, want, rtol=1e-15, atol=0)
    quadrature(0.5, 2)  # two nodes and a short interval are a valid rule
    for bad in (dict(n_points=1), dict(t_max=0.0), dict(t_max=-1.0)):
        with pytest.raises(ValueError, match="need n_points >= 2 and t_max > 0"):
            quadrature(**bad)


def test_sigreg_directions_and_float64():
    from aot_lib.objectives.sigreg import SIGReg, epps_pulley, sample_directions

    a = sample_directions(6, 5, seed=3)
    torch.testing.assert_close(a.norm(dim=0), torch.ones(5))
    assert sample_directions(6, 5, seed=3, dtype=torch.float64).dtype == torch.float64
    torch.testing.assert_close(sample_directions(6, 5, seed=3, dtype=torch.float64), a.double(), rtol=0, atol=0)
    default = torch.get_default_dtype()
    try:  # drawn in float32 whatever the default dtype, so every process draws the same directions
        torch.set_default_dtype(torch.float64)
        torch.testing.assert_close(sample_directions(6, 5, seed=3).float(), a, rtol=0, atol=0)
    finally:
        torch.set_default_dtype(default)
    # float64 embeddings without fixed directions: the statistic is computed in float64
    z = torch.randn(2, 16, 6, dtype=torch.float64)
    s = SIGReg(num_slices=5, seed=3).eval()
    got = s(z)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, epps_pulley(z @ a.double()).mean(), rtol=1e-14, atol=0)
    with pytest.raises(ValueError, match=r"^directions must have shape \(6, K\), got \(5, 3\)$"):
        s(z, torch.randn(5, 3))
    with pytest.raises(ValueError, match=r"^epps_pulley expects shape \(\.\.\., N, K\), got \(5,\)$"):
        epps_pulley(torch.randn(5))


# ----------------------------------------------------------------------------- LeJEPA loss: settings, energy normalisation

def test_lejepa_loss_settings_reach_sigreg():
    from aot_lib.objectives.lejepa import alpha_from_lejepa_lambda

    d = LeJEPALoss().sigreg
    assert (d.num_slices, d.t_max, d.n_points, d.seed) == (1024, 3.0, 17, 0)
    s = LeJEPALoss(num_slices=7, t_max=2.5, n_points=9, seed=4).sigreg
    assert (s.num_slices, s.t_max, s.n_points, s.seed) == (7, 2.5, 9, 4)
    assert LeJEPALoss(alpha=0.0).alpha == 0.0 and alpha_from_lejepa_lambda(0.0) == 0.0  # no SIGReg is allowed
    with pytest.raises(ValueError, match=r"^alpha must be non-negative, got -1$"):
        LeJEPALoss(alpha=-1)


def test_energy_normalize_by_definition_and_over_ranks(monkeypatch):
    import aot_lib.distributed as distributed_mod
    from aot_lib.objectives.lejepa import energy_normalize

    y = 3 + 2 * torch.randn(2, 10, 4, dtype=torch.float64)
    yc = y - y.mean(-2, keepdim=True)
    for eps in (1e-12, 0.5):
        want = yc / (yc.square().sum((-2, -1), keepdim=True) / (10 * 4) + eps).sqrt()
        torch.testing.assert_close(energy_normalize(y, eps=eps), want, **F64)
    out = energy_normalize(y)
    torch.testing.assert_close(out.mean(-2), torch.zeros(2, 4, dtype=torch.float64), rtol=0, atol=1e-12)
    torch.testing.assert_close(out.square().sum(-1).mean(-1), torch.full((2,), 4.0, dtype=torch.float64), **F64)
    # two processes holding the same shard: the statistics are those of the global batch (both shards)
    monkeypatch.setattr(distributed_mod, "world_size", lambda: 2)
    monkeypatch.setattr(distributed_mod, "all_reduce_sum", lambda t: 2 * t)
    z = y + torch.linspace(0, 1, 10, dtype=torch.float64)[:, None]  # another mean and energy than y
    got = energy_normalize(z, eps=0.5)
    monkeypatch.undo()
    torch.testing.assert_close(got, energy_normalize(torch.cat([z, z], dim=-2), eps=0.5)[:, :10], **F64)


@pytest.mark.parametrize("dim", [5, 17])  # the width equal to either grid's token count (2x2 + 1, 4x4 + 1)
def test_official_crate_pos_embed_resized_by_token_count(dim):
    from aot_lib.models.crate import load_official_crate
    from test_model_loaders import official_crate_state_dict

    sd = official_crate_state_dict(image_size=16, dim=dim, depth=1)  # a 2x2 grid
    model = load_official_crate(create_model("crate_tiny", embed_dim=dim, num_heads=1, depth=1).double(), sd)  # 4x4
    assert torch.equal(model.stem.pos_embed, interpolate_pos_embed(sd["pos_embedding"], (4, 4)))
    del sd["pos_embedding"]  # none at all: reported as missing, not resized
    with pytest.raises(ValueError, match="1 keys missing from the checkpoint: stem.pos_embed"):
        load_official_crate(create_model("crate_tiny", embed_dim=dim, num_heads=1, depth=1).double(), sd)
