#!/usr/bin/env bash
# Runs the single commands whose numbers README.md and docs/ quote (the centralized baselines, the
# example run configs, the network modes, the partitions of MNIST) and writes each one's wall time, test accuracy, final
# model hash and round times to docs/results/example-runs/<date>.md, with the commit and the
# machine: the evidence behind those numbers. Accuracies and hashes are exact on the same kind of
# CPU (README.md: the bytes depend on the vector units); the times are this machine's, one run
# each, so run it with nothing else running.
#   bash scripts/example-runs.sh [FEDPAR_BINARY]      (about 4 minutes on 2 cores)
#   bash scripts/example-runs.sh --only SECTION [FEDPAR_BINARY]
#       one section into <date>-SECTION.md: thousand-clients (the simulated runs of docs/network.md)
#       or async-slow-link (asynchronous against synchronous SGD, one client on lte, docs/topologies.md)
#       or deadline (FedAvg waiting for its 3g clients or leaving their late updates out,
#       docs/network.md) or topologies (the three data-parallel topology configs, the tensor
#       split of the pipeline config and async-straggler, README.md and docs/topologies.md)
set -euo pipefail
cd "$(dirname "$0")/.."
only=""
if [[ ${1:-} == --only ]]; then only=$2 && shift 2; fi
case $only in "" | thousand-clients | async-slow-link | deadline | topologies) ;; *) echo "example-runs: no section '$only'" >&2 && exit 2 ;; esac
FEDPAR=${1:-./build/fedpar}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dest=docs/results/example-runs/$(date -u +%Y-%m-%d)${only:+-$only}.md
source scripts/provenance.sh
commit=$(source_commit)

# The round seconds of a run folder's rounds 2..: the network's (emulated or simulated) where it
# had one, else the server's wait; "min-max".
round_seconds() {
  python3 - "$1/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("kind") == "round" and r["round"] >= 2]
for key, name in (("emulated_seconds", "emulated"), ("simulated_seconds", "simulated"),
                  ("wait_seconds", "wait")):
    vals = [r[key] for r in rows if key in r]
    if vals:
        print(f"{name} {min(vals):.2f}-{max(vals):.2f}")
        break
PY
}

row() {  # row "args as the docs write them" [a run: its folder name]
  local args=$1 name=${2:-}
  local start end
  start=$(date +%s%N)
  # shellcheck disable=SC2086  # the args are words, as the docs write them; LAUNCH: mpirun ...
  if ! ${LAUNCH:-} "$FEDPAR" $args --set results_dir="$work" ${name:+--set name=$name} >"$work/out" 2>"$work/err"; then
    echo "example-runs: '${LAUNCH:+$LAUNCH }$FEDPAR $args' failed:" >&2
    tail -5 "$work/err" >&2
    exit 1
  fi
  end=$(date +%s%N)
  local acc hash rounds=""
  acc=$(sed -n 's/^test accuracy: \(.*\)$/\1/p' "$work/out" | tail -1)
  hash=$(sed -n 's/^final model hash: \(.*\)$/\1/p' "$work/out" | tail -1)
  [[ -n $name ]] && rounds=$(round_seconds "$work/$name")
  local tenths=$(((end - start) / 100000000))
  printf '| `%s./build/fedpar %s` | %d.%d | %s | %s | %s |\n' "${LAUNCH:+$LAUNCH }" "$args" \
    $((tenths / 10)) $((tenths % 10)) \
    "${acc:--}" "${hash:--}" "${rounds:--}"
}

# The data-parallel topologies' configs (one step a round through a parameter server, a master, a
# ring) and the 2NN split 2 ways by tensor parallelism, on this machine's clock.
topologies() {
  row "run experiments/topology-parameter-server.toml" topo-ps
  row "run experiments/topology-master.toml" topo-master
  row "run experiments/topology-allreduce.toml" topo-ring
  row "run experiments/tensor-2nn.toml" tensor-2nn
  # async: which worker's update lands first depends on the clock, so its digits vary run to run
  row "run experiments/async-straggler.toml" async-straggler
}

# A thousand clients on simulated links, 100 a round: without a server link (each client's messages
# at its own link's speed), then with the server on one 100 Mbit/s link that every message shares.
thousand_clients() {
  local base="run experiments/fedavg-mnist-2nn.toml --set partition.clients=1000 --set fraction=0.1 --set rounds=5 --set network.mode=simulated --set network.heterogeneous=wifi:0.5,lte:0.3,3g:0.2"
  row "$base" thousand
  row "$base --set network.server=custom --set network.custom.down_bps=1e8 --set network.custom.up_bps=1e8" thousand-server
}

