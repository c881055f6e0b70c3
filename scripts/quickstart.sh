#!/usr/bin/env bash
# README command 1: set up a fresh Debian 12 machine, build, and run the quickstart experiment
# (for now the centralized baseline: the 2NN on MNIST, one epoch, batch 10, lr 0.1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/fedpar train --model 2nn --dataset mnist --epochs 1 --batch 10 --lr 0.1 "$@"
