#!/usr/bin/env bash
# The GPU check, in one go, on a machine with an NVIDIA GPU, CUDA (nvcc, cuBLAS), CMake and PyTorch
# but no Debian packages: builds the core with its CUDA backend against .gpu-deps/ (made here by
# scripts/gpu-bundle.sh; no ZeroMQ, no Boost), runs the `gpu` tests, then the training-throughput
# benchmark on the GPU beside PyTorch on the same GPU, row by row, and prints the table with the
# ratio fedpar / PyTorch (goal >= 1.0). Results go to $OUT (or gpu-check/): gpu.txt, the test log,
# the JSON lines of both sides and gpu-bench.md. Exit status: non-zero when a test failed.
#   bash scripts/gpu-bundle.sh     # here, once
#   device run: carry [".gpu-deps"], command "bash scripts/gpu-check.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check}
mkdir -p "$out"
deps=$PWD/.gpu-deps
if [[ ! -d $deps/include/eigen3 ]]; then
  echo "gpu-check: no .gpu-deps/: run scripts/gpu-bundle.sh on a machine with Debian's packages and carry it" >&2
  exit 2
fi
{ date -u +%Y-%m-%dT%H:%MZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1; } |
  tee "$out/gpu.txt"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
t0=$SECONDS
cmake -S . -B build-gpu "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFEDPAR_DEPS="$deps" -DFEDPAR_RUNTIME=OFF \
  -DFEDPAR_OPENBLAS=OFF -DFEDPAR_ONEDNN=OFF >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 2; }
grep "fedpar:" "$out/configure.log"
cmake --build build-gpu -j "$(nproc)" --target kernels_tests bench_train >"$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; exit 2; }
echo "gpu-check: built in $((SECONDS - t0)) s"
status=0
(cd build-gpu && ctest -L gpu --output-on-failure) 2>&1 | tee "$out/gpu-tests.log" || status=1
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here: the gpu tests skipped and there is nothing to benchmark" >&2
  exit $status
fi

# The benchmark: both sides alternate row by row for ROUNDS rounds; the table gives medians.
: >"$out/fedpar.jsonl"
: >"$out/torch.jsonl"
for round in $(seq "${ROUNDS:-2}"); do
  for row in 2nn:10 2nn:50 2nn:600 cnn:10 cnn:50 cnn:600; do
    m=${row%%:*} b=${row##*:}
    echo "gpu-check: round $round, $m batch $b" >&2
    ./build-gpu/bench_train --device cuda --json --only "$m" --batch "$b" >>"$out/fedpar.jsonl" || status=1
    python3 bench/torch_ref.py --device cuda --only "$m" --batch "$b" >>"$out/torch.jsonl" || status=1
  done
done
python3 bench/compare.py "$out/fedpar.jsonl" "$out/torch.jsonl" | tee "$out/gpu-bench.md"
echo "gpu-check: done in $((SECONDS - t0)) s (exit $status)"
exit $status
