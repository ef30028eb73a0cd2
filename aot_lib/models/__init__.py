"""The encoders: layers, one file per model family, the registry, pretrained folders, FLOP counts, compilation.

Imports only the base modules (``aot_lib.files``, ``aot_lib.runtime``); nothing here knows about losses,
data or training. A new model family is a file here, its sizes registered with ``register_sizes`` (or one
factory with ``@register_model``), imported below.
Importing this package registers every family.
"""
# registration order is the order the book and the benchmarks list the families in (aot_lib.list_families)
from .aot_admm import ADMMLayer, ADMMState, AoTADMM, admm_coefficients  # isort: skip
from .crate import CRATE, CRATELayer  # isort: skip
from .aot import AoT, AoTLayer  # isort: skip
from .vit import ViT, ViTBlock  # isort: skip

__all__ = ["AoT", "AoTLayer", "ADMMLayer", "ADMMState", "AoTADMM", "admm_coefficients",
           "CRATE", "CRATELayer", "ViT", "ViTBlock"]
