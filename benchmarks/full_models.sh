#!/usr/bin/env bash
# Full-size Welder model set on the host CPU: export (needs torch), tune, test_acc,
# and median latency vs onnxruntime in the same run. Writes OUT/summary.txt.
#   bash benchmarks/full_models.sh [OUT=/tmp/tilegraph_full] [models...]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/tilegraph_full}
shift || true
MODELS=${*:-bert vit swin_transformer mobilenet mobilevit NAFNet BSRN Restormer Conformer NeRF}
export PYTHONPATH=python TILEGRAPH_BIN=$PWD/build/bin/tilegraph
mkdir -p "$OUT"
for m in $MODELS; do
  p="$OUT/$m"
  echo "== $m"
  [ -f "$p/model.onnx" ] || python3 -m tilegraph.torch2onnx "$m" --prefix "$p" > "$p.export.log" 2>&1 || { echo "export failed (see $p.export.log)"; continue; }
  start=$(date +%s)
  build/bin/tilegraph tune "$p" > "$p.tune.log" 2>&1 || { echo "tune failed: $(grep error "$p.tune.log" | head -1)"; continue; }
  echo "tune: $(( $(date +%s) - start )) s, $(grep -o 'tuned [0-9]* kernels' "$p.tune.log")"
  timeout 1800 python3 -m tilegraph.test_acc "$p" 2>&1 | tail -n 1
  timeout 1800 python3 benchmarks/cpu_vs_onnxruntime.py "$p" --threads 2 --iters 5 --warmup 1 2>&1 | tail -n 1
done 2>&1 | tee "$OUT/summary.txt"
