# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,mystnb,-user_expressions
#     formats: py:percent
#     notebook_metadata_filter: -jupytext.text_representation
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# (ch-transfer)=
# # Table 2 at CPU scale: pretrain on ImageNet-style images, fine-tune on CIFAR
#
# **This chapter:** AoT-ADMM and CRATE pretrained with LeJEPA on Imagenette, then fully
# fine-tuned on CIFAR-10 and CIFAR-100, with the paper's numbers beside ours.

# %% tags=["remove-input"]
from aot_lib.book.pages import open_chapter

open_chapter(seed=0)

# %% tags=["remove-input"]
from pathlib import Path

from aot_lib.book.inline import phrases
from aot_lib.evidence import paper
from aot_lib.evidence.plan import PLAN_FILE, load_plan

ROOT = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()
t2_plan = load_plan(ROOT / PLAN_FILE)
(t2_margin,) = {t2_plan[k].margin.points for k in ("t2_cifar10", "t2_cifar100")}
assert "1.39" in t2_plan["t2_cifar10"].why, "the text: the margin before the plan"
behind = {data: acc["crate_base"] - acc["aot_admm_base"]
          for data, acc in paper.FINETUNE_ACC.items()}  # the paper's numbers
claim2 = phrases(c10=f"{behind['cifar10']:.2f}", c100=f"{behind['cifar100']:.2f}",
                 margin=f"{t2_margin:g}")

# %% [markdown]
# The paper's Table 2 pretrains the Base models on ImageNet-1K
# ([](#bib-deng2009imagenet)) with its ImageNet view setting (two global 128-px and two
# local 64-px crops, patch 16), then fine-tunes every weight on CIFAR-10 and CIFAR-100
# ([](#bib-krizhevsky2009cifar)). The paper's claim: AoT-ADMM "maintains competitive
# transfer performance while using approximately 32% fewer parameters",
# {eval}`claim2.c10` and {eval}`claim2.c100` points behind CRATE on CIFAR-10 and
# CIFAR-100 in its numbers
# (shaded in {numref}`tbl-transfer-table2-cpu`). This book reads "competitive" as parity
# within the analysis plan's Table 2 margin, {eval}`claim2.margin` point either way; the
# plan set it after both seeds were recorded (until then the runs were read against
# Table 1's 1.39), so the verdicts below are post hoc.
#
# **What is scaled down, and what the paper does not say.**
# {numref}`tbl-transfer-stages` lists every setting of the two stages as `aot_lib` runs
# them: the paper-scale configs
# (`configs/paper/table2/`) and the CPU-scale ones this chapter's runs used
# (`configs/cpu/table2/`), read from the files, with what the paper states about each.
# The paper gives the pretraining data, views, patch, epochs, learning rate and batch
# size, and says the backbone is "fully fine-tuned"; it gives no fine-tuning resolution,
# schedule or regularisation, and no augmentation beyond the crop sizes. Those values
# are assumptions of this reproduction: blur and solarisation follow DINO's multi-crop
# recipe ([](#bib-caron2021dino)) as LeJEPA's example does, and label smoothing 0.1 with
# weight decay 0.05 are the usual fine-tuning defaults of DeiT
# ([](#bib-touvron2021deit)). The projector and SIGReg settings are discussed in
# {ref}`the objective chapter <sec-objective-provenance>`. The commands below make seed
# 0's chain; `scripts/evidence_runs.sh table2` runs both seeds' chains, and the sweep
# and the from-scratch control are its groups `sweeps` and `controls`:
#
# ```bash
# export AOT_DATA=../shared/data
# t=configs/cpu/table2
# scripts/run_configs.sh results/cpu $t/{aot_admm,crate}_imagenette.yaml \
#     $t/{aot_admm,crate}_imagenette_ft_cifar{10,100}.yaml
# ```

# %% tags=["hide-input"]
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import display

from aot_lib import evidence
from aot_lib.evidence import paper, stats
from aot_lib.book.inline import phrases
from aot_lib.book.pages import data_label
from aot_lib.book.recorded import read_curve
from aot_lib.training.config import load_config
from aot_lib.data.datasets import DataError, describe_split
from aot_lib.book.paper_tables import encoder_size, table2_stages
from aot_lib.book.plotting import plot_training_curves
from aot_lib.book.tables import Col, Table, edge_pick_note, sweep_table, verdict_table

