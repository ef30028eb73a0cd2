"""The training API in one import (stable names; the work lives in one module per job):

* :mod:`aot_lib.training.pretrain` — LeJEPA pretraining (Algorithm 1);
* :mod:`aot_lib.training.probe` — linear and k-NN probes of a frozen encoder;
* :mod:`aot_lib.training.supervised` — full fine-tuning (Table 2) and hard-label distillation (Table 4);
* :mod:`aot_lib.training.loop` — the loop they share: resume, logging, checkpoints, non-finite losses, Ctrl-C;
* :mod:`aot_lib.training.runs` — run folders, the one checkpoint layout, atomic writes, recording results;
* :mod:`aot_lib.training.optim` — parameter groups, the warm-up + cosine schedule, the data order;
* :mod:`aot_lib.training.builders` — what the commands build alike: encoder, data, normalisation, schedule.
"""
from .objectives.lejepa import LeJEPAModel
from .training.builders import build_encoder
from .training.evaluation import extract_features, knn_probe
from .training.loop import NonFiniteLossError, fit
from .training.optim import param_groups, warmup_cosine
from .training.pretrain import build_lejepa_model, pretrain
from .training.probe import linear_probe, load_encoder, probe
from .training.recording import record_run
from .training.runs import (CheckpointError, RunLockedError, RunStopped, encoder_state_dict, load_checkpoint, merge_csv_logs,
                            run_dir, save_checkpoint)
from .training.supervised import distill, evaluate, finetune

__all__ = ["pretrain", "probe", "finetune", "distill", "record_run", "NonFiniteLossError", "CheckpointError",
           "RunLockedError", "RunStopped", "extract_features", "linear_probe", "knn_probe", "load_checkpoint", "load_encoder",
           "build_encoder", "build_lejepa_model", "LeJEPAModel", "encoder_state_dict", "merge_csv_logs", "run_dir",
           "save_checkpoint", "fit", "evaluate", "param_groups", "warmup_cosine"]
