"""The fused AoT-ADMM state update (aot_lib.models.fused) against the readable reference (ADMMLayer.step)."""
import copy
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from aot_lib import create_model
from aot_lib.models.fused import ADMMStateUpdate, admm_state_update
from aot_lib.models import ADMMLayer


def reference(z, attn, v, w, coef, tau, eps):
    """Eq. layer_updates + RMS as plain operations (what ADMMLayer.step computes)."""
    def rms(x):
        return F.rms_norm(x, (x.shape[-1],), eps=eps) if eps is not None else x

    a, b, c = coef
    z1 = rms(a * z + b * attn + c * (v - w))
    u = z1 + w
    v1 = F.relu(u - tau)
    return z1, v1, rms(u - v1)


def inputs(shape=(2, 3, 6), dtype=torch.float64, margin=1e-3, eps=1e-6, seed=0):
    """Random inputs whose thresholded entries U = Z^+ + W all lie at least ``margin`` from tau, so
    gradcheck's finite differences (steps of 1e-6) never cross ReLU's kink."""
    g = torch.Generator().manual_seed(seed)
    for _ in range(100):
        z, attn, v, w = (torch.randn(shape, generator=g, dtype=dtype) for _ in range(4))
        v = v.relu()
        coef = torch.randn(3, generator=g, dtype=dtype).softmax(0)
        tau = 0.1 + 0.05 * torch.randn(shape[-1], generator=g, dtype=dtype)
        u = reference(z, attn, v, w, coef, tau, eps)[0] + w
        if (u - tau).abs().min() > margin:
            return [t.requires_grad_() for t in (z, attn, v, w, coef, tau)]
    raise AssertionError("no inputs away from the kink")


@pytest.mark.parametrize("eps", [1e-6, 0.5, None])  # tiny eps, an eps that matters, no RMS rescaling
def test_gradcheck(eps):
    args = inputs(eps=eps)
    assert torch.autograd.gradcheck(lambda *a: ADMMStateUpdate.apply(*a, eps), args)
    # one output alone (the others get no gradient: the last layer's Z and W are unused)
    for k in range(3):
        assert torch.autograd.gradcheck(lambda *a, k=k: ADMMStateUpdate.apply(*a, eps)[k], args)
    # gradients of a subset of the inputs
    fixed = [t.detach() for t in args[:4]]
    assert torch.autograd.gradcheck(lambda c, t: ADMMStateUpdate.apply(*fixed, c, t, eps), args[4:])


@pytest.mark.parametrize("eps", [1e-6, None])
def test_matches_reference_float64(eps):
    args = inputs(shape=(3, 5, 16), eps=eps, seed=1)
    ref = reference(*args, eps)
    ga = torch.randn(3, 3, 5, 16, dtype=torch.float64)
    gref = torch.autograd.grad(ref, args, list(ga))
    out = admm_state_update(*args, eps)
    gout = torch.autograd.grad(out, args, list(ga))
    for x, y in zip(out + gout, ref + gref):
        # float64: the two orders of the same arithmetic differ by a few ulps
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)


def test_kink_is_the_relu_convention():
    """Where U == tau exactly, ReLU'(0) = 0 (torch's convention): the gradient takes the W_raw branch."""
    d = 4
    tau = torch.full((d,), 0.25, dtype=torch.float64, requires_grad=True)
    z = tau.detach().expand(2, 3, d).clone().requires_grad_()  # P = Z (a=1) and U = Z + W = tau
    attn, v, w = (torch.zeros(2, 3, d, dtype=torch.float64, requires_grad=True) for _ in range(3))
    coef = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64, requires_grad=True)
    args = [z, attn, v, w, coef, tau]
    gy = [torch.randn(2, 3, d, dtype=torch.float64) for _ in range(3)]
    ref = torch.autograd.grad(reference(*args, None), args, gy)
    out = torch.autograd.grad(admm_state_update(*args, None), args, gy)
    for x, y in zip(out[:4], ref[:4]):
        torch.testing.assert_close(x, y, rtol=0, atol=0)  # the same 0/1 mask: element-wise gradients exact
    for x, y in zip(out[4:], ref[4:]):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)  # coef, tau: sums in another order


def _layer_pair(fused_kw: dict, seed: int = 0):
    torch.manual_seed(seed)
    layer = ADMMLayer(24, 3, **fused_kw)
    with torch.no_grad():  # away from the initial point
        layer.coef_logits.add_(torch.randn(3))
        layer.tau_raw.add_(0.05 * torch.randn_like(layer.tau_raw))
        layer.mssa.proj.bias.normal_(0, 0.1)
    return layer, copy.deepcopy(layer)