ROOT = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()
NAMES = {"aot_admm": "AoT-ADMM", "crate": "CRATE"}
DATASETS = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}
CPU_T2 = ROOT / "configs" / "cpu" / "table2"

# %% tags=["hide-input"]
table2_stages(ROOT)

# %% [markdown]
# (sec-transfer-data)=
# ## The data
#
# The three data sets come from the offline copies in the data folder (`AOT_DATA`),
# which differ from the official releases:
#
# * **Imagenette** ([](#bib-howard2019imagenette)) (10 easy ImageNet classes) stands in
#   for ImageNet-1K: a subset of its 160-px version, the first 300 training and 100
#   validation images of each class in file-name order.
# * **CIFAR-10**: the official train and test splits, re-encoded as JPEG at quality 75
#   (lossy), so accuracies can differ slightly from the lossless original.
# * **CIFAR-100**: only the official *training* set was available offline. Its last 100
#   images (by index in the official order) of every class form the test split here,
#   the other 400 the training split: results are on a held-out split of the official
#   training set, not on the official test set.
#
# On a machine with internet, `data.download=true` in a config (or on the command line)
# makes torchvision fetch the official CIFAR-10 and CIFAR-100 instead, and `data.root`
# can point at any ImageFolder tree, such as the full Imagenette or ImageNet-1K. What
# this build read is in {numref}`tbl-transfer-data`.

# %% tags=["hide-input"]
rows = []
for name, root in (
    ("imagefolder", "imagenette160-subset.zip"),
    ("cifar10", None),
    ("cifar100", None),
):
    for split in ("train", "test"):
        try:
            prov = describe_split(name, split, root)
        except DataError:
            rows.append((name, split, None,
                         "not on this machine (AOT_DATA); the records need none"))
            continue
        rows.append(
            (name, prov["split_dir"] or split, prov["n_images"], data_label(prov, name))
        )
Table(
    rows,
    [Col("name", "data"), Col("split"), Col("n", "images"), Col("label", "what it is")],
    caption="The data sets this chapter reads, as found in this build",
    name="tbl-transfer-data",
)

# %% [markdown]
# (sec-transfer-tuning)=
# ## One tuning budget for both families
#
# Each family's pretraining learning rate is its best of $\{10^{-3}, 2\times10^{-3},
# 4\times10^{-3}\}$ at the recorded budget (20 epochs), each point scored only on the
# probe's validation split of the Imagenette training images (`probe.test=false`; the
# table's note names the points probed with the test split earlier in their history),
# as in {ref}`sec-equal-tuning`; every point is in {numref}`tbl-transfer-sweep`. Each
# family then trains its chain (pretraining, then fine-tuning on each CIFAR set) at its
# own pick, with two seeds.

# %% tags=["hide-input"]
RESULTS = ROOT / "results" / "cpu"
shown, picks = sweep_table(
    RESULTS, "Table 2", NAMES,
    "The learning-rate sweep of the paper's Table 2: Imagenette, 20 epochs, "
    "validation only",
    name="tbl-transfer-sweep")
display(shown)
configured = {
    f: load_config(CPU_T2 / f"{f}_imagenette.yaml")["optim"]["lr"] for f in NAMES
}
for fam, lr in configured.items():
    assert picks["Table 2", fam] == lr, (fam, picks, configured)  # every sweep complete
lr_check = evidence.table2_lr_sensitivity(RESULTS)
t2 = phrases(picks=", ".join(f"{NAMES[f]} at {lr:g}" for f, lr in configured.items()),
             val_images=lr_check["val_images"],
             one=f"{100 / lr_check['val_images']:.2f}")

# %% [markdown]
# Each family pretrains at its pick: {eval}`t2.picks`.
# The validation split has {eval}`t2.val_images` images: one image is {eval}`t2.one`
# points, so neighbouring
# learning rates within a point or two are close to a tie; the rule picks the best
# anyway, for every family alike.

