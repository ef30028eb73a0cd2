"""``aot``: the command line for long runs.

    aot pretrain --config configs/cpu/aot_admm_cifar10.yaml [--data-root DIR] [key=value ...]
    aot probe    --config ... [--checkpoint runs/NAME/last.ckpt]
    aot finetune --config ... finetune.checkpoint=runs/NAME/last.ckpt
    aot distill  --config ... distill.teacher=runs/TEACHER/last.ckpt
    aot models                       # registered models with parameter counts
    aot record runs/NAME results/cpu/NAME   # keep a run's numbers (not its checkpoint) in the repo
    aot show-config --config ...     # the resolved configuration

Any config key can be overridden as ``section.key=value`` (an unknown key is an error).
"""
from __future__ import annotations

import argparse
import json
import sys

from .config import ConfigError, dump_config, load_config

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="aot", description="AoT-ADMM: pretrain, probe, fine-tune, distill.")
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_ in [("pretrain", "LeJEPA pretraining"), ("probe", "linear and k-NN probes of a pretrained encoder"),
                        ("finetune", "full fine-tuning (or supervised training from scratch)"),
                        ("distill", "hard-label knowledge distillation"), ("show-config", "print the resolved config")]:
        s = sub.add_parser(name, help=help_)
        s.add_argument("--config", "-c", help="YAML config (see configs/)")
        s.add_argument("--data-root", help="where the data lives (default: $AOT_DATA)")
        s.add_argument("overrides", nargs="*", help="section.key=value")
        if name == "probe":
            s.add_argument("--checkpoint", help="default: <run dir>/last.ckpt")
    sub.add_parser("models", help="list registered models")
    rec = sub.add_parser("record", help="copy a run folder's results (no checkpoint) into results/")
    rec.add_argument("run_dir")
    rec.add_argument("dest")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "models":
        import aot_lib

        for name in aot_lib.list_models():
            m = aot_lib.create_model(name)
            print(f"{name:16s} {aot_lib.count_params(m) / 1e6:7.2f} M params  {aot_lib.count_flops(m) / 1e9:6.3f} GFLOPs")
        return 0
    if args.command == "record":
        from .train import record_run

        for p in record_run(args.run_dir, args.dest):
            print(p)
        return 0
    try:
        overrides = list(args.overrides)
        if args.data_root:
            overrides.append(f"data.root={args.data_root}")
        cfg = load_config(args.config, overrides)
    except ConfigError as e:
        print(f"aot: {e}", file=sys.stderr)
        return 2
    if args.command == "show-config":
        print(dump_config(cfg), end="")
        return 0
    from . import train
    from .data import DataError

    fn = {"pretrain": train.pretrain, "finetune": train.finetune, "distill": train.distill}.get(args.command)
    try:
        result = train.probe(cfg, args.checkpoint) if args.command == "probe" else fn(cfg)
    except (DataError, train.CheckpointError, train.NonFiniteLossError, ValueError) as e:
        print(f"aot {args.command}: {e}", file=sys.stderr)
        return 1
    print(json.dumps({k: v for k, v in result.items() if k != "hardware"}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
