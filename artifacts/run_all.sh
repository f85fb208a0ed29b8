#!/usr/bin/env bash
# Reproduces the Welder paper's experiments on this machine: one script per
# figure or table, each writing artifacts/out/<name>.csv, <name>.png and its
# section of artifacts/out/report.md (skipped columns named with the reason).
#   bash artifacts/run_all.sh [--quick] [--threads N]
# --quick: small models, few iterations (<= 5 minutes on 2 cores; what CI runs).
# --threads: threads of every engine (default 1: on a shared machine all-core
# numbers measure the neighbours).
# Needs a built tilegraph (build/bin/tilegraph, or $TILEGRAPH_BIN) and
# scripts/install_deps.sh's Python packages. Output folder: $ARTIFACTS_OUT
# (default artifacts/out), emptied first so every compile time is a cold one.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=full
THREADS=1
ARGS=("$@")
while (($#)); do
  case "$1" in
    --quick) MODE=quick ;;
    --threads) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || { echo "error: --threads takes a positive number" >&2; exit 2; }
               THREADS=$2; shift ;;
    *) echo "usage: bash artifacts/run_all.sh [--quick] [--threads N]" >&2; exit 2 ;;
  esac
  shift
done
OUT=${ARTIFACTS_OUT:-artifacts/out}
export ARTIFACTS_OUT=$OUT TILEGRAPH_BIN=${TILEGRAPH_BIN:-$PWD/build/bin/tilegraph}
[ -x "$TILEGRAPH_BIN" ] || { echo "error: no tilegraph CLI at $TILEGRAPH_BIN (build it: bash scripts/build.sh)" >&2; exit 2; }
rm -rf "$OUT"
mkdir -p "$OUT"
python3 -c "import sys; sys.path.insert(0, 'artifacts'); from common import report; report.start('$MODE, $THREADS thread(s)')"
# Fig. 9 first: Fig. 1, Fig. 13 and Tables 3 and 5 reuse the projects it compiled.
for script in fig09_end_to_end_cpu fig01_peer_efficiency fig02_matmul_softmax fig10_fp16_tensor_cores \
              fig11_no_tensor_cores fig13_fusion_ablation table3_transformers table5_compile_time table6_cnns \
              table7_memory_scaleup; do
  echo "== $script"
  start=$(date +%s)
  python3 "artifacts/$script.py" "${ARGS[@]}"
  echo "   ($(( $(date +%s) - start )) s)"
done
echo "report: $OUT/report.md"
