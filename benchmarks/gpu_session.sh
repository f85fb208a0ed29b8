#!/usr/bin/env bash
# The prepared script for a session lent an NVIDIA GPU (the device tool's `run`).
#
# Here, before the GPU call (builds nothing on the device, which has no network
# and none of Debian's ONNX/protobuf libraries):
#   bash benchmarks/gpu_session.sh --prepare
# copies build/bin/tilegraph and the shared libraries it needs that a stock
# CUDA image lacks (libonnx, libonnx_proto, libprotobuf) into build/gpu_carry/.
#
# On the device (one call; carry build/gpu_carry):
#   bash benchmarks/gpu_session.sh [gpu_vs_torch.py flags...]
# runs benchmarks/gpu_vs_torch.py (default: every model, bs 1, fp16, H200) with
# the carried binary, writes results.json and the log under $OUT (or
# build/gpu_bench), and prints the table last. One model takes about a minute
# (export, schedule, nvcc, test_acc, timing): choose --models / --bs /
# --precisions to fit the device time left.
set -euo pipefail
cd "$(dirname "$0")/.."
CARRY=build/gpu_carry

if [[ "${1:-}" == "--prepare" ]]; then
  [[ -x build/bin/tilegraph ]] || { echo "build/bin/tilegraph not built (bash scripts/test.sh or cmake --build build)" >&2; exit 1; }
  rm -rf "$CARRY"
  mkdir -p "$CARRY/bin" "$CARRY/lib"
  cp build/bin/tilegraph "$CARRY/bin/"
  ldd build/bin/tilegraph | awk '/libonnx|libprotobuf/ {print $3}' | while read -r lib; do
    cp -L "$lib" "$CARRY/lib/"
  done
  du -sh "$CARRY"
  echo "carry $CARRY, then on the device: bash benchmarks/gpu_session.sh [--models ...]"
  exit 0
fi

[[ -x "$CARRY/bin/tilegraph" ]] || { echo "$CARRY missing: run 'bash benchmarks/gpu_session.sh --prepare' here and carry it" >&2; exit 1; }
export LD_LIBRARY_PATH="$PWD/$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TILEGRAPH_BIN="$PWD/$CARRY/bin/tilegraph"
WORK="${OUT:-build}/gpu_bench"
mkdir -p "$WORK"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>/dev/null || true
python3 benchmarks/gpu_vs_torch.py --tilegraph "$TILEGRAPH_BIN" --work "$WORK" --bs 1 --precisions fp16 "$@" \
  2>&1 | tee "$WORK/log.txt" | grep -v "^\[\|^      \|^run it\|^tuned" || true

# compute-sanitizer over the CUDA projects just built (memcheck, then racecheck
# of shared memory): the first real GPU also validates the emulation's
# sanitizer (tune --emulate --sanitize), which checks the same on the CPU.
# TG_SKIP_COMPUTE_SANITIZER=1 leaves it out when device time is short.
if [[ -z "${TG_SKIP_COMPUTE_SANITIZER:-}" ]] && command -v compute-sanitizer >/dev/null; then
  echo "=== compute-sanitizer (memcheck, racecheck) on the built projects"
  find "$WORK" -path '*/tilegraph_rt/*/build/main_test' -not -path '*/emulation/*' | sort | while read -r exe; do
    dir=$(dirname "$(dirname "$exe")")
    for tool in memcheck racecheck; do
      log="$dir/compute_sanitizer_$tool.txt"
      if TILEGRAPH_GPU_GRAPH=0 timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 9 \
          "$exe" --weights "$dir/weights.bin" --warmup 0 --iters 1 > "$log" 2>&1; then
        echo "clean   $tool  $dir"
      else
        echo "ERRORS  $tool  $dir (see $log)"; grep -m3 "=========" "$log" || true
      fi
    done
  done 2>&1 | tee "$WORK/compute_sanitizer.txt"
fi
