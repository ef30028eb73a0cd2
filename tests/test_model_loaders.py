"""Foreign weights: official CRATE state dicts into crate_*, timm ViT state dicts into vit_*.

The official CRATE forward is re-implemented here, independently of aot_lib, from
Ma-Lab-Berkeley/CRATE model/crate.py, on a state dict with the official key names; timm's
VisionTransformer is used directly (random weights, nothing downloaded).
"""
import math

import pytest
import torch

from aot_lib import count_params, create_model
from aot_lib.models.layers import interpolate_pos_embed
from aot_lib.models.crate import convert_official_crate_state_dict, load_official_crate
from helpers import require

F64 = torch.float64


# ----------------------------------------------------------------------------- official CRATE

def official_crate_state_dict(*, image_size=32, patch_size=8, channels=3, dim=64, depth=2, num_classes=10,
                              seed=0, dtype=F64) -> dict:
    """Random weights under official CRATE's key names (CRATE(image_size, patch_size, num_classes,
    dim, depth, heads, dim_head=dim // heads).state_dict()). LayerNorm weights are random too, so
    a swapped key would show."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape, scale=0.3):
        return (scale * torch.randn(*shape, generator=g, dtype=F64)).to(dtype)

    patch_dim = channels * patch_size * patch_size
    n = (image_size // patch_size) ** 2
    sd = {
        # to_patch_embedding = Sequential(Rearrange, LayerNorm(patch_dim), Linear(patch_dim, dim), LayerNorm(dim))
        "to_patch_embedding.1.weight": 1 + r(patch_dim), "to_patch_embedding.1.bias": r(patch_dim),
        "to_patch_embedding.2.weight": r(dim, patch_dim, scale=1 / math.sqrt(patch_dim)), "to_patch_embedding.2.bias": r(dim),
        "to_patch_embedding.3.weight": 1 + r(dim), "to_patch_embedding.3.bias": r(dim),
        "pos_embedding": r(1, n + 1, dim, scale=1.0),
        "cls_token": r(1, 1, dim, scale=1.0),
        # mlp_head = Sequential(LayerNorm(dim), Linear(dim, num_classes))
        "mlp_head.0.weight": 1 + r(dim), "mlp_head.0.bias": r(dim),
        "mlp_head.1.weight": r(num_classes, dim), "mlp_head.1.bias": r(num_classes),
    }
    for i in range(depth):
        p = f"transformer.layers.{i}."
        sd |= {
            # [PreNorm(dim, Attention), PreNorm(dim, FeedForward)]
            p + "0.norm.weight": 1 + r(dim), p + "0.norm.bias": r(dim),
            p + "0.fn.qkv.weight": r(dim, dim, scale=1 / math.sqrt(dim)),  # Linear(dim, inner_dim, bias=False)
            p + "0.fn.to_out.0.weight": r(dim, dim, scale=1 / math.sqrt(dim)), p + "0.fn.to_out.0.bias": r(dim),
            p + "1.norm.weight": 1 + r(dim), p + "1.norm.bias": r(dim),
            p + "1.fn.weight": r(dim, dim, scale=1 / math.sqrt(dim)),  # the ISTA dictionary D
        }
    return sd


def _layer_norm(x, w, b, eps=1e-5):  # nn.LayerNorm's default eps, which official CRATE uses
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def official_crate_forward(sd: dict, img: torch.Tensor, *, patch_size: int, heads: int, depth: int,
                           step_size: float = 0.1, lambd: float = 0.1) -> torch.Tensor:
    """Official CRATE.forward (pool='cls', no dropout), written out with plain tensor ops."""
    b, c, h, w = img.shape
    p = patch_size
    # Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)'): patches row by row, each flattened
    # with the channel fastest, then p2, then p1
    patches = [img[:, :, i * p:(i + 1) * p, j * p:(j + 1) * p].permute(0, 2, 3, 1).reshape(b, -1)
               for i in range(h // p) for j in range(w // p)]
    x = torch.stack(patches, dim=1)
    x = _layer_norm(x, sd["to_patch_embedding.1.weight"], sd["to_patch_embedding.1.bias"])
    x = x @ sd["to_patch_embedding.2.weight"].T + sd["to_patch_embedding.2.bias"]
    x = _layer_norm(x, sd["to_patch_embedding.3.weight"], sd["to_patch_embedding.3.bias"])
    n = x.shape[1]
    x = torch.cat([sd["cls_token"].expand(b, 1, -1), x], dim=1)
    x = x + sd["pos_embedding"][:, :n + 1]  # official: a slice
    dim = x.shape[-1]
    dh = dim // heads
    for i in range(depth):
        L = f"transformer.layers.{i}."
        # grad_x = attn(x) + x, attn = PreNorm(Attention)
        y = _layer_norm(x, sd[L + "0.norm.weight"], sd[L + "0.norm.bias"])
        wq = (y @ sd[L + "0.fn.qkv.weight"].T).reshape(b, -1, heads, dh).transpose(1, 2)  # 'b n (h d) -> b h n d'
        attn = torch.softmax(wq @ wq.transpose(-1, -2) * dh ** -0.5, dim=-1)
        out = (attn @ wq).transpose(1, 2).reshape(b, -1, dim)  # 'b h n d -> b n (h d)'
        grad_x = out @ sd[L + "0.fn.to_out.0.weight"].T + sd[L + "0.fn.to_out.0.bias"] + x
        # x = ff(grad_x), ff = PreNorm(FeedForward): with F.linear(x, W) = x W^T,
        # x1 = F.linear(x, D); grad_1 = F.linear(x1, D.t()); grad_2 = F.linear(x, D.t())
        y = _layer_norm(grad_x, sd[L + "1.norm.weight"], sd[L + "1.norm.bias"])
        D = sd[L + "1.fn.weight"]
        grad_1 = (y @ D.T) @ D
        grad_2 = y @ D
        x = torch.relu(y + step_size * (grad_2 - grad_1) - step_size * lambd)
    feat = x[:, 0]
    feat = _layer_norm(feat, sd["mlp_head.0.weight"], sd["mlp_head.0.bias"])
    return feat @ sd["mlp_head.1.weight"].T + sd["mlp_head.1.bias"]


@pytest.mark.parametrize("fused_ista", [False, True])
def test_official_crate_state_dict_gives_official_logits(fused_ista):
    torch.manual_seed(0)
    sd = official_crate_state_dict()
    model = create_model("crate_tiny", embed_dim=64, depth=2, num_heads=2, fused_ista=fused_ista).double()
    load_official_crate(model, sd)
    model.eval()
    img = torch.randn(3, 3, 32, 32, dtype=F64)
    ref = official_crate_forward(sd, img, patch_size=8, heads=2, depth=2)
    with torch.no_grad():
        out = model(img)
    # float64: only the order of the sums differs (SDPA vs explicit softmax, 2 vs 3 ISTA products)
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)
    # the loaded tensors are the official ones, not only the outputs
    conv = convert_official_crate_state_dict(sd)
    own = model.state_dict()
    assert set(conv) == set(own) and all(torch.equal(conv[k], own[k]) for k in own)


def test_official_crate_head_and_features():
    sd = official_crate_state_dict(num_classes=7)
    model = load_official_crate(create_model("crate_tiny", embed_dim=64, depth=2, num_heads=2, num_classes=7).double(), sd)
    f = model.forward_features(torch.randn(2, 3, 32, 32, dtype=F64))
    assert f.shape == (2, 64) and (f >= 0).all()  # pre-norm: the last ISTA output is a ReLU
    # drop_head: another label set keeps its own (fresh) Linear, the LayerNorm is loaded
    m10 = create_model("crate_tiny", embed_dim=64, depth=2, num_heads=2, num_classes=10).double()
    fc = m10.head.fc.weight.detach().clone()
    load_official_crate(m10, sd, drop_head=True)
    assert torch.equal(m10.head.fc.weight, fc) and torch.equal(m10.head.norm.weight, sd["mlp_head.0.weight"])
    # an encoder without a head (pretraining) takes the encoder part only
    enc = load_official_crate(create_model("crate_tiny", embed_dim=64, depth=2, num_heads=2, num_classes=0).double(),
                              sd, drop_head=True)
    torch.testing.assert_close(enc(torch.ones(1, 3, 32, 32, dtype=F64)),
                               model.forward_features(torch.ones(1, 3, 32, 32, dtype=F64)), rtol=0, atol=0)


def test_official_crate_layout_has_the_paper_counts():
    # An official-layout state dict of CRATE-Tiny in the CIFAR setting holds 5,413,632 parameters
    # besides mlp_head: the number count_params gives for crate_tiny (Table 1's 5.41 M).
    sd = official_crate_state_dict(dim=384, depth=12, dtype=torch.float32)
    assert sum(v.numel() for k, v in sd.items() if not k.startswith("mlp_head.")) == 5_413_632
    m = create_model("crate_tiny")
    assert count_params(m) == 5_413_632
    load_official_crate(m, sd)  # and it loads into crate_tiny as it is


def test_official_crate_single_head_identity_output_map():
    # heads == 1 and dim_head == dim: official to_out is nn.Identity, so it has no keys
    sd = official_crate_state_dict(depth=1)
    for k in [k for k in sd if "to_out" in k]:
        del sd[k]
    model = load_official_crate(create_model("crate_tiny", embed_dim=64, depth=1, num_heads=1).double(), sd)
    img = torch.randn(2, 3, 32, 32, dtype=F64)
    sd["transformer.layers.0.0.fn.to_out.0.weight"] = torch.eye(64, dtype=F64)
    sd["transformer.layers.0.0.fn.to_out.0.bias"] = torch.zeros(64, dtype=F64)
    with torch.no_grad():
        # float64 summation order only
        torch.testing.assert_close(model(img), official_crate_forward(sd, img, patch_size=8, heads=1, depth=1),
                                   rtol=0, atol=1e-12)


def test_official_crate_ddp_prefix_and_other_resolution():
    sd = {f"module.{k}": v for k, v in official_crate_state_dict().items()}
    model = load_official_crate(create_model("crate_tiny", embed_dim=64, depth=2, num_heads=2).double(), sd)
    assert torch.equal(model.stem.cls_token, sd["module.cls_token"])
    # built at 16 px: the 4x4 grid is resized to 2x2 as PatchStem does at run time
    small = load_official_crate(create_model("crate_tiny", img_size=16, embed_dim=64, depth=2, num_heads=2).double(), sd)
    assert torch.equal(small.stem.pos_embed, interpolate_pos_embed(sd["module.pos_embedding"], (2, 2)))


def test_official_crate_one_error_lists_every_problem():
    sd = official_crate_state_dict()
    del sd["transformer.layers.1.1.fn.weight"]
    sd["transformer.layers.0.2.fn.weight"] = torch.zeros(64, 64, dtype=F64)
    sd["some_buffer"] = torch.zeros(1)
    model = create_model("crate_tiny", embed_dim=64, depth=2, num_heads=2).double()
    with pytest.raises(ValueError) as e:
        load_official_crate(model, sd)
    msg = str(e.value)
    assert "2 unmapped official CRATE keys" in msg and "some_buffer" in msg and "transformer.layers.N.2.fn.weight" in msg
    assert "1 keys missing from the checkpoint: blocks.N.ista.weight" in msg
    with pytest.raises(ValueError, match="not official CRATE keys: transformer.layers.0.2.fn.weight, some_buffer"):
        convert_official_crate_state_dict(sd)
    # wrong size: depth, width and classes each name their fix
    with pytest.raises(ValueError, match=r"(?s)has 2 layers, the model 3: create it with depth=2"):
        load_official_crate(create_model("crate_tiny", embed_dim=64, depth=3, num_heads=2), official_crate_state_dict())
    with pytest.raises(ValueError, match=r"(?s)width is 64, the model's 32: create it with embed_dim=64"):
        load_official_crate(create_model("crate_tiny", embed_dim=32, depth=2, num_heads=2), official_crate_state_dict())
    with pytest.raises(ValueError, match=r"(?s)10 classes, the model 100: create it with num_classes=10, or pass drop_head"):
        load_official_crate(create_model("crate_tiny", embed_dim=64, depth=2, num_heads=2, num_classes=100),
                            official_crate_state_dict())
    with pytest.raises(ValueError, match=r"(?s)patches hold 192 values .*, the model's 48"):
        load_official_crate(create_model("crate_tiny", patch_size=4, embed_dim=64, depth=2, num_heads=2),
                            official_crate_state_dict())
    with pytest.raises(ValueError, match=r"(?s)no head \(num_classes=0\): pass drop_head=True"):
        load_official_crate(create_model("crate_tiny", embed_dim=64, depth=2, num_heads=2, num_classes=0),
                            official_crate_state_dict())
    with pytest.raises(TypeError, match="loads into a CRATE model"):
        load_official_crate(create_model("aot_tiny", embed_dim=64, depth=2, num_heads=2), official_crate_state_dict())


# ----------------------------------------------------------------------------- timm ViT

def _timm_vit(img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=2, num_classes=10, seed=0):
    vt = require("timm.models.vision_transformer", "timm")
    torch.manual_seed(seed)
    m = vt.VisionTransformer(img_size=img_size, patch_size=patch_size, embed_dim=embed_dim, depth=depth,
                             num_heads=num_heads, num_classes=num_classes, dynamic_img_size=True).double().eval()
    with torch.no_grad():  # timm initialises biases to 0 and LayerNorms to 1: randomise every tensor
        for p in m.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return m


def test_timm_vit_gives_timm_logits_at_native_and_other_resolutions():
    from aot_lib.models.vit import load_timm_vit_state_dict

    timm_m = _timm_vit()
    ours = load_timm_vit_state_dict(create_model("vit_tiny", embed_dim=64, depth=2, num_heads=2).double(),
                                    timm_m.state_dict()).eval()
    x32, x16 = torch.randn(3, 3, 32, 32, dtype=F64), torch.randn(3, 3, 16, 16, dtype=F64)
    with torch.no_grad():
        # float64, same operations in another order: rounding only
        torch.testing.assert_close(ours(x32), timm_m(x32), rtol=0, atol=1e-12)
        # timm's final norm is our head.norm: its pre_logits feature is ours after the head's LayerNorm
        torch.testing.assert_close(ours.forward_head(ours.forward_features(x32), pre_logits=True),
                                   timm_m.forward_head(timm_m.forward_features(x32), pre_logits=True), rtol=0, atol=1e-12)
        # 16 px: both resize the 4x4 position grid to 2x2 (bicubic, antialiased); timm does it in
        # float32 whatever the dtype, so agreement is to float32 rounding of the embedding (~1e-8 here)
        torch.testing.assert_close(ours(x16), timm_m(x16), rtol=0, atol=1e-7)
        # a model built at 16 px gets the resized embedding at load time: the same logits
        small = load_timm_vit_state_dict(create_model("vit_tiny", img_size=16, embed_dim=64, depth=2, num_heads=2).double(),
                                         timm_m.state_dict()).eval()
        torch.testing.assert_close(small(x16), ours(x16), rtol=0, atol=1e-12)  # float64 rounding only


def test_pos_embed_resize_is_timms():
    layers = require("timm.layers", "timm")
    pe = torch.randn(1, 17, 8)
    for grid in [(2, 2), (3, 3), (6, 6)]:
        # float32 both sides, same interpolation call: equal up to float32 rounding (1 ulp)
        torch.testing.assert_close(interpolate_pos_embed(pe, grid, antialias=True),
                                   layers.resample_abs_pos_embed(pe, list(grid), num_prefix_tokens=1),
                                   rtol=1e-6, atol=1e-7)


def test_timm_vit_into_relu_student_and_head_options():
    from aot_lib.models.vit import convert_timm_vit_state_dict, load_timm_vit_state_dict

    sd = _timm_vit().state_dict()
    student = create_model("vit_tiny_relu", embed_dim=64, depth=2, num_heads=2).double()
    with pytest.raises(ValueError, match=r"(?s)blocks.N.mlp.fc1.bias \(x2\).*relu_mlp=True\): pass drop_mlp=True"):
        load_timm_vit_state_dict(student, sd)
    load_timm_vit_state_dict(student, sd, drop_mlp=True)
    assert torch.equal(student.blocks[1].attn.qkv.weight, sd["blocks.1.attn.qkv.weight"])
    assert torch.equal(student.head.norm.weight, sd["norm.weight"])
    m100 = create_model("vit_tiny", embed_dim=64, depth=2, num_heads=2, num_classes=100).double()
    with pytest.raises(ValueError, match="10 classes, the model 100: create it with num_classes=10, or pass drop_head=True"):
        load_timm_vit_state_dict(m100, sd)
    load_timm_vit_state_dict(m100, sd, drop_head=True)
    assert torch.equal(m100.head.norm.bias, sd["norm.bias"])
    with pytest.raises(ValueError, match=r"patches are 8x8 with 3 channels, the model's 4x4 with 3: create it with patch_size=8"):
        load_timm_vit_state_dict(create_model("vit_tiny", patch_size=4, embed_dim=64, depth=2, num_heads=2), sd)
    with pytest.raises(ValueError, match="no vit_\\* counterpart: reg_token"):
        convert_timm_vit_state_dict({**sd, "reg_token": torch.zeros(1, 4, 64)})
    assert set(convert_timm_vit_state_dict(sd)) == set(create_model("vit_tiny", embed_dim=64, depth=2, num_heads=2).state_dict())
