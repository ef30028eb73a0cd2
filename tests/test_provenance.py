"""What a run records about the machine its numbers came from (issue 36: float results differ between CPU kinds)."""
import re
from pathlib import Path

import pytest
import torch

from aot_lib.runtime import cpu_model, hardware_summary


def test_hardware_names_the_cpu_model_and_the_instruction_set_torch_uses():
    info = hardware_summary()
    assert info["cpu_isa"] == torch.backends.cpu.get_cpu_capability()  # e.g. AVX2 on an AMD EPYC, AVX512 on a Xeon
    assert info["torch"] == torch.__version__
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        pytest.skip("no /proc/cpuinfo (not Linux): the CPU model comes from platform.processor() there")
    first = re.search(r"^model name\s*:\s*(.*?)\s*$", cpuinfo.read_text(), re.M)
    assert info["cpu_model"] == cpu_model() == first.group(1)


@pytest.mark.parametrize("script", ["reprobe.py", "export_encoders.py", "recipe_search.py"])
def test_a_script_runs_its_own_checkouts_package_not_the_one_the_environment_points_to(tmp_path, script):
    """A venv shared between clones (or copied from one) has an editable install pointing at another checkout; a
    script run as ``python scripts/X.py`` would import that checkout's aot_lib and record its commit. Here another
    aot_lib comes first on PYTHONPATH and refuses to be imported: the script must not reach it."""
    import os
    import subprocess
    import sys

    other = tmp_path / "aot_lib"
    other.mkdir()
    (other / "__init__.py").write_text("raise ImportError('another checkout')\n")
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, str(root / "scripts" / script), "--help"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    assert "another checkout" not in done.stderr
