"""Linear probe (the default 100 epochs, AdamW, batch 1024) and k-NN probe on 50,000 cached features.

    python benchmarks/bench_probe.py [--dim 384] [--n 50000]
Target on 2 CPU cores: the linear probe <= 30 s. Features are synthetic (class means + noise):
the benchmark measures time, not accuracy.
"""
import argparse
import time

import torch
from _common import write

from aot_lib.training.probe import knn_probe, linear_probe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--n-test", type=int, default=10_000)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=100)
    args = ap.parse_args()
    g = torch.Generator().manual_seed(0)
    means = torch.randn(args.classes, args.dim, generator=g)
    ytr = torch.randint(args.classes, (args.n,), generator=g)
    yte = torch.randint(args.classes, (args.n_test,), generator=g)
    xtr = means[ytr] + 3 * torch.randn(args.n, args.dim, generator=g)
    xte = means[yte] + 3 * torch.randn(args.n_test, args.dim, generator=g)
    t = time.perf_counter()
    lin = linear_probe(xtr, ytr, xte, yte, epochs=args.epochs)
    t_lin = time.perf_counter() - t
    t = time.perf_counter()
    knn = knn_probe(xtr, ytr, xte, yte)
    t_knn = time.perf_counter() - t
    write("probe", {"train_features": list(xtr.shape), "test_features": list(xte.shape), "epochs": args.epochs,
                    "linear_probe_s": t_lin, "knn_probe_s": t_knn, **lin, **knn,
                    "targets": {"linear probe <= 30 s": t_lin <= 30}})


if __name__ == "__main__":
    main()
