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
