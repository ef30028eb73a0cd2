"""Helpers the book's notebooks share: the build profile, how a page shows what it computed,
real images when no data set is configured, recorded runs, and the checks of the built HTML.

``AOT_BOOK_PROFILE=fast`` (what CI uses) shrinks Monte Carlo sizes and grids so the whole book
builds in minutes; the default ``full`` profile is what a reader on a laptop runs.

Nothing here prints a path of the machine: a page names the setting to change (``AOT_DATA``),
never where it looked, and :func:`check_built_book` fails a build whose HTML shows one.

``python -m aot_lib.book check-html book/_build/html`` runs those checks (``.ci/run`` does).
"""
from __future__ import annotations

import html
import os
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, TypeVar

from ..runtime import git_commit, hardware_summary
from .tables import Col, Table, format_value, key_value_table

__all__ = ["PROFILE", "pick", "run_record", "run_record_box", "Dropdown", "Admonition",
           "equation", "equations", "data_label", "data_missing_note", "example_images",
           "sample_photos", "PHOTO_CREDITS", "load_recorded_run", "superseded", "run_status", "run_notices",
           "benchmark_tables", "check_html", "check_built_book"]

T = TypeVar("T")

PROFILE = os.environ.get("AOT_BOOK_PROFILE", "full").strip().lower() or "full"
if PROFILE not in {"fast", "full"}:
    raise ValueError(f"AOT_BOOK_PROFILE must be 'fast' or 'full', got {PROFILE!r}")


def pick(fast: T, full: T) -> T:
    """The value for the current profile."""
    return fast if PROFILE == "fast" else full


def run_record(seed: int | None = None) -> dict:
    """Where and how a notebook's numbers were computed (shown by :func:`run_record_box`)."""
    commit = git_commit()
    short = commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")
    return {"profile": PROFILE, "commit": short, "seed": seed, **hardware_summary()}


# ----------------------------------------------------------------------------- page furniture

class Dropdown:
    """A collapsed box (HTML ``<details>``): a sphinx-design dropdown in the book, a plain
    disclosure triangle in JupyterLab. ``body`` items are objects with ``_repr_html_``
    (tables) or plain strings (escaped, one paragraph each)."""

    def __init__(self, title: str, *body: Any, open: bool = False):
        self.title, self.body, self.open = title, body, open

    def _repr_html_(self) -> str:
        parts = []
        for item in self.body:
            if hasattr(item, "_repr_html_"):
                parts.append(item._repr_html_())
            else:
                parts.append(f"<p>{html.escape(str(item))}</p>")
        return (
            f'<details class="sd-sphinx-override sd-dropdown sd-card sd-mb-3 aot-dropdown"'
            f'{" open" if self.open else ""}>'
            f'<summary class="sd-summary-title sd-card-header">'
            f'<span class="sd-summary-text">{html.escape(self.title)}</span></summary>'
            f'<div class="sd-summary-content sd-card-body">{"".join(parts)}</div></details>'
        )

    def __repr__(self) -> str:
        return "\n".join([self.title] + [repr(b) if hasattr(b, "_repr_html_") else str(b)
                                         for b in self.body])


class Admonition:
    """A note or warning box: the theme's admonition style in the book."""

    def __init__(self, title: str, text: str, kind: str = "warning"):
        self.title, self.text, self.kind = title, text, kind

    def _repr_html_(self) -> str:
        return (f'<div class="admonition {html.escape(self.kind)}">'
                f'<p class="admonition-title">{html.escape(self.title)}</p>'
                f"<p>{html.escape(self.text)}</p></div>")

    def __repr__(self) -> str:
        return f"{self.title.upper()}: {self.text}"


def run_record_box(seed: int | None = None, **extra: Any) -> Dropdown:
    """The record every chapter shows under its imports, collapsed: profile, commit, seed,
    hardware, and whether a data folder was configured (never its path)."""
    r = run_record(seed)
    rows = [
        ("profile (AOT_BOOK_PROFILE)", r["profile"]),
        ("commit", r["commit"]),
        ("seed", "none (no randomness)" if seed is None else seed),
        ("PyTorch / Python", f"{r['torch']} / {r['python']}"),
        ("machine", f"{r['machine']}, {r['cpu_count']} CPU cores, "
                    f"{r['torch_threads']} PyTorch threads"),
    ]
    if r.get("gpus"):
        rows.append(("GPUs", ", ".join(r["gpus"])))
    rows.append(("data (AOT_DATA)", "set" if os.environ.get("AOT_DATA") else "not set"))
    rows += list(extra.items())
    return Dropdown("How this page was computed", key_value_table(rows))


