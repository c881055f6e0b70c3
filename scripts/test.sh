#!/usr/bin/env bash
# README command 2: set up a fresh Debian 12 machine, build, run each fuzz harness briefly, and run
# every test (ctest prints the summary). GPU tests skip without a CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with-fuzz
bash scripts/build.sh
# every decoder's fuzz harness for a few seconds, under ASan + UBSan, its corpus first
bash scripts/fuzz.sh --seconds 5
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
