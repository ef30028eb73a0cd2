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
# (ch-white-box)=
# # The white box, opened: attention, patch features and layer-wise rates
#
# **This chapter:** three trained Imagenette encoders beside their initialisations:
# per-head attention, a PCA of patch tokens, and each layer's rates, sparsity and rank.

# %% tags=["remove-input"]
from aot_lib.book.pages import open_chapter, pick

open_chapter(seed=0)

# %% [markdown]
# A white-box network is one whose layers are derived as steps of an optimisation, so
# its internals can be read against what the derivation says they should do. For the
# three families of this book the reading makes four predictions:
#
# 1. **Compression.** Each layer is a step that lowers $R^c(Z\mid U^\ell)$, the coding
#    rate of the tokens on the layer's own subspaces (the paper's Eq. (7)); a trained
#    network should do so layer after layer, more than at its initialisation.
# 2. **Sparsity.** AoT-ADMM's $V^\ell$ is a proximal step, a ReLU with a learned
#    threshold, so it holds exact zeros; CRATE's ISTA step too. AoT has no sparsifying
#    step, so this one is not judged for it.
# 3. **Attention that concentrates.** CRATE's white-box reading reported that the class
#    token's attention, head by head, falls on object parts without any segmentation
#    supervision ([](#bib-yu2023crate)); parts are more than this chapter can test, but
#    a network that compresses onto subspaces should at least concentrate its attention
#    on fewer patches than an untrained one.
# 4. **Patch features that separate the object.** A PCA of the patch tokens over many
#    images should give a first component that marks foreground against background.
#
# Each prediction is judged by numbers per image (compression by one per layer and one
# for the whole stack), for the trained encoder against the same network at its
# initialisation, with an interval; how, and what counts as holding or failing, was
# fixed in code before any verdict was computed (`aot_lib.book.whitebox_predictions`,
# whose commits the next cell names). It was not fixed before every number was seen:
# an earlier version of this chapter (commit 8d8f190, 2026-11-26) had already shown,
# for these encoders on 100 images, the point readings behind the first three
# predictions (how many layers lower $R^c$, the last layer's zeros, its attention on the
# top eighth of the patches), trained against initial. When the rules were written
# (56d9025, 2026-11-28), what was new was the image as the unit with a paired interval,
# and the fourth prediction's measure. So the first three verdicts are post hoc in that
# sense: the rule is the plan's, the direction it tests had been glimpsed. The pictures
# show what the numbers summarise.
#
# The encoders are the recorded Imagenette runs: AoT-ADMM and CRATE are the pretraining
# runs of {ref}`ch-transfer`, the paper's Table 2 at CPU scale (each family's pick of
# the learning rate), AoT was trained for this chapter with the same recipe and no
# tuning (`configs/cpu/whitebox/aot_imagenette.yaml`). All were pretrained with LeJEPA
# for 20 epochs on 3,000 images at 128 px, patch 16: an $8\times8$ grid of patches. That
# is a small fraction of the paper's ImageNet pretraining, so a prediction that does not
# show here may still hold at scale; one that shows is worth more.

# %% tags=["hide-input"]
import subprocess
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from IPython.display import display

import aot_lib
from aot_lib.book.panels import attention_panel
from aot_lib.book.tables import Col, Table
from aot_lib.book.whitebox import (IMAGENETTE_NAMES, distinct_class_picks, draw_images,
                                   judge_predictions, load_subjects, per_image_measures,
                                   plot_attention_overlay, plot_layer_audit,
                                   plot_pca_overlay, VERDICTS, verdict_words)
from aot_lib.book.inline import phrases
from aot_lib.book.whitebox_predictions import FAMILYWISE
from aot_lib.data.augment import prepare_images
from aot_lib.training.builders import normalization_for
from aot_lib.training.monitors import audit_layers, cls_attention, patch_pca

