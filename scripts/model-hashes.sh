#!/usr/bin/env bash
# Prints the final model hash of every example run config (5 rounds each) and of every distributed
# variant of the equivalence quickstart: the fingerprint a refactoring must leave unchanged.
# Async runs apply updates in arrival order, so their hash varies from run to run; for them the
# line is whether `fedpar replay` recomputes the run's own hash.
#   bash scripts/model-hashes.sh [FEDPAR_BINARY] > hashes.txt
set -euo pipefail
cd "$(dirname "$0")/.."
FEDPAR=${1:-./build/fedpar}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

hash_of() { sed -n 's/.*"model_hash": *"\([0-9a-f]*\)".*/\1/p' "$1/summary.json"; }

for config in experiments/*.toml; do
  grep -q '^regime\|^rounds\|^\[equivalence\]' "$config" || continue  # fedpar train configs
  grep -q '^\[equivalence\]' "$config" && continue
  name=$(basename "$config" .toml)
  "$FEDPAR" run "$config" --set rounds=5 --set name="$name" --set results_dir="$OUT" >/dev/null 2>&1
  if grep -q '^regime = "async"' "$config"; then
    if "$FEDPAR" replay "$OUT/$name" >/dev/null 2>&1; then
      echo "$name: async, replay matches its own hash"
    else
      echo "$name: async, replay DIFFERS"
    fi
  else
    echo "$name: $(hash_of "$OUT/$name")"
  fi
done

"$FEDPAR" run experiments/equivalence.toml --set results_dir="$OUT" >/dev/null 2>&1 || true
for run in "$OUT"/equivalence/runs/*/; do
  echo "equivalence $(basename "$run"): $(hash_of "$run")"
done
