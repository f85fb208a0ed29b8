#!/usr/bin/env bash
# Issue 15's full-size float model set on the host CPU: export (needs torch), tune,
# test_acc, then one interleaved comparison with onnxruntime at 1 and 2 threads (medians,
# ratio onnxruntime / tilegraph, geomean). Writes OUT/summary.txt.
#   bash benchmarks/full_models.sh [OUT=/tmp/tilegraph_full] [model:opset ...]
# Models are torch2onnx names with the opset to export at; the default is the ten Welder
# models at opset 11 (Welder's setting) and the current-torch exports at opset 17. About
# 26 minutes on a 2-core Zen 4 VM. Set PYTHON to an interpreter with torch (Debian's
# python3-torch: /usr/bin/python3) when the default python3 has none.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/tilegraph_full}
shift || true
MODELS=${*:-resnet50:17 mobilenet:11 mobilenet:17 mobilevit:11 mobilevit:17 vit:11 vit_b16:17 bert:11 \
swin_transformer:11 swin_transformer:17 BSRN:11 NAFNet:11 NeRF:11 Conformer:11 Restormer:11}
PYTHON=${PYTHON:-python3}
export PYTHONPATH=python TILEGRAPH_BIN=$PWD/build/bin/tilegraph
mkdir -p "$OUT"
for item in $MODELS; do
  m=${item%%:*}
  opset=${item##*:}
  [ "$opset" = "$item" ] && opset=11
  p="$OUT/${m}_op$opset"
  echo "== $m (opset $opset)"
  [ -f "$p/model.onnx" ] || "$PYTHON" -m tilegraph.torch2onnx "$m" --prefix "$p" --opset "$opset" --no-check \
    > "$p.export.log" 2>&1 || { echo "export failed (see $p.export.log)"; continue; }
  start=$(date +%s)
  build/bin/tilegraph tune "$p" --arch host > "$p.tune.log" 2>&1 || { echo "tune failed: $(grep error "$p.tune.log" | head -1)"; continue; }
  echo "tune: $(( $(date +%s) - start )) s, $(grep -o 'tuned [0-9]* kernels' "$p.tune.log")"
  timeout 1800 python3 -m tilegraph.test_acc "$p" 2>&1 | tail -n 1
done 2>&1 | tee "$OUT/summary.txt"
# Every model tuned in OUT (the loop above ran in a pipeline, a subshell).
mapfile -t prefixes < <(for d in "$OUT"/*_op*/; do [ -d "$d/tilegraph_rt/host" ] && echo "${d%/}"; done)
[ ${#prefixes[@]} -gt 0 ] && python3 benchmarks/cpu_vs_onnxruntime.py "${prefixes[@]}" --threads 1 2 --iters 10 \
  --warmup 2 --ort-spin off 2>&1 | tee -a "$OUT/summary.txt"