ROOT = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()
familywise = phrases(pct=f"{FAMILYWISE:.0%}".replace("%", " %"))
LABELS = {prefix: fam.label for prefix, fam in aot_lib.list_families().items()}
# the fast build profile (CI's) reads a quarter of each class: build time
PER_CLASS_FAST = 25
subjects, missing = load_subjects(ROOT / "results" / "cpu", LABELS)
for line in missing:
    print(line)
for s in subjects:
    print(f"{s.label}: results/cpu/{s.run}/encoder")
rules = subprocess.run(["git", "log", "--format=%h %as %s", "--",
                        "aot_lib/book/whitebox_predictions.py"], cwd=ROOT,
                       capture_output=True, text=True).stdout.splitlines()
print("the rules' history (oldest last):")
print("\n".join(textwrap.shorten(r, 88) for r in rules) or "(no git history here)")

# %% [markdown]
# The images are Imagenette validation images: the split the probe of {ref}`ch-transfer`
# reports on, never trained on and not tuned on here, only looked at. With `AOT_DATA`
# set (see the README) the chapter reads the whole split (the fast build profile, which
# CI uses, only the first {eval}`PER_CLASS_FAST` images of each class); without it, the
# thirty images that ship with the book (`book/images/imagenette_val`, credited in its
# `CREDITS.md`). The numbers are computed at the encoders' training size (128 px,
# $8\times8$ patches); the pictures at 224 px ($14\times14$ patches), so that parts can
# show: the encoders then resize their position embeddings to the finer grid (bicubic,
# as for LeJEPA's local views) and see each object 1.75 times larger in patches than in
# training, a setting they never trained at.

