"""A model family of one's own, in one file outside aot_lib (issue 34): the registry, every "all models" test, the
optimiser's weight-decay exemptions and the `aot` command pick it up, with nothing in aot_lib edited."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import make_imagefolder

ROOT = Path(__file__).resolve().parent.parent

# CRATE with the ISTA step replaced by a ReLU against a learnable threshold, a (1, d) matrix: the kind of parameter
# that is not a weight matrix by role although 2-D, so the layer exempts it from weight decay itself
FAMILY = textwrap.dedent('''
    """gated: a family of one's own (tests/test_plugin_family.py)."""
    import torch
    from torch import nn

    from aot_lib import register_sizes
    from aot_lib.models._base import EncoderBase
    from aot_lib.models.layers import MSSA, PatchStem
    from aot_lib.models.registry import WHITE_BOX_SIZES


    class GatedLayer(nn.Module):
        def __init__(self, dim, num_heads):
            super().__init__()
            self.norm = nn.LayerNorm(dim)
            self.mssa = MSSA(dim, num_heads)
            self.threshold = nn.Parameter(torch.full((1, dim), 0.1))

        def no_weight_decay(self):
            return {"threshold"}

        def forward(self, z):
            z = z + self.mssa(self.norm(z))
            return torch.relu(z - self.threshold)


    class Gated(EncoderBase):
        def __init__(self, img_size=32, patch_size=8, in_chans=3, num_classes=10, embed_dim=384, depth=12,
                     num_heads=6):
            super().__init__(img_size=img_size, patch_size=patch_size, in_chans=in_chans, num_classes=num_classes,
                             embed_dim=embed_dim, depth=depth, num_heads=num_heads)
            self.stem = PatchStem(img_size, patch_size, in_chans, embed_dim)
            self.blocks = nn.ModuleList(GatedLayer(embed_dim, num_heads) for _ in range(depth))
            self._init_linear()


    register_sizes(Gated, "gated", WHITE_BOX_SIZES, {"base": "Gated-Base: a family of one's own."})
