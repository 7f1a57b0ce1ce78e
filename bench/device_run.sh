#!/usr/bin/env bash
# One device-machine session: install naiad, then any of: the NVIDIA GPU tests, the conformance
# suite's execute tier on nvidia, the fuzz tier on nvidia, the GPU benchmarks, Triton's tutorials
# run by naiad and by Triton. Logs and tables go to $OUT (or ./out).
#   bash bench/device_run.sh "demo tests conformance bench sweep tutorials fuzz" [pytest -k expression]
# `tutorials` needs Triton's tutorial files at $TUTORIALS (default .carry/triton-tutorials: copy
# ../shared/triton-tutorials there and carry it; the files are never committed).
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
what=" ${1:-demo tests conformance bench} "; kexpr=${2:-}
TUTORIALS=${TUTORIALS:-.carry/triton-tutorials}
FUZZ_SEEDS=${FUZZ_SEEDS:-10000:14000}
export PYTHONUNBUFFERED=1 NAIAD_CACHE_DIR=/tmp/naiad-cache
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.log" 2>&1 \
  || { cat "$OUT/install.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
has() { [[ $what == *" $1 "* ]]; }
if has demo; then
  timeout 120 naiad demo 2>&1 | tee "$OUT/demo.log" | tail -n 9
fi
if has tests; then
  timeout 150 python3 -m pytest -q backends/nvidia/tests -p no:cacheprovider -n 8 2>&1 \
    | tail -n 30 | tee "$OUT/nvidia_tests.log"
fi
if has conformance; then
  timeout 270 python3 -m pytest -q conformance --backend=nvidia -k "execute${kexpr:+ and ($kexpr)}" \
    -p no:cacheprovider -n 8 2>&1 | tee "$OUT/conformance_nvidia.log" | tail -n 45
fi
if has fuzz; then
  timeout 300 python3 -m pytest -q conformance --backend=nvidia --tier=fuzz --seeds "$FUZZ_SEEDS" \
    -p no:cacheprovider -n 8 2>&1 | tee "$OUT/fuzz_nvidia.log" | tail -n 25
fi
if has bench; then
  timeout 200 python3 bench/gpu.py --out "$OUT/gpu_bench.md" 2>&1 | tee "$OUT/gpu_bench.log" | tail -n 20
fi
if has sweep; then
  timeout 200 python3 bench/matmul_sweep.py --out "$OUT/matmul_sweep.md" 2>&1 \
    | tee "$OUT/matmul_sweep.log" | tail -n 30
fi
if has tutorials; then
  timeout 330 python3 bench/triton_tutorials.py "$TUTORIALS" --case-timeout 60 --out "$OUT/tutorials.md" 2>&1 \
    | tee "$OUT/tutorials.log" | tail -n 40
fi