# Asynchronous against synchronous SGD on the simulated clock, 4 clients on wifi but client 0 on
# lte: rounds to 90% and their simulated seconds, and each client's updates and mean staleness.
async_slow_link() {
  local base="run experiments/async-straggler.toml --set stragglers.slowdown=[] --set rounds=400 --set stop_at_accuracy=0.9 --set network.mode=simulated --set network.profile=wifi --set network.profiles=0:lte"
  row "$base" async-lte
  python3 - "$work/async-lte/updates.jsonl" <<'PY'
import json, sys
from collections import defaultdict
n, tau = defaultdict(int), defaultdict(float)
for line in open(sys.argv[1]):
    u = json.loads(line)
    n[u["client"]] += 1
    tau[u["client"]] += u["staleness"]
print("|", "; ".join(f"client {c}: {n[c]} updates, staleness {tau[c] / n[c]:.1f}" for c in sorted(n)), "| | | | |")
PY
  row "$base --set regime=gradient --set optimizer.lr=0.4" sync-lte
  python3 - "$work" <<'PY'
import json, sys
for name in ("async-lte", "sync-lte"):
    rows = [json.loads(l) for l in open(f"{sys.argv[1]}/{name}/metrics.jsonl") if l.strip()]
    last = [r for r in rows if r.get("kind") == "round"][-1]
    print(f"| {name}: {last['round']} rounds, simulated_time {last['simulated_time']:.1f} s at "
          f"{100 * last['test_accuracy']:.2f}% | | | | |")
PY
}

# A deadline on simulated links: FedAvg over 10 clients, 20% of them on 3g (about 16 s to move the
# 2NN down and up), the rest on wifi and lte. Waiting for every update, and leaving out the
# updates in after 5 s (network.drop_late), on IID data and on shards (2 labels a client).
deadline() {
  local scheme
  for scheme in iid shards; do
    local base="run experiments/fedavg-mnist-2nn.toml --set rounds=20 --set partition.scheme=$scheme --set network.mode=simulated --set network.heterogeneous=wifi:0.5,lte:0.3,3g:0.2"
    row "$base" "wait-$scheme"
    row "$base --set wait_seconds=5 --set network.drop_late=true" "drop-$scheme"
    python3 - "$work" "$scheme" <<'PY'
import json, sys
runs = {}
for name in (f"wait-{sys.argv[2]}", f"drop-{sys.argv[2]}"):
    rows = [json.loads(l) for l in open(f"{sys.argv[1]}/{name}/metrics.jsonl") if l.strip()]
    runs[name] = rounds = [r for r in rows if r.get("kind") == "round"]
    late = sorted({c for r in rounds for c in r.get("simulated_late", [])})
    updates = sum(len(r.get("clients", [])) for r in rounds)
    print(f"| {name}: {len(rounds)} rounds, simulated_time {rounds[-1]['simulated_time']:.1f} s at "
          f"{100 * rounds[-1]['test_accuracy']:.2f}%, {updates} updates aggregated"
          f"{', late: clients ' + ', '.join(map(str, late)) if late else ''} | | | | |")
# the waiting run when the deadline's run ended: the same simulated time
wait, drop = runs[f"wait-{sys.argv[2]}"], runs[f"drop-{sys.argv[2]}"]
at = [r for r in wait if r["simulated_time"] <= drop[-1]["simulated_time"]]
if at:
    print(f"| wait-{sys.argv[2]} by {drop[-1]['simulated_time']:.1f} s: round {at[-1]['round']}, "
          f"{100 * at[-1]['test_accuracy']:.2f}% | | | | |")
PY
  done
}

mkdir -p "$(dirname "$dest")"
if [[ -n $only ]]; then
  {
    echo "# Example runs: $only, $(date -u +%Y-%m-%d)"
    echo
    echo "Made by \`bash scripts/example-runs.sh --only $only\`: commit $commit,"
    echo "$(date -u +%Y-%m-%dT%H:%MZ), $(machine). One run each; round seconds: rounds 2 to the"
    if [[ $only == topologies ]]; then
      echo "last, the server's wait; wall seconds include loading MNIST."
    else
      echo "last, simulated; the final simulated time is in each run's last round record."
    fi
    echo
    echo "| command | wall (s) | test accuracy | final model hash | round seconds |"
    echo "|---|---:|---:|---|---|"
    case $only in
      thousand-clients) thousand_clients ;;
      async-slow-link) async_slow_link ;;
      deadline) deadline ;;
      topologies) topologies ;;
    esac
  } >"$work/table.md"
  mv "$work/table.md" "$dest"
  cat "$dest"
  echo "example-runs: $dest" >&2
  exit 0
