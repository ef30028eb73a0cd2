"""Two hand-written kernels against the plain operations they replace: speed and agreement.

    python benchmarks/bench_kernels.py [--quick] [--device cuda] [--repeats 7] [--out results/benchmarks/kernels.json]

(a) The fused AoT-ADMM state update (:mod:`aot_lib.models.fused`, ``fused=True``) against ``fused=False``
    (:meth:`ADMMLayer.step`'s plain operations): the whole encoder, forward + backward on images.
(b) SIGReg's empirical characteristic function by the re-anchored angle-addition recurrence
    (:func:`aot_lib.objectives.sigreg.empirical_cf`) against cos/sin evaluated at every node through autograd
    (the ``(..., N, K, T)`` tensor the recurrence never stores): SIGReg forward + backward on embeddings
    of a LeJEPA step's shape, for several node counts.

Speed: median (and spread) of ``--repeats`` timed forward + backward calls after warm-up, the device
synchronised around each call; peak device memory on CUDA. Agreement, in the working dtype (float32):
the largest absolute difference between the two variants' outputs and gradients, and each variant's
against a float64 reference computed the plain way (which of the two is closer to the exact value),
with the largest absolute reference value for scale.
"""
import argparse
import contextlib
import copy
from pathlib import Path

import torch
from _common import ROOT, timeit, write

from aot_lib import SIGReg, create_model
from aot_lib.objectives import sigreg
from aot_lib.objectives.sigreg import quadrature, sample_directions

FULL = {"encoder": {"embed_dim": 384, "depth": 12, "num_heads": 6}, "images": 64,
        "views": 8, "batch": 64, "embed": 128, "slices": 1024, "nodes": (17, 65, 257)}
QUICK = {"encoder": {"embed_dim": 32, "depth": 2, "num_heads": 2}, "images": 4,
         "views": 2, "batch": 16, "embed": 8, "slices": 16, "nodes": (17, 65)}


def synchronized(fn, device: str):
    """``fn`` followed by a device synchronisation, so that a timer measures the work and not its launch."""
    def call():
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
    return call


def measure(fn, device: str, repeats: int, warmup: int) -> dict:
    """``_common.timeit`` of ``fn`` (synchronised), plus the peak CUDA memory of one call."""
    out = timeit(synchronized(fn, device), repeats=repeats, warmup=warmup)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        synchronized(fn, device)()
        out["cuda_peak_memory_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return out


def max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a.double() - b.double()).abs().max().item()


def agreement(outputs: dict[str, list[torch.Tensor]], reference: list[torch.Tensor], first: str, second: str) -> dict:
    """Largest absolute differences, tensor by tensor then the largest over them: the two variants
    between themselves and each against the float64 reference."""
    def worst(xs, ys):
        return max(max_abs(x, y) for x, y in zip(xs, ys))
    return {f"{first}_vs_{second}": worst(outputs[first], outputs[second]),
            f"{first}_vs_float64": worst(outputs[first], reference),
            f"{second}_vs_float64": worst(outputs[second], reference),
            "float64_max_abs": max(r.abs().max().item() for r in reference)}


# ----------------------------------------------------------------------------- (a) fused ADMM state update

def encoder_pass(model, images: torch.Tensor, weights: torch.Tensor) -> list[torch.Tensor]:
    """Features and every parameter's gradient of ``<features, weights>`` (a loss whose gradient is not uniform)."""
    model.zero_grad(set_to_none=True)
    feats = model.forward_features(images)
    (feats * weights).sum().backward()
    return [feats.detach(), *(p.grad for p in model.parameters())]


def bench_fused(size: dict, device: str, repeats: int, warmup: int) -> dict:
    torch.manual_seed(0)
    models = {"fused": create_model("aot_admm_tiny", num_classes=0, **size["encoder"]).to(device)}
    models["plain"] = copy.deepcopy(models["fused"])
    for blk in models["plain"].blocks:
        blk.fused = False  # the same parameters; each layer runs ADMMLayer.step's plain operations
    images = torch.randn(size["images"], 3, 32, 32, device=device)
    weights = torch.randn_like(models["fused"].forward_features(images).detach())
    outputs = {k: encoder_pass(m, images, weights) for k, m in models.items()}
    reference = encoder_pass(copy.deepcopy(models["plain"]).double(), images.double(), weights.double())
    timing = {k: measure(lambda m=m: encoder_pass(m, images, weights), device, repeats, warmup)
              for k, m in models.items()}
    return {"encoder": size["encoder"], "images": size["images"], "image_size": 32, "timing": timing,
            "speedup_plain_over_fused": timing["plain"]["median_s"] / timing["fused"]["median_s"],
            "agreement": agreement(outputs, reference, "fused", "plain")}