def _run(layer, use_step, states, grads):
    states = [s.detach().clone().requires_grad_() for s in states]
    out = layer.step(*states) if use_step else layer(*states)
    out = (out.z, out.v, out.w) if use_step else out
    torch.autograd.backward(out, grads)
    return [*out, *(s.grad for s in states), *(p.grad for p in layer.parameters())]


@pytest.mark.parametrize("variant", [{}, {"rms_rescale": False}, {"pre_norm": False}, {"pre_norm": False, "rms_rescale": False}])
def test_layer_forward_matches_step_float32(variant):
    """ADMMLayer.forward (fused) = ADMMLayer.step (plain ops): values, input and parameter gradients."""
    fused, ref = _layer_pair(variant)
    states = [torch.randn(4, 17, 24), torch.randn(4, 17, 24).relu(), 0.3 * torch.randn(4, 17, 24)]
    grads = [torch.randn(4, 17, 24) for _ in range(3)]
    for x, y in zip(_run(fused, False, states, grads), _run(ref, True, states, grads)):
        # float32 rounding: the two paths order the same sums differently (the coefficient and tau
        # gradients sum over all 4*17 tokens), a few ulps of O(1) values
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-5)


def test_encoder_fused_matches_plain_float32():
    """The whole AoT-ADMM encoder, fused=True against fused=False: features and every gradient."""
    torch.manual_seed(0)
    kw = {"embed_dim": 32, "depth": 3, "num_heads": 2, "num_classes": 0}
    fused = create_model("aot_admm_tiny", **kw)
    plain = create_model("aot_admm_tiny", fused=False, **kw)
    plain.load_state_dict(fused.state_dict())  # same parameters: the switch changes no name or shape
    assert all(blk.fused for blk in fused.blocks) and not any(blk.fused for blk in plain.blocks)
    for size in (32, 16):
        x = torch.randn(6, 3, size, size)
        a, b = fused.forward_features(x), plain.forward_features(x)
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)  # float32 rounding through 3 layers
        fused.zero_grad()
        plain.zero_grad()
        a.square().sum().backward()
        b.square().sum().backward()
        for (name, p), q in zip(fused.named_parameters(), plain.parameters()):
            # float32 rounding relative to each gradient's largest entry (sums over thousands of terms):
            # entries that are differences of large terms, as the softmax Jacobian makes of coef_logits'
            # middle entry (~1e-3 from terms of ~20), carry that absolute error, not a relative one
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5 * q.grad.abs().max().item(), msg=name)


def test_saves_less_for_backward():
    """A stack of fused layers keeps fewer bytes for backward than the plain operations (a layer's
    outputs are the next one's inputs, so a single layer would count them twice)."""
    def saved_bytes(layers, use_step):
        seen = {}

        def pack(t):
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t
        z = torch.randn(8, 17, 48, requires_grad=True)
        v, w = z.clone(), torch.zeros_like(z)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            for layer in layers:
                s = layer.step(z, v, w) if use_step else layer(z, v, w)
                z, v, w = (s.z, s.v, s.w) if use_step else s
        return sum(seen.values())
    layers = [ADMMLayer(48, 4) for _ in range(4)]
    fused, plain = saved_bytes(layers, False), saved_bytes(layers, True)
    # per layer both keep about 5 full-size tensors for LayerNorm + MSSA; the state update adds 3
    # (Z^+, V^+, W^+) when fused, 5 otherwise (V - W, P, V^+, W_raw and Z^+, the next LayerNorm's
    # input): about 8 against 10 tensors, less the last layer's unused W^+ that the fused node keeps
    assert fused < 0.9 * plain, (fused, plain)


