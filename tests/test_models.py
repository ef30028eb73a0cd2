"""Models: the paper's parameter and FLOP tables, the interface, gradients, resolutions, bad input."""
import pytest
import torch

import aot_lib
from aot_lib import count_flops, count_params, create_model, list_models

ALL_MODELS = list_models()

# Paper, Tables 1-4 (CIFAR setting: 32 px, patch 8, 10 classes), in millions, as printed.
PAPER_PARAMS_M = {
    "aot_admm_tiny": 3.64, "aot_admm_small": 8.11, "aot_admm_base": 14.36,
    "crate_tiny": 5.41, "crate_small": 12.10, "crate_base": 21.44,
    "aot_tiny": 3.63, "aot_small": 8.11, "aot_base": 14.35,
    "vit_small": 21.4, "vit_tiny_relu": 1.8, "vit_small_relu": 7.2,
}
# Table 1 FLOPs in G (17 tokens).
PAPER_FLOPS_G = {
    "aot_admm_tiny": 0.13, "aot_admm_small": 0.28, "aot_admm_base": 0.50,
    "crate_tiny": 0.31, "crate_small": 0.69, "crate_base": 1.22,
}


def test_registry_holds_every_family():
    assert set(PAPER_PARAMS_M) | {"vit_tiny"} == set(ALL_MODELS)


@pytest.mark.parametrize("name,paper", sorted(PAPER_PARAMS_M.items()))
def test_param_counts_match_paper(name, paper):
    digits = len(str(paper).split(".")[1])
    assert round(count_params(create_model(name)) / 1e6, digits) == paper


def test_vit_tiny_param_discrepancy_is_recorded():
    # The paper prints 5.3 M for ViT-T; the standard ViT-T in the CIFAR setting has 5.38 M.
    assert count_params(create_model("vit_tiny")) == 5_381_194


@pytest.mark.parametrize("name,paper", [("aot_admm_base", 14.84), ("crate_base", 21.92)])
def test_imagenet_setting_param_counts(name, paper):
    m = create_model(name, img_size=128, patch_size=16)
    assert round(count_params(m) / 1e6, 2) == paper


def test_aot_admm_parameter_savings_over_crate():
    # Paper, Sec. Main Results: removes 1.77, 3.99 and 7.08 M from Tiny, Small and Base.
    # It calls these reductions of 31.1 / 31.2 / 31.3 %, but its own counts give
    # 32.7 / 33.0 / 33.0 % (1.77/5.41 = 0.327): we reproduce the counts and record the mismatch.
    for scale, removed, pct in [("tiny", 1.77, 32.7), ("small", 3.99, 33.0), ("base", 7.08, 33.0)]:
        a, c = (round(count_params(create_model(f"{f}_{scale}")) / 1e6, 2) for f in ("aot_admm", "crate"))
        assert round(c - a, 2) == removed
        assert round(100 * (c - a) / c, 1) == pct


@pytest.mark.parametrize("name,paper", sorted(PAPER_FLOPS_G.items()))
def test_flops_match_paper(name, paper):
    assert round(count_flops(create_model(name)) / 1e9, 2) == paper


def test_fused_ista_same_output_fewer_flops():
    three = create_model("crate_tiny", depth=2)
    two = create_model("crate_tiny", depth=2, fused_ista=True)
    two.load_state_dict(three.state_dict())
    x = torch.randn(2, 3, 32, 32)
    torch.testing.assert_close(three(x), two(x), rtol=1e-4, atol=1e-5)
    # one d x d product per token per layer fewer: 2 * 17 * 384^2 FLOPs per layer
    assert count_flops(three) - count_flops(two) == 2 * 2 * 17 * 384**2
    assert round(count_flops(create_model("crate_tiny", fused_ista=True)) / 1e9, 2) == 0.25


@pytest.mark.parametrize("name", ALL_MODELS)
def test_interface_and_every_parameter_gets_a_gradient(name):
    m = create_model(name)
    x = torch.randn(2, 3, 32, 32)
    f = m.forward_features(x)
    assert f.shape == (2, m.num_features)
    logits = m.forward_head(f)
    assert logits.shape == (2, 10)
    torch.testing.assert_close(logits, m(x))
    logits.square().sum().backward()
    missing = [n for n, p in m.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()]
    assert not missing, f"no (finite) gradient for {missing}"
    zero = [n for n, p in m.named_parameters() if p.grad.abs().sum() == 0]
    assert not zero, f"zero gradient for {zero}"


@pytest.mark.parametrize("name", ALL_MODELS)
@pytest.mark.parametrize("size", [16, 24, 48])
def test_other_resolutions(name, size):
    m = create_model(name, depth=2)
    out = m.forward_features(torch.randn(3, 3, size, size))
    assert out.shape == (3, m.num_features) and torch.isfinite(out).all()


def test_position_embedding_is_identity_at_native_resolution():
    from aot_lib.layers import interpolate_pos_embed

    pe = torch.randn(1, 17, 8)
    assert interpolate_pos_embed(pe, (4, 4)) is pe
    small = interpolate_pos_embed(pe, (2, 2))
    assert small.shape == (1, 5, 8)
    torch.testing.assert_close(small[:, 0], pe[:, 0])  # cls entry kept


def test_overrides_and_reset_classifier():
    m = create_model("aot_admm_tiny", num_classes=100, depth=3)
    assert len(m.blocks) == 3 and m(torch.randn(1, 3, 32, 32)).shape == (1, 100)
    m.reset_classifier(7)
    assert m(torch.randn(1, 3, 32, 32)).shape == (1, 7)


def test_num_classes_zero_gives_features():
    m = create_model("crate_tiny", num_classes=0, depth=1)
    assert m(torch.randn(2, 3, 32, 32)).shape == (2, 384)


# --- bad input: one clear error that names the fix ----------------------------------------

def test_unknown_model_lists_known_ones():
    with pytest.raises(ValueError, match="unknown model 'aot_admm_huge'.*Did you mean.*Known models: .*aot_admm_tiny"):
        create_model("aot_admm_huge")


def test_img_size_not_divisible_by_patch():
    with pytest.raises(ValueError, match=r"img_size=30 is not divisible by patch_size=8.*\(e\.g\. 24 or 32\)"):
        create_model("aot_admm_tiny", img_size=30)


def test_input_not_divisible_by_patch():
    m = create_model("aot_tiny", depth=1)
    with pytest.raises(ValueError, match="not divisible by patch_size=8; resize or crop"):
        m(torch.randn(1, 3, 20, 20))


def test_width_not_divisible_by_heads():
    with pytest.raises(ValueError, match=r"embed_dim=384 is not divisible by num_heads=5.*divisors of 384"):
        create_model("crate_tiny", num_heads=5)


@pytest.mark.parametrize("name", ["aot_admm_tiny", "vit_tiny"])
def test_wrong_number_of_channels(name):
    m = create_model(name, depth=1)
    with pytest.raises(ValueError, match="expects 3 input channels but got 1; create it with in_chans=1"):
        m(torch.randn(2, 1, 32, 32))


def test_bad_admm_hyperparameters():
    with pytest.raises(ValueError, match=r"all three must be positive: choose eta\*\(gamma\+rho\) < 1"):
        create_model("aot_admm_tiny", eta=0.6, gamma=1.0, rho=1.0)


def test_public_api():
    for name in ["create_model", "list_models", "count_flops", "count_params", "epps_pulley", "SIGReg",
                 "LeJEPALoss", "coding_rate", "subspace_coding_rate"]:
        assert hasattr(aot_lib, name)