# ----------------------------------------------------------------------------- (b) SIGReg's recurrence

def direct_empirical_cf(x: torch.Tensor, t_max: float = 3.0, n_points: int = 17):
    """:func:`aot_lib.objectives.sigreg.empirical_cf`'s means with cos/sin at every node, through autograd."""
    t, _ = quadrature(t_max, n_points, device=x.device, dtype=x.dtype)
    xt = x.unsqueeze(-1) * t  # (..., N, K, T)
    return torch.cos(xt).mean(-3), torch.sin(xt).mean(-3)


@contextlib.contextmanager
def characteristic_function(kind: str):
    """``epps_pulley`` (hence SIGReg) with the recurrence (as shipped) or with ``direct_empirical_cf``."""
    shipped = sigreg.empirical_cf
    sigreg.empirical_cf = {"recurrence": shipped, "direct": direct_empirical_cf}[kind]
    try:
        yield
    finally:
        sigreg.empirical_cf = shipped


def sigreg_pass(loss: SIGReg, y: torch.Tensor, directions: torch.Tensor, kind: str) -> list[torch.Tensor]:
    """SIGReg's value and its gradient in the embeddings."""
    y = y.detach().requires_grad_(True)
    with characteristic_function(kind):
        value = loss(y, directions)
        value.backward()
    return [value.detach(), y.grad]


def bench_sigreg(size: dict, device: str, repeats: int, warmup: int) -> dict:
    g = torch.Generator().manual_seed(0)
    y = torch.randn(size["views"], size["batch"], size["embed"], generator=g).to(device)
    directions = sample_directions(size["embed"], size["slices"], seed=0, device=device)
    runs = []
    for nodes in size["nodes"]:
        loss = SIGReg(num_slices=size["slices"], n_points=nodes)
        outputs = {k: sigreg_pass(loss, y, directions, k) for k in ("recurrence", "direct")}
        reference = sigreg_pass(loss, y.double(), directions.double(), "direct")
        timing = {k: measure(lambda k=k, loss=loss: sigreg_pass(loss, y, directions, k), device, repeats, warmup)
                  for k in ("recurrence", "direct")}
        runs.append({"nodes": nodes, "timing": timing,
                     "speedup_direct_over_recurrence": timing["direct"]["median_s"] / timing["recurrence"]["median_s"],
                     "agreement": agreement(outputs, reference, "recurrence", "direct")})
        print(f"[sigreg {nodes} nodes] recurrence {timing['recurrence']['median_s'] * 1e3:.2f} ms, direct "
              f"{timing['direct']['median_s'] * 1e3:.2f} ms, max |difference| "
              f"{runs[-1]['agreement']['recurrence_vs_direct']:.2e}", flush=True)
    return {"embeddings": [size["views"], size["batch"], size["embed"]], "slices": size["slices"],
            "anchor_every": sigreg.ANCHOR_EVERY, "runs": runs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes and 2 repeats: checks that the script runs")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--nodes", default=None, help="comma-separated SIGReg node counts (default 17,65,257)")
    ap.add_argument("--out", type=Path, default=None,
                    help=f"output JSON (default {ROOT / 'results/benchmarks/kernels.json'}, or $AOT_BENCH_DIR/kernels.json)")
    args = ap.parse_args()
    size = dict(QUICK if args.quick else FULL)
    repeats, warmup = (2, 1) if args.quick else (args.repeats, args.warmup)
    if args.nodes:
        size["nodes"] = tuple(int(n) for n in args.nodes.split(","))
    if repeats < 1 or warmup < 0 or min(size["nodes"]) < 2:
        ap.error(f"need repeats >= 1, warmup >= 0 and node counts >= 2, got {repeats}, {warmup}, {size['nodes']}")
    fused = bench_fused(size, args.device, repeats, warmup)
    print(f"[fused] fused {fused['timing']['fused']['median_s'] * 1e3:.2f} ms, plain "
          f"{fused['timing']['plain']['median_s'] * 1e3:.2f} ms, max |difference| "
          f"{fused['agreement']['fused_vs_plain']:.2e}", flush=True)
    write("kernels", {"device": args.device, "quick": args.quick, "repeats": repeats, "warmup": warmup,
                      "dtype": "float32", "fused_admm_state_update": fused,
                      "sigreg_characteristic_function": bench_sigreg(size, args.device, repeats, warmup)},
          out=args.out)


if __name__ == "__main__":
    main()
