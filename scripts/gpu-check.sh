#!/usr/bin/env bash
# The GPU check, in one go, on a machine with an NVIDIA GPU, CUDA (nvcc, cuBLAS), CMake and PyTorch
# but no Debian packages and no network: builds fedpar (the ZeroMQ runtime included) and its CUDA
# backend against .gpu-deps/ (made here by scripts/gpu-bundle.sh, MNIST included), runs the `gpu`
# tests (a test that finds no device fails here: FEDPAR_REQUIRE_GPU), then real runs with every
# client process on the GPU (a server and CUDA client processes over ZeroMQ: the equivalence
# quickstart, FedAvg of the 2NN and the CNN, the all-reduce ring, bf16 and fp16; the 2NN's FedAvg
# also on the CPU, for the hashes and the models' distance side by side; allreduce.backend = "nccl"
# on one rank beside the zmq-ring's), then the training-throughput benchmark on the GPU beside
# PyTorch on the same GPU, row by row, with the ratio fedpar / PyTorch (goal >= 1.0).
#   bash scripts/gpu-bundle.sh     # here, once
#   device run: carry [".gpu-deps"], command "bash scripts/gpu-check.sh", timeout_s 600
# It keeps to GPU_CHECK_SECONDS (default 540: the device's 10-minute command limit with room for
# start-up): every step has a time limit from what is left, and a step that no longer fits is
# skipped and named. Everything is written to gpu-check/ (emptied first); at the end at most 4
# files go to $OUT (a device run brings back 8 at most): summary.md (the GPU, the build, e2e.md:
# each run's exit, seconds, hash, accuracy; gpu-bench.md), gpu-tests.log, failures.log (the
# stderr tails of what failed) and logs.tar.gz (every log, summary.json and metrics.jsonl).
# Exit status: non-zero when a test or a run failed or a step was skipped for time.
# E2E_DEVICE=cpu runs the same runs with CPU clients (how the commands are checked without a GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
budget=${GPU_CHECK_SECONDS:-540}
work=$PWD/gpu-check
rm -rf "$work"
mkdir -p "$work/logs"
status=0
left() { echo $((budget - SECONDS)); }
fail() {  # fail NAME LOG: the run failed; keep its last lines for failures.log
  status=1
  { echo "== $1"; tail -25 "$2" 2>/dev/null; } >>"$work/failures.log"
}
pack() {  # what comes back from the device: a handful of files under $OUT
  [[ -n ${OUT:-} ]] || return 0
  mkdir -p "$OUT"
  cat "$work/gpu.txt" "$work/build.txt" "$work/e2e.md" "$work/gpu-bench.md" >"$OUT/summary.md" 2>/dev/null
  echo "exit $status after $SECONDS s" >>"$OUT/summary.md"
  cp "$work/logs/gpu-tests.log" "$OUT/" 2>/dev/null
  cp "$work/failures.log" "$OUT/" 2>/dev/null
  tar -C "$work" -czf "$OUT/logs.tar.gz" --exclude='*.safetensors' --exclude='*.bin' logs runs 2>/dev/null
}
trap pack EXIT
deps=$PWD/.gpu-deps
if [[ ! -e $deps/lib/libzmq.so.5 || ! -d $deps/mnist ]]; then
  echo "gpu-check: no .gpu-deps/ with libzmq and MNIST: run scripts/gpu-bundle.sh on a machine with Debian's packages and carry it" | tee "$work/gpu.txt" >&2
  exit 2
fi
{ echo "# GPU check, $(date -u +%Y-%m-%dT%H:%MZ)"; echo
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1; echo; } |
  tee "$work/gpu.txt"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
# NCCL (allreduce.backend = "nccl"): the toolkit's, else the one PyTorch's wheels brought
if [[ -z ${NCCL_HOME:-} && ! -e /usr/local/cuda/include/nccl.h ]]; then
  NCCL_HOME=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null) && export NCCL_HOME
fi
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}  # a failed join says why in the run's stderr
cmake -S . -B build-gpu "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFEDPAR_DEPS="$deps" \
  -DFEDPAR_OPENBLAS=OFF -DFEDPAR_ONEDNN=OFF >"$work/logs/configure.log" 2>&1 ||
  { fail configure "$work/logs/configure.log"; exit 2; }
{ grep "fedpar:" "$work/logs/configure.log" | sed 's/^/    /'; echo; } | tee "$work/build.txt"
timeout "$(left)" cmake --build build-gpu -j "$(nproc)" --target fedpar kernels_tests bench_train \
  >"$work/logs/build.log" 2>&1 || { fail build "$work/logs/build.log"; exit 2; }
echo "built in $SECONDS s" | tee -a "$work/build.txt"
dev=${E2E_DEVICE:-cuda}
[[ $dev == cuda ]] && export FEDPAR_REQUIRE_GPU=1
(cd build-gpu && CUDA_LAUNCH_BLOCKING=1 ctest -L gpu --timeout 120 --output-on-failure) 2>&1 |
  tee "$work/logs/gpu-tests.log" || fail gpu-tests "$work/logs/gpu-tests.log"
