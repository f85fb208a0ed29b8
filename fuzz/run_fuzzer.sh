#!/usr/bin/env bash
# Builds the model-loader fuzzer with clang + ASan/UBSan and runs it for at
# most N seconds (default 60) and 300k inputs, from a seed corpus of the
# bundled models and a sample of ONNX node-test models. A fixed seed makes the
# input sequence repeatable, so a CI failure reproduces.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTILEGRAPH_FUZZ=ON -DTILEGRAPH_SANITIZE=ON >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target model_loader_fuzzer
corpus=build-fuzz/corpus
mkdir -p "$corpus"
for m in models/*/model.onnx; do [ -f "$m" ] && cp "$m" "$corpus/$(basename "$(dirname "$m")").onnx"; done
i=0
for m in /usr/share/libonnx-testdata/data/node/test_*/model.onnx; do
  i=$((i + 1)); [ $((i % 10)) -eq 0 ] && cp "$m" "$corpus/$(basename "$(dirname "$m")").onnx"
done
ASAN_OPTIONS=detect_leaks=0 build-fuzz/bin/model_loader_fuzzer "$corpus" -seed=1 -runs=300000 \
  -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 2>&1 | tail -n 12