@pytest.mark.parametrize("pure_bf16", [False, True])
def test_bf16(pure_bf16):
    """Under CPU autocast (bf16 MSSA output, float32 states) and in a bf16 model: float32 arithmetic
    inside, outputs in the dtype the plain path gives, values and gradients close to it."""
    fused, ref = _layer_pair({})
    states = [torch.randn(4, 17, 24), torch.randn(4, 17, 24).relu(), 0.3 * torch.randn(4, 17, 24)]
    if pure_bf16:
        fused, ref = fused.bfloat16(), ref.bfloat16()
        states = [s.bfloat16() for s in states]
    grads = [torch.ones_like(s) for s in states]
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=not pure_bf16):
        out_f = _run(fused, False, states, grads)
        out_r = _run(ref, True, states, grads)
    for x, y in zip(out_f, out_r):
        assert x.dtype == y.dtype
        assert torch.isfinite(x).all()
    for x, y in zip(out_f[:3], out_r[:3]):
        # bf16 keeps 8 significant bits (relative spacing 2^-8 = 3.9e-3); the plain path rounds every
        # intermediate to it in a bf16 model, the fused one only its inputs and outputs
        torch.testing.assert_close(x.float(), y.float(), rtol=3e-2, atol=3e-2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    args = inputs(shape=(4, 17, 32), dtype=torch.float32, margin=1e-3)
    gy = [torch.randn(4, 17, 32) for _ in range(3)]
    cpu = admm_state_update(*args, 1e-6)
    gcpu = torch.autograd.grad(cpu, args, gy)
    cargs = [t.detach().cuda().requires_grad_() for t in args]
    gpu = admm_state_update(*cargs, 1e-6)
    ggpu = torch.autograd.grad(gpu, cargs, [g.cuda() for g in gy])
    for x, y in zip(gpu + ggpu, cpu + gcpu):
        torch.testing.assert_close(x.cpu(), y, rtol=1e-4, atol=1e-5)  # float32, other reduction orders


def _update_and_grads(args, gy):
    out = ADMMStateUpdate.apply(*args, 1e-6)
    return list(out) + list(torch.autograd.grad(out, args, gy))


class _CountingKernels:
    """The built CPU kernels, counting their calls."""

    def __init__(self, built):
        self.built, self.calls = built, {"forward": 0, "backward": 0}

    def forward(self, *args):
        self.calls["forward"] += 1
        return self.built.forward(*args)

    def backward(self, *args):
        self.calls["backward"] += 1
        return self.built.backward(*args)


def test_cpu_uses_the_compiled_kernels_and_they_match_the_eager_path(monkeypatch):
    """On a CPU forward and backward are the C++ kernels (this machine can build them: a failure would fall back
    to eager, and this test would say so), also for the last layer's pattern (only V^+ has a gradient), with the
    eager path's values and gradients to float32 rounding."""
    from aot_lib import cpu_kernels
    from aot_lib.models import fused

    args = inputs(shape=(4, 17, 24), dtype=torch.float32, margin=1e-3, seed=2)
    gy = [torch.randn(4, 17, 24, generator=torch.Generator().manual_seed(3)) for _ in range(3)]
    monkeypatch.delenv(fused.KERNEL_ENV, raising=False)
    assert fused.kernel(torch.device("cpu")) == "compiled"
    built = fused._cpu_kernels()
    assert built is not None and not cpu_kernels._KERNELS.get("failed"), \
        "the CPU kernels could not be built on this machine"
    counting = _CountingKernels(built)
    monkeypatch.setitem(cpu_kernels._KERNELS, "aot_admm_cpu", counting)
    compiled = _update_and_grads(args, gy)
    # the last layer: only V^+ is used, Z^+ and W^+ get no gradient
    compiled_last = list(torch.autograd.grad(ADMMStateUpdate.apply(*args, 1e-6)[1], args, gy[1]))
    assert counting.calls == {"forward": 2, "backward": 2}
    monkeypatch.setenv(fused.KERNEL_ENV, "eager")
    assert fused.kernel(torch.device("cpu")) == "eager"
    eager = _update_and_grads(args, gy)
    eager_last = list(torch.autograd.grad(ADMMStateUpdate.apply(*args, 1e-6)[1], args, gy[1]))
    assert counting.calls == {"forward": 2, "backward": 2}
    for x, y in zip(compiled + compiled_last, eager + eager_last):
        # float32: the kernels sum each token's 24 squares (and the backward's row means) in another order;
        # coef and tau gradients sum over all 68 tokens
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-5)
    monkeypatch.setenv(fused.KERNEL_ENV, "fast")
    with pytest.raises(ValueError, match=r"^AOT_FUSED_KERNEL='fast': set it to 'compiled' or 'eager'$"):
        fused.kernel(torch.device("cpu"))