if [[ $dev == cuda ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here: nothing to run or benchmark" | tee -a "$work/gpu.txt" >&2
  exit 1
fi

# End to end: `fedpar run` starts a server and client processes, the clients on $dev.
mkdir -p data/mnist
for f in "$deps"/mnist/*.xz; do
  python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$f" "data/mnist/$(basename "$f" .xz)"
done
bash scripts/fetch-mnist.sh >/dev/null || { fail mnist /dev/null; exit 2; }  # checks the SHA-256s
# a key of a run's summary.json ("-" where it has none: the equivalence experiment writes report.md)
summary() {
  local v
  v=$(sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",}]*\).*/\1/p" "$work/runs/$1/summary.json" 2>/dev/null | head -1)
  echo "${v:--}"
}
{ echo "| run | exit | seconds | final model hash | test accuracy |"; echo "|---|---|---|---|---|"; } >"$work/e2e.md"
e2e() {  # e2e NAME SECONDS ARGS...: one `fedpar run`, given at most SECONDS
  local name=$1 limit=$2 t=$SECONDS rc
  shift 2
  if (($(left) - 60 < limit)); then  # 60 s kept for the benchmark's smallest rows and packing
    echo "| $name | skipped: $(left) s left | | | |" >>"$work/e2e.md"
    status=1
    return
  fi
  echo "gpu-check: run $name (at most $limit s)" >&2
  timeout "$limit" ./build-gpu/fedpar run "$@" --set results_dir="$work/runs" --set name="$name" \
    >"$work/logs/$name.txt" 2>"$work/logs/$name.err"
  rc=$?
  ((rc == 0)) || fail "$name (exit $rc)" "$work/logs/$name.err"
  echo "| $name | $rc | $((SECONDS - t)) | $(summary "$name" model_hash) | $(summary "$name" test_accuracy) |" >>"$work/e2e.md"
}
cnn_cpu=()  # the CNN's epochs over 60,000 images take minutes on a CPU: a tenth of them there
[[ $dev == cpu ]] && cnn_cpu=(--set data.train_limit=6000)
e2e "fedavg-2nn-$dev" 60 experiments/fedavg-mnist-2nn.toml --set device="$dev"
e2e fedavg-2nn-cpu-clients 60 experiments/fedavg-mnist-2nn.toml --set device=cpu
# the quickstart (its centralized references run on the CPU, given every core); a failed claim
# exits 3, a crash otherwise
e2e "equivalence-$dev" 180 experiments/equivalence.toml --set threads="$(nproc)" --set device="$dev"
e2e "allreduce-2nn-$dev" 60 experiments/topology-allreduce.toml --set device="$dev"
e2e "fedavg-2nn-bf16-$dev" 60 experiments/fedavg-mnist-2nn.toml --set optimizer.precision=bf16 --set device="$dev"
e2e "fedavg-2nn-fp16-$dev" 60 experiments/fedavg-mnist-2nn.toml --set optimizer.precision=fp16 --set device="$dev"
# the CNN's server evaluates 10,000 test images each round on the CPU: give it the cores
e2e "fedavg-cnn-$dev" 120 experiments/fedavg-mnist-2nn.toml --set model.name=cnn --set rounds=5 \
  --set threads="$(nproc)" --set device="$dev" "${cnn_cpu[@]}"
# the same FedAvg on the device and on the CPU: how far apart their models end
{
  echo
  echo "fedavg-2nn-$dev against fedavg-2nn-cpu-clients: $(python3 scripts/model_distance.py \
    "$work/runs/fedavg-2nn-$dev" "$work/runs/fedavg-2nn-cpu-clients" 2>&1 || echo 'no distance')"
  echo
} >>"$work/e2e.md"
if [[ $dev == cuda ]]; then
  # NCCL on one GPU is a ring of one rank (NCCL refuses two ranks on one device): its sum must
  # leave the model as the zmq-ring of one process does, to the bit
  e2e allreduce-2nn-1proc-zmq-ring-cuda 60 experiments/topology-allreduce.toml --set processes=1 --set device=cuda
  e2e allreduce-2nn-1proc-nccl-cuda 60 experiments/topology-allreduce.toml --set processes=1 --set device=cuda \
    --set allreduce.backend=nccl
  nccl=$(summary allreduce-2nn-1proc-nccl-cuda model_hash)
  if [[ $nccl == - || $nccl != "$(summary allreduce-2nn-1proc-zmq-ring-cuda model_hash)" ]]; then
    echo "the NCCL run's model hash ($nccl) is not the zmq-ring's" | tee -a "$work/e2e.md" >&2
    status=1
  fi
fi
cat "$work/e2e.md"
if [[ $dev != cuda ]]; then
  echo "gpu-check: E2E_DEVICE=$dev: no benchmark (done in $SECONDS s, exit $status)" >&2
  exit $status
fi

# The benchmark: every row on both sides, ROUNDS times, alternating; the table gives medians.
for round in $(seq "${ROUNDS:-1}"); do
  for side in fedpar torch; do
    if (($(left) < 20)); then
      echo "benchmark round $round, $side: skipped, $(left) s left" | tee -a "$work/gpu-bench.md" >&2
      status=1
      continue
    fi
    echo "gpu-check: benchmark round $round, $side" >&2
    if [[ $side == fedpar ]]; then
      timeout "$(left)" ./build-gpu/bench_train --device cuda --json >>"$work/logs/fedpar.jsonl" 2>>"$work/logs/bench.err"
    else
      timeout "$(left)" python3 bench/torch_ref.py --device cuda >>"$work/logs/torch.jsonl" 2>>"$work/logs/bench.err"
    fi || fail "benchmark $side" "$work/logs/bench.err"
  done
done
python3 bench/compare.py "$work/logs/fedpar.jsonl" "$work/logs/torch.jsonl" 2>&1 | tee -a "$work/gpu-bench.md"
echo "gpu-check: done in $SECONDS s (exit $status)"
exit $status