def equation(lhs: str, rhs: Any, rel: str = "=") -> Any:
    """``lhs rel rhs`` as typeset math (IPython ``Math``); ``rhs`` a SymPy expression or LaTeX."""
    from IPython.display import Math

    if not isinstance(rhs, str):
        import sympy as sp

        rhs = sp.latex(rhs)
    return Math(f"{lhs} {rel} {rhs}")


def equations(*pairs: tuple[str, Any], rel: str = "=") -> Any:
    """Several ``(lhs, rhs)`` lines as one aligned display (``rhs`` SymPy or LaTeX)."""
    from IPython.display import Math

    lines = []
    for lhs, rhs in pairs:
        if not isinstance(rhs, str):
            import sympy as sp

            rhs = sp.latex(rhs)
        lines.append(f"{lhs} &{rel} {rhs}")
    return Math(r"\begin{aligned}" + r" \\ ".join(lines) + r"\end{aligned}")


def data_label(provenance: Mapping | None, fallback: str) -> str:
    """A data set's provenance label for a page, or ``fallback`` when there is none or it
    would show a path (the label of an unrecognised folder names it)."""
    label = (provenance or {}).get("label")
    if not label or re.search(r"\S[/\\]\S|(^|\s)[/~\\]\S", label):
        return fallback
    return label


def data_missing_note(*what: str) -> str:
    """What a page says when data sets are not configured: the setting, not the paths tried."""
    names = " and ".join(what) or "The data"
    verb, them = ("are", "them") if len(what) > 1 else ("is", "it")
    return (f"{names} {verb} not configured on this machine, so this section uses the sample "
            "photographs that ship with scikit-image. To use "
            f"{them}, set AOT_DATA to a folder holding {them} (see the README) and build "
            "again; data.download=true in a training config fetches CIFAR through "
            "torchvision once.")


# ----------------------------------------------------------------------------- real photographs

#: The photographs bundled with scikit-image that :func:`sample_photos` uses, with their terms.
PHOTO_CREDITS = {
    "astronaut": "Eileen Collins, NASA (public domain)",
    "chelsea": "Chelsea the cat, Stéfan van der Walt (CC0)",
    "coffee": "a cup of coffee, Rachel Michetti (CC0)",
    "rocket": "a Falcon 9 launch, SpaceX (public domain)",
}


def sample_photos(size: int, names: Iterable[str] = tuple(PHOTO_CREDITS)):
    """Real photographs as a ``(N, 3, size, size)`` uint8 tensor: centre-cropped to a square
    and resized with antialiasing (``size=32`` is CIFAR-sized, ``160`` the ImageNet setting's
    stored size). They ship with scikit-image (a ``[book]`` dependency), so a page that wants
    real images never needs a download."""
    import torch
    from skimage import data as skdata

    out = []
    for name in names:
        img = torch.as_tensor(getattr(skdata, name)()).permute(2, 0, 1)[:3]
        h, w = img.shape[-2:]
        s = min(h, w)
        top, left = (h - s) // 2, (w - s) // 2
        img = img[:, top:top + s, left:left + s].float().unsqueeze(0)
        img = torch.nn.functional.interpolate(img, size=(size, size), mode="bicubic",
                                              antialias=True, align_corners=False)
        out.append(img.round().clamp(0, 255).to(torch.uint8)[0])
    return torch.stack(out)


def example_images(setting: str, n: int = 4):
    """``n`` images for showing the views of a setting, and where they come from.

    The first image of each of ``n`` classes: ``"cifar"`` from CIFAR-10's test split under
    ``AOT_DATA`` (or a torchvision download there), ``"imagenet"`` from the Imagenette
    subset's validation split (``imagenette160-subset.zip`` under ``AOT_DATA``). When the data set is
    not configured, the photographs of :func:`sample_photos` at the setting's stored size
    (32 or 160 px). Returns ``(images, source, missing)``: a uint8 tensor, a label for
    captions (never a path), and the data set's name when it was missing (else ``None``).
    """
    from ..data.datasets import DataError, load_split

    if setting not in ("cifar", "imagenet"):
        raise ValueError(f"setting must be 'cifar' or 'imagenet', got {setting!r}")
    cifar = setting == "cifar"
    try:
        if cifar:
            data = load_split("cifar10", "test")
        else:
            data = load_split("imagefolder", "test", root="imagenette160-subset.zip")
        first = [int((data.labels == k).nonzero()[0]) for k in range(n)]  # one per class
        images = data.images[first]
    except DataError:
        size = 32 if cifar else 160
        return (sample_photos(size, list(PHOTO_CREDITS)[:n]),
                f"sample photographs (scikit-image), resized to {size} px",
                "CIFAR-10" if cifar else "the Imagenette subset")
    what = "CIFAR-10, test images" if cifar else "Imagenette, validation images"
    label = data_label(data.provenance, what)
    return images, (label if label == what else f"{label}, "
                    f"{'test' if cifar else 'validation'} images"), None


