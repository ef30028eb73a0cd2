#!/usr/bin/env bash
# Run and record each config given, one after another (resumable: run it again after a stop; a config whose
# run is recorded in the results folder already is skipped). A pretraining
# config is pretrained then probed; a fine-tuning or distillation config (one that sets that section itself,
# aot_lib.training.config.config_stage) is run with `aot finetune` or `aot distill`. Give a pretraining config before
# the configs that start from its checkpoint.
#
#   scripts/run_configs.sh results/cpu/sweep configs/cpu/sweep/*.yaml
#
# Each run goes to runs/<run.name>/ and its small files to <results folder>/<run.name>/ (`aot record`, which
# refuses a run made from uncommitted code). Run it from a clean checkout; AOT_DATA must point at the data.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=$1; shift
py=${PYTHON:-.venv/bin/python}
for cfg in "$@"; do
  read -r stage name < <($py -c "import sys; from aot_lib.training.config import config_stage, load_config; c = load_config(sys.argv[1]); print(config_stage(sys.argv[1]), c['run']['out_dir'] + '/' + c['run']['name'])" "$cfg")
  if [ -f "$dest/$(basename "$name")/run.json" ]; then  # recorded already: never trained or recorded twice
    echo "== $cfg: recorded in $dest/$(basename "$name"), skipped"; continue
  fi
  echo "== $cfg: $stage -> $name ($(date -u +%H:%M:%S))"
  $py -m aot_lib.cli "$stage" -c "$cfg" run.progress=false
  if [ "$stage" = pretrain ]; then $py -m aot_lib.cli probe -c "$cfg"; fi
  $py -m aot_lib.cli record "$name" "$dest/$(basename "$name")"
done
