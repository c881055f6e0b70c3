#!/usr/bin/env bash
# Re-runs suites at full size and commits-ready copies their reports into docs/results/<suite>/
# (report.md, suite.json, plots/) with PROVENANCE.md: the exact command, the commit, the date, the
# machine and the wall time. The docs quote numbers only from these folders.
#   bash scripts/refresh-results.sh [--smoke] [SUITE ...]   (default: every experiments/suites/*.toml)
# --smoke runs the smoke sizes instead, into docs/results/smoke/<suite>/ (what docs/suites.md's
# smoke column and the docs' smoke tables quote).
# A variant of one suite: SETS="--set k=v ..." passes settings (split at spaces: no value may hold
# one), AS=NAME names its folder (docs/results/NAME/), e.g.
#   AS=grad-vs-model-minibatch SETS="--set sgd.batch=20 --set local.batch=20" \
#     bash scripts/refresh-results.sh grad-vs-model
set -euo pipefail
cd "$(dirname "$0")/.."
FEDPAR=${FEDPAR:-./build/fedpar}
smoke=()
if [[ ${1:-} == --smoke ]]; then smoke=(--smoke) && shift; fi
if (($#)); then suites=("$@"); else suites=($(basename -s .toml experiments/suites/*.toml)); fi
if [[ -n ${AS:-} ]] && ((${#suites[@]} != 1)); then
  echo "refresh-results: AS=$AS names one suite's folder: give exactly one suite" >&2 && exit 2
fi
source scripts/provenance.sh
commit=$(source_commit)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for suite in "${suites[@]}"; do
  echo "refresh-results: $suite ..." >&2
  start=$(date +%s)
  read -ra sets <<<"${SETS:-}"
  "$FEDPAR" suite "$suite" ${smoke[@]+"${smoke[@]}"} ${sets[@]+"${sets[@]}"} --out "$work/$suite"
  seconds=$(($(date +%s) - start))
  dest=docs/results/${AS:-$suite}
  if ((${#smoke[@]})); then dest=docs/results/smoke/${AS:-$suite}; fi
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$work/$suite/report.md" "$work/$suite/suite.json" "$dest/"
  [[ -d $work/$suite/plots ]] && cp -r "$work/$suite/plots" "$dest/"
  cat >"$dest/PROVENANCE.md" <<MD
# How this report was made

- command: \`fedpar suite $suite${smoke[@]+ ${smoke[*]}}${SETS:+ $SETS}\` (via \`${AS:+AS=$AS }${SETS:+SETS=\"$SETS\" }bash scripts/refresh-results.sh ${smoke[@]+${smoke[*]} }$suite\`)
- commit: $commit
- date: $(date -u +%Y-%m-%dT%H:%MZ)
- machine: $(machine)
- build: $("$FEDPAR" --version)
- wall time: $seconds s

Only the report, its table data (suite.json) and plots are kept; the runs' own folders (models,
metrics) are left out to keep the repository small: the command recreates them.
MD
done
