#!/usr/bin/env bash
# One short device call for tutorial 02's host path (issue #9, helper host02), ~100 s on an H200:
#   bash bench/tutorial02_device.sh <triton-tutorials folder>
# 1. bench/tutorial02_host.py: softmax() host time per call and per step, naiad and Triton, real
#    driver (the instrument: where the time goes); 2. the tutorial case as the table measures it
#    (bench/triton_tutorials.py --only 02 --reps 30); 3. bench/gpu.py's host launch overhead rows
#    (tiny kernel; tutorial-02 style warmup + compiled launch); 4. the tests of this path,
#    including the gpu-marked execute test. Logs go to $OUT (or ./out); each step has a limit.
set -uo pipefail
TUT=${1:?triton tutorials folder}
OUT=${OUT:-out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NAIAD_CACHE_DIR=/tmp/naiad-t02
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.log" 2>&1 \
  || { tail -20 "$OUT/install.log"; exit 1; }
timeout 30 python3 bench/tutorial02_host.py "$TUT" -n 2000 --profile 2>&1 | tee "$OUT/t02_host.txt"
timeout 40 python3 bench/triton_tutorials.py "$TUT" --only 02 --reps 30 --case-timeout 30 2>&1 \
  | tail -15 | tee "$OUT/t02_table.txt"
timeout 20 python3 -c "
import sys; sys.path.insert(0, 'bench'); import gpu as g
nk, tk = g.load_kernels('naiad'), g.load_kernels('triton')
print('tiny kernel[(1,)](x, 1) us:', dict(g.launch_overhead(nk, tk)))
print('warmup + compiled launch us:', dict(g.launch_overhead(nk, tk, call=g.warmup_then_launch)))
" 2>&1 | tail -5 | tee "$OUT/overhead.txt"
timeout 25 python3 -m pytest -q -p no:cacheprovider backends/nvidia/tests/test_nv_tutorial02_host.py \
  backends/nvidia/tests/test_nv_warm_launch.py 2>&1 | tail -5 | tee "$OUT/tests.txt"
