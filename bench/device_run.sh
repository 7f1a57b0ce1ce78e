#!/usr/bin/env bash
# One device-machine session: install naiad, then any of: the NVIDIA GPU tests, the conformance
# suite's execute tier on nvidia, the fuzz tier on nvidia, the GPU benchmarks, Triton's tutorials
# run by naiad and by Triton. Logs and tables go to $OUT (or ./out).
#   bash bench/device_run.sh "demo tests conformance probe bench sweep tutorials fuzz" [pytest -k expression]
# `tutorials` needs Triton's tutorial files at $TUTORIALS (default .carry/triton-tutorials: copy
# ../shared/triton-tutorials there and carry it; the files are never committed).
# `compat` runs Triton's test_core.py/test_standard.py (at $TRITON_TESTS, default
# .carry/triton-tests, copied from ../shared/triton-tests like the tutorials) on a deterministic
# sample ($COMPAT_SAMPLE, default 1/5) with $COMPAT_WORKERS xdist workers (default 14): first the
# baseline peer ($COMPAT_PEER, default compiled `triton`), then naiad on $COMPAT_BACKEND (default
# nvidia), and writes both reports and compat_summary.txt. Each peer gets $COMPAT_SECONDS seconds
# (default 170 and 280); at the limit pytest is interrupted and reports what it ran.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
what=" ${1:-demo tests conformance bench} "; kexpr=${2:-}
TUTORIALS=${TUTORIALS:-.carry/triton-tutorials}
TRITON_TESTS=${TRITON_TESTS:-.carry/triton-tests}
COMPAT_SAMPLE=${COMPAT_SAMPLE:-1/5}; COMPAT_WORKERS=${COMPAT_WORKERS:-14}
COMPAT_PEER=${COMPAT_PEER:-triton}; COMPAT_BACKEND=${COMPAT_BACKEND:-nvidia}
COMPAT_SECONDS=${COMPAT_SECONDS:-170 280}
FUZZ_SEEDS=${FUZZ_SEEDS:-10000:14000}
export PYTHONUNBUFFERED=1 NAIAD_CACHE_DIR=/tmp/naiad-cache
if [[ -z ${SKIP_INSTALL:-} ]]; then     # SKIP_INSTALL=1: naiad is installed already (a local check)
  python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.log" 2>&1 \
    || { cat "$OUT/install.log"; exit 1; }
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$OUT/gpu.txt"
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
if has probe; then     # which TMA stores write a padded row's padding (bench/nv_tma_store_probe.py)
  timeout 60 python3 bench/nv_tma_store_probe.py 2>&1 | tee "$OUT/tma_store_probe.md"
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
if has compat; then
  read -r peer_s naiad_s <<< "$COMPAT_SECONDS"
  # compat_peer NAME SECONDS ARGS...: one peer's run, interrupted at the limit (--deadline: pytest
  # still writes the report of what ran; `timeout` is the backstop)
  compat_peer() {
    local name=$1 limit=$2; shift 2
    timeout -k 5 $((limit + 30)) python3 -m naiad compat-test "$TRITON_TESTS" --deadline "$limit" \
      --sample "$COMPAT_SAMPLE" -n "$COMPAT_WORKERS" --timeout 60 \
      --report "$OUT/compat_$name.json" ${kexpr:+-k "$kexpr"} "$@" > "$OUT/compat_$name.log" 2>&1
    echo "compat $name: exit $? ($(date -u +%T))"; tail -n 25 "$OUT/compat_$name.log"
  }
  base=${COMPAT_PEER//-/_}
  compat_peer "$base" "$peer_s" --peer "$COMPAT_PEER"
  compat_peer "naiad_$COMPAT_BACKEND" "${naiad_s:-$peer_s}" --backend "$COMPAT_BACKEND"
  if [[ -f "$OUT/compat_naiad_$COMPAT_BACKEND.json" && -f "$OUT/compat_$base.json" ]]; then
    { python3 -m naiad compat-test --show "$OUT/compat_$base.json"
      python3 -m naiad compat-test --show "$OUT/compat_naiad_$COMPAT_BACKEND.json" \
        --against "$OUT/compat_$base.json"; } > "$OUT/compat_summary.txt" 2>&1
    cat "$OUT/compat_summary.txt"
  else
    echo "compat: a report is missing; see $OUT/compat_*.log"
  fi
fi