# %% [markdown]
# (sec-transfer-pretraining)=
# ## Pretraining on Imagenette
#
# The total loss, its prediction part and the SIGReg statistic of both families (seed
# 0);
# under them, a linear probe of the frozen encoder on Imagenette's `val` folder (its
# 1,000 images are this chapter's test split: never trained or tuned on), to
# show what pretraining alone learned. The probe is the *quick* protocol
# (`probe.protocol`, {ref}`ch-training`): a linear classifier trained with AdamW on
# cached features of un-augmented images, its learning rate chosen on a validation split
# carved from the training images; not the paper's protocol (SimCLR/BYOL-style, on
# augmented images ([](#bib-chen2020simclr); [](#bib-grill2020byol))), which costs as
# many passes of the encoder as it has epochs. The probes are in
# {numref}`tbl-transfer-pretraining`, the pretraining curves in
# {numref}`fig-imagenette-curves`.

# %% tags=["hide-input"]
# family -> parameters (M) of the encoder as pretrained (128 px, patch 16)
size = {f: encoder_size(CPU_T2 / f"{f}_imagenette.yaml", flops=False)[0] for f in NAMES}
pre_name = {
    f: load_config(CPU_T2 / f"{f}_imagenette.yaml")["run"]["name"] for f in NAMES
}


def cell_or_none(name: str) -> list | None:
    """The recorded seeds of a cell, or None while none is recorded."""
    try:
        return evidence.cell_runs(RESULTS, name)
    except FileNotFoundError:
        return None


pre = {f: cell_or_none(pre_name[f]) for f in NAMES}
done = {f: runs for f, runs in pre.items() if runs}
display(
    Table(
        [
            dict(
                model=NAMES[f],
                params=size[f],
                seeds=", ".join(str(r.seed) for r in runs),
                linear=str(stats.summarize([r.top1 for r in runs])),
            )
            if runs
            else dict(model=NAMES[f], params=size[f], seeds="pending")
            for f, runs in pre.items()
        ],
        [
            Col("model"),
            Col("params", "params (M)", ".2f"),
            Col("seeds"),
            Col("linear", "linear top-1 (%), mean ± std"),
        ],
        caption="LeJEPA pretraining on the Imagenette subset (width 192, depth 6), "
        "probed on the 1,000 images of its val folder, the test split here",
        name="tbl-transfer-pretraining",
        notes=["Ten classes: chance is 10 %."]
        + edge_pick_note((r for runs in done.values() for r in runs),
                         "These probes describe the pretraining; Table 2's claims "
                         "judge the fine-tuned accuracy, so they were not probed "
                         "wider.")
        + (
            ["pending: the run at the picked learning rate is not recorded yet "
             "(scripts/evidence_runs.sh table2)."]
            if len(done) < len(pre)
            else []
        ),
    )
)

# %% tags=["hide-input"] mystnb={"figure": {"caption": "LeJEPA pretraining on the Imagenette subset, first recorded seed of each family at its picked learning rate: total loss, prediction loss and SIGReg statistic against the step.", "name": "fig-imagenette-curves"}}
plot_training_curves({NAMES[f]: read_curve(runs[0].folder) for f, runs in done.items()})
plt.show()

# %% [markdown]
# (sec-transfer-finetuning)=
# ## Fine-tuning on CIFAR, and the same schedule from scratch
#
# Every weight is trained, with a new head, from the pretrained encoder; its position
# embedding is interpolated from the 8 × 8 grid of 128-px views to the 4 × 4 grid of
# 64-px images. The control trains the same architecture with the same schedule from
# random weights (`configs/cpu/table2/*_scratch_*.yaml`): the difference is what
# pretraining on Imagenette adds under this schedule. The schedule was set for
# fine-tuning and was not tuned for random weights, which may prefer a larger learning
# rate or more epochs: the control measures the gain at one fixed, short budget, and
# may overstate what pretraining adds once each start gets its own tuning. Both are in
# {numref}`tbl-transfer-table2-cpu`.

# %% tags=["hide-input"]
rows = []
for fam in NAMES:
    for data, label in DATASETS.items():
        row = dict(
            model=NAMES[fam], data=label, paper=paper.FINETUNE_ACC[data][f"{fam}_base"]
        )
        for kind, name in (
            ("ft", load_config(CPU_T2 / f"{fam}_imagenette_ft_{data}.yaml")),
            ("scratch", load_config(CPU_T2 / f"{fam}_scratch_{data}.yaml")),
        ):
            runs = cell_or_none(name["run"]["name"])
            row[kind] = (
                str(stats.summarize([r.top1 for r in runs])) + f" ({len(runs)})"
                if runs
                else "pending"
            )
        rows.append(row)
