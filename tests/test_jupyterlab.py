"""Opening, running and saving a chapter in JupyterLab leaves it byte for byte as committed (issue 38).

JupyterLab reads and writes the chapters' ``.py`` files through jupytext's contents manager. Each chapter is opened
through that manager, given what JupyterLab gives a notebook while it runs (the running kernel's ``kernelspec`` and
``language_info``, outputs, execution counts, per-cell execution timing and trust), saved back, and compared with
the file on disk. A markdown cell run by jupyterlab-myst keeps its ``{eval}`` results in ``user_expressions``: the
headers' ``cell_metadata_filter`` leaves them out of the file. Before the headers were pinned, a save added ``jupytext_version`` and ``format_version`` and
rewrote the kernel's display name, so ``git status`` turned dirty and the chapter's run record said ``+dirty``.
"""
import shutil
from pathlib import Path

import pytest

pytest.importorskip("jupyter_server", reason="needs jupyter_server (pip install -e '.[dev]'): jupytext's contents "
                                             "manager, the one JupyterLab uses, builds on it")
import asyncio  # noqa: E402
import json  # noqa: E402

from aot_lib.book.jupyterlab import ChapterContentsManager  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9]*.py"))

# What JupyterLab 4 sets on a notebook once ipykernel's python3 kernel has started (kernel_info_reply).
RUNNING_KERNEL = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                      "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                      "pygments_lexer": "ipython3", "version": "3.11.2"},
}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_chapter_saved_from_jupyterlab_after_a_run_is_unchanged(chapter, tmp_path):
    shutil.copyfile(chapter, tmp_path / chapter.name)
    manager = ChapterContentsManager(root_dir=str(tmp_path))  # the one book/jupyter/ configures
    nb = asyncio.run(manager.get(chapter.name, content=True, type="notebook"))["content"]
    nb.metadata.update(RUNNING_KERNEL)
    for count, cell in enumerate(nb.cells, 1):
        cell.metadata["trusted"] = True
        if cell.cell_type == "markdown":  # jupyterlab-myst keeps each {eval}'s last result beside its cell
            cell.metadata["user_expressions"] = [{"expression": "t1.diff", "result": {
                "status": "ok", "data": {"text/plain": "+0.49"}, "metadata": {}}}]
        if cell.cell_type == "code":
            cell.execution_count = count
            cell.outputs = [{"output_type": "stream", "name": "stdout", "text": "ran\n"}]
            cell.metadata["execution"] = {"iopub.execute_input": "2026-11-26T17:00:00.000000Z",
                                          "shell.execute_reply": "2026-11-26T17:00:01.000000Z"}
    asyncio.run(manager.save({"type": "notebook", "format": "json", "content": nb}, chapter.name))
    saved = (tmp_path / chapter.name).read_bytes()
    assert saved == chapter.read_bytes(), (
        f"{chapter.name} changed on save from JupyterLab: pin the header field jupytext rewrites "
        f"(compare the file in {tmp_path})")



def test_a_chapter_opens_with_the_language_info_its_kernel_will_report(tmp_path):
    """JupyterLab marks a notebook modified when its kernel's ``language_info`` differs from the notebook's; a
    chapter's file cannot keep it (it names the Python version), so the manager serves it. The reference is a real
    kernel's ``kernel_info_reply`` (the python3 kernelspec, as JupyterLab starts it): equal, so opening a chapter
    and starting its kernel leaves no unsaved-changes mark (seen in headless Chromium, JupyterLab 4.6.6: every
    chapter was marked before this manager and none after)."""
    jupyter_client = pytest.importorskip("jupyter_client", reason="needs jupyter_client (with ipykernel) to ask a "
                                                                  "real kernel for its language_info")
    chapter = CHAPTERS[0]
    shutil.copyfile(chapter, tmp_path / chapter.name)
    served = asyncio.run(ChapterContentsManager(root_dir=str(tmp_path)).get(chapter.name))["content"]["metadata"]
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name=served["kernelspec"]["name"])
    try:
        kc.kernel_info()
        reply = kc.get_shell_msg(timeout=60)["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert json.dumps(served["language_info"], sort_keys=True) == json.dumps(reply["language_info"], sort_keys=True)
    assert "language_info" not in chapter.read_text()  # and the file itself does not keep it
