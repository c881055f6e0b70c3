#!/usr/bin/env bash
# README command 1: set up a fresh Debian 12 machine, build, and run the quickstart experiment:
# the equivalence of gradient averaging and model averaging under full batch (experiments/
# equivalence.toml: a server and 4 client processes per variant; the experiment took 203 to 259 s
# on 2 cores, the whole command 6 to 8 minutes on a fresh machine: README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target fedpar  # the program alone; scripts/test.sh builds the tests
./build/fedpar run experiments/equivalence.toml "$@"
