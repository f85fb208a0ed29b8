#!/usr/bin/env bash
# README command 2 (and what .ci/run calls): install, build, and run every test
#   1. unit tests (GoogleTest via CTest), incl. the ONNX node tests through the interpreter
#   2. ONNX backend node tests through the generated code (tune + main_test), for the
#      host and through the CPU emulation of the H100 schedule
#   3. CLI/explain tests, security tests (tests/security), the benchmark suite (tests/bench) and its Ray
#      farm on a local two-node cluster (tests/farm), and model tests (pytest): the model set compiled for the host,
#      H100 (emulated; CUDA project built with nvcc) and V100 (emulated) vs onnxruntime;
#      MI250 HIP projects of small models built with hipcc (tests/models: test_hip_project_builds_with_hipcc);
#      INT8 models quantized by onnxruntime on every x86 int8 micro-kernel; the ARM
#      micro-kernels cross-built and run under qemu-aarch64; artifacts/run_all.sh --quick (tests/artifacts)
#   4. unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer
#   5. a short libFuzzer run of the model loader, and more random hostile-name models
#      through tune + the generated-code scan (tests/security/test_hostile_names.py)
# Set TG_SKIP_SANITIZE=1 / TG_SKIP_FUZZ=1 to leave out 4 / 5 locally.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stage() { echo; echo "=== $* ($(( $(date +%s) - start )) s)"; }
# The tests compile for the built-in host spec, not one `tilegraph calibrate --save` kept on
# this machine (quickstart.sh saves one): the same schedules on every machine state.
export TILEGRAPH_HOST_SPEC=builtin

stage "dependencies"
bash scripts/install_deps.sh
stage "build"
bash scripts/build.sh

# Every generated project compiles the same runtime sources (main_test, npy,
# ...): ccache serves them after the first (a tiny model's tune: 9.6 s -> 1.7 s).
# Paths under the temporary folder (where the tests put their projects) are
# hashed relative to the build folder, so the projects share the entries.
if command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="${TMPDIR:-/tmp}"
fi

stage "1. unit tests"
ctest --test-dir build --output-on-failure -j "$(nproc)"

stage "2. ONNX node tests through generated code (host, then the H100 schedule emulated)"
python3 tests/conformance/run_node_tests.py --tilegraph build/bin/tilegraph
python3 tests/conformance/run_node_tests.py --tilegraph build/bin/tilegraph --arch H100

stage "3. CLI error tests and model tests (pytest)"
# One pytest worker per core (pytest-xdist), a test file to a worker (--dist loadfile: a
# module-scoped fixture, such as artifacts' run_all.sh --quick or the farm's Ray cluster,
# is built once). Most of these tests wait on one single-threaded compiler at a time: on
# a 2-core Zen 1 machine with an empty ccache the stage took 2806 s in one process and
# 1528 s on two workers (.ci/run from a clean clone here). The longest files first, so
# that no worker starts one last.
workers=()
if python3 -c "import xdist" 2>/dev/null && [ "$(nproc)" -gt 1 ]; then
  workers=(-n "$(nproc)")
fi
PYTHONPATH=python TILEGRAPH_BIN="$PWD/build/bin/tilegraph" python3 -m pytest -q --durations=15 \
  ${workers[@]+"${workers[@]}" --dist loadfile} \
  tests/models tests/artifacts tests/farm tests/security tests/cli tests/bench tests/quantized tests/float_gemm \
  tests/arm tests/pooling tests/softmax tests/block_kernels

if [ -z "${TG_SKIP_SANITIZE:-}" ]; then
  stage "4. unit tests under ASan + UBSan"
  # ccache as in build.sh (the launcher exported above), paths relative to the checkout.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTILEGRAPH_SANITIZE=ON >/dev/null
  CCACHE_BASEDIR="$PWD" cmake --build build-asan -j "$(nproc)" --target tilegraph_unit_tests
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build-asan/bin/tilegraph_unit_tests --gtest_brief=1
fi

if [ -z "${TG_SKIP_FUZZ:-}" ]; then
  stage "5. fuzzing the model loader (libFuzzer, 60 s) and generated code with hostile names (20 models)"
  bash fuzz/run_fuzzer.sh 60
  # Each random model a test of its own (no module fixture): spread over the workers.
  TG_NAME_FUZZ_CASES=20 PYTHONPATH=python TILEGRAPH_BIN="$PWD/build/bin/tilegraph" \
    python3 -m pytest -q ${workers[@]+"${workers[@]}" --dist load} tests/security/test_hostile_names.py -k stay_in_comments
fi
stage "all tests passed"