# ----------------------------------------------------------------------------- recorded runs

def superseded(run: Mapping) -> str:
    """The notice a recorded run carries when the code changed under it (``superseded`` in
    its run.json); empty otherwise."""
    return (run.get("run") or {}).get("superseded") or ""


RESULT_FILES = {"pretrain": "probe.json", "finetune": "finetune.json", "distill": "distill.json"}


def is_recorded(root: Path, name: str, config: str) -> bool:
    """Whether ``results/cpu/<name>`` holds the result of ``configs/cpu/<config>``'s stage."""
    from ..training.config import config_stage

    stage = config_stage(root / "configs" / "cpu" / config)
    return (root / "results" / "cpu" / name / RESULT_FILES[stage]).exists()


def load_recorded_run(root: Path, name: str, config: str, smoke_steps: int,
                      start_from: Path | Mapping[str, Path] | None = None) -> dict:
    """``results/cpu/<name>`` if recorded; otherwise a smoke-sized run of ``configs/cpu/<config>`` trained
    now (which needs the data: :class:`aot_lib.data.datasets.DataError` otherwise).

    The config's stage (:func:`aot_lib.training.config.config_stage`) says what a run is: pretraining (then probed),
    fine-tuning or distillation. A smoke fine-tuning or distillation starts from ``start_from`` (the
    checkpoint or recorded ``encoder.pt`` of the run it builds on: ``finetune.checkpoint`` or
    ``distill.teacher``; or a mapping of config keys to such files, e.g. a distillation's
    ``{"distill.teacher": ..., "distill.student_init": ...}``) and trains one epoch of 2,000 images.

    Returns ``source`` (a sentence), ``dir``, ``recorded`` (bool), ``stage``, the ``curve`` (``step``,
    ``loss`` and, for pretraining, ``pred`` and ``sigreg``), ``run``, ``metrics`` (empty but for
    pretraining) and ``result`` (the
    stage's result file: the probe's, the fine-tuning's or the distillation's; for pretraining also as
    ``probe``) and ``config_text``.
    """
    import csv
    import json

    from ..training.config import config_stage, load_config

    path = root / "configs" / "cpu" / config
    stage = config_stage(path)
    rec = root / "results" / "cpu" / name
    if is_recorded(root, name, config):
        run: dict = {"source": f"recorded in results/cpu/{name}", "dir": rec, "recorded": True}
    else:
        from .. import train

        out = root / "runs" / "book"
        overrides = [f"run.out_dir={out}", "run.progress=false", "data.train_subset=2000", "data.test_subset=1000"]
        if stage == "pretrain":
            overrides += [f"optim.max_steps={smoke_steps}", "optim.batch_size=64", "probe.epochs=30"]
        else:
            if start_from is None:
                raise ValueError(f"{config} is a {stage} config: give start_from, the checkpoint it starts from")
            if not isinstance(start_from, Mapping):
                start_from = {f"{stage}.{'checkpoint' if stage == 'finetune' else 'teacher'}": start_from}
            overrides += [f"{k}={v}" for k, v in start_from.items()]
            overrides += [f"{stage}.epochs=1", f"{stage}.warmup_epochs=0", f"{stage}.batch_size=64"]
        cfg = load_config(path, overrides)
        if stage == "pretrain":
            train.pretrain(cfg)
            train.probe(cfg)
        else:
            getattr(train, stage)(cfg)
        what = (f"{smoke_steps} steps" if stage == "pretrain" else "one epoch") + " on 2,000 images"
        run = {"source": f"trained now at smoke scale ({what}): no recorded run",
               "dir": out / cfg["run"]["name"], "recorded": False}
    run["stage"] = stage
    with open(run["dir"] / "metrics.csv") as f:
        rows = [r for r in csv.DictReader(f) if r.get("loss")]  # not the monitors' own rows
    # runs recorded before the LeJEPAOutput rename logged "pred"/"sigreg"; newer ones "*_loss"
    keys = ("step", "loss", "pred", "sigreg") if stage == "pretrain" else ("step", "loss")
    run["curve"] = {k: [float(r[k] if k in r else r[f"{k}_loss"]) for r in rows] for k in keys}
    run["run"] = json.loads((run["dir"] / "run.json").read_text())
    metrics = run["dir"] / "metrics.json"  # the last logged values: pretraining runs write it
    run["metrics"] = json.loads(metrics.read_text()) if metrics.exists() else {}
    run["result"] = json.loads((run["dir"] / RESULT_FILES[stage]).read_text())
    if stage == "pretrain":
        run["probe"] = run["result"]
    run["config_text"] = (run["dir"] / "config.yaml").read_text()
    return run


