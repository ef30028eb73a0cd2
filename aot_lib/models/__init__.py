"""Model families, one file each; importing this package registers them all."""
from .aot import AoT, AoTLayer
from .aot_admm import ADMMLayer, ADMMState, AoTADMM, admm_coefficients
from .crate import CRATE, CRATELayer
from .vit import ViT, ViTBlock

__all__ = ["AoT", "AoTLayer", "ADMMLayer", "ADMMState", "AoTADMM", "admm_coefficients",
           "CRATE", "CRATELayer", "ViT", "ViTBlock"]