# the superseded lr-2e-3 chain of AoT-ADMM (seed 0 only): a sensitivity row, not a cell
finetune = load_config(CPU_T2 / "aot_admm_imagenette_ft_cifar10.yaml")["finetune"]
for r in lr_check["rows"]:
    rows.append(dict(model="AoT-ADMM at lr 2e-3 (superseded)", data=DATASETS[r["data"]],
                     ft=f"{r['superseded']:.2f} (seed 0)", scratch="—"))
display(
    Table(
        rows,
        [
            Col("model"),
            Col("data"),
            Col("ft", "fine-tuned top-1 (%), mean ± std (seeds)"),
            Col("scratch", "from scratch top-1 (%), mean ± std (seeds)"),
            Col("paper", "fine-tuned (%), Base, ImageNet-1K", ".2f", paper=True),
        ],
        name="tbl-transfer-table2-cpu",
        caption="The paper's Table 2 at CPU scale: Imagenette pretraining, full "
        "fine-tuning on "
        f"CIFAR at {finetune['image_size']} px for "
        f"{finetune['epochs']} epochs, beside training from "
        "scratch",
        notes=["Top-1 on the CIFAR-10 test images and on CIFAR-100's held-out split.",
               "The superseded rows: AoT-ADMM's chain at the learning rate it first "
               "ran with, before the equal sweep picked 4e-3; a sensitivity check, "
               "not a cell of the table (one seed)."]
        + (
            ["pending: not recorded yet (scripts/evidence_runs.sh table2 controls)."]
            if any("pending" in (r["ft"], r["scratch"]) for r in rows)
            else []
        ),
    )
)

# %% [markdown]
# The verdicts, paired by seed, with Student-$t$ intervals (`aot_lib.evidence`):
# AoT-ADMM − CRATE against the paper's parity claim, and each family's pretrained −
# from-scratch accuracy against the gain pretraining should give.

# %% tags=["hide-input"]
claims = [r for r in evidence.claim_rows(RESULTS) if r["claim"].where == "ch-transfer"]
display(verdict_table(evidence.verdict_rows(claims),
                      caption="Table 2's claims and our controls at CPU scale",
                      name="tbl-transfer-verdicts"))
(n,) = {r["diff"].n for r in claims}  # every comparison has the same paired seeds
assert n == 2, "the text: one degree of freedom"
assert all(r["plan"].post_hoc for r in claims), "the text: all post hoc"
gaps = {r["data"]: r for r in lr_check["rows"]}
base = paper.PARAMS_IMAGENET_M
assert set(gaps) == {"cifar10", "cifar100"}
verdicts = phrases(
    seeds=n, df=n - 1, t=f"{stats.t_quantile(0.975, n - 1):.2f}",
    val_gain=f"{lr_check['val'][0.004] - lr_check['val'][0.002]:.2f}",
    apart=lr_check["images_apart"], val_images=lr_check["val_images"],
    c10_old=f"{gaps['cifar10']['gap_superseded']:+.2f}",
    c10_new=f"{gaps['cifar10']['gap_picked']:+.2f}",
    c100_old=f"{gaps['cifar100']['gap_superseded']:+.2f}",
    c100_new=f"{gaps['cifar100']['gap_picked']:+.2f}",
    fewer=f"{1 - size['aot_admm'] / size['crate']:.0%}",
    paper_fewer=f"{1 - base['aot_admm_base'] / base['crate_base']:.0%}")

