#!/usr/bin/env bash
# README command 2: set up a fresh Debian 12 machine, build, and run every test (ctest prints the
# summary). GPU tests skip without a CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
