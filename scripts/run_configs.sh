#!/usr/bin/env bash
# Pretrain, probe and record each config given, one after another (resumable: run it again after a stop).
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
  name=$($py -c "import sys; from aot_lib.config import load_config; c = load_config(sys.argv[1]); print(c['run']['out_dir'] + '/' + c['run']['name'])" "$cfg")
  echo "== $cfg -> $name ($(date -u +%H:%M:%S))"
  $py -m aot_lib.cli pretrain -c "$cfg" run.progress=false
  $py -m aot_lib.cli probe -c "$cfg"
  $py -m aot_lib.cli record "$name" "$dest/$(basename "$name")"
done
