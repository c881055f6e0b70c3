#!/usr/bin/env bash
# CPU training throughput of fedpar beside PyTorch on the same models, batches, thread counts and
# data, in one run, with the ratio per row. Installs Debian's python3-torch and the OpenMP
# OpenBLAS it runs fastest with (bench only); runs PyTorch with /usr/bin/python3.
# The machine is noisy, so the two sides alternate row by row for ROUNDS rounds (default 3) and the
# table reports medians over all repetitions: a slow spell hits both sides alike.
# Usage: ROUNDS=3 scripts/bench.sh [--reps N] [--min-seconds S]   (output: bench/results/)
#        ROUNDS=3 scripts/bench.sh ddp   per-step overhead of the gradient regime beside DDP (gloo)
#        ROUNDS=2 scripts/bench.sh allreduce   the ring all-reduce beside gloo and MPI_Allreduce
#        ROUNDS=3 scripts/bench.sh backends    the allreduce topology's step on zmq-ring and mpi beside gloo
#        scripts/bench.sh engine   the round engine beside a raw ZeroMQ scatter/gather of the same bytes
#        scripts/bench.sh gemm     Eigen beside OpenBLAS on the CPU backend's product shapes
#        scripts/bench.sh codec    the gradient codecs' encode/decode speed on one core beside memcpy
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == backends ]]; then
  bash scripts/setup.sh --with-mpi  # the mpi backend is built when MPI's headers are found
else
  bash scripts/setup.sh
fi
bash scripts/build.sh
need=()
for p in python3-torch libopenblas0-openmp openmpi-bin python3-mpi4py; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
  echo "bench: installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# OpenBLAS picks SSE3 kernels on some CPUs unless told the core; name an AVX-512 core only when
# this CPU has AVX-512 (elsewhere its own detection is right, e.g. Zen or Haswell for AVX2).
if grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; else unset OPENBLAS_CORETYPE; fi
unset OPENBLAS_L2_SIZE
out=bench/results
mkdir -p "$out"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
if [[ "${1:-}" == allreduce ]]; then
  shift
  /usr/bin/python3 bench/allreduce_compare.py --rounds "${ROUNDS:-2}" --json "$out/allreduce-$stamp.json" "$@" |
    tee "$out/allreduce-table-$stamp.md"
  exit 0
fi
if [[ "${1:-}" == backends ]]; then
  shift
  /usr/bin/python3 bench/allreduce_backends.py --rounds "${ROUNDS:-3}" --json "$out/backends-$stamp.json" "$@" |
    tee "$out/backends-table-$stamp.md"
  exit "${PIPESTATUS[0]}"
fi
if [[ "${1:-}" == engine ]]; then
  shift
  ./build/bench_engine --workers 2,4 --rounds 300 "$@" | tee "$out/engine-table-$stamp.md"
  exit 0
fi
if [[ "${1:-}" == gemm ]]; then
  shift
  ./build/bench_gemm "$@" | tee "$out/gemm-table-$stamp.md"
  exit 0
fi
if [[ "${1:-}" == codec ]]; then
  shift
  ./build/bench_codec "$@" | tee "$out/codec-table-$stamp.md"
  exit 0
fi
if [[ "${1:-}" == ddp ]]; then
  shift
  /usr/bin/python3 bench/ddp_overhead.py --rounds "${ROUNDS:-3}" --json "$out/ddp-$stamp.json" "$@" |
    tee "$out/ddp-table-$stamp.md"
  exit 0
fi
echo "bench: $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); ${ROUNDS:-3} rounds"
rows="2nn:10 2nn:50 2nn:600 2nn:full logreg:600 cnn:50"
for round in $(seq "${ROUNDS:-3}"); do
  for threads in 1 2; do
    for row in $rows; do
      model=${row%%:*} batch=${row##*:}
      echo "bench: round $round, $model batch $batch, $threads thread(s)" >&2
      ./build/bench_train --json --only "$model" --batch "$batch" --threads "$threads" "$@" >>"$out/fedpar-$stamp.jsonl"
      /usr/bin/python3 bench/torch_ref.py --only "$model" --batch "$batch" --threads "$threads" "$@" >>"$out/pytorch-$stamp.jsonl"
    done
  done
done
/usr/bin/python3 bench/compare.py "$out/fedpar-$stamp.jsonl" "$out/pytorch-$stamp.jsonl" | tee "$out/table-$stamp.md"