# %% [markdown]
# {numref}`tbl-transfer-verdicts` gives the verdicts. With {eval}`verdicts.seeds` seeds
# the 95 % interval reaches {eval}`verdicts.t` standard errors either side of the mean
# difference (Student's $t$ quantile at 0.975 with {eval}`verdicts.df` degree of
# freedom), so a parity claim is reproduced only if the seeds agree very closely: a
# verdict of not settled here says first that the seeds are few.
#
# **How much the verdicts rest on one choice.** AoT-ADMM's learning rate for Table 2
# moved from 2e-3 to 4e-3 when the sweep scored 4e-3 higher by {eval}`verdicts.val_gain`
# points of validation accuracy: {eval}`verdicts.apart` of {eval}`verdicts.val_images`
# validation images. At seed 0, the one seed the 2e-3 chain has, AoT-ADMM − CRATE is
# {eval}`verdicts.c10_old` at 2e-3 and {eval}`verdicts.c10_new` at 4e-3 on CIFAR-10,
# {eval}`verdicts.c100_old` and {eval}`verdicts.c100_new` on CIFAR-100 (the superseded
# rows of {numref}`tbl-transfer-table2-cpu`). The verdicts above use the pick, as the
# equal tuning of {ref}`sec-equal-tuning` does for every cell. Post hoc, and said here
# because it bears on the switch: that sweep and the switch (2026-11-24, commits
# 1a7fb5d and dc47fde) came after both families' fine-tuning accuracies at 2e-3 had
# been recorded and seen (2026-11-22, 9ed79b4).
#
# AoT-ADMM has {eval}`verdicts.fewer` fewer parameters than CRATE at this width (the
# paper: {eval}`verdicts.paper_fewer` at Base).

# %% [markdown]
# ## Exercises
#
# 1. **Is the gain the same for both families?** With `evidence.cell` read the
#    fine-tuned and from-scratch cells of both families, and compute the difference of
#    the two gains (AoT-ADMM's minus CRATE's) seed by seed with
#    `aot_lib.evidence.stats.paired_difference`. Is it distinguishable from 0?
# 2. **Tokens at two resolutions.** The encoder is pretrained on 128-px views with patch
#    16 and fine-tuned at 64 px. How many tokens does each give, and how many position
#    embeddings must `aot_lib.models.layers.interpolate_pos_embed` produce? Check with
#    the model's `pos_embed` shape before and after building it with `img_size=64`.
# 3. **The cost of the paper's fine-tuning resolution.** With `aot_lib.count_flops`,
#    compare the FLOPs per image of AoT-ADMM-Base at 64 px and at 128 px (patch 16).
#    By what factor would the CPU fine-tuning runs grow at 128 px?

# %% tags=["remove-input"]
counts = {v: sum(r["verdict"] == v for r in claims) for v in stats.VERDICTS}
assert not any(r["verdict"] == "pending" for r in claims), "the text: all recorded"
tally = evidence.one_sided_tally(claims)
learned = phrases(n=len(claims), reproduced=counts["reproduced"],
                  confirmed=counts["confirmed"], contradicted=counts["contradicted"],
                  unsettled=counts["not settled"], held=tally["held"],
                  judged=tally["judged"])

# %% [markdown]
# ## What we learned
#
# * The whole Table 2 pipeline (the ImageNet view recipe, LeJEPA pretraining at 128 px,
#   the position embedding resized for fine-tuning, full fine-tuning on another data
#   set) runs end to end on two CPU cores.
# * Of this chapter's {eval}`learned.n` comparisons, {eval}`learned.reproduced`
#   reproduced and {eval}`learned.confirmed` confirmed (our controls),
#   {eval}`learned.contradicted` contradicted and {eval}`learned.unsettled` not settled,
#   all post hoc. Read one-sided (non-inferiority, a secondary reading),
#   {eval}`learned.held` of the {eval}`learned.judged` parity claims hold.
# * A 3,000-image subset instead of ImageNet-1K, a narrower and shallower encoder and
#   5 fine-tuning epochs: the absolute accuracies are far below the paper's; the gaps
#   under one budget, and the control, are the numbers to compare.
# * The paper fixes the pretraining stage but not the fine-tuning one: its resolution,
#   schedule and regularisation here are assumptions, marked as such in the first
#   table.

