"""The settings the evidence chapters state in prose (epochs, widths, split sizes), asserted against the configs and
records they describe: a sentence typed by hand that no longer matches its config fails here, not in a reader's
mind. Results are never typed (the chapters compute them); these are the numbers of the set-up."""
import json
from pathlib import Path

import pytest

import aot_lib
from aot_lib.evidence import paper
from aot_lib.training.config import load_config

ROOT = Path(__file__).resolve().parent.parent
CPU = ROOT / "configs" / "cpu"


def _cfg(rel: str) -> dict:
    return load_config(CPU / rel)


def _recorded_probe(name: str) -> dict:
    return json.loads((ROOT / "results" / "cpu" / name / "probe.json").read_text())


def _words(n: int) -> str:
    return {2: "two", 3: "three", 5: "five", 10: "ten"}.get(n, str(n))


def _flops_ratio_vit_to_aot_admm() -> float:
    vit = _cfg("table4/vit_tiny_lejepa.yaml")["model"]
    ours = _cfg("aot_admm_cifar10.yaml")["model"]
    return (aot_lib.count_flops(aot_lib.create_model(vit["name"], num_classes=0, **vit["overrides"]))
            / aot_lib.count_flops(aot_lib.create_model(ours["name"], num_classes=0, **ours["overrides"])))


def _cases():
    recipe = _cfg("aot_admm_cifar10.yaml")
    width, depth, epochs = (recipe["model"]["overrides"]["embed_dim"], recipe["model"]["overrides"]["depth"],
                            recipe["optim"]["epochs"])
    paper_tiny = load_config(ROOT / "configs" / "paper" / "table1" / "aot_admm_tiny_cifar10.yaml")
    knn = _cfg("aot_admm_cifar10_seed2.yaml")["monitor"]
    t2_pre, t2_ft = _cfg("table2/aot_admm_imagenette.yaml"), _cfg("table2/aot_admm_imagenette_ft_cifar10.yaml")
    imagenette = _recorded_probe("cpu_crate_imagenette")
    t2_seeds = len(list((CPU / "table2").glob("aot_admm_imagenette.yaml"))
                   + list((CPU / "table2").glob("aot_admm_imagenette_seed*.yaml")))
    vit, teacher = _cfg("table4/vit_tiny_lejepa.yaml"), _cfg("table4/vit_tiny_teacher.yaml")
    sweep_epochs = {_cfg(f"sweep/{p.name}")["optim"]["epochs"] for p in (CPU / "sweep").glob("*.yaml")}
    assert len(sweep_epochs) == 1, sweep_epochs  # "in 3 epochs" speaks of every sweep run
    paper_width = paper_tiny["model"]["overrides"].get("embed_dim", aot_lib.create_model(
        paper_tiny["model"]["name"], num_classes=0).embed_dim)
    paper_depth = paper_tiny["model"]["overrides"].get("depth", len(aot_lib.create_model(
        paper_tiny["model"]["name"], num_classes=0).blocks))
    return [
        ("08_tables_1_3", f"about {round(paper.SAVING_PCT_PROSE['tiny'])} % of the parameters"),
        ("aot_lib/book/paper_tables.py", f"(width {width}, \"\n        \"depth {depth}, {epochs} epochs)"),  # Table 8.2
        ("08_tables_1_3", f"k-NN accuracy of {knn['knn_val']:,}\n# images of the validation split against a bank "
                          f"of {knn['knn_bank']:,} training images"),
        ("08_tables_1_3", f"{_words(epochs)}\n#   epochs at half "
                          + ("width and depth" if 2 * width == paper_width and 2 * depth == paper_depth
                             else "<width and depth are not half the paper's Tiny>")),
        ("09_transfer", f"at the recorded budget ({t2_pre['optim']['epochs']} epochs)"),
        ("09_transfer", f"pick, with {_words(t2_seeds)} seeds."),
        ("09_transfer", f"probed on the {imagenette['test_images']:,} images of its val folder"),
        ("09_transfer", f"A {imagenette['train_images']:,}-image subset"),
        ("09_transfer", f"{t2_ft['finetune']['epochs']} fine-tuning epochs"),
        ("11_table4_vit", f"for {vit['optim']['epochs']} epochs, not {epochs}, because a ViT-T layer costs\n#   "
                          f"{_words(round(_flops_ratio_vit_to_aot_admm()))} AoT-ADMM layers"),
        ("11_table4_vit", f"(depth {vit['model']['overrides']['depth']}, {teacher['finetune']['epochs']} epochs from "
                          "a LeJEPA-pretrained ViT-T)"),
        ("07_recipe_and_audit", f"moved the linear probe in {sweep_epochs.pop()} epochs"),
    ]


@pytest.mark.parametrize("chapter, phrase", _cases(), ids=lambda x: x if isinstance(x, str) and len(x) < 20 else None)
def test_a_setting_stated_in_prose_matches_its_config(chapter, phrase):
    path = ROOT / chapter if "/" in chapter else ROOT / "notebooks" / f"{chapter}.py"  # a chapter, or the module
    assert phrase in path.read_text(), f"{path.relative_to(ROOT)} no longer says {phrase!r}: update the sentence or the config"


def _prose(chapter: str) -> str:
    """A chapter's text with its comment markers and line breaks folded to single spaces."""
    text = (ROOT / "notebooks" / f"{chapter}.py").read_text()
    return " ".join(line.lstrip("#").strip() for line in text.splitlines())


def test_the_white_box_chapters_counts_match_what_it_draws():
    """Issue 58: chapter 10's counts in prose -- the shipped images, the images per figure, the encoders' training
    and the pictures' grid -- against the files, the chapter's code and the configs."""
    import re

    words = {3: "three", 4: "four", 30: "thirty"}
    prose = _prose("10_white_box")
    code = (ROOT / "notebooks" / "10_white_box.py").read_text()
    shipped = [p for p in (ROOT / "book" / "images" / "imagenette_val").rglob("*") if p.suffix.lower() == ".jpeg"]
    assert f"the {words[len(shipped)]} images that ship with the book" in prose
    # each figure's images: as many classes as images, as the code picks them
    picked = [int(n) for n in re.findall(r"distinct_class_picks\(drawn\.labels, (\d+)\)", code)]
    assert sorted(picked) == [3, 4]
    for n in picked:
        assert f"{words[n]} images of {words[n]} classes" in prose
    recipe = _cfg("table2/recipe.yaml")
    size, patch = recipe["model"]["overrides"]["img_size"], recipe["model"]["overrides"]["patch_size"]
    trained = _recorded_probe("cpu_crate_imagenette")["train_images"]
    assert (f"for {recipe['optim']['epochs']} epochs on {trained:,} images at {size} px, patch {patch}: an "
            f"${size // patch}\\times{size // patch}$ grid of patches") in prose
    big = int(re.search(r"^    BIG = (\d+)", code, re.M)[1])
    assert f"the pictures at {big} px (${big // patch}\\times{big // patch}$ patches)" in prose
