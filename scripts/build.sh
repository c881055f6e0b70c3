#!/usr/bin/env bash
# Configures and builds fedpar into build/ (Release; CUDA code too when nvcc is found).
#   --target NAME   build that target alone (the quickstart builds `fedpar`, not the tests)
# Other arguments go to cmake, e.g. scripts/build.sh -DFEDPAR_SANITIZE=ON -B build-asan
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build
args=()
targets=()
while (($#)); do
  case $1 in
    -B) BUILD_DIR=$2; shift 2 ;;
    -B*) BUILD_DIR=${1#-B}; shift ;;
    --target) targets+=(--target "$2"); shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${args[@]}" | grep "fedpar:" || true
cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}"
