#!/usr/bin/env bash
# One device-machine session: install naiad, run the NVIDIA GPU tests, the conformance suite's
# execute tier on nvidia, and the GPU benchmark. Logs and tables go to $OUT (or ./out).
#   bash bench/device_run.sh [demo|tests|conformance|bench|all] [pytest -k expression]
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
what=${1:-all}; kexpr=${2:-}
export PYTHONUNBUFFERED=1 NAIAD_CACHE_DIR=/tmp/naiad-cache
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.log" 2>&1 \
  || { cat "$OUT/install.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
if [[ $what == demo || $what == all ]]; then
  timeout 120 naiad demo 2>&1 | tee "$OUT/demo.log" | tail -n 9
fi
if [[ $what == tests || $what == all ]]; then
  timeout 90 python3 -m pytest -q tests/nvidia -p no:cacheprovider 2>&1 | tail -n 30 | tee "$OUT/nvidia_tests.log"
fi
if [[ $what == conformance || $what == all ]]; then
  timeout 270 python3 -m pytest -q conformance --backend=nvidia -k "execute${kexpr:+ and ($kexpr)}" \
    -p no:cacheprovider -n 8 2>&1 | tee "$OUT/conformance_nvidia.log" | tail -n 45
fi
if [[ $what == bench || $what == all ]]; then
  timeout 200 python3 bench/gpu.py --out "$OUT/gpu_bench.md" 2>&1 | tee "$OUT/gpu_bench.log" | tail -n 20
fi