# %% [markdown] tags=["remove-cell"]
# % aot-jupyterlab-key
# % Written after a build by `python book/_ext/aot_book_build jupyterlab-key`;
# % the book leaves this cell out (its tag remove-cell).
# ##### This chapter's references, as the book numbers them
#
# In the book these are links; in JupyterLab this cell gives them their numbers and
# titles, and the works the chapter cites their full references.
#
# :::{figure}
# :label: tbl-transfer-table2-cpu
# :kind: table
# :enumerator: 9.5
# The paper's Table 2 at CPU scale: Imagenette pretraining, full fine-tuning on CIFAR at
# 64 px for 5 epochs, beside training from scratch
# :::
#
# :::{figure}
# :label: tbl-transfer-stages
# :kind: table
# :enumerator: 9.1
# The paper's Table 2 in two stages: the paper-scale and CPU-scale configs (AoT-ADMM;
# CRATE's differ in the model and in the pretraining learning rate, each family's own
# pick of one sweep)
# :::
#
# (sec-objective-provenance)=
# ###### What the paper states, and what is ours
#
# :::{figure}
# :label: tbl-transfer-data
# :kind: table
# :enumerator: 9.2
# The data sets this chapter reads, as found in this build
# :::
#
# (sec-equal-tuning)=
# ###### One tuning budget for every family
#
# :::{figure}
# :label: tbl-transfer-sweep
# :kind: table
# :enumerator: 9.3
# The learning-rate sweep of the paper's Table 2: Imagenette, 20 epochs, validation only
# :::
#
# (ch-training)=
# ###### Training AoT-ADMM with LeJEPA, at CPU scale
#
# :::{figure}
# :label: tbl-transfer-pretraining
# :kind: table
# :enumerator: 9.4
# LeJEPA pretraining on the Imagenette subset (width 192, depth 6), probed on the 1,000
# images of its val folder, the test split here
# :::
#
# :::{figure}
# :label: fig-imagenette-curves
# :enumerator: 9.1
# LeJEPA pretraining on the Imagenette subset, first recorded seed of each family at its
# picked learning rate: total loss, prediction loss and SIGReg statistic against the
# step.
# :::
#
# :::{figure}
# :label: tbl-transfer-verdicts
# :kind: table
# :enumerator: 9.6
# Table 2's claims and our controls at CPU scale
# :::
#
# **Works cited**
#
# (bib-deng2009imagenet)=
# ###### Deng et al., 2009
#
# Jia Deng, Wei Dong, Richard Socher, Li-Jia Li, Kai Li, and Li Fei-Fei. Imagenet: a
# large-scale hierarchical image database. In IEEE Conference on Computer Vision and
# Pattern Recognition, 248–255. 2009.
#
# (bib-krizhevsky2009cifar)=
# ###### Krizhevsky, 2009
#
# Alex Krizhevsky. Learning multiple layers of features from tiny images. Technical
# Report, University of Toronto, 2009.
#
# (bib-caron2021dino)=
# ###### Caron et al., 2021
#
# Mathilde Caron, Hugo Touvron, Ishan Misra, Hervé Jégou, Julien Mairal, Piotr
# Bojanowski, and Armand Joulin. Emerging properties in self-supervised vision
# transformers. In Proceedings of the IEEE/CVF International Conference on Computer
# Vision, 9650–9660. 2021.
#
# (bib-touvron2021deit)=
# ###### Touvron et al., 2021
#
# Hugo Touvron, Matthieu Cord, Matthijs Douze, Francisco Massa, Alexandre Sablayrolles,
# and Hervé Jégou. Training data-efficient image transformers and distillation through
# attention. In International Conference on Machine Learning, 10347–10357. 2021.
#
# (bib-howard2019imagenette)=
# ###### Howard, 2019
#
# Jeremy Howard. Imagenette: a smaller subset of 10 easily classified classes from
# ImageNet. GitHub repository, 2019. URL: https://github.com/fastai/imagenette.
#
# (bib-chen2020simclr)=
# ###### Chen et al., 2020
#
# Ting Chen, Simon Kornblith, Mohammad Norouzi, and Geoffrey Hinton. A simple framework
# for contrastive learning of visual representations. In Proceedings of the 37th
# International Conference on Machine Learning, volume 119 of Proceedings of Machine
# Learning Research, 1597–1607. PMLR, 2020.
#
# (bib-grill2020byol)=
# ###### Grill et al., 2020
#
# Jean-Bastien Grill, Florian Strub, Florent Altché, Corentin Tallec, Pierre H.
# Richemond, Elena Buchatskaya, Carl Doersch, Bernardo Avila Pires, Zhaohan Daniel Guo,
# Mohammad Gheshlaghi Azar, Bilal Piot, Koray Kavukcuoglu, Rémi Munos, and Michal Valko.
# Bootstrap your own latent: a new approach to self-supervised learning. In Advances in
# Neural Information Processing Systems, volume 33, 21271–21284. 2020.