''')


@pytest.fixture
def plugin(tmp_path):
    pkg = tmp_path / "plugins" / "mypkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text(FAMILY)
    return pkg.parent


ROOT = Path(__file__).resolve().parents[1]  # aot_lib for the `aot` subprocesses, installed or not


def _env(extra_path: Path, **more) -> dict:
    env = {**os.environ, **more}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra_path), str(ROOT), env.get("PYTHONPATH")]))
    return env


def test_every_all_models_test_runs_on_a_new_family_and_none_fails_by_its_name(plugin):
    """With the family imported before collection (AOT_TEST_IMPORT, tests/conftest.py), the tests that mean "every
    model" run on gated_base too, and pass: the paper's numbers are checked for the paper's models only, family
    expectations come from what a module is or has, and its threshold matrix takes no weight decay because its
    layer says so."""
    tests = ["tests/test_models.py", "tests/test_optim.py", "tests/test_pinned.py", "tests/test_compile.py",
             "tests/test_precision.py"]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-p", "no:randomly",
                        "-k", "gated or unknown_model or registry", "-rA", *tests],
                       cwd=ROOT, env=_env(plugin, AOT_TEST_IMPORT="mypkg.models"), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    ran = sorted(line.split(" ", 1)[1] for line in r.stdout.splitlines() if line.startswith("PASSED ")
                 and "gated" in line)
    # every parametrized "all models" test of those files, on the new model
    assert ran == [
        "tests/test_compile.py::test_one_graph_per_view_size_and_eager_values[gated_base]",
        "tests/test_models.py::test_forward_intermediates_uniform_contract[gated_base]",
        "tests/test_models.py::test_interface_and_every_parameter_gets_a_gradient[gated_base]",
        "tests/test_models.py::test_other_resolutions[16-gated_base]",
        "tests/test_models.py::test_other_resolutions[24-gated_base]",
        "tests/test_models.py::test_other_resolutions[48-gated_base]",
        "tests/test_optim.py::test_param_groups_of_every_family[gated_base]",
        "tests/test_pinned.py::test_every_family_adds_the_resized_pos_embed[16-gated_base]",
        "tests/test_pinned.py::test_every_family_adds_the_resized_pos_embed[48-gated_base]",
        "tests/test_precision.py::test_bf16_mixed_step_matches_float32[gated_base]",
    ], r.stdout[-3000:]


def test_a_family_imported_once_at_pretraining_probes_finetunes_records_and_loads(plugin, tmp_path):
    """`aot pretrain --import mypkg.models` (the option after the command) trains the family for two steps; the
    run's config records model.imports, so the commands after it import it again with no --import: `aot probe` of
    a config that names another model (the run's checkpoint says which model it is), `aot finetune` from its
    checkpoint, `aot record`, and aot_lib.from_pretrained of the recorded encoder in a fresh process."""
    data = make_imagefolder(tmp_path / "data", n_train=16, n_test=8)
    base = ["data.name=imagefolder", f"data.root={data}", "data.image_size=16", f"run.out_dir={tmp_path / 'runs'}",
            "run.progress=false", "model.compile=false", "views.global_size=16", "views.local_size=8",
            "views.n_local=2", "projector.hidden_dim=32", "projector.out_dim=8", "loss.num_slices=16",
            "optim.batch_size=8", "optim.max_steps=2", "probe.epochs=2", "probe.knn_k=3", "finetune.epochs=1",
            "finetune.batch_size=8"]
    config = tmp_path / "tiny.yaml"  # the user's config: a paper model, as configs/cpu/smoke.yaml names one
    config.write_text("".join(f"{k}: {v}\n" for k, v in _nested(base).items()))
    family = ["run.name=gated", "model.name=gated_base",
              "model.overrides={embed_dim: 32, depth: 1, num_heads: 2, patch_size: 4}"]
    env = _env(plugin, AOT_CACHE=str(tmp_path / "cache"))
    aot = [sys.executable, "-m", "aot_lib.cli"]
    without = subprocess.run([*aot, "pretrain", "-c", str(config), *family], cwd=tmp_path,
                             env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert without.returncode == 2 and without.stderr == (
        "aot pretrain: model gated_base with overrides {'embed_dim': 32, 'depth': 1, 'num_heads': 2, 'patch_size': 4}: "
        "unknown model 'gated_base'. Did you mean crate_base, aot_base, aot_admm_base? A family of your own: import "
        "its module first (--import MODULE, or model.imports). Known models: aot_admm_base, aot_admm_small, "
        "aot_admm_tiny, aot_base, aot_small, aot_tiny, crate_base, crate_small, crate_tiny, vit_small, "
        "vit_small_relu, vit_tiny, vit_tiny_relu.\n"), without.stderr
    assert not (tmp_path / "runs" / "gated").exists()  # refused from the config: no folder was made
    r = subprocess.run([*aot, "pretrain", "--import", "mypkg.models", "-c", str(config), *family], cwd=tmp_path,
                       env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    run = tmp_path / "runs" / "gated"
    assert json.loads((run / "metrics.json").read_text())["step"] == 2
    recorded = (run / "config.yaml").read_text()
    assert "imports:\n  - mypkg.models" in recorded or "imports: [mypkg.models]" in recorded, recorded
    p = subprocess.run([*aot, "probe", "-c", str(config), "run.name=gated"], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads((run / "probe.json").read_text())["checkpoint"] == str(run / "last.ckpt")
    f = subprocess.run([*aot, "finetune", "-c", str(config), "run.name=gated_ft",
                        f"finetune.checkpoint={run / 'last.ckpt'}"], cwd=tmp_path, env=env, capture_output=True,
                       text=True)
    assert f.returncode == 0, f.stderr[-2000:]
    assert yaml_model(tmp_path / "runs" / "gated_ft" / "config.yaml")["name"] == "gated_base"
    rec = subprocess.run([*aot, "record", str(run), str(tmp_path / "records" / "gated"), "--allow-dirty"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert rec.returncode == 0, rec.stderr[-2000:]
    loaded = subprocess.run([sys.executable, "-c", "import aot_lib; m = aot_lib.from_pretrained('records/gated/encoder'); "
                             "print(type(m).__name__, sum(p.numel() for p in m.parameters()))"],
                            cwd=tmp_path, env=env, capture_output=True, text=True)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.split()[0] == "Gated"
    missing = subprocess.run([*aot, "--import", "mypkg.nothing", "pretrain", "-c", str(config), *family],
                             cwd=tmp_path, env=env, capture_output=True, text=True)
    assert missing.returncode == 1 and missing.stderr.strip() == (
        "aot pretrain: model.imports: cannot import 'mypkg.nothing' (No module named 'mypkg.nothing'); install it, "
        "or run from the folder that holds it, or put that folder on PYTHONPATH")


def _nested(overrides: list[str]) -> dict:
    """``section.key=value`` strings as a YAML file's top-level sections (``{section: {key: value}}`` flow style)."""
    sections: dict[str, list[str]] = {}
    for item in overrides:
        key, value = item.split("=", 1)
        section, leaf = key.split(".", 1)
        sections.setdefault(section, []).append(f"{leaf}: {value}")
    return {section: "{" + ", ".join(items) + "}" for section, items in sections.items()}


def yaml_model(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text())["model"]


def test_a_user_module_that_fails_inside_is_one_line_naming_it_the_error_and_the_place(tmp_path, monkeypatch):
    """An error raised while the user's module runs (not a missing module) is the user's to fix, not an internal
    error of the package: one line with the module, the error, the file and line, and the fix."""
    from aot_lib.models.registry import import_model_modules

    (tmp_path / "broken_family.py").write_text("import torch\n\nSIZES = {'tiny': dict(embed_dim=32)}\nSIZES['small']\n")
    (tmp_path / "needs_missing.py").write_text("import a_package_nobody_has\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError) as e:
        import_model_modules(["broken_family"])
    assert str(e.value) == (
        f"model.imports: importing 'broken_family' failed inside it (KeyError: 'small') at "
        f"{tmp_path / 'broken_family.py'}:4; fix that module (python -c 'import broken_family' shows the traceback) "
        "or leave it out of --import/model.imports")
    with pytest.raises(ImportError) as e:  # found, but what it imports is not: the module's own line is named
        import_model_modules(["needs_missing"])
    assert str(e.value) == (
        f"model.imports: importing 'needs_missing' failed inside it (ModuleNotFoundError: No module named "
        f"'a_package_nobody_has') at {tmp_path / 'needs_missing.py'}:1; fix that module (python -c 'import "
        "needs_missing' shows the traceback) or leave it out of --import/model.imports")
