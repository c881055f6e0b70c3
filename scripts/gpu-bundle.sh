#!/usr/bin/env bash
# Packs what the core and its tests need from Debian's packages into .gpu-deps/ (git-ignored): the
# headers of Eigen, fmt, nlohmann-json, toml++ and CLI11, and GoogleTest's sources. The GPU machine
# has CUDA, CMake and PyTorch but none of these; scripts/gpu-check.sh builds against this folder
# (-DFEDPAR_DEPS), so everything compiles there with that machine's own compiler. Carry it:
#   device run, carry [".gpu-deps"], command "bash scripts/gpu-check.sh"
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --packages-only
out=.gpu-deps
rm -rf "$out"
mkdir -p "$out/include"
for h in eigen3 fmt nlohmann toml++ CLI; do cp -a "/usr/include/$h" "$out/include/"; done
cp -a /usr/src/googletest "$out/googletest"
echo "gpu-bundle: $(du -sh "$out" | cut -f1) in $out"
