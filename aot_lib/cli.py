"""``aot``: the command line for long runs.

    aot pretrain --config configs/cpu/aot_admm_cifar10.yaml [--data-root DIR] [key=value ...]
    aot probe    --config ... [--checkpoint runs/NAME/last.ckpt]
    aot finetune --config ... finetune.checkpoint=runs/NAME/last.ckpt
    aot distill  --config ... distill.teacher=runs/TEACHER/last.ckpt
    aot convert SRC DEST --split train   # ImageFolder tree/zip -> litdata chunks (data.name=stream)
    aot models                       # registered models with parameter counts
    aot record runs/NAME results/cpu/NAME   # keep a run's numbers (not its checkpoint) in the repo
    aot show-config --config ...     # the resolved configuration
    aot keys [PATTERN]               # every config key with its default and what it may be
    aot verdicts [results/cpu] [--claim KEY] [--format table|markdown|json]   # every claim, judged by the plan
    aot pretrain --import mypkg.models --config ... model.name=my_family_tiny   # a model family of your own

``--import MODULE`` (repeatable; before or after the command) imports a module that registers models
(``aot_lib.register_sizes``) before the config is read; it is added to the config's ``model.imports``, so the run's
config.yaml records it and ``aot probe``, ``finetune``, ``distill``, ``record``, a resumed run and
``aot_lib.from_pretrained`` import it again.

A command that trains (``pretrain``, ``finetune``, ``distill``, ``baseline``) needs ``--config``: the
defaults alone are the paper's 800-epoch run, which no one should start by leaving out an argument. ``SIGTERM``
stops a run as Ctrl-C does: a checkpoint, status "stopped at step N (SIGTERM)", resumed by the same command.

Any config key can be overridden as ``section.key=value`` (an unknown key is an error). Every error is
one line on stderr (exit 2 for a bad config, 1 otherwise, 130 on Ctrl-C); ``--debug`` shows the traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="aot", description="AoT-ADMM: pretrain, probe, fine-tune, distill.")
    p.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="import MODULE first (repeatable): a module that registers your own models; recorded in the "
                        "config as model.imports")
    sub = p.add_subparsers(dest="command", required=True)
    for name, help_ in [("pretrain", "LeJEPA pretraining"), ("probe", "linear and k-NN probes of a pretrained encoder"),
                        ("finetune", "full fine-tuning (or supervised training from scratch)"),
                        ("distill", "hard-label knowledge distillation"),
                        ("baseline", "the probes' floor: the config's encoder untrained, or raw pixels"),
                        ("show-config", "print the resolved config")]:
        s = sub.add_parser(name, help=help_)
        if name == "baseline":
            s.add_argument("kind", choices=["init", "pixels"],
                           help="init: the encoder at its initialisation seed; pixels: the normalised pixels")
        s.add_argument("--config", "-c", help="YAML config (see configs/; required but for show-config)")
        s.add_argument("--import", dest="sub_imports", action="append", default=[], metavar="MODULE",
                       help="import MODULE first (repeatable), as aot --import MODULE does")
        s.add_argument("--data-root", help="where the data lives (default: $AOT_DATA)")
        s.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show the full traceback of an error")
        s.add_argument("overrides", nargs="*", help="section.key=value")
        if name == "probe":
            s.add_argument("--checkpoint", help="default: <run dir>/last.ckpt")
    conv = sub.add_parser("convert", help="convert an ImageFolder tree or zip into litdata chunks for streaming",
                          description="Convert one split of an ImageFolder tree (<root>/<split>/<class>/<image>) "
                                      "or zip into litdata chunks of the original JPEG/PNG bytes, for data.name=stream.")
    conv.add_argument("src", help="ImageFolder root (holding <split>/) or a zip of one")
    conv.add_argument("dest", help="converted root: the split goes to DEST/<split> (new or empty, unless --overwrite "
                                   "replaces an earlier conversion)")
    conv.add_argument("--split", default="train", help="split folder to convert (default: train; e.g. val)")
    conv.add_argument("--workers", type=int, default=None,
                      help="processes reading and checking images (default: all cores)")
    conv.add_argument("--chunk-bytes", default="64MB", help="litdata chunk size (default: 64MB)")
    conv.add_argument("--max-side", type=int, default=None,
                      help="re-encode images whose longer side is larger (default: keep every file as it is)")
    conv.add_argument("--overwrite", action="store_true", help="replace an earlier conversion at DEST/<split>")
    conv.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show the full traceback of an error")
    sub.add_parser("models", help="list registered models")
    ver = sub.add_parser("verdicts", help="every claim's difference, interval, seeds, rule and verdict from the records",
                         description="Every claim of the book judged from a results folder by its analysis plan "
                                     "(plan.yaml there): the same rows as chapter 1's results table.")
    ver.add_argument("results", nargs="?", default="results/cpu", help="results folder with plan.yaml (default "
                                                                       "results/cpu)")
    ver.add_argument("--plan", metavar="FILE", default=None,
                     help="judge by this analysis plan instead of RESULTS/plan.yaml (a copy with your seeds or claims)")
    ver.add_argument("--claim", action="append", default=[], metavar="KEY", help="only this claim (repeatable)")
    ver.add_argument("--format", choices=["table", "markdown", "json"], default="table")
    ver.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show the full traceback of an error")
    keys = sub.add_parser("keys", help="every config key with its default and what it may be")
    keys.add_argument("pattern", nargs="?", default="", help="only the keys that contain PATTERN (e.g. optim)")
    rec = sub.add_parser("record", help="copy a finished run folder's results (no checkpoint) into results/")
    rec.add_argument("run_dir")
    rec.add_argument("dest")
    rec.add_argument("--allow-dirty", action="store_true", help="record a run made from uncommitted code or without git")
    return p


#: The commands that train: each needs a config the user named (``probe`` reads a run's checkpoint, whose config
#: says what it is, and fails at once when there is none).
TRAINING_COMMANDS = ("pretrain", "finetune", "distill", "baseline")


def shipped_configs() -> list[str]:
    """The CPU-scale configs of this checkout (``configs/cpu/*.yaml``, seed variants left out), as paths a user
    can type from the repository's root; empty for an installed package without its ``configs/``."""
    folder = Path(__file__).resolve().parent.parent / "configs" / "cpu"
    return sorted(f"configs/cpu/{p.name}" for p in folder.glob("*.yaml") if "_seed" not in p.stem)


def _no_config(command: str) -> str:
    shipped = shipped_configs()
    listed = f"shipped: {', '.join(shipped)} (more under configs/)" if shipped else "see the repository's configs/"
    return (f"name a config with -c FILE; nothing was started (without one the defaults are the paper's 800-epoch "
            f"run); {listed}; configs/cpu/smoke.yaml checks the set-up in a minute")


def _run(args) -> int:
    args.imports = [*args.imports, *getattr(args, "sub_imports", [])]
    if args.command in TRAINING_COMMANDS and not args.config:
        from .training.config import ConfigError

        raise ConfigError(_no_config(args.command))
    if args.imports:
        from .models.registry import import_model_modules

        import_model_modules(args.imports)
    if args.command == "models":
        import aot_lib

        for name in aot_lib.list_models():
            m = aot_lib.create_model(name)
            print(f"{name:16s} {aot_lib.count_params(m) / 1e6:7.2f} M params  {aot_lib.count_flops(m) / 1e9:6.3f} GFLOPs")
        return 0
    if args.command == "verdicts":
        print(format_verdicts(args.results, args.claim, args.format, args.plan))
        return 0
    if args.command == "keys":
        from .training.config import describe_keys

        lines = describe_keys(args.pattern)
        if not lines:
            from .training.config import ConfigError

            raise ConfigError(f"no config key contains {args.pattern!r}; `aot keys` lists them all")
        print("\n".join(lines))
        return 0
    if args.command == "convert":
        from .data.convert import convert_imagefolder

        meta = convert_imagefolder(args.src, args.dest, split=args.split, num_workers=args.workers,
                                   chunk_bytes=args.chunk_bytes, max_side=args.max_side, overwrite=args.overwrite)
        print(json.dumps({k: meta[k] for k in ("split", "n_images", "reencoded", "image_bytes", "seconds")}
                         | {"classes": len(meta["classes"]), "path": meta["path"]}, indent=2))
        return 0
    if args.command == "record":
        from .training.recording import record_run

        for p in record_run(args.run_dir, args.dest, allow_dirty=args.allow_dirty):
            print(p)
        return 0
    from .training.config import dump_config, load_config, refuse_repeated

    refuse_repeated(args.overrides)  # `optim.lr=1e-3 ... optim.lr=4e-3`: the user said two things
    overrides = list(args.overrides)
    if args.imports:  # after the config's own: model.imports=[...] lists both
        base = load_config(args.config, overrides)["model"]["imports"]
        overrides.append(f"model.imports={json.dumps(list(dict.fromkeys([*base, *args.imports])))}")
    if args.data_root:
        overrides.append(f"data.root={args.data_root}")
    cfg = load_config(args.config, overrides)
    if args.command == "show-config":
        print(dump_config(cfg), end="")
        return 0
    if args.command == "baseline":
        from .training.baselines import baseline

        result = baseline(cfg, args.kind)
        print(json.dumps({k: v for k, v in result.items() if k not in ("hardware", "data")}, indent=2, default=str))
        return 0
    from . import train

    fn = {"pretrain": train.pretrain, "finetune": train.finetune, "distill": train.distill}.get(args.command)
    result = train.probe(cfg, args.checkpoint) if args.command == "probe" else fn(cfg)
    print(json.dumps({k: v for k, v in result.items() if k != "hardware"}, indent=2, default=str))
    return 0


#: The columns ``aot verdicts`` prints, in order, with their headers.
VERDICT_COLUMNS = (("key", "claim"), ("ours", "A - B"), ("interval", "95 % CI"), ("seeds", "seeds"),
                   ("rule", "rule"), ("margin", "margin"), ("verdict", "verdict"), ("ahead", "ahead"),
                   ("one_sided", "as non-inferiority"), ("paper", "paper"))


def format_verdicts(results: str, claims: list[str], fmt: str, plan_file: str | None = None) -> str:
    """``aot verdicts``: :func:`aot_lib.evidence.verdicts` of ``results`` (judged by ``plan_file``, default
    ``results/plan.yaml``), as a text table, markdown or JSON."""
    from .evidence import CLAIMS, CLAIMS_30MIN, plan_claims, verdicts

    # a key that names no claim is refused before any record is read (a damaged one elsewhere must not hide it)
    known = [c.key for c in (*CLAIMS, *CLAIMS_30MIN, *plan_claims(results, plan_file))]
    unknown = [k for k in claims if k not in known]
    if unknown:
        raise ValueError(f"no claim {unknown[0]!r} in {results}; the claims: {', '.join(known)}")
    rows = verdicts(results, plan_file)
    if claims:
        rows = [r for r in rows if r["key"] in claims]
    if fmt == "json":
        return json.dumps(rows, indent=2)

    def cell(row, key):
        v = row[key]
        if v is None:
            return "-"
        if key == "paper":
            return f"{v:+.2f}"
        if key == "margin":
            return f"±{v:g}"
        return str(v)

    table = [[head for _, head in VERDICT_COLUMNS]] + [[cell(r, k) for k, _ in VERDICT_COLUMNS] for r in rows]
    if fmt == "markdown":
        lines = ["| " + " | ".join(row) + " |" for row in table]
        return "\n".join([lines[0], "|" + "---|" * len(VERDICT_COLUMNS), *lines[1:]])
    widths = [max(len(row[i]) for row in table) for i in range(len(VERDICT_COLUMNS))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in table)


def _first_failed_write(e: BaseException) -> BaseException | None:
    """The first :class:`aot_lib.files.WriteError` behind ``e``: when a disk fills, the writes that follow the
    first failed one (logs flushed, run.json's status) fail too, and the last of them is what reaches here."""
    from .files import WriteError

    first, seen = None, set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, WriteError):
            first = e
        e = e.__cause__ or e.__context__
    return first


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    # section.key=value overrides may come after an option too (`aot baseline init -c c.yaml run.seed=1`): argparse
    # fills a positional list once, so the ones it leaves over join the overrides; anything else is refused as before
    args, extra = parser.parse_known_args(argv)
    stray = [a for a in extra if a.startswith("-") or "=" not in a]
    if stray or (extra and not hasattr(args, "overrides")):
        parser.error(f"unrecognized arguments: {' '.join(stray or extra)}")
    if extra:
        args.overrides = [*args.overrides, *extra]
    try:
        return _run(args)
    except KeyboardInterrupt as e:
        from .training.runs import RunStopped

        done = ("nothing was written to the destination" if args.command == "convert" else
                "a checkpoint was saved where possible; run the same command to resume")
        said = "stopped by SIGTERM" if isinstance(e, RunStopped) else "interrupted"
        print(f"aot {args.command}: {said} ({done})", file=sys.stderr)
        return 143 if isinstance(e, RunStopped) else 130
    except BrokenPipeError:  # `aot verdicts | head`: the reader stopped reading, which is not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush does not fail again
        return 141
    except Exception as e:  # noqa: BLE001 - one line for every error; the traceback with --debug
        if args.debug:
            raise
        from .training.config import ConfigError

        print(f"aot {args.command}: {one_line(e, args.command)}", file=sys.stderr)
        return 2 if isinstance(e, ConfigError) else 1


#: The errors that are refusals (the message names the fix), not bugs: one line, no traceback.
REFUSALS = ("ConfigError", "DataError", "CheckpointError", "NonFiniteLossError", "RunLockedError", "FileNotFoundError",
            "FileExistsError", "ValueError", "WriteError", "ImportError")


def one_line(e: BaseException, command: str = "") -> str:
    """An error as the one line ``aot`` and the scripts print: a refusal's own message (:data:`REFUSALS`), anything
    else marked as an internal error with how to get its traceback."""
    e = _first_failed_write(e) or e
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    msg = msg.removeprefix(f"{command}: ") if command else msg  # the converter's errors name it too
    kind = type(e).__name__
    if kind in REFUSALS:
        return msg
    return f"internal error ({kind}): {msg} (rerun with --debug for the traceback, and report it)"


def run_script(main, prog: str) -> int:
    """A script's ``main()`` run as ``aot`` runs a command: a refusal is one line on stderr naming the script (exit
    1), never a traceback; ``--debug`` anywhere in the arguments (taken out before ``main`` reads them) shows it."""
    if "--debug" in sys.argv:
        sys.argv.remove("--debug")
        return main() or 0
    try:
        return main() or 0
    except Exception as e:  # noqa: BLE001 - one line for every error; the traceback with --debug
        print(f"{prog}: {one_line(e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