def test_the_cpu_kernels_give_the_same_sums_on_any_number_of_threads(monkeypatch):
    """The backward's sums over tokens (dtau, the coefficients') are kept per chunk of tokens, not per thread: on
    1 and on 3 threads (this machine may have fewer cores: the threads then share them) and on 272 tokens (5
    chunks of at least 64 on 3 threads, 1 on 1) the kernels agree with the eager path."""
    from aot_lib.models import fused

    monkeypatch.delenv(fused.KERNEL_ENV, raising=False)
    args = inputs(shape=(16, 17, 24), dtype=torch.float64, margin=1e-3, seed=5)
    gy = [torch.randn(16, 17, 24, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
          for _ in range(3)]
    threads = torch.get_num_threads()
    try:
        results = []
        for n in (1, 3):
            torch.set_num_threads(n)
            results.append(_update_and_grads(args, gy))
    finally:
        torch.set_num_threads(threads)
    monkeypatch.setenv(fused.KERNEL_ENV, "eager")
    eager = _update_and_grads(args, gy)
    for one, three, ref in zip(*results, eager):
        # float64: other orders of the same sums (272 tokens) differ by a few ulps
        torch.testing.assert_close(one, ref, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(three, ref, rtol=1e-12, atol=1e-12)


def test_coefficient_gradients_in_float32_at_a_training_size_match_float64(monkeypatch):
    """The CPU kernel gets dc from c dc = <dP, P> - a da - b db (it reads neither V nor W): at a w192 layer's
    size in float32 the three coefficient gradients stay within float32 summation error of a float64 reference."""
    from aot_lib.models import fused

    monkeypatch.delenv(fused.KERNEL_ENV, raising=False)
    g = torch.Generator().manual_seed(4)
    shape = (128, 17, 192)
    z, attn, v, w = (torch.randn(shape, generator=g, dtype=torch.float64) for _ in range(4))
    coef = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)  # a small c: the identity divides by it
    tau = torch.full((192,), 0.1, dtype=torch.float64)
    gy = [torch.randn(shape, generator=g, dtype=torch.float64) for _ in range(3)]
    a64 = [t.clone().requires_grad_() for t in (z, attn, v.relu(), w, coef, tau)]
    ref = torch.autograd.grad(reference(*a64, 1e-6), a64, gy)[4]
    a32 = [t.detach().float().requires_grad_() for t in a64]
    out = torch.autograd.grad(ADMMStateUpdate.apply(*a32, 1e-6), a32, [x.float() for x in gy])[4]
    assert fused.kernel(torch.device("cpu")) == "compiled"
    # each gradient sums 418k products of O(1) terms; every product and each token's sum of 192 is float32
    # (relative rounding about 1e-7 times a few), the sums over tokens float64; the identity adds the rounding of
    # a da + b db divided by c = 0.1: 1e-5 of the largest gradient leaves a margin of about ten
    torch.testing.assert_close(out.double(), ref, rtol=0, atol=1e-5 * ref.abs().max().item())


def test_a_kernel_that_cannot_be_built_falls_back_to_eager_with_one_warning(monkeypatch):
    from aot_lib import cpu_kernels
    from aot_lib.models import fused

    def no_compiler(*args):
        raise RuntimeError("no C++ compiler found\nmore detail")

    monkeypatch.delenv(fused.KERNEL_ENV, raising=False)
    monkeypatch.setattr(cpu_kernels, "_KERNELS", {})
    monkeypatch.setattr(cpu_kernels, "_build_extension", no_compiler)
    args = inputs(shape=(2, 5, 8), dtype=torch.float64, seed=4)
    gy = [torch.ones(2, 5, 8, dtype=torch.float64) for _ in range(3)]
    with pytest.warns(RuntimeWarning) as caught:
        got = _update_and_grads(args, gy)
    assert [str(w.message) for w in caught] == [
        "aot_lib.models.fused: the compiled CPU kernel could not be built (RuntimeError: no C++ compiler found); "
        "using the eager path (set AOT_FUSED_KERNEL=eager to skip the attempt)"]
    assert fused.kernel(torch.device("cpu")) == "eager"
    ref = reference(*args, 1e-6)
    for x, y in zip(got, list(ref) + list(torch.autograd.grad(ref, args, gy))):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)  # float64, another order of the same sums


