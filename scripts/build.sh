#!/usr/bin/env bash
# Configures and builds tilegraph into build/ (CLI at build/bin/tilegraph).
# Extra arguments go to the CMake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)"
echo "built: build/bin/tilegraph"
