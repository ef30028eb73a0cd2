"""Sphinx extension: build (or load) aot_lib's CPU kernels once, in the build's own process, before any chapter's
kernel starts (issue 54). A fresh environment then compiles the AoT-ADMM kernel here, saying so in the build log,
and no chapter waits for the compiler or prints the build's line among its outputs."""


def setup(app):
    from aot_lib.cpu_kernels import prebuild

    prebuild()
    return {"parallel_read_safe": True, "parallel_write_safe": True}