def run_status(run: Mapping) -> str:
    """How far a table row read from :func:`load_recorded_run` can be trusted, in one word: ``smoke``
    (trained while the page was built), ``superseded`` or ``recorded``."""
    if not run["recorded"]:
        return "smoke"
    return "superseded" if superseded(run) else "recorded"


def run_notices(runs: Iterable[Mapping], missing: Iterable[str] = ()) -> list:
    """The notices a page shows above tables of :func:`load_recorded_run` runs: runs that could not be
    trained for want of data (``missing``: their names), runs trained now at smoke scale, superseded runs."""
    runs, missing = list(runs), list(missing)
    notes = []
    if missing:
        notes.append(Admonition(
            "Data not configured",
            f"{', '.join(missing)}: not recorded, and its data set is not configured, so nothing can be "
            "trained here: set AOT_DATA to the data folder (see the README).", kind="warning"))
    live = [r["dir"].name for r in runs if not r["recorded"]]
    if live:
        notes.append(Admonition(
            "Trained now, at smoke scale",
            f"{', '.join(live)}: no recorded run, so a few steps on 2,000 images were trained while this page "
            "was built; their rows are marked 'smoke' and are not results.", kind="note"))
    notes += [Admonition("Superseded", f"{r['dir'].name}: {superseded(r)}") for r in runs if superseded(r)]
    return notes


# ----------------------------------------------------------------------------- benchmarks

_WORDS = {"gflops": "GFLOPs", "rss": "RSS", "knn": "k-NN", "sigreg": "SIGReg"}


def _header(key: str) -> str:
    """A benchmark key as a header with its unit: ``step_s`` -> ``step (s)``,
    ``images_per_s`` -> ``images/s``, ``peak_rss_mb`` -> ``peak RSS (MB)``."""
    words = key.split("_")
    unit = ""
    if words[-2:] == ["per", "s"]:  # a rate: images_per_s -> images/s
        pass
    elif words[-1] == "s" and len(words) > 1:
        words, unit = words[:-1], "s"
    elif words[-1] == "mb":
        words, unit = words[:-1], "MB"
    elif words[-1] == "top1":
        words, unit = words[:-1] + ["top-1"], "%"
    elif key == "speedup":
        words, unit = ["speed-up"], "×"
    text = " ".join(_WORDS.get(w, w) for w in words if w).replace(" per ", "/")
    return f"{text} ({unit})" if unit else text


