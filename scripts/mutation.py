"""Mutation testing of aot_lib with mutmut, one module at a time, in a scratch copy of a commit.

    .venv/bin/pip install -e ".[mutation]"
    nice -n 19 .venv/bin/python scripts/mutation.py layers            # one module
    nice -n 19 .venv/bin/python scripts/mutation.py core pipeline     # the recorded sets
    nice -n 19 .venv/bin/python scripts/mutation.py layers --workdir ../mut --rerun   # survivors only, after new tests
    .venv/bin/python scripts/mutation.py --summary                    # rebuild summary.md from the JSON files
    nice -n 19 .venv/bin/python scripts/mutation.py --planted         # the bugs of issue #11, planted one by one

Not part of CI (a module takes minutes to tens of minutes on two cores). For every module the script

1. extracts ``--ref`` (default ``HEAD``: committed code only, never the working tree, so a run does not
   depend on what anyone is editing) into a scratch folder with ``git archive``;
2. rewrites the module's decorated functions (``@torch.no_grad()``, ``@register_model``, ``@lru_cache``,
   ``@property``) into the equivalent ``f = decorator(f)`` after the definition, because mutmut 3 does not
   mutate decorated functions; nothing else is changed;
3. runs ``mutmut run`` there with the module as the only file to mutate and only the module's test files
   (``MODULES`` below; the DDP tests of tests/test_train.py, which spawn whole trainers, are deselected by
   ``[tool.mutmut] pytest_add_cli_args`` in pyproject.toml);
4. writes ``results/mutation/<module>.json``: the counts per status, the score and every mutant that was
   not killed with its diff, and the equivalence reason where ``results/mutation/equivalent.json`` gives
   one; then ``summary.md`` and ``summary.json`` over every module recorded.

Score = killed / (killed + survived + no tests + suspicious), timeouts counted as killed (the mutant
made the tests hang, so they noticed), mutants caught by the type checker as killed; "equivalent" mutants
(a reason recorded in ``equivalent.json``) are reported beside the raw score and left out of the adjusted
score.

``--rerun`` (with the ``--workdir`` of an earlier run of an unchanged module) re-tests only the mutants that
run left alive, with ``--ref``'s tests: the quick loop after adding a test for a survivor.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "results" / "mutation"

# module -> (source file, the test files that exercise it)
MODULES: dict[str, tuple[str, list[str]]] = {
    # core
    "layers": ("aot_lib/models/layers.py", ["tests/test_pinned.py", "tests/test_models.py", "tests/test_model_loaders.py",
                                     "tests/test_admm.py"]),
    "models/aot_admm": ("aot_lib/models/aot_admm.py", ["tests/test_pinned.py", "tests/test_admm.py",
                                                       "tests/test_admm_iterations.py", "tests/test_fused.py",
                                                       "tests/test_models.py"]),
    "models/crate": ("aot_lib/models/crate.py", ["tests/test_pinned.py", "tests/test_models.py",
                                                 "tests/test_model_loaders.py"]),
    "sigreg": ("aot_lib/objectives/sigreg.py", ["tests/test_pinned.py", "tests/test_sigreg.py", "tests/test_lejepa.py"]),
    "lejepa": ("aot_lib/objectives/lejepa.py", ["tests/test_lejepa.py", "tests/test_pinned.py"]),
    "coding_rate": ("aot_lib/objectives/coding_rate.py", ["tests/test_pinned.py", "tests/test_coding_rate.py",
                                               "tests/test_admm_iterations.py"]),
    # pipeline
    "optim": ("aot_lib/training/optim.py", ["tests/test_optim.py", "tests/test_probe_protocols.py"]),
    "loop": ("aot_lib/training/loop.py", ["tests/test_train.py", "tests/test_faults.py", "tests/test_monitors.py",
                                 "tests/test_loop_values.py"]),
    "runs": ("aot_lib/training/runs.py", ["tests/test_pinned.py", "tests/test_faults.py", "tests/test_train.py",
                                 "tests/test_runs_values.py", "tests/test_loop_values.py"]),
    "probe": ("aot_lib/training/probe.py", ["tests/test_probe.py", "tests/test_probe_protocols.py", "tests/test_faults.py"]),
    "augment": ("aot_lib/data/augment.py", ["tests/test_augment.py", "tests/test_pinned.py"]),
    "data": ("aot_lib/data/datasets.py", ["tests/test_data.py", "tests/test_data_values.py", "tests/test_faults.py"]),
    "monitors": ("aot_lib/training/monitors.py", ["tests/test_monitors.py"]),
}
SETS = {"core": ["layers", "models/aot_admm", "models/crate", "sigreg", "lejepa", "coding_rate"],
        "pipeline": ["optim", "loop", "runs", "probe", "augment", "data", "monitors"]}
SETS["all"] = SETS["core"] + SETS["pipeline"]
TARGETS = {"core": 90.0, "pipeline": 80.0}

KILLED = {"killed", "timeout", "caught by type check"}
NOT_KILLED = {"survived", "no tests", "suspicious", "segfault"}


def slug(module: str) -> str:
    return module.replace("/", ".")


# ----------------------------------------------------------------------------- preparing the scratch copy

def undecorate(source: str) -> str:
    """``@dec def f`` -> ``def f`` followed by ``f = dec(f)`` (same indentation), for every function with a
    decorator other than ``staticmethod``/``classmethod`` (which mutmut handles). Same behaviour; mutmut 3
    skips decorated functions otherwise."""
    lines = source.splitlines(keepends=True)
    edits = []  # (first decorator line, def line, end line, indent, name, decorator sources)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
            names = [ast.get_source_segment(source, d) for d in node.decorator_list]
            if any(n in ("staticmethod", "classmethod") for n in names):
                continue
            first = min(d.lineno for d in node.decorator_list)
            indent = re.match(r"\s*", lines[node.lineno - 1]).group(0)
            edits.append((first, node.lineno, node.end_lineno, indent, node.name, names))
    for first, def_line, end, indent, name, names in sorted(edits, reverse=True):
        wrapped = name
        for dec in reversed(names):  # the decorator nearest the def applies first
            wrapped = f"{dec}({wrapped})"
        lines.insert(end, f"{indent}{name} = {wrapped}\n")
        del lines[first - 1:def_line - 1]
    return "".join(lines)


def mutmut_config(base: dict, source: str, tests: list[str], extra_copy: list[str]) -> str:
    """The ``[tool.mutmut]`` section of the scratch copy: the repository's settings (``base``: worker isolation,
    pytest arguments) with this module as the only file to mutate and its test files as the selection."""
    cfg = {**base, "source_paths": ["aot_lib"], "only_mutate": [source], "pytest_add_cli_args_test_selection": tests,
           "also_copy": sorted(set(base.get("also_copy", [])) | set(extra_copy))}
    return "\n".join(["[tool.mutmut]", *(f"{k} = {json.dumps(v)}" for k, v in cfg.items()), ""])  # JSON lists = TOML


def prepare(module: str, ref: str, work: Path) -> Path:
    source, tests = MODULES[module]
    scratch = work / slug(module)
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive, check=True)
    path = scratch / source
    path.write_text(undecorate(path.read_text()))
    write_config(module, scratch, ref)
    return scratch


def write_config(module: str, scratch: Path, ref: str) -> None:
    """The scratch copy's ``pyproject.toml``: ``ref``'s, with the ``[tool.mutmut]`` section for ``module``."""
    source, tests = MODULES[module]
    tests = [t for t in tests if (scratch / t).exists()]
    extra = sorted(p.name for p in scratch.iterdir() if p.name not in {"aot_lib", "tests", "pyproject.toml", "mutants"})
    text = git_show(ref, "pyproject.toml")
    base = tomllib.loads(text).get("tool", {}).get("mutmut", {})
    text = re.sub(r"\n\[tool\.mutmut\]\n(?:(?!\n\[).)*", "\n", text, flags=re.S)  # replaced below
    (scratch / "pyproject.toml").write_text(text.rstrip() + "\n\n" + mutmut_config(base, source, tests, extra))


# ----------------------------------------------------------------------------- running and reading results

def status_of(code) -> str:
    from mutmut.stats import status_by_exit_code

    return status_by_exit_code[code]


def git_show(ref: str, path: str) -> str | None:
    r = subprocess.run(["git", "show", f"{ref}:{path}"], cwd=ROOT, capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def refresh_tree(scratch: Path, ref: str, source: str) -> None:
    """Bring the scratch copy (and mutmut's copy of it) to ``ref``: every file but the mutated module, which
    is unchanged between the two commits (checked by the caller) and whose mutants are kept."""
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        (Path(tmp) / source).unlink()
        for dest in (scratch, scratch / "mutants"):
            shutil.rmtree(dest / "tests", ignore_errors=True)
            shutil.copytree(tmp, dest, dirs_exist_ok=True)


def run_module(module: str, ref: str, work: Path, max_children: int, timeout: float | None, rerun: bool = False,
               collect_only: bool = False) -> dict:
    import mutmut

    source, tests = MODULES[module]
    commit = subprocess.run(["git", "rev-parse", ref], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    scratch = work / slug(module)
    previous = OUT / f"{slug(module)}.json"
    names: list[str] = []
    t_before, rerun_of, kept = 0.0, None, {}
    if rerun:  # only the mutants not killed last time, against ref's tests, if the module itself is unchanged
        old = json.loads(previous.read_text()) if previous.exists() else None
        same = (old is not None and (scratch / "mutants").is_dir()
                and git_show(old["commit"], source) == git_show(ref, source))
        if not same:
            print(f"{module}: no earlier run of this source in {scratch}; running every mutant", flush=True)
            rerun = False
        else:
            refresh_tree(scratch, ref, source)
            write_config(module, scratch, ref)  # a changed pytest selection makes mutmut reset every verdict:
            names = [s["name"] for s in old["survivors"]]
            # the verdicts to keep (restored below): mutmut's own, or "killed" for a mutant the last record does
            # not list as left alive (an interrupted or reset run can leave None in mutmut's file)
            kept = json.loads((scratch / "mutants" / (source + ".meta")).read_text())["exit_code_by_key"]
            kept = {k: (c if c is not None or k in names else 1) for k, c in kept.items()}
            t_before = old["elapsed_s"]
            rerun_of = old.get("rerun_of") or old["commit"]
    if not (rerun or collect_only):
        scratch = prepare(module, ref, work)
    log = work / f"{slug(module)}.log"
    t0 = time.time()
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *names]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}  # one thread per worker
    interrupted = False
    if collect_only:  # read a finished run's results: the time is that of its log
        t0 = (scratch / "pyproject.toml").stat().st_mtime
        elapsed = log.stat().st_mtime - t0
    else:
        with open(log, "w") as fh:
            try:
                subprocess.run(cmd, cwd=scratch, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=timeout)
            except subprocess.TimeoutExpired:
                interrupted = True
        elapsed = time.time() - t0 + t_before
    meta = scratch / "mutants" / (source + ".meta")
    codes = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
    # a re-run tests only the earlier survivors; the others keep their earlier verdict (more tests cannot
    # bring a killed mutant back)
    codes = {k: (c if k in names or k not in kept else kept[k]) for k, c in codes.items()}
    if kept and meta.exists():  # and mutmut's file says the same, so that a later --rerun starts from it
        data = json.loads(meta.read_text())
        data["exit_code_by_key"] = codes
        meta.write_text(json.dumps(data, indent=4))
    statuses = {name: status_of(code) for name, code in codes.items()}
    counts: dict[str, int] = {}
    for s in statuses.values():
        counts[s] = counts.get(s, 0) + 1
    equivalents = load_equivalents()
    survivors = []
    for name, s in sorted(statuses.items(), key=lambda kv: natural_key(kv[0])):
        if s in KILLED:
            continue
        diff = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=scratch, capture_output=True,
                              text=True).stdout
        diff = "\n".join(diff.splitlines()[1:]).strip()  # drop mutmut's "# name: status" header
        survivors.append({"name": name, "status": s, "diff": diff,
                          "equivalent": equivalent_reason(module, diff, equivalents)})
    result = {"module": module, "source": source, "ref": ref, "commit": commit, "tests": [t for t in tests],
              "pytest_args": tomllib.loads(git_show(ref, "pyproject.toml")).get("tool", {}).get("mutmut", {}).get("pytest_add_cli_args"),
              "mutmut": mutmut.__version__ if hasattr(mutmut, "__version__") else "",
              "elapsed_s": round(elapsed, 1), "interrupted": interrupted,
              "rerun_of": rerun_of,  # the commit whose full run this re-tested the survivors of
              "mutants": len(statuses), "counts": counts, "survivors": survivors}
    result.update(scores(result))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{slug(module)}.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def natural_key(name: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def load_equivalents() -> list[dict]:
    f = OUT / "equivalent.json"
    return json.loads(f.read_text()) if f.exists() else []


def equivalent_reason(module: str, diff: str, equivalents: list[dict]) -> str | None:
    """A recorded reason whose ``module`` matches and whose ``removed`` / ``added`` lines both occur in the
    diff (``-`` and ``+`` lines, stripped), so a reason follows the mutation, not mutmut's numbering.

    Two kinds (``kind`` in ``equivalent.json``): ``equivalent`` (no input the program can be given tells the
    mutant apart) and ``gpu`` (it differs only on a GPU set-up: the device a tensor is made on, FSDP, or
    NCCL's arithmetic; identical on the CPU, where the tests run; a GPU test could kill it). A third,
    ``suite``, explains a survivor that the ordinary test run kills but mutmut cannot test: its only callers
    run in spawned processes (mutmut's coverage step does not see them), or the killing assertion checks a
    stack frame that mutmut's trampolines move. It stays counted as a survivor in both scores. The reason is prefixed with the kind."""
    minus = [line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    plus = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    for e in equivalents:
        if e["module"] == module and e["removed"] in minus and e["added"] in plus:
            return f"{e.get('kind', 'equivalent')}: {e['reason']}"
    return None


def scores(r: dict) -> dict:
    c = r["counts"]
    killed = sum(c.get(s, 0) for s in KILLED)
    counted = killed + sum(c.get(s, 0) for s in NOT_KILLED)
    left_out = [s["equivalent"] for s in r["survivors"] if s["equivalent"] and s["status"] in NOT_KILLED
                and s["equivalent"].startswith(("equivalent:", "gpu:"))]  # "suite:" ones stay counted as survivors
    equivalent = sum(1 for e in left_out if e.startswith("equivalent:"))
    gpu = sum(1 for e in left_out if e.startswith("gpu:"))
    raw = 100 * killed / counted if counted else None
    adjusted = 100 * killed / (counted - len(left_out)) if counted - len(left_out) > 0 else None
    return {"killed": killed, "counted": counted, "equivalent": equivalent, "gpu_only": gpu,
            "score": None if raw is None else round(raw, 1), "score_without_equivalent": None if adjusted is None else round(adjusted, 1)}


# ----------------------------------------------------------------------------- planted bugs (issue #11)

# (bug, file, original text, planted text): the bugs of issue #11 that the suite used to miss, and a few
# more of the same kind, planted one at a time in a scratch copy; each must make PLANTED_TESTS fail.
PLANTED = [
    ("ISTA: gradient-step sign flipped", "aot_lib/models/layers.py",
     "return F.relu(x + self.step_size * grad - self.step_size * self.lambd)",
     "return F.relu(x - self.step_size * grad - self.step_size * self.lambd)"),
    ("ISTA: threshold lambda instead of eta*lambda", "aot_lib/models/layers.py",
     "return F.relu(x + self.step_size * grad - self.step_size * self.lambd)",
     "return F.relu(x + self.step_size * grad - self.lambd)"),
    ("ISTA (fused): D instead of D^T", "aot_lib/models/layers.py",
     "grad = F.linear(x - F.linear(x, d), d.t())", "grad = F.linear(x - F.linear(x, d), d)"),
    ("pos-embed resize: bicubic -> bilinear", "aot_lib/models/layers.py",
     'mode="bicubic", align_corners=False', 'mode="bilinear", align_corners=False'),
    ("pos-embed resize: antialias ignored (ViT family)", "aot_lib/models/layers.py",
     "align_corners=False, antialias=antialias)", "align_corners=False, antialias=False)"),
    ("warm-up: step/warmup instead of (step+1)/warmup", "aot_lib/training/optim.py",
     "return (step + 1) / warmup_steps", "return step / warmup_steps"),
    ("cosine: span off by one (last step is not min_ratio)", "aot_lib/training/optim.py",
     "span = max(1, total_steps - 1 - warmup_steps)", "span = max(1, total_steps - warmup_steps)"),
    ("cosine: min_ratio ignored", "aot_lib/training/optim.py",
     "return min_ratio + (1 - min_ratio) * 0.5", "return 0.5"),
    ("param_groups: the model's no_weight_decay() ignored (cls, pos_embed, tau, logits decayed)",
     "aot_lib/training/optim.py", "decays = not (p.ndim < 2 or name in exempt)", "decays = not (p.ndim < 2)"),
    ("param_groups: decay on every parameter", "aot_lib/training/optim.py",
     "decays = not (p.ndim < 2 or name in exempt)", "decays = True"),
    ("linear probe: labels misaligned with the shuffled batch", "aot_lib/training/probe.py",
     "return xtr[b], train_y[b]", "return xtr[b], train_y[i * batch_size:(i + 1) * batch_size]"),
    ("linear probe: test labels in another order", "aot_lib/training/probe.py",
     "acc = (clf(xte).argmax(1) == test_y).float()", "acc = (clf(xte).argmax(1) == test_y.sort().values).float()"),
    ("k-NN: unweighted vote", "aot_lib/training/evaluation.py", "(sim / temperature).exp())", "torch.ones_like(sim))"),
    ("k-NN: weights exp(sim * T)", "aot_lib/training/evaluation.py", "(sim / temperature).exp())", "(sim * temperature).exp())"),
    ("k-NN: labels of the wrong neighbours", "aot_lib/training/evaluation.py", "train_y[nn_idx]", "train_y[nn_idx.flip(1)]"),
    ("batch_indices: ranks take strided shares", "aot_lib/training/optim.py",
     "[i * global_batch:(i + 1) * global_batch][rank * local:(rank + 1) * local]",
     "[i * global_batch:(i + 1) * global_batch][rank::world]"),
    ("batch_indices: batches overlap", "aot_lib/training/optim.py",
     "[i * global_batch:(i + 1) * global_batch]", "[i * local:i * local + global_batch]"),
    ("evaluate: inputs not normalised", "aot_lib/training/supervised.py",
     "correct += (model(normalize(xb, mean, std))", "correct += (model(xb)"),
    ("evaluate: divides by the batch size", "aot_lib/training/supervised.py",
     "return correct / len(data) * 100", "return correct / min(batch_size, len(data)) * 100"),
    ("encoder_state_dict: head never returned", "aot_lib/training/runs.py",
     'return {k: v for k, v in state.items() if with_head or not k.startswith("head.")}',
     'return {k: v for k, v in state.items() if not k.startswith("head.")}'),
    ("encoder_state_dict: projector kept", "aot_lib/training/runs.py",
     'if k.startswith("encoder.")}', 'if not k.startswith("loss.")}'),
    ("GlobalBatchNorm1d: own path without a process group", "aot_lib/objectives/heads.py",
     "if not (self.training and distributed.world_size() > 1):", "if not self.training:"),
    ("multi-crop: flip drawn but never applied", "aot_lib/data/augment.py",
     "theta[:, 0, 0], theta[:, 0, 2] = w * flip, cx", "theta[:, 0, 0], theta[:, 0, 2] = w, cx"),
    ("multi-crop: grayscale weights of another standard (equal thirds)", "aot_lib/data/augment.py",
     "w = torch.tensor(_LUMA, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)",
     "w = torch.full((1, 3, 1, 1), 1 / 3, device=x.device, dtype=x.dtype)"),
    ("LeJEPAModel: features of one size group reversed", "aot_lib/objectives/lejepa.py",
     "for i, chunk in zip(idx, f.chunk(len(idx))):", "for i, chunk in zip(idx[::-1], f.chunk(len(idx))):"),
]
PLANTED_TESTS = ["tests/test_pinned.py", "tests/test_optim.py", "tests/test_probe.py", "tests/test_augment.py"]


def run_planted(ref: str, work: Path) -> list[dict]:
    """Plant every bug of ``PLANTED`` in its own scratch copy of ``ref`` and run ``PLANTED_TESTS`` there
    (the copy's ``aot_lib`` is the one imported: pytest runs from the copy). Writes ``planted_bugs.md``."""
    commit = subprocess.run(["git", "rev-parse", ref], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    rows = []
    for k, (bug, path, old, new) in enumerate(PLANTED):
        scratch = work / f"planted-{k:02d}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive, check=True)
        text = (scratch / path).read_text()
        if text.count(old) != 1:
            rows.append({"bug": bug, "file": path, "old": old, "new": new, "failed": None,
                         "note": f"the original text occurs {text.count(old)} times at {commit[:8]}: not planted"})
            continue
        (scratch / path).write_text(text.replace(old, new))
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", *PLANTED_TESTS],
                           cwd=scratch, capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        failed = sorted({line.split(" ")[1].split("[")[0] for line in r.stdout.splitlines() if line.startswith("FAILED ")})
        rows.append({"bug": bug, "file": path, "old": old, "new": new, "failed": failed})
        print(f"{bug} -> {', '.join(failed) or 'NOT CAUGHT'}", flush=True)
        shutil.rmtree(scratch)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "planted_bugs.json").write_text(json.dumps({"commit": commit, "tests": PLANTED_TESTS, "bugs": rows}, indent=1) + "\n")
    lines = ["# Planted bugs (issue #11)", "",
             f"Each bug planted alone in a scratch copy of {commit[:8]} (`scripts/mutation.py --planted`); the tests of",
             f"{', '.join(f'`{t}`' for t in PLANTED_TESTS)} that fail on it.", "",
             "| bug | file | tests that fail |", "|---|---|---|"]
    for row in rows:
        caught = "; ".join(f"`{t.split('::')[-1]}`" for t in row["failed"]) if row["failed"] else \
            (row.get("note") or "**not caught**")
        lines.append(f"| {row['bug']} | `{row['file']}` | {caught} |")
    (OUT / "planted_bugs.md").write_text("\n".join(lines) + "\n")
    return rows


# ----------------------------------------------------------------------------- summary

def write_summary() -> None:
    equivalents = load_equivalents()
    records = {}
    for f in sorted(OUT.glob("*.json")):
        if f.name in {"summary.json", "equivalent.json", "planted_bugs.json"}:
            continue
        r = json.loads(f.read_text())
        for s in r["survivors"]:  # re-read the reasons: equivalent.json may have grown since the run
            s["equivalent"] = equivalent_reason(r["module"], s["diff"], equivalents)
        r.update(scores(r))
        f.write_text(json.dumps(r, indent=1) + "\n")
        records[r["module"]] = r
    lines = ["# Mutation testing (mutmut)", "",
             "Generated by `scripts/mutation.py` from the per-module JSON files beside this one; see the README's",
             "\"Mutation testing\" section. Score = killed / (killed + survived + no tests + suspicious), timeouts",
             "counted as killed; *adjusted* leaves out the survivors `equivalent.json` explains: *equivalent* (no",
             "input the program can be given tells them apart) and *GPU-only* (they differ only on a GPU set-up: the",
             "device a tensor is made on, FSDP or NCCL; identical on the CPU the tests run on). A *suite* reason",
             "marks a survivor the ordinary test run kills but mutmut cannot test (callers in spawned processes, or",
             "a stack-frame check its trampolines move); it stays counted as not killed.", ""]
    summary = {}
    for group, mods in SETS.items():
        if group == "all":
            continue
        lines += [f"## {group.capitalize()} (target {TARGETS[group]:.0f} % killed)", "",
                  "| module | commit | mutants | killed | survived | no tests | timeout | equivalent | GPU-only | score % | adjusted % | time |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        tot = {"killed": 0, "counted": 0, "equivalent": 0, "gpu_only": 0}
        not_run = []
        for m in mods:
            r = records.get(m)
            if r is None:
                not_run.append(m)
                continue
            c = r["counts"]
            for k in tot:
                tot[k] += r[k]
            lines.append(f"| {m} | {r['commit'][:8]} | {r['mutants']} | {r['killed']} | {c.get('survived', 0)} | "
                         f"{c.get('no tests', 0)} | {c.get('timeout', 0)} | {r['equivalent']} | {r['gpu_only']} | {r['score']} | "
                         f"{r['score_without_equivalent']} | {r['elapsed_s'] / 60:.1f} min"
                         + (" (interrupted)" if r.get("interrupted") else "") + " |")
        raw = 100 * tot["killed"] / tot["counted"] if tot["counted"] else None
        rest = tot["counted"] - tot["equivalent"] - tot["gpu_only"]
        adj = 100 * tot["killed"] / rest if rest else None
        if raw is not None:
            lines.append(f"| **all run** | | {tot['counted']} | {tot['killed']} | | | | {tot['equivalent']} | {tot['gpu_only']} | "
                         f"**{raw:.1f}** | **{adj:.1f}** | |")
        lines.append("")
        if not_run:
            lines += [f"Not yet run: {', '.join(not_run)}.", ""]
        summary[group] = {"target": TARGETS[group], **tot, "score": raw and round(raw, 1),
                          "score_without_equivalent": adj and round(adj, 1), "not_run": not_run}
    lines += ["## Mutants not killed", ""]
    for m, r in records.items():
        left = [s for s in r["survivors"]]
        if not left:
            continue
        lines += [f"### {m}", ""]
        for s in left:
            why = s["equivalent"] or s["status"]
            changed = [x for x in s["diff"].splitlines() if x.startswith(("-", "+")) and not x.startswith(("---", "+++"))]
            lines.append(f"- `{s['name'].rsplit('.', 1)[-1]}` ({why}): `{' / '.join(x.strip() for x in changed)[:300]}`")
        lines.append("")
    (OUT / "summary.md").write_text("\n".join(lines))
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("modules", nargs="*", help=f"modules ({', '.join(MODULES)}) or sets ({', '.join(SETS)})")
    p.add_argument("--ref", default="HEAD", help="the commit to test (default HEAD)")
    p.add_argument("--max-children", type=int, default=2, help="parallel mutmut workers (default 2)")
    p.add_argument("--timeout", type=float, default=None, help="stop a module's run after this many seconds")
    p.add_argument("--workdir", default=None, help="scratch folder (default: a temporary one, removed afterwards)")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder (mutmut browse / show there)")
    p.add_argument("--rerun", action="store_true",
                   help="re-test only the mutants the last run left alive, with --ref's tests (needs --workdir of that run)")
    p.add_argument("--collect-only", action="store_true",
                   help="do not run mutmut: read the results of a finished run in --workdir")
    p.add_argument("--planted", action="store_true",
                   help="plant the bugs of issue #11 one at a time and record which tests catch them")
    p.add_argument("--summary", action="store_true", help="only rebuild summary.md / summary.json")
    args = p.parse_args(argv)
    if args.summary:
        write_summary()
        return 0
    if args.planted:
        work = Path(args.workdir or tempfile.mkdtemp(prefix="aot-planted-"))
        rows = run_planted(args.ref, work)
        return 0 if all(r["failed"] for r in rows) else 1
    mods = []
    for m in args.modules or ["all"]:
        if m in SETS:
            mods += SETS[m]
        elif m in MODULES:
            mods.append(m)
        else:
            p.error(f"unknown module {m!r}; choose among {', '.join([*MODULES, *SETS])}")
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="aot-mutation-"))
    try:
        for m in dict.fromkeys(mods):
            r = run_module(m, args.ref, work, args.max_children, args.timeout, args.rerun, args.collect_only)
            print(f"{m}: {r['killed']}/{r['counted']} killed ({r['score']} %), {len(r['survivors'])} not killed, "
                  f"{r['elapsed_s'] / 60:.1f} min", flush=True)
            write_summary()
    finally:
        if not (args.keep or args.workdir):
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
