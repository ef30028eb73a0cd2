# ---
# jupyter:
#   jupytext:
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
from aot_lib.book.pages import run_record_box

run_record_box(seed=0)

# %% [markdown]
# A white-box network is one whose layers are derived as steps of an optimisation, so
# its internals can be read against what the derivation says they should do. For the
# three families of this book the reading makes four predictions, each one a picture or
# a number below:
#
# 1. **Compression.** Each layer is a step that lowers $R^c(Z\mid U^\ell)$, the coding
#    rate of the tokens on the layer's own subspaces (the paper's Eq. (6)); a trained
#    network should do so layer after layer, more than at its initialisation.
# 2. **Sparsity.** AoT-ADMM's $V^\ell$ is a proximal step, a ReLU with a learned
#    threshold, so it holds exact zeros; CRATE's ISTA step too. AoT has no sparsifying
#    step.
# 3. **Attention that finds parts.** CRATE's white-box reading reported that the class
#    token's attention, head by head, falls on object parts without any segmentation
#    supervision ([](#bib-yu2023crate)); a network that compresses onto subspaces should
#    concentrate its attention on fewer patches than an untrained one.
# 4. **Patch features that separate the object.** A PCA of the patch tokens over many
#    images should give a first component that marks foreground against background.
#
# The encoders are the recorded Imagenette runs: AoT-ADMM and CRATE are the pretraining
# runs of {ref}`ch-transfer`, the paper's Table 2 at CPU scale (each family's pick of
# the learning rate), AoT was trained for this chapter with the same recipe and no
# tuning (`configs/cpu/whitebox/aot_imagenette.yaml`). All were pretrained with LeJEPA
# for 20 epochs on 3,000 images at 128 px, patch 16: an $8\times8$ grid of patches. That
# is a small fraction of the paper's ImageNet pretraining, so a prediction that does not
# show here may still hold at scale; one that shows is worth more.

# %% tags=["hide-input"]
import textwrap
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from IPython.display import Markdown, display

import aot_lib
from aot_lib.book.pages import Admonition, data_missing_note
from aot_lib.book.panels import attention_panel
from aot_lib.book.photos import PHOTO_CREDITS, sample_photos
from aot_lib.book.tables import Col, Table
from aot_lib.book.whitebox import (attention_mass_on_top, load_subjects,
                                   plot_head_attention, plot_layer_audit,
                                   plot_patch_pca)
from aot_lib.data.augment import prepare_images
from aot_lib.data.datasets import DataError
from aot_lib.training.builders import load_data, normalization_for
from aot_lib.training.monitors import audit_layers, cls_attention, patch_pca

ROOT = Path.cwd().parent if Path.cwd().name == "notebooks" else Path.cwd()
LABELS = {prefix: fam.label for prefix, fam in aot_lib.list_families().items()}
subjects, missing = load_subjects(ROOT / "results" / "cpu", LABELS)
for line in missing:
    print(line)
for s in subjects:
    print(f"{s.label}: results/cpu/{s.run}/encoder")

# %% [markdown]
# The images are the first ten of every class in Imagenette's `val` folder, the split
# the probe of {ref}`ch-transfer` (the paper's Table 2 at CPU scale) reports on:
# nothing here is tuned on them, they are only looked at. Each is resized from 160 to
# 128 px and normalised as the encoders saw their training views.

