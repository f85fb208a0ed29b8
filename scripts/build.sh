#!/usr/bin/env bash
# Configures and builds tilegraph into build/ (CLI at build/bin/tilegraph).
# Extra arguments go to the CMake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
# Through ccache where it is installed (install_deps.sh installs it): a build from a
# fresh clone then compiles only what changed since the last one. Paths are hashed
# relative to the checkout, so clones in other folders share the entries.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$PWD"
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${launcher[@]+"${launcher[@]}"} "$@" >/dev/null
cmake --build build -j "$(nproc)"
echo "built: build/bin/tilegraph"
