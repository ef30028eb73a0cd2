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


def test_aot_import_pretrains_and_probes_a_family_of_ones_own(plugin, tmp_path):
    """`aot --import mypkg.models pretrain` trains it for two steps; the run's config records model.imports, so a
    plain `aot probe` of that config imports it again."""
    data = make_imagefolder(tmp_path / "data", n_train=16, n_test=8)
    args = ["data.name=imagefolder", f"data.root={data}", "data.image_size=16", f"run.out_dir={tmp_path / 'runs'}",
            "run.name=gated", "run.progress=false", "model.name=gated_base",
            "model.overrides={embed_dim: 32, depth: 1, num_heads: 2, patch_size: 4}", "model.compile=false",
            "views.global_size=16", "views.local_size=8", "views.n_local=2", "projector.hidden_dim=32",
            "projector.out_dim=8", "loss.num_slices=16", "optim.batch_size=8", "optim.max_steps=2", "probe.epochs=2",
            "probe.knn_k=3"]
    env = _env(plugin, AOT_CACHE=str(tmp_path / "cache"))
    aot = [sys.executable, "-m", "aot_lib.cli"]
    without = subprocess.run([*aot, "pretrain", *args], cwd=tmp_path, env={**env, "PYTHONPATH": str(ROOT)},
                             capture_output=True, text=True)
    assert without.returncode == 2 and without.stderr.startswith(
        "aot pretrain: model gated_base with overrides {'embed_dim': 32, 'depth': 1, 'num_heads': 2, 'patch_size': 4}: "
        "unknown model 'gated_base'."), without.stderr
    r = subprocess.run([*aot, "--import", "mypkg.models", "pretrain", *args], cwd=tmp_path, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    run = tmp_path / "runs" / "gated"
    assert json.loads((run / "metrics.json").read_text())["step"] == 2
    config = (run / "config.yaml").read_text()
    assert "imports:\n  - mypkg.models" in config or "imports: [mypkg.models]" in config, config
    p = subprocess.run([*aot, "probe", "-c", str(run / "config.yaml")], cwd=tmp_path, env=env, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    assert 0 <= json.loads((run / "probe.json").read_text())["linear_top1"] <= 100
    missing = subprocess.run([*aot, "--import", "mypkg.nothing", "pretrain", *args], cwd=tmp_path, env=env,
                             capture_output=True, text=True)
    assert missing.returncode == 1 and missing.stderr.strip() == (
        "aot pretrain: model.imports: cannot import 'mypkg.nothing' (No module named 'mypkg.nothing'); install it, "
        "or run from the folder that holds it, or put that folder on PYTHONPATH")
