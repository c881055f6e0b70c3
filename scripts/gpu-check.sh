#!/usr/bin/env bash
# The GPU check, in one go, on a machine with an NVIDIA GPU, CUDA (nvcc, cuBLAS), CMake and PyTorch
# but no Debian packages: builds fedpar (the ZeroMQ runtime included) and its CUDA backend against
# .gpu-deps/ (made here by scripts/gpu-bundle.sh), runs the `gpu` tests, then real runs with every
# client process on the GPU (a server and CUDA client processes over ZeroMQ: the equivalence
# quickstart, FedAvg of the 2NN and the CNN, the all-reduce ring, bf16 and fp16; the 2NN's FedAvg
# also on the CPU, for the hashes and the models' distance side by side; allreduce.backend = "nccl" on one rank beside the
# zmq-ring's), then the training-throughput benchmark on the GPU
# beside PyTorch on the same GPU, row by row, with the ratio fedpar / PyTorch (goal >= 1.0).
# Results go to $OUT (or gpu-check/): gpu.txt, the logs, e2e.md (the runs: exit, seconds, hash,
# accuracy), the JSON lines of both benchmark sides and gpu-bench.md. Exit status: non-zero when a
# test or a run failed.
#   bash scripts/gpu-bundle.sh     # here, once
#   device run: carry [".gpu-deps"], command "bash scripts/gpu-check.sh"
# E2E_DEVICE=cpu runs the same runs with CPU clients (how the commands are checked without a GPU).
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
if [[ ! -e $deps/lib/libzmq.so.5 ]]; then
  echo "gpu-check: .gpu-deps/ has no libzmq: it predates the runtime's bundle; run scripts/gpu-bundle.sh again" >&2
  exit 2
fi
# NCCL (allreduce.backend = "nccl"): the toolkit's, else the one PyTorch's wheels brought
if [[ -z ${NCCL_HOME:-} && ! -e /usr/local/cuda/include/nccl.h ]]; then
  NCCL_HOME=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null) && export NCCL_HOME
fi
cmake -S . -B build-gpu "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DFEDPAR_DEPS="$deps" \
  -DFEDPAR_OPENBLAS=OFF -DFEDPAR_ONEDNN=OFF >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 2; }
grep "fedpar:" "$out/configure.log"
cmake --build build-gpu -j "$(nproc)" --target fedpar kernels_tests bench_train >"$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; exit 2; }
echo "gpu-check: built in $((SECONDS - t0)) s"
status=0
(cd build-gpu && ctest -L gpu --output-on-failure) 2>&1 | tee "$out/gpu-tests.log" || status=1
dev=${E2E_DEVICE:-cuda}
if [[ $dev == cuda ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here: the gpu tests skipped and there is nothing to run or benchmark" >&2
  exit $status
fi

# End to end: `fedpar run` starts a server and client processes, the clients on $dev.
bash scripts/fetch-mnist.sh >/dev/null || { echo "gpu-check: no MNIST (scripts/fetch-mnist.sh)" >&2; exit 2; }
# a key of a run's summary.json ("-" where it has none: the equivalence experiment writes report.md)
summary() {
  local v
  v=$(sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",}]*\).*/\1/p" "$out/runs/$1/summary.json" 2>/dev/null | head -1)
  echo "${v:--}"
}
echo "| run | exit | seconds | final model hash | test accuracy |" >"$out/e2e.md"
echo "|---|---|---|---|---|" >>"$out/e2e.md"
e2e() {
  local name=$1 t=$SECONDS rc
  shift
  echo "gpu-check: run $name" >&2
  ./build-gpu/fedpar run "$@" --set results_dir="$out/runs" --set name="$name" >"$out/$name.txt" 2>"$out/$name.err"
  rc=$?
  ((rc == 0)) || status=1
  echo "| $name | $rc | $((SECONDS - t)) | $(summary "$name" model_hash) | $(summary "$name" test_accuracy) |" >>"$out/e2e.md"
}
e2e "equivalence-$dev" experiments/equivalence.toml --set device="$dev"
e2e "fedavg-2nn-$dev" experiments/fedavg-mnist-2nn.toml --set device="$dev"
e2e fedavg-2nn-cpu-clients experiments/fedavg-mnist-2nn.toml --set device=cpu
cnn_cpu=()  # the CNN's epochs over 60,000 images take minutes on a CPU: a tenth of them there
[[ $dev == cpu ]] && cnn_cpu=(--set data.train_limit=6000)
e2e "fedavg-cnn-$dev" experiments/fedavg-mnist-2nn.toml --set model.name=cnn --set rounds=5 --set device="$dev" "${cnn_cpu[@]}"
e2e "allreduce-2nn-$dev" experiments/topology-allreduce.toml --set device="$dev"
e2e "fedavg-2nn-bf16-$dev" experiments/fedavg-mnist-2nn.toml --set optimizer.precision=bf16 --set device="$dev"
e2e "fedavg-2nn-fp16-$dev" experiments/fedavg-mnist-2nn.toml --set optimizer.precision=fp16 --set device="$dev"
# the same FedAvg on the device and on the CPU: how far apart their models end
{
  echo
  echo "fedavg-2nn-$dev against fedavg-2nn-cpu-clients: $(python3 scripts/model_distance.py \
    "$out/runs/fedavg-2nn-$dev" "$out/runs/fedavg-2nn-cpu-clients" 2>&1 || echo 'no distance')"
} >>"$out/e2e.md"
if [[ $dev == cuda ]]; then
  # NCCL on one GPU is a ring of one rank (NCCL refuses two ranks on one device): its sum must
  # leave the model as the zmq-ring of one process does, to the bit
  e2e allreduce-2nn-1proc-zmq-ring-cuda experiments/topology-allreduce.toml --set processes=1 --set device=cuda
  e2e allreduce-2nn-1proc-nccl-cuda experiments/topology-allreduce.toml --set processes=1 --set device=cuda \
    --set allreduce.backend=nccl
  if [[ $(summary allreduce-2nn-1proc-nccl-cuda model_hash) != "$(summary allreduce-2nn-1proc-zmq-ring-cuda model_hash)" ]]; then
    echo "gpu-check: the NCCL run's model differs from the zmq-ring's" | tee -a "$out/e2e.md" >&2
    status=1
  fi
fi
cat "$out/e2e.md"
if [[ $dev != cuda ]]; then
  echo "gpu-check: E2E_DEVICE=$dev: no benchmark (done in $((SECONDS - t0)) s, exit $status)" >&2
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
