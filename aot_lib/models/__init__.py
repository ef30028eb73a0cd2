"""The encoders: layers, one file per model family, the registry, pretrained folders, FLOP counts, compilation.

Imports only the base modules (``aot_lib.files``, ``aot_lib.runtime``); nothing here knows about losses,
data or training. A new model family is a file here, its sizes registered with ``register_sizes`` (or one
factory with ``@register_model``), imported below.
Importing this package registers every family.
"""
from .aot import AoT, AoTLayer
from .aot_admm import ADMMLayer, ADMMState, AoTADMM, admm_coefficients
from .crate import CRATE, CRATELayer
from .vit import ViT, ViTBlock

__all__ = ["AoT", "AoTLayer", "ADMMLayer", "ADMMState", "AoTADMM", "admm_coefficients",
           "CRATE", "CRATELayer", "ViT", "ViTBlock"]
