#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ (clang, AddressSanitizer + UBSan; build-fuzz/) and runs
# each over its corpus for a while, then prints a table: executions, speed, coverage, corpus size.
#   scripts/fuzz.sh                 60 s per harness
#   scripts/fuzz.sh --runs 10000    CI's short run (scripts/test.sh): a fixed number of inputs
#                                   from a fixed seed, address randomization off: the
#                                   harnesses on bytes (header, messages, config) repeat their
#                                   course exactly; those that read a file still vary a little
#   scripts/fuzz.sh --only config --seconds 600 --jobs 2 --report docs/results/fuzz/report.md
# A crash (or leak, timeout, out-of-memory, uncaught exception) stops that harness, keeps its
# input in build-fuzz/crashes/NAME/ and makes this script exit 1. Once fixed, copy the input into
# fuzz/corpus/NAME/: the ordinary build replays it as the test fuzz_corpus.NAME.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=60 RUNS="" JOBS=1 ONLY="" REPORT=""
while (($#)); do
  case $1 in
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;  # harnesses run side by side, one core each
    --only) ONLY=$2; shift 2 ;;
    --report) REPORT=$2; shift 2 ;;
    *) echo "fuzz.sh: unknown argument '$1' (see the comment at the top of scripts/fuzz.sh)" >&2; exit 2 ;;
  esac
done
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found: run scripts/setup.sh --with-fuzz" >&2; exit 1; }

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DFEDPAR_FUZZ=ON >/dev/null
if ! cmake --build build-fuzz --target fuzzers -j "$(nproc)" >build-fuzz/build.log 2>&1; then
  grep -E -A5 "error|FAILED" build-fuzz/build.log | head -40 >&2
  echo "fuzz.sh: the fuzz build failed (build-fuzz/build.log)" >&2
  exit 1
fi

harnesses=$(sed -n 's/^set(harnesses \(.*\))$/\1/p' fuzz/CMakeLists.txt)
[[ -n $ONLY ]] && harnesses=${ONLY//,/ }
mkdir -p build-fuzz/logs
run_one() {  # NAME: fuzz it; libFuzzer's own log goes to build-fuzz/logs/NAME.log
  local name=$1 work=build-fuzz/corpus/$1
  mkdir -p "$work" "build-fuzz/crashes/$name"
  rm -f "build-fuzz/logs/$name.status"
  # new inputs go to the working corpus; fuzz/corpus/NAME (the seeds) is only read
  local budget=(-max_total_time="$SECONDS_EACH") pin=()
  # a seeded run: a fixed seed, and no address randomization (the comparisons libFuzzer traces
  # hold pointers, which would steer each run's mutations down another course)
  if [[ -n $RUNS ]]; then
    budget=(-runs="$RUNS" -seed=1)
    setarch "$(uname -m)" -R true 2>/dev/null && pin=(setarch "$(uname -m)" -R)
  fi
  mkdir -p build-fuzz/inputs  # the file a harness that reads a path writes each input to
  if FEDPAR_FUZZ_INPUT=build-fuzz/inputs/$name "${pin[@]}" \
      build-fuzz/fuzz/fuzz_"$name" "$work" "fuzz/corpus/$name" "${budget[@]}" \
      -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
      -artifact_prefix="build-fuzz/crashes/$name/" >"build-fuzz/logs/$name.log" 2>&1; then
    echo "ok" >"build-fuzz/logs/$name.status"
  else
    echo "CRASH" >"build-fuzz/logs/$name.status"
  fi
}
export -f run_one
export SECONDS_EACH RUNS
printf '%s\n' $harnesses | xargs -P "$JOBS" -I{} bash -c 'run_one "$1"' _ {}

table() {
  echo "| harness | result | executions | seconds | executions/s | coverage (edges) | corpus |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  local total=0
  for name in $harnesses; do
    local log=build-fuzz/logs/$name.log
    local execs secs cov corpus
    # a harness that failed early has no stats: the table still prints, the verdict follows
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" 2>/dev/null | tail -1 || true)
    secs=$(sed -n 's/.*Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" 2>/dev/null | tail -1 || true)
    cov=$( (grep -o 'cov: [0-9]*' "$log" 2>/dev/null || true) | tail -1 | cut -d' ' -f2)
    corpus=$(find "build-fuzz/corpus/$name" "fuzz/corpus/$name" -type f 2>/dev/null | wc -l || true)
    execs=${execs:-0} secs=${secs:-$SECONDS_EACH}
    total=$((total + execs))
    echo "| $name | $(cat "build-fuzz/logs/$name.status" 2>/dev/null || echo missing) | $execs | $secs | $((execs / (secs > 0 ? secs : 1))) | ${cov:--} | $corpus |"
  done
  echo "| all | | $total | | | | |"
}
table | tee build-fuzz/logs/table.md
if [[ -n $REPORT ]]; then
  mkdir -p "$(dirname "$REPORT")"
  {
    echo "# Fuzzing: $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
    echo
    budget=${RUNS:+--runs $RUNS}
    echo "\`scripts/fuzz.sh ${budget:---seconds $SECONDS_EACH} --jobs $JOBS${ONLY:+ --only $ONLY}\` on $(nproc) cores, $(clang++ --version | head -1)."
    echo
    cat build-fuzz/logs/table.md
  } >"$REPORT"
fi
failed=0
for name in $harnesses; do
  if ! grep -q ok "build-fuzz/logs/$name.status" 2>/dev/null; then
    failed=1
    echo "fuzz.sh: $name found a failure; its log: build-fuzz/logs/$name.log, input(s):" >&2
    ls build-fuzz/crashes/"$name"/ >&2 || true
    grep -m3 -E "ERROR|SUMMARY|runtime error|uncaught" "build-fuzz/logs/$name.log" >&2 || true
  fi
done
exit $failed