# %% tags=["hide-input"]
drawn = None
if subjects:
    cfg = subjects[0].config
    mean, std = normalization_for(cfg)
    size = cfg["views"]["global_size"]
    patch = subjects[0].trained.patch_size
    grid = (size // patch,) * 2
    drawn = draw_images(cfg, ROOT, per_class=pick(PER_CLASS_FAST, None))
    images = prepare_images(drawn.images, size, mean, std)
    BIG = 224  # the pictures' size: a 14x14 grid
    big_grid = (BIG // patch,) * 2
    n_classes = len(set(drawn.labels.tolist()))
    print(textwrap.fill(
        f"{drawn.source}: {len(images)} images of {n_classes} classes, measured at "
        f"{size} px ({grid[0]}x{grid[1]} patches), drawn at {BIG} px "
        f"({big_grid[0]}x{big_grid[1]} patches)", 88))
else:
    print("This chapter needs the recorded encoders (results/cpu).")

# %% tags=["hide-input"]
measures = {}


def measure_family(k: int) -> None:
    """The k-th family's trained and initial encoders measured on every image (a cell
    each: with the whole validation split a family takes a minute or two)."""
    if drawn is None or k >= len(subjects):
        return
    s = subjects[k]
    with torch.no_grad():
        measures[s.family] = {
            which: per_image_measures(enc, images, grid)
            for which, enc in (("trained", s.trained), ("initial", s.initial))}


states = {(s.label, which): enc for s in subjects
          for which, enc in (("trained", s.trained), ("initial", s.initial))}
measure_family(0)

# %% tags=["hide-input"]
measure_family(1)

# %% tags=["hide-input"]
measure_family(2)

# %% [markdown]
# (sec-wb-attention)=
# ## Per-head attention of the class token
#
# {numref}`fig-wb-heads` shows, for one image, where the class token of the last layer
# looks, head by head, over the image, for each trained encoder and for AoT-ADMM at its
# initialisation; all on one colour scale. {numref}`fig-wb-attention-panel` lets you
# walk through every layer and head of every encoder, trained and untrained, on four
# images of four classes, each beside its map.

# %% tags=["hide-input"]
if drawn is not None:
    # the images as shown: in [0, 1], not normalised
    shown = prepare_images(drawn.images, BIG, (0.0,) * 3, (1.0,) * 3)
    big = prepare_images(drawn.images, BIG, mean, std)
    picks = distinct_class_picks(drawn.labels, 4)
    with torch.no_grad():
        big_attention = {k: cls_attention(enc, big[picks]) for k, enc in states.items()}
        big_pca = {k: patch_pca(enc, big)[0] for k, enc in states.items()
                   if k[1] == "trained" or k[0] == subjects[0].label}
    names = [IMAGENETTE_NAMES.get(drawn.classes[int(drawn.labels[i])], "?")
             for i in picks]
    print("the four images: " + ", ".join(names))

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The class token's attention over the image in the last layer, one column per head, one row per encoder (the image on the left), at 224 px (14x14 patches); one colour scale, its bar on the right.", "name": "fig-wb-heads"}}
if drawn is not None:
    maps = {f"{s.label}, trained": big_attention[s.label, "trained"][-1, 1]
            for s in subjects}
    first = subjects[0]
    maps[f"{first.label}, initial"] = big_attention[first.label, "initial"][-1, 1]
    plot_attention_overlay(maps, shown[picks[1]], big_grid)
    plt.show()

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The class token's attention over four images of four classes (each beside its map) for a chosen encoder (family, trained or at initialisation), layer and head (or their mean), at 224 px; one logarithmic colour scale for all, its bar on the right. Computed for every setting when the page was built.", "name": "fig-wb-attention-panel"}}
if drawn is not None:
    display(attention_panel({f"{label}, {which}": a for (label, which), a
                             in big_attention.items()}, grid=big_grid,
                            images=shown[picks]))

# %% [markdown]
# (sec-wb-pca)=
# ## Patch tokens: a PCA over all images
#
# The last layer's patch tokens of all the images, one row per patch, centred; their
# first three principal components drawn as red, green and blue over the image, and the
# top quarter of the patches by the first component (signed so that border patches
# score low) outlined in white ({numref}`fig-wb-pca`). The fourth prediction reads the
# same kind of mask, but from a PCA fitted at the encoders' training size, 128 px; the
# picture re-fits it at 224 px so that the outline follows the object, so it shows the
# idea of the measure, not the very patches it counted.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "PCA of the last layer's patch tokens, fitted over all the images per encoder, at 224 px: for three images of three classes, components 1-3 as RGB over the image, the first component's top quarter outlined in white; the trained encoders beside AoT-ADMM at initialisation.", "name": "fig-wb-pca"}}
if drawn is not None:
    chosen = {f"{s.label}": big_pca[s.label, "trained"] for s in subjects}
    chosen[f"{first.label} (init.)"] = big_pca[first.label, "initial"]
    three = distinct_class_picks(drawn.labels, 3)
    plot_pca_overlay({k: v[three] for k, v in chosen.items()}, shown[three], big_grid)
    plt.show()

# %% [markdown]
# (sec-wb-layers)=
# ## Layer by layer: coding rate, sparsity, effective rank
#
# For each layer $\ell$ (`aot_lib.training.monitors.audit_layers`, on all the images at
# 128 px): $R^c(Z^\ell\mid U^\ell)$ with each $U_k^\ell$ replaced by an orthonormal
# basis of its span (Eq. (6) assumes orthonormal columns; the learned ones are not), the
# fraction of exact zeros and the mean magnitude of the sparse state (AoT-ADMM's
# $V^\ell$, CRATE's ISTA output, AoT's tokens), and the effective rank of the output
# tokens: the exponential of the entropy of their normalised singular values, between 1
# and $d=192$ ({numref}`fig-wb-layers`).

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Per layer, for each family (colour), trained (solid) and at initialisation (dashed): the coding rate of the layer's output on its own subspaces, the fraction of zeros and mean magnitude of the sparse state, and the effective rank of the output tokens.", "name": "fig-wb-layers"}}
if drawn is not None:
    with torch.no_grad():
        audits = {k: audit_layers(enc, images, orthonormal=True)
                  for k, enc in states.items()}
    plot_layer_audit({s.label: {"trained": audits[s.label, "trained"],
                                "initial": audits[s.label, "initial"]}
                      for s in subjects})
    plt.show()

# %% [markdown]
# (sec-wb-verdicts)=
# ## The predictions, judged
#
# {numref}`tbl-whitebox-verdicts` gives each prediction's number for every family it
# concerns: the mean over the images for the trained encoder and at initialisation, the
# difference with its interval, and the verdict of the rule fixed beforehand. The
# intervals are over images (one trained run per family: they say how sure this sample
# of images makes the reading, not how another training run would differ), each at the
# level that keeps the chance of any false "holds" or "fails" among all the verdicts of
# the table at {eval}`familywise.pct`, counting each verdict as one test. Compression is
# looser than that count: its "fails" can come from any one of its intervals (each layer
# and the stack), so its chance of a false "fails" is up to that many times its share.
# For compression the columns give the whole stack's drop in $R^c$ (first layer's input
# minus last layer's output), and the verdict also asks that every layer lower $R^c$.

# %% tags=["hide-input"]
if drawn is not None:
    verdicts = judge_predictions(measures, LABELS)
    level = verdicts[0]["judged"]["difference" if "difference" in verdicts[0]["judged"]
                                  else "gain"].confidence

    def row(v):
        """One verdict as a table row: trained, initial, difference and its interval."""
        j = v["judged"]
        t, i, d = ((j["stack"], j["stack_initial"], j["gain"]) if "gain" in j
                   else (j["trained"], j["initial"], j["difference"]))
        layers = (f"; {j['lowering']} of {len(j['layers'])} layers lower Rᶜ, "
                  f"{j['raising']} raise it" if "gain" in j else "")
        return dict(prediction=v["prediction"].title, family=v["family"],
                    trained=t.mean, initial=i.mean, diff=d.mean,
                    ci=f"[{d.low:+.3f}, {d.high:+.3f}]{layers}", verdict=v["verdict"])

    display(Table([row(v) for v in verdicts],
                  [Col("prediction"), Col("family"), Col("trained", "trained", ".3f"),
                   Col("initial", "at init.", ".3f"),
                   Col("diff", "trained − init.", "+.3f"),
                   Col("ci", f"interval ({100 * level:.2f} %)"), Col("verdict")],
                  caption="The chapter's predictions, trained against initial, judged "
                          "over the images",
                  name="tbl-whitebox-verdicts",
                  notes=[f"Judged on {len(images):,} images, one number per image "
                         "(compression: one per layer and one for the stack).",
                         *(f"{p.title}: {p.measure}." for p in
                           {v["prediction"].key: v["prediction"]
                            for v in verdicts}.values())]))

# %% tags=["hide-input"]
words = verdict_words(verdicts if drawn is not None else [])
(holds, held), (fails, failed), (unsettled, open_) = (words[v] for v in VERDICTS)
said = phrases(n=holds + fails + unsettled, holds=holds, holds_which=held, fails=fails,
               fails_which=failed, not_settled=unsettled, not_settled_which=open_)
# post hoc: every interval counted as a test, compression's layers and stack included
judged = verdicts if drawn is not None else []
strict = judge_predictions(measures, LABELS, count_intervals=True) if judged else []
strict_read = phrases(
    tests=strict[0]["tests"] if strict else 0, verdicts=len(strict),
    compression=sum(v["prediction"].key == "compression" for v in strict),
    kept=sum(v["verdict"] == w["verdict"] for v, w in zip(judged, strict)
             if v["prediction"].key == "compression"),
    changed=sum(v["verdict"] != w["verdict"] for v, w in zip(judged, strict)))

# %% [markdown]
# Of the {eval}`said.n` verdicts, {eval}`said.holds` read "holds"
# ({eval}`said.holds_which`), {eval}`said.fails` read "fails"
# ({eval}`said.fails_which`) and {eval}`said.not_settled` are not settled
# ({eval}`said.not_settled_which`).
#
# Post hoc, the stricter count: with every interval a verdict reads counted as one
# test ({eval}`strict_read.tests` instead of {eval}`strict_read.verdicts`), the
# compression verdicts read the same in {eval}`strict_read.kept` of
# {eval}`strict_read.compression` families, and {eval}`strict_read.changed` verdicts of
# the table change in all.
#
# A verdict of "fails" is as much a result as "holds": the reading of the trained
# network that the derivation suggests is not what these CPU-scale encoders do on these
# images, and the table says by how much. Whether it would hold after the paper's
# ImageNet pretraining is not something this chapter can say.
#
# ## Exercises
#
# 1. **Orthonormal or learned bases.** Rerun the audit with `orthonormal=False`: the
#    rates then use the learned $U^\ell$ as they are. Which layers change sign in
#    "in − out"? Why does Eq. (7) need orthonormal columns to be a coding rate?
# 2. **Which heads agree?** For the trained AoT-ADMM, compute the correlation between
#    the last layer's heads' attention maps over the images. Are some heads copies of
#    each other?
# 3. **The resolution.** Judge the attention prediction at 224 px instead of 128 px
#    (`per_image_measures` on `big`). Does the verdict change? What does the finer grid
#    change in the share "on the top eighth" of the patches?
#
# ## What we learned
#
# * The recorded encoders can be opened layer by layer with a few functions of
#   `aot_lib.training.monitors` — `audit_layers`, `layer_rates`, `cls_attention`,
#   `patch_pca`, `last_zeros` — and every number above is theirs.
# * Each prediction is a number with an interval and a rule fixed before its verdict,
#   so where a picture looks convincing and the number says otherwise, the number is
#   the reading: the table says which of the white-box readings hold at CPU scale and
#   which fail.

# %% [markdown] tags=["remove-cell"]
# % aot-jupyterlab-key
# % Written after a build by `python book/_ext/aot_book_build jupyterlab-key`;
# % the book leaves this cell out (its tag remove-cell).
# ##### This chapter's references, as the book numbers them
#
# In the book these are links; in JupyterLab this cell gives them their numbers and
# titles, and the works the chapter cites their full references.
#
# (ch-transfer)=
# ###### Table 2 at CPU scale: pretrain on ImageNet-style images, fine-tune on CIFAR
#
# :::{figure}
# :label: fig-wb-heads
# :enumerator: 10.1
# The class token’s attention over the image in the last layer, one column per head, one
# row per encoder (the image on the left), at 224 px (14x14 patches); one colour scale,
# its bar on the right.
# :::
#
# :::{figure}
# :label: fig-wb-attention-panel
# :enumerator: 10.2
# The class token’s attention over four images of four classes (each beside its map) for
# a chosen encoder (family, trained or at initialisation), layer and head (or their
# mean), at 224 px; one logarithmic colour scale for all, its bar on the right. Computed
# for every setting when the page was built.
# :::
#
# :::{figure}
# :label: fig-wb-pca
# :enumerator: 10.3
# PCA of the last layer’s patch tokens, fitted over all the images per encoder, at 224
# px: for three images of three classes, components 1-3 as RGB over the image, the first
# component’s top quarter outlined in white; the trained encoders beside AoT-ADMM at
# initialisation.
# :::
#
# :::{figure}
# :label: fig-wb-layers
# :enumerator: 10.4
# Per layer, for each family (colour), trained (solid) and at initialisation (dashed):
# the coding rate of the layer’s output on its own subspaces, the fraction of zeros and
# mean magnitude of the sparse state, and the effective rank of the output tokens.
# :::
#
# :::{figure}
# :label: tbl-whitebox-verdicts
# :kind: table
# :enumerator: 10.1
# The chapter's predictions, trained against initial, judged over the images
# :::
#
# **Works cited**
#
# (bib-yu2023crate)=
# ###### Yu et al., 2023
#
# Yaodong Yu, Sam Buchanan, Druv Pai, Tianzhe Chu, Ziyang Wu, Shengbang Tong, Benjamin
# D. Haeffele, and Yi Ma. White-box transformers via sparse rate reduction. Advances in
# Neural Information Processing Systems, 2023.
