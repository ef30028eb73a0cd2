"""The contents manager JupyterLab opens the chapters with (``book/jupyter/jupyter_server_config.json``).

Why it exists: once a notebook's kernel starts, JupyterLab writes the kernel's ``language_info`` into the notebook's
metadata, and marks the notebook modified unless that metadata already held the same value. A chapter's ``.py`` file
cannot keep ``language_info`` (it names the Python version, so it would change from machine to machine), so every
chapter showed the unsaved-changes dot right after it was opened, although saving it changed nothing (issue 59).
This manager is jupytext's, plus one step: a chapter read for JupyterLab arrives with the ``language_info`` the
native ``python3`` kernel will report, so starting that kernel changes nothing. jupytext's metadata filter drops
``language_info`` again on save (``tests/test_jupyterlab.py``). A chapter run on another kernel still gets the mark,
correctly: its metadata does change.

Needs the ``[lab]`` extra (JupyterLab, jupytext, ipykernel).
"""
from __future__ import annotations

import copy
import functools

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class

#: The kernel whose ``language_info`` is filled in: the one every chapter's header names.
NATIVE_KERNEL = "python3"


@functools.cache
def native_kernel_language_info() -> dict:
    """What ipykernel's kernel answers in ``kernel_info_reply.language_info``, read from ipykernel itself (a kernel
    started from the server's own Python, which is what the ``python3`` kernelspec of a venv runs)."""
    from ipykernel.ipkernel import IPythonKernel

    return copy.deepcopy(IPythonKernel.language_info)


class ChapterContentsManager(build_async_jupytext_contents_manager_class(AsyncLargeFileManager)):
    """jupytext's contents manager; a text notebook for the native kernel is served with that kernel's
    ``language_info`` (see the module's docstring)."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if content and model["type"] == "notebook" and not path.endswith(".ipynb"):
            metadata = model["content"]["metadata"]
            if metadata.get("kernelspec", {}).get("name") == NATIVE_KERNEL and "language_info" not in metadata:
                metadata["language_info"] = native_kernel_language_info()
        return model
