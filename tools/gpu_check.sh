#!/usr/bin/env bash
# The GPU check of benchmarks/wide_network.py, as run on a lent GPU machine (no network
# there): wheels of what the machine lacks are carried in .whl/, the package of the last
# commit before the change in .gpu_old/ (measured in the same run, on the same card).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYMC_BNN_COMPILE_CACHE=off
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -m pip list 2>/dev/null | grep -i -E "^(jax|jaxlib|numpyro|numba|numpy|scipy|xarray) " | tee -a "$OUT/gpu.txt"
export PYTHONPATH=/tmp/site:$PWD
timeout 300 python3 benchmarks/wide_network.py --out "$OUT/wide_network_gpu.json" 2>&1 \
    | grep -v Warning | tee "$OUT/new.txt"
export PYTHONPATH=/tmp/site:$PWD/.gpu_old
timeout 150 python3 benchmarks/wide_network.py --rows 2000 --rss-rows 0 --steps 2000 \
    --repeats 1 --out "$OUT/wide_network_gpu_before.json" 2>&1 | grep -v Warning | tee "$OUT/old.txt"