# %% tags=["hide-input"]
images = None
if subjects:
    cfg = subjects[0].config
    mean, std = normalization_for(cfg)
    size = cfg["views"]["global_size"]
    grid = (size // subjects[0].trained.patch_size,) * 2
    try:
        data = load_data(cfg, "test").subset(100)
        images = prepare_images(data.images, size, mean, std)
        print(f"{len(images)} images of {len(data.classes)} classes at {size} px, "
              f"{grid[0]}x{grid[1]} patches")
        print(textwrap.fill(f"from {data.provenance['label']}", 88))
    except DataError:  # Imagenette not here (AOT_DATA): the sample photos stand in
        photos = sample_photos(160)  # the stored size of the Imagenette subset
        images = prepare_images(photos, size, mean, std)
        display(Admonition(
            "Sample photographs",
            data_missing_note("Imagenette") + " Every picture and number below then "
            f"describes these {len(photos)} photographs ("
            + "; ".join(f"{k}: {v}" for k, v in PHOTO_CREDITS.items())
            + "), not Imagenette's validation images, and the text's reading of them "
            "may not hold.", kind="note"))
if images is None:
    print("This chapter needs the recorded encoders and AOT_DATA pointing at the data.")

# %% tags=["hide-input"]
if images is not None:
    with torch.no_grad():
        states = {(s.label, which): enc for s in subjects
                  for which, enc in (("trained", s.trained), ("initial", s.initial))}
        attention = {k: cls_attention(enc, images) for k, enc in states.items()}
        audits = {k: audit_layers(enc, images, orthonormal=True)
                  for k, enc in states.items()}
        pcas = {k: patch_pca(enc, images) for k, enc in states.items()}

# %% [markdown]
# (sec-wb-attention)=
# ## Per-head attention of the class token
#
# {numref}`fig-wb-heads` shows, for one image, where the class token of the last layer
# looks, head by head, for each trained encoder and for AoT-ADMM at its initialisation;
# all on one colour scale. {numref}`fig-wb-attention-panel` lets you walk through every
# layer and head of every encoder, trained and untrained, on four images.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The class token's attention to the 64 patches in the last layer, one column per head, one row per encoder (the image on the left); one colour scale, its bar on the right.", "name": "fig-wb-heads"}}
if images is not None:
    index = 3 * (len(images) // 10)  # the first image of the fourth class
    maps = {f"{s.label}, trained": attention[s.label, "trained"][-1, index]
            for s in subjects}
    first = subjects[0]
    maps[f"{first.label}, initial"] = attention[first.label, "initial"][-1, index]
    plot_head_attention(maps, images[index], mean, std, grid)
    plt.show()

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The class token's attention to the patches of four images for a chosen encoder (family, trained or at initialisation), layer and head (or their mean); one colour scale for all, its bar on the right. Computed for every setting when the page was built.", "name": "fig-wb-attention-panel"}}
if images is not None:
    picks = [c * (len(images) // 10) for c in (0, 3, 6, 9)]
    display(attention_panel({f"{label}, {which}": a[:, picks] for (label, which), a
                             in attention.items()}, grid=grid))

# %% [markdown]
# How concentrated is it? {numref}`tbl-whitebox-attention-focus` gives the share of the
# class token's attention that falls on its top eighth of the patches (8 of 64),
# averaged over heads and the 100 images: 0.125 would be uniform attention, 1 all of it
# on eight patches.

# %% tags=["hide-input"]
if images is not None:
    focus = {k: [attention_mass_on_top(a[layer]) for layer in range(a.shape[0])]
             for k, a in attention.items()}
    n_layers = len(next(iter(focus.values())))
    rows = [(label, which, *focus[label, which]) for label, which in focus]
    display(Table(rows, [Col("family"), Col("which", "encoder"),
                         *[Col(f"l{i}", f"layer {i + 1}", ".3f")
                           for i in range(n_layers)]],
                  caption="Share of the class token's attention on its top 8 of 64 "
                  "patches", name="tbl-whitebox-attention-focus"))
    gains = {s.label: focus[s.label, "trained"][-1] - focus[s.label, "initial"][-1]
             for s in subjects}
    display(Markdown(
        "In the last layer training "
        + ("raised" if all(g > 0 for g in gains.values())
           else "did not raise everywhere")
        + " that share: "
        + ", ".join(f"{label} by {g:+.3f}" for label, g in gains.items())
        + " over its initialisation."))

# %% [markdown]
# (sec-wb-pca)=
# ## Patch tokens: a PCA over all images
#
# The last layer's patch tokens of all 100 images, one row per patch, centred; its first
# principal component as grey levels (signed so that border patches score low), and the
# next three as red, green and blue ({numref}`fig-wb-pca`). Where the first component
# separates an object, the grey map shows its outline. How much of the variance each
# component carries is in {numref}`tbl-whitebox-pca-variance`.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "PCA of the last layer's patch tokens, fitted over 100 Imagenette images per encoder: for three images, the first component (grey; border patches signed low) and components 2-4 as RGB, trained encoders beside AoT-ADMM at initialisation.", "name": "fig-wb-pca"}}
if images is not None:
    chosen = {f"{s.label}": pcas[s.label, "trained"][0] for s in subjects}
    chosen[f"{first.label} (init.)"] = pcas[first.label, "initial"][0]
    picks = [c * (len(images) // 10) for c in (0, 3, 8)]
    plot_patch_pca({k: v[picks] for k, v in chosen.items()}, images[picks], mean, std,
                   grid)
    plt.show()

# %% tags=["hide-input"]
if images is not None:
    display(Table([(label, which, *pcas[label, which][1].tolist())
                   for label, which in pcas],
                  [Col("family"), Col("which", "encoder"),
                   *[Col(f"pc{k}", f"PC {k + 1} (share)", ".3f") for k in range(4)]],
                  caption="Share of the patch tokens' variance per principal "
                  "component", name="tbl-whitebox-pca-variance"))

# %% [markdown]
# Without segmentation masks for these images the foreground reading is by eye, not a
# number: a first component that traces an object is what the prediction asks for.
#
# (sec-wb-layers)=
# ## Layer by layer: coding rate, sparsity, effective rank
#
# For each layer $\ell$ (`aot_lib.training.monitors.audit_layers`, on the 100 images):
# $R^c(Z^\ell\mid U^\ell)$ with each $U_k^\ell$ replaced by an orthonormal basis of its
# span (Eq. (6) assumes orthonormal columns; the learned ones are not), the fraction of
# exact zeros and the mean magnitude of the sparse state (AoT-ADMM's $V^\ell$, CRATE's
# ISTA output, AoT's tokens), and the effective rank of the output tokens: the
# exponential of the entropy of their normalised singular values, between 1 and
# $d=192$ ({numref}`fig-wb-layers`, summed up in
# {numref}`tbl-whitebox-layer-summary`).

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Per layer, for each family (colour), trained (solid) and at initialisation (dashed): the coding rate of the layer's output on its own subspaces, the fraction of zeros and mean magnitude of the sparse state, and the effective rank of the output tokens.", "name": "fig-wb-layers"}}
if images is not None:
    plot_layer_audit({s.label: {"trained": audits[s.label, "trained"],
                                "initial": audits[s.label, "initial"]}
                      for s in subjects})
    plt.show()

# %% tags=["hide-input"]
if images is not None:
    def lowering(rows):
        """Layers whose output has a lower R^c than their input (own subspaces)."""
        return sum(r["rc_out"] < r["rc_in"] for r in rows)

    summary = []
    for s in subjects:
        t, i = audits[s.label, "trained"], audits[s.label, "initial"]
        summary.append(dict(family=s.label, lower_t=lowering(t), lower_i=lowering(i),
                            drop_t=t[0]["rc_in"] - t[-1]["rc_out"],
                            drop_i=i[0]["rc_in"] - i[-1]["rc_out"],
                            zeros_t=t[-1]["zeros"], zeros_i=i[-1]["zeros"],
                            erank_t=t[-1]["erank"], erank_i=i[-1]["erank"]))
    display(Table(summary, [
        Col("family"), Col("lower_t", "layers lowering Rᶜ, trained"),
        Col("lower_i", "… at init."),
        Col("drop_t", "Rᶜ in − out, trained", ".1f"),
        Col("drop_i", "… at init.", ".1f"),
        Col("zeros_t", "zeros, last layer", ".3f"),
        Col("zeros_i", "… at init.", ".3f"), Col("erank_t", "eff. rank, last", ".1f"),
        Col("erank_i", "… at init.", ".1f")],
        caption=f"What the layers do, trained and at initialisation ({len(t)} layers)",
        name="tbl-whitebox-layer-summary"))
    more = [r["family"] for r in summary if r["lower_t"] > r["lower_i"]]
    lower_rank = [r["family"] for r in summary if r["erank_t"] < r["erank_i"]]
    display(Markdown(
        f"Trained, more layers lower $R^c$ than at initialisation in "
        f"{', '.join(more) if more else 'no family'}"
        f" (of {len(summary)}); the last layer's tokens span fewer directions "
        f"(a lower effective rank) after training in "
        f"{', '.join(lower_rank) if lower_rank else 'no family'}."))

# %% [markdown]
# ## What the pictures say
#
# The summary below is generated from the tables above, prediction by prediction.

# %% tags=["hide-input"]
if images is not None:
    by = {r["family"]: r for r in summary}
    every_layer = [f for f, r in by.items() if r["lower_t"] == len(t)]
    sparse = {f: r["zeros_t"] for f, r in by.items()}
    # the families with a sparsifying step: zeros in their state already at init.
    zeros_init = {f: r["zeros_i"] for f, r in by.items() if r["zeros_i"] > 0}
    expanding = {s.label: [i + 1 for i, r in enumerate(audits[s.label, "trained"])
                           if r["rc_out"] >= r["rc_in"]] for s in subjects}
    display(Markdown("\n".join([
        "* **Compression.** Trained, "
        + "; ".join(f"{f}: {r['lower_t']} of {len(t)} layers lower $R^c$ "
                    f"({r['lower_i']} at initialisation)" for f, r in by.items())
        + ". "
        + ("Every layer compresses in " + ", ".join(every_layer) + "."
           if every_layer else
           "In no family does every layer compress; the trained layers that do not: "
           + "; ".join(f"{f} {', '.join(map(str, ls))}" for f, ls in expanding.items())
           + "."),
        "* **Sparsity.** Fraction of exact zeros in the last layer's sparse state: "
        + ", ".join(f"{f} {z:.2f}" for f, z in sparse.items())
        + ". Training "
        + ("changed it by less than 0.1 in every family"
           if all(abs(r["zeros_t"] - r["zeros_i"]) < 0.1 for r in by.values())
           else "moved it by 0.1 or more in "
           + ", ".join(f for f, r in by.items()
                       if abs(r["zeros_t"] - r["zeros_i"]) >= 0.1))
        + ". At initialisation it is already "
        + ", ".join(f"{f} {z:.2f}" for f, z in zeros_init.items())
        + ": a ReLU-type step zeroes the negative part of roughly symmetric inputs "
        "before any training.",
        "* **Attention.** The last layer's share of attention on the top eighth of "
        "the patches (0.125 is uniform), trained against initialisation: "
        + ", ".join(f"{label} {focus[label, 'trained'][-1]:.2f} against "
                    f"{focus[label, 'initial'][-1]:.2f}" for label in by) + ".",
        "* **Patch features.** The first component carries "
        + ", ".join(f"{label} {pcas[label, 'trained'][1][0]:.2f}" for label in by)
        + " of the patch variance trained ("
        + ", ".join(f"{pcas[label, 'initial'][1][0]:.2f}" for label in by)
        + " at initialisation); whether it outlines the object is read from the "
        "figure.",
    ])))

# %% [markdown]
# ## Exercises
#
# 1. **Orthonormal or learned bases.** Rerun the audit with `orthonormal=False`: the
#    rates then use the learned $U^\ell$ as they are. Which layers change sign in
#    "in − out"? Why does Eq. (6) need orthonormal columns to be a coding rate?
# 2. **Which heads agree?** For the trained AoT-ADMM, compute the correlation between
#    the last layer's heads' attention maps over the 100 images. Are some heads copies
#    of each other?
# 3. **A foreground score.** Take the top 25 % of patches by the first principal
#    component as "foreground" and measure how often it includes the image's centre
#    patch. Compare the trained encoders with their initialisations.
#
# ## What we learned
#
# * The recorded encoders can be opened layer by layer with three functions of
#   `aot_lib.training.monitors` — `audit_layers`, `cls_attention`, `patch_pca` — and
#   every number above is theirs.
# * At CPU scale the white-box predictions hold in part, as the summary above says
#   prediction by prediction; the untrained network is the control that tells which part
#   comes from training and which from the architecture alone.

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
# The class token’s attention to the 64 patches in the last layer, one column per head,
# one row per encoder (the image on the left); one colour scale, its bar on the right.
# :::
#
# :::{figure}
# :label: fig-wb-attention-panel
# :enumerator: 10.2
# The class token’s attention to the patches of four images for a chosen encoder
# (family, trained or at initialisation), layer and head (or their mean); one colour
# scale for all, its bar on the right. Computed for every setting when the page was
# built.
# :::
#
# :::{figure}
# :label: tbl-whitebox-attention-focus
# :kind: table
# :enumerator: 10.1
# Share of the class token's attention on its top 8 of 64 patches
# :::
#
# :::{figure}
# :label: fig-wb-pca
# :enumerator: 10.3
# PCA of the last layer’s patch tokens, fitted over 100 Imagenette images per encoder:
# for three images, the first component (grey; border patches signed low) and components
# 2-4 as RGB, trained encoders beside AoT-ADMM at initialisation.
# :::
#
# :::{figure}
# :label: tbl-whitebox-pca-variance
# :kind: table
# :enumerator: 10.2
# Share of the patch tokens' variance per principal component
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
# :label: tbl-whitebox-layer-summary
# :kind: table
# :enumerator: 10.3
# What the layers do, trained and at initialisation (6 layers)
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
