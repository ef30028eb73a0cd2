"""The white-box chapter's images (aot_lib.book.whitebox.draw_images): the split or the shipped thirty, and the fast
build profile's sample of the first images of each class."""
from pathlib import Path

import pytest
import torch

from aot_lib.book.whitebox import WHITEBOX_RUNS, draw_images, first_per_class
from aot_lib.training.config import load_config

ROOT = Path(__file__).resolve().parent.parent


def test_first_per_class_keeps_the_first_n_of_each_class_in_order():
    labels = torch.tensor([0, 1, 0, 2, 1, 0, 2, 2])
    assert first_per_class(labels, 2).tolist() == [0, 1, 2, 3, 4, 6]  # the third 0 (5) and third 2 (7) dropped
    assert first_per_class(labels, 1).tolist() == [0, 1, 3]
    assert first_per_class(labels, 9).tolist() == list(range(8))
    with pytest.raises(ValueError) as refused:
        first_per_class(labels, 0)
    assert str(refused.value) == "first_per_class needs at least one image of each class, got n=0"


def test_draw_images_without_the_split_reads_the_shipped_images_and_samples_them_per_class(tmp_path, monkeypatch):
    """No Imagenette under AOT_DATA (an empty folder): the 30 shipped images, 3 of each of 10 classes. One per class
    keeps 10 images, the first of each class, and says so; three or more per class keep them all, and the sentence
    is the plain one."""
    monkeypatch.setenv("AOT_DATA", str(tmp_path))
    cfg = load_config(ROOT / "results" / "cpu" / WHITEBOX_RUNS["aot_admm"] / "config.yaml")
    every = draw_images(cfg, ROOT)
    assert every.shipped and len(every.images) == 30 and len(every.classes) == 10
    assert every.source == ("the 30 Imagenette validation images shipped with the book (3 of each of its 10 "
                            "classes; book/images/imagenette_val)")
    one = draw_images(cfg, ROOT, per_class=1)
    firsts = [every.labels.tolist().index(c) for c in range(10)]
    assert one.labels.tolist() == list(range(10)) and torch.equal(one.images, every.images[firsts])
    assert one.source == f"the first 1 of each class (10 images: the fast build profile) of {every.source}"
    assert draw_images(cfg, ROOT, per_class=3).source == every.source


def test_verdict_words_group_the_verdicts_by_prediction_in_their_order():
    """The white-box chapter's sentence on its verdict table, worked by hand from five rows."""
    from aot_lib.book.whitebox import verdict_words
    from aot_lib.book.whitebox_predictions import PREDICTIONS

    compression, sparsity, attention = PREDICTIONS[0], PREDICTIONS[1], PREDICTIONS[2]
    rows = [dict(prediction=compression, family="AoT-ADMM", verdict="holds"),
            dict(prediction=compression, family="CRATE", verdict="holds"),
            dict(prediction=compression, family="AoT", verdict="fails"),
            dict(prediction=sparsity, family="CRATE", verdict="holds"),
            dict(prediction=attention, family="AoT-ADMM", verdict="not settled")]
    assert verdict_words(rows) == {
        "holds": (3, "compression for AoT-ADMM and CRATE; sparsity for CRATE"),
        "fails": (1, "compression for AoT"),
        "not settled": (1, "attention that concentrates for AoT-ADMM")}
    assert verdict_words(rows[:2])["fails"] == (0, "none")
    three = [dict(prediction=sparsity, family=f, verdict="fails") for f in ("AoT-ADMM", "CRATE", "AoT")]
    assert verdict_words(three)["fails"] == (3, "sparsity for AoT-ADMM, CRATE and AoT")
