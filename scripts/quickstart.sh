#!/usr/bin/env bash
# README command 1: on a fresh machine, install the dependencies, build
# tilegraph, compile the bundled default model for this CPU, run it, and check
# its outputs against onnxruntime.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-bert_small}
bash scripts/install_deps.sh
bash scripts/build.sh
echo "== tilegraph calibrate --save (this CPU's speeds, which tune --arch host uses from now on)"
build/bin/tilegraph calibrate --save
PREFIX=$(mktemp -d "/tmp/tilegraph_${MODEL}_XXXX")
cp -r "models/${MODEL}/." "$PREFIX/"
echo "== tilegraph tune $PREFIX"
build/bin/tilegraph tune "$PREFIX"
echo "== tilegraph run $PREFIX"
build/bin/tilegraph run "$PREFIX" --warmup 5 --iters 50
echo "== test_acc $PREFIX"
PYTHONPATH=python TILEGRAPH_BIN=build/bin/tilegraph python3 -m tilegraph.test_acc "$PREFIX"
