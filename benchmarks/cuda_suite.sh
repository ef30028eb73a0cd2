#!/usr/bin/env bash
# The whole test suite on a CUDA machine, its logs under $OUT. Not CI: CI has no GPU.
# Wheels the machine lacks travel in .whl/ (pure Python, or cp312 manylinux); only those not installed are installed,
# without their dependencies, so the machine's torch stack is left as it is. Book-build tests need packages that do
# not travel (jupyter-book, nbclient, selenium, chromium): collection errors are reported, not fatal.
set -u
OUT=${OUT:-runs/cuda_suite}  # the device tool sets OUT; elsewhere the logs go to runs/cuda_suite/
mkdir -p "$OUT"
{ date -u +%FT%TZ; nvidia-smi -L; nproc; python -c "import sys, torch; print(sys.version.split()[0], torch.__version__)"; } \
    > "$OUT/device.txt" 2>&1
python -m pip list > "$OUT/pip_before.txt" 2>&1
todo=""
for w in .whl/*.whl; do
    [ -e "$w" ] || continue  # no .whl/ folder: nothing to install
    name=$(basename "$w" | cut -d- -f1)
    python -m pip show -q "$name" > /dev/null 2>&1 || todo="$todo $w"
done
echo "installing:$todo" > "$OUT/install.log"
[ -n "$todo" ] && python -m pip install -q --no-index --no-deps $todo >> "$OUT/install.log" 2>&1
export TQDM_DISABLE=1
start=$(date +%s)
timeout "${SUITE_LIMIT:-420}" python -m pytest -o addopts="" -p no:cacheprovider -n 8 --dist loadgroup \
    --continue-on-collection-errors -v -rfEs --durations=20 tests > "$OUT/pytest.log" 2>&1
echo "rc=$? wall_s=$(( $(date +%s) - start ))" >> "$OUT/pytest.log"
tail -40 "$OUT/pytest.log"
