#!/usr/bin/env bash
# README command 2: set up a fresh Debian 12 machine, build, run each fuzz harness briefly, and run
# every test (ctest prints the summary). GPU tests skip without a CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --with-fuzz --with-mpi
bash scripts/build.sh
# every decoder's fuzz harness, under ASan + UBSan: its corpus, then 10,000 inputs from seed 1
bash scripts/fuzz.sh --runs 10000
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
