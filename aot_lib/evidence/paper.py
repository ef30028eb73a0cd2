"""The paper's own numbers, transcribed from its tables (labelled as the paper's wherever shown).

Keys are ``aot_lib`` model names. Parameters in millions and FLOPs in G as printed; accuracies in %.
"""
PARAMS_M = {  # Tables 1, 3, 4 (CIFAR setting: 32 px, patch 8, 10 classes)
    "crate_tiny": 5.41, "crate_small": 12.10, "crate_base": 21.44,
    "aot_admm_tiny": 3.64, "aot_admm_small": 8.11, "aot_admm_base": 14.36,
    "aot_tiny": 3.63, "aot_small": 8.11, "aot_base": 14.35,
    "vit_tiny": 5.3, "vit_small": 21.4, "vit_tiny_relu": 1.8, "vit_small_relu": 7.2,
}
PARAMS_IMAGENET_M = {"crate_base": 21.92, "aot_admm_base": 14.84}  # Table 2 (128 px, patch 16)
FLOPS_G = {  # Table 1
    "crate_tiny": 0.31, "crate_small": 0.69, "crate_base": 1.22,
    "aot_admm_tiny": 0.13, "aot_admm_small": 0.28, "aot_admm_base": 0.50,
}
LINEAR_PROBE_ACC = {  # Tables 1 and 3: LeJEPA pretraining, linear probe top-1
    "cifar10": {"crate_tiny": 85.61, "aot_admm_tiny": 84.22, "crate_small": 87.89, "aot_admm_small": 87.23,
                "crate_base": 89.18, "aot_admm_base": 88.88, "aot_tiny": 79.31, "aot_small": 83.36, "aot_base": 84.20},
    "cifar100": {"crate_tiny": 57.48, "aot_admm_tiny": 57.38, "crate_small": 61.64, "aot_admm_small": 62.41,
                 "crate_base": 63.56, "aot_admm_base": 63.54, "aot_tiny": 50.83, "aot_small": 56.51, "aot_base": 57.48},
}
FINETUNE_ACC = {  # Table 2: ImageNet-1K pretraining, full fine-tuning
    "cifar10": {"crate_base": 96.01, "aot_admm_base": 95.25},
    "cifar100": {"crate_base": 81.04, "aot_admm_base": 80.26},
}
KD_ACC_CIFAR10 = {"vit_tiny": 92.19, "vit_tiny_relu": 91.37, "vit_small": 93.58, "vit_small_relu": 93.67}  # Table 4
# Sec. 4.2 (Main Results), the paper's prose on AoT-ADMM against CRATE (Table 1): the parameters removed
# (M) and the reductions it states for them (%)
REMOVED_PARAMS_M_PROSE = {"tiny": 1.77, "small": 3.99, "base": 7.08}
SAVING_PCT_PROSE = {"tiny": 31.1, "small": 31.2, "base": 31.3}

#: The paper's equation numbers, as its LaTeX source numbers them (main text 1-19; the appendix, numbered within
#: its section, A.1-A.26), keyed by the source's labels (``eq:<label>``). The chapters cite the paper's equations
#: by these numbers; tests/test_paper_equations.py recounts them from the source when it is beside the repository.
EQUATION_NUMBERS = {
    "srr": "1", "global_rate": "2", "sigreg": "3", "theorem": "4", "compression_sparsity": "5",
    "subspace_rate": "6", "compression_rate": "7", "split": "8", "auglag": "9", "zsub": "10",
    "compression_gradient": "11", "mssa": "12", "zsub_gradient": "13", "zupdate": "14", "layer_updates": "18",
    "sup_jensen": "A.17", "sup_rate": "A.1",
    "total": "19", "sup_ep": "A.2", "sup_sigreg2": "A.6", "sup_spherical_moment": "A.8",
    "sup_spherical_identity": "A.11", "sup_sigreg_frobenius": "A.12", "sup_rate_factorization": "A.19",
    "sup_rate_gap": "A.22", "sup_proportionality": "A.23", "sup_global_equivalence": "A.24", "sup_gradients": "A.26",
}
