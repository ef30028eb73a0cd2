"""The H200 suite run's one unexplained failure, re-read here (eighth session): test_pretrain_checkpoint_probe_smoke's
pretraining and probe under a given torch, with the test's probe settings before 8fcc5b5 (tiny_config's: 5 epochs,
the default lr grid) and after it (50 epochs at lr 0.1). Prints one JSON line. Run it with each torch's python
(torch 2.11.0, the H200's, from a venv of its own; 2.14.1, this repository's) and PYTHONPATH at the checkout."""
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
from helpers import make_imagefolder, tiny_config  # noqa: E402

from aot_lib import train  # noqa: E402

out = {"torch": torch.__version__}
for name, extra in (("before_8fcc5b5", []), ("after_8fcc5b5", ["probe.epochs=50", "probe.lr=0.1"])):
    tmp = Path(tempfile.mkdtemp())
    os.environ["AOT_CACHE"] = str(tmp / "cache")
    cfg = tiny_config(make_imagefolder(tmp / "data"), tmp / "runs", *extra)
    train.pretrain(cfg)
    r = train.probe(cfg)
    out[name] = {k: r[k] for k in ("linear_top1", "linear_train_top1", "linear_lr", "knn_top1")}
    # the head's optimiser steps: one per batch of the training images, every epoch
    out[name]["head_steps"] = cfg["probe"]["epochs"] * math.ceil(r["train_images"] / cfg["probe"]["batch_size"])
print(json.dumps(out))
