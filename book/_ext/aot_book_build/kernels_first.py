"""Sphinx extension: the chapters' kernels, prepared before any starts.

* aot_lib's CPU kernels are built (or loaded) once, in the build's own process (issue 54). A fresh environment then
  compiles the AoT-ADMM kernel here, saying so in the build log, and no chapter waits for the compiler or prints the
  build's line among its outputs.
* ``OMP_WAIT_POLICY=PASSIVE`` for every chapter's kernel (they inherit this process's environment) unless the
  reader set it: the chapters run thousands of tiny tensor operations, and with OpenMP's default spin-waiting one
  busy core elsewhere on a 2-core machine stalls each operation's barrier. Measured with one core kept busy:
  chapter 3 timed out a 120 s cell (its ADMM panel; 10 s idle) and took 12 s with the passive policy.
"""
import os


def setup(app):
    from aot_lib.cpu_kernels import prebuild

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    prebuild()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