def _flatten(d: Mapping, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return format_value(v)


def benchmark_tables(b: Mapping, name: str = "") -> list:
    """One recorded benchmark (``results/benchmarks/*.json``) as tables: a superseded notice
    when it has one, its settings and scalar results, one row per entry of ``results``, and
    its targets. Machine and commit go into the caption; nothing is cut."""
    title = b.get("benchmark") or name or "benchmark"
    hw = b.get("hardware") or {}
    where = ", ".join(str(x) for x in (
        hw.get("machine"), hw.get("cpu_count") and f"{hw['cpu_count']} CPU cores",
        hw.get("torch_threads") and f"{hw['torch_threads']} threads",
        hw.get("torch") and f"PyTorch {hw['torch']}") if x)
    commit = str(b.get("commit", "unknown"))
    commit = commit[:12] + ("+dirty" if commit.endswith("+dirty") else "")
    caption = f"{title} — commit {commit}" + (f", {b['date'][:10]}" if b.get("date") else "")
    caption += f" ({where})" if where else ""
    out: list = []
    if b.get("superseded"):
        out.append(Admonition("Superseded", f"{title}: {b['superseded']}"))
    skip = {"hardware", "results", "benchmark", "date", "targets", "superseded", "commit"}
    settings = [(_header(k), _fmt(v)) for k, v in _flatten(
        {k: v for k, v in b.items() if k not in skip}).items()]
    if settings:
        out.append(key_value_table(settings, caption=caption))
        caption = None
    results = b.get("results")
    if isinstance(results, Mapping) and results:
        rows = [{"": k, **_flatten(v)} if isinstance(v, Mapping) else {"": k, "value": v}
                for k, v in results.items()]
        keys = list(dict.fromkeys(k for r in rows for k in r if k != ""))
        cols = [Col("", "")] + [Col(k, _header(k.split(".")[-1]) if k.count(".") == 0
                                    else f"{k.split('.')[0]}: {_header(k.split('.')[-1])}",
                                    fmt=_fmt) for k in keys]
        out.append(Table(rows, cols, caption=caption or f"{title}: results"))
    targets = b.get("targets")
    if isinstance(targets, Mapping) and targets:
        out.append(Table([(k, "met" if v else "not met") for k, v in targets.items()],
                         [Col("target", "target"), Col("met", "result")],
                         caption=f"{title}: targets"))
    return out


# ----------------------------------------------------------------------------- built-HTML checks

#: A ``<script src>``, stylesheet ``<link href>`` or ``<img src>`` on another host.
_EXTERNAL = re.compile(
    r"""<(?:script|img)\b[^>]*?\bsrc\s*=\s*["']?\s*((?:https?:)?//[^"'\s>]+)"""
    r"""|<link\b(?=[^>]*\brel\s*=\s*["']?stylesheet)[^>]*?\bhref\s*=\s*["']?\s*"""
    r"""((?:https?:)?//[^"'\s>]+)""",
    re.IGNORECASE,
)
#: Paths of the machine that built the book: home, work, temporary and cache folders, and
#: installed packages.
_MACHINE_PATHS = re.compile(
    r"(?<![\w.~/-])/(?:root|home|work|tmp|Users|private/var|var/folders|opt/conda)/"
    r"|~/\.cache|/\.cache/|site-packages|dist-packages|[A-Za-z]:\\+Users\\+",
)


#: Characters of code or text output a page shows without clipping (ruff's line length
#: for notebooks/).
PAGE_WIDTH = 88

#: A cell's text output (stream or text/plain) as myst-nb renders it.
_TEXT_OUTPUT = re.compile(
    r'<div class="output (?:stream|text_plain)[^"]*">(.*?)</pre>', re.DOTALL)


def check_html(text: str, name: str = "<html>") -> list[str]:
    """Problems in one built page: scripts, stylesheets or images loaded from another host
    (the book must read offline), paths of the machine that built it, and cell outputs that
    print a raw dict or JSON object instead of a table or a line wider than the page."""
    problems = []
    for m in _TEXT_OUTPUT.finditer(text):
        out = html.unescape(re.sub(r"<[^>]+>", "", m.group(1)))
        line = text.count("\n", 0, m.start()) + 1
        if re.search(r"^\s*\{\s*['\"][^'\"]*['\"]\s*:", out, re.MULTILINE):
            problems.append(f"{name}:{line}: a cell prints a raw dict/JSON: {out.strip()[:80]}")
        wide = [w for w in out.splitlines() if len(w) > PAGE_WIDTH]
        if wide:
            problems.append(f"{name}:{line}: an output line is wider than the page "
                            f"({len(wide[0])} > {PAGE_WIDTH} characters): {wide[0][:60]}...")
    for m in _EXTERNAL.finditer(text):
        problems.append(f"{name}: loads {m.group(1) or m.group(2)} from another host")
    for m in _MACHINE_PATHS.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        start = max(0, m.start() - 40)
        excerpt = re.sub(r"\s+", " ", text[start:m.end() + 40])
        problems.append(f"{name}:{line}: shows a path of the build machine: ...{excerpt}...")
    return problems


def check_built_book(html_dir: str | os.PathLike) -> list[str]:
    """:func:`check_html` over every page of a built book (``book/_build/html``)."""
    root = Path(html_dir)
    pages = sorted(p for p in root.rglob("*.html") if "_static" not in p.relative_to(root).parts)
    if not pages:
        return [f"no HTML pages under {root}: build the book first"]
    problems = []
    for page in pages:
        problems += check_html(page.read_text(encoding="utf-8", errors="replace"),
                               str(page.relative_to(root)))
    return problems


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "check-html":
        print("usage: python -m aot_lib.book check-html BUILD_HTML_DIR", file=sys.stderr)
        return 2
    problems = check_built_book(argv[1])
    for p in problems:
        print(p, file=sys.stderr)
    n = len(list(Path(argv[1]).rglob("*.html")))
    print(f"check-html: {n} files, {len(problems)} problem(s)")
    return 1 if problems else 0