fi
{
  echo "# Example runs, $(date -u +%Y-%m-%d)"
  echo
  echo "Made by \`bash scripts/example-runs.sh\`: commit $commit, $(date -u +%Y-%m-%dT%H:%MZ),"
  echo "$(machine)."
  echo "One run each; wall seconds include loading MNIST. Round seconds: rounds 2 to the last, the"
  echo "network's emulated or simulated time where the run has one, else the server's wait."
  echo
  echo "| command | wall (s) | test accuracy | final model hash | round seconds |"
  echo "|---|---:|---:|---|---|"
  row "train --quiet --model 2nn --dataset mnist --epochs 1 --batch 10 --lr 0.1"
  row "train --quiet --config experiments/baseline-2nn.toml"
  row "train --quiet --config experiments/baseline-logreg.toml"
  row "train --quiet --config experiments/cnn-subset.toml"
  row "run experiments/fedavg-mnist-2nn.toml" fedavg
  row "run experiments/fedavg-mnist-2nn.toml --set local.prox_mu=0.01" fedprox
  row "run experiments/fedavg-mnist-2nn.toml --set server_optimizer.name=adam --set local.server_lr=0.1" fedadam
  row "run experiments/dp-mnist-logreg.toml" dp
  row "run experiments/dp-mnist-logreg.toml --set rounds=5" dp5
  row "run experiments/dp-mnist-logreg.toml --set rounds=5 --set topology=master" dp5-master
  row "run experiments/pipeline-2nn.toml --set topology=parameter-server --set processes=1" pipe-ps
  row "run experiments/pipeline-2nn.toml --set pipeline.micro_batches=1" pipe-m1
  row "run experiments/pipeline-2nn.toml" pipe-m4-1f1b
  row "run experiments/pipeline-2nn.toml --set pipeline.schedule=gpipe" pipe-m4-gpipe
  row "run experiments/fedavg-mnist-2nn.toml --set rounds=3" run3
  if command -v mpirun >/dev/null; then  # root may start MPI jobs only when told so
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LAUNCH="mpirun --oversubscribe -n 5" \
      row "launch experiments/fedavg-mnist-2nn.toml --set rounds=3" launch3
  fi
  row "run experiments/fedavg-mnist-2nn.toml --set rounds=5" net-off
  for mode in "emulated wifi" "emulated lte" "simulated wifi" "simulated lte"; do
    read -r m p <<<"$mode"
    row "run experiments/fedavg-mnist-2nn.toml --set rounds=5 --set network.mode=$m --set network.profile=$p" "net-$m-$p"
  done
  thousand_clients
  echo
  echo "Partitions of MNIST's training set, 100 clients, seed 1 (the hash is of the manifest's"
  echo "assignment and holds on any CPU):"
  echo
  echo "| command | size min / median / max | labels present (median) | EMD median | hash |"
  echo "|---|---|---:|---:|---|"
  for scheme in "iid" "shards" "labels-k" "dirichlet-clients --alpha 0.1" \
    "dirichlet-classes --beta 0.01" "iid-quantity --beta 0.01"; do
    args="partition --dataset mnist --clients 100 --scheme $scheme"
    # shellcheck disable=SC2086
    rm -rf "$work/partition"  # partition refuses a folder that holds another split
    "$FEDPAR" $args --out "$work/partition" >"$work/out"
    awk -v args="$args" '
      /^scheme / { hash = $NF }
      /^size / { size = $2 " / " $3 " / " $4 }
      /^labels present / { labels = $4 }
      /^EMD to global / { emd = $5 }
      END { printf "| `./build/fedpar %s --out DIR` | %s | %g | %s | %s |\n", args, size, labels, emd, hash }
    ' "$work/out"
  done
  echo
  echo "\`./build/bench_partition\` (60,000 labels, 100 clients, median of 7):"
  echo
  echo '```'
  "$(dirname "$FEDPAR")/bench_partition"
  echo '```'
} >"$work/table.md"  # into place only when every command ran
mv "$work/table.md" "$dest"
cat "$dest"
echo "example-runs: $dest" >&2
