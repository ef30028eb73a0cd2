"""aot_lib: AoT-ADMM, the attention-only white-box Transformer trained with LeJEPA."""
from . import models  # noqa: F401  (registers every model)
from .objectives.coding_rate import coding_rate, subspace_coding_rate
from .models.flops import count_flops
from .models.params import count_params
from .objectives.lejepa import LeJEPALoss
from .models.registry import (create_model, from_pretrained, is_model, list_families, list_models, paper_models,
                              register_model, register_sizes)
from .objectives.sigreg import SIGReg, epps_pulley
from .training.builders import encoder_inputs

__version__ = "0.1.0"

__all__ = [
    "create_model", "from_pretrained", "list_models", "is_model", "register_model", "register_sizes", "list_families",
    "paper_models",
    "count_params", "count_flops",
    "epps_pulley", "SIGReg", "LeJEPALoss",
    "coding_rate", "subspace_coding_rate",
    "encoder_inputs",
]