def test_a_flop_count_runs_the_eager_path_and_leaves_the_kernels_on(monkeypatch):
    """count_flops runs the model under a dispatch mode, where Dynamo compiles nothing: the update then runs
    eagerly, and the compiled kernels stay on for the steps around it (they were once switched off by it)."""
    import warnings

    from aot_lib import count_flops
    from aot_lib.models import fused

    monkeypatch.delenv(fused.KERNEL_ENV, raising=False)
    model = create_model("aot_admm_tiny", embed_dim=32, depth=2, num_heads=2, num_classes=0)
    x = torch.randn(2, 3, 32, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the fallback's warning would fail here
        model.forward_features(x).sum().backward()
        flops = count_flops(model, img_size=32)
        model.forward_features(x).sum().backward()
    from aot_lib import cpu_kernels

    assert fused.kernel(torch.device("cpu")) == "compiled" and not cpu_kernels._KERNELS.get("failed")
    monkeypatch.setenv(fused.KERNEL_ENV, "eager")
    assert count_flops(model, img_size=32) == flops  # the same operations counted either way


# ----------------------------------------------------------------------------- the kernel's build, once per environment

def test_the_build_folder_is_keyed_by_what_changes_the_binary(monkeypatch, tmp_path):
    """Another torch build, Python, instruction set, flag or source gives another folder; the same ones, the same
    folder (two environments with one torch share a build; issue 54: they overwrote one folder in turns)."""
    from aot_lib import cpu_kernels

    source = tmp_path / "k.cpp"
    source.write_text("// v1\n")
    flags = ["-O3"]
    key = cpu_kernels.build_key(str(source), flags)
    assert key == cpu_kernels.build_key(str(source), list(flags))
    assert cpu_kernels.build_key(str(source), ["-O2"]) != key
    # an instruction set no machine reports (AVX2 itself is some machines' real one: an AVX2-only AMD EPYC)
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "NO_SUCH_ISA")
    assert cpu_kernels.build_key(str(source), flags) != key
    monkeypatch.undo()
    monkeypatch.setattr(torch, "__version__", "0.0.0+other")
    assert cpu_kernels.build_key(str(source), flags) != key
    monkeypatch.undo()
    monkeypatch.setattr(cpu_kernels.sys, "version", "3.99.0 (another build)")
    assert cpu_kernels.build_key(str(source), flags) != key
    monkeypatch.undo()
    source.write_text("// v2\n")
    assert cpu_kernels.build_key(str(source), flags) != key


def test_a_built_kernel_is_loaded_without_torch_s_builder(monkeypatch, tmp_path):
    """A new process finds its environment's build and imports it directly: torch's loader (which runs ninja and
    rebuilds when another environment's include paths wrote the folder) is not called, and nothing is printed."""
    import sys

    import torch.utils.cpp_extension as cpp_extension

    from aot_lib import cpu_kernels
    from aot_lib.models import fused

    monkeypatch.delenv(fused.KERNEL_ENV, raising=False)
    assert fused._cpu_kernels() is not None  # built (or loaded) in this environment's folder
    monkeypatch.setattr(cpu_kernels, "_KERNELS", {})
    sys.modules.pop("aot_admm_cpu", None)

    def no_builder(*a, **k):
        raise AssertionError("torch's builder was called although this environment's build exists")

    monkeypatch.setattr(cpp_extension, "load", no_builder)
    loaded = fused._cpu_kernels()
    assert loaded is not None and hasattr(loaded, "forward") and hasattr(loaded, "backward")
    folder = Path(loaded.__file__).parent
    assert folder.parent == cpu_kernels.extension_root() and folder.name.startswith("aot_admm_cpu-")


def test_torch_s_no_cuda_runtime_line_is_dropped_and_nothing_else(caplog):
    """On a CPU machine with a CUDA toolkit folder torch logs "No CUDA runtime is found, using CUDA_HOME=..." when
    its extension builder is imported (issue 54: in the terminal and on four book pages); only that record goes."""
    import logging

    import aot_lib.cpu_kernels  # noqa: F401  (its import installs the filter)

    log = logging.getLogger("torch.utils.cpp_extension")
    with caplog.at_level(logging.WARNING, logger="torch.utils.cpp_extension"):
        log.warning("No CUDA runtime is found, using CUDA_HOME='%s'", "/usr/local")
        log.warning("Error checking compiler version for %s", "c++")
    assert [r.getMessage() for r in caplog.records] == ["Error checking compiler version for c++"]


def test_a_build_cut_short_is_built_again_not_loaded(monkeypatch, tmp_path):
    """A library left half-written (a build killed while linking) fails to import: it is removed and built again,
    once, in the same call; nothing broken stays in the cache."""
    from aot_lib import cpu_kernels
    from aot_lib.models import fused

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    key = cpu_kernels.build_key(str(fused._SOURCE), ["-O3", "-fopenmp",
                                                      *cpu_kernels._ISA_FLAGS.get(torch.backends.cpu.get_cpu_capability(), []),
                                                      "-fopenmp"])
    folder = tmp_path / "aot_lib" / f"aot_admm_cpu-{key}"
    folder.mkdir(parents=True)
    (folder / "aot_admm_cpu.so").write_bytes(b"\x7fELF cut short")
    built = []

    def build(name, sources, build_directory, **kw):
        built.append(build_directory)
        return "the rebuilt module"

    import torch.utils.cpp_extension as cpp_extension

    monkeypatch.setattr(cpp_extension, "load", build)
    assert cpu_kernels._build_extension("aot_admm_cpu", str(fused._SOURCE)) == "the rebuilt module"
    assert built == [str(folder)] and not (folder / "aot_admm_cpu.so").exists()
