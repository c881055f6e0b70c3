#!/usr/bin/env bash
# Times cold builds of this tree side by side: the unity build (the default, cmake/build_speed.cmake)
# against file-by-file compilation (-DFEDPAR_UNITY=OFF), each into a fresh folder, and says where
# the unity build's time goes (ninja's log of every step). Prints a markdown report; exits 1 when
# the unity build is not the faster one. Run it on an otherwise idle machine.
#   bash scripts/build-time.sh [--target NAME] [> report.md]   (default target: fedpar, what the
#   quickstart builds; --target all for everything scripts/test.sh builds)
set -euo pipefail
cd "$(dirname "$0")/.."
target=fedpar
while (($#)); do
  case $1 in
    --target) target=$2; shift 2 ;;
    *) echo "build-time.sh: unknown argument $1 (use --target NAME)" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# cold_build NAME CMAKE-OPTION...: configures and builds $target into $work/NAME; prints wall seconds.
cold_build() {
  local dir=$work/$1
  shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  local start=$SECONDS
  cmake --build "$dir" -j "$(nproc)" --target "$target" >"$dir.log" 2>&1 ||
    { tail -20 "$dir.log" >&2; exit 1; }
  echo $((SECONDS - start))
}

# cpu_seconds DIR: the sum of every step's duration in ninja's log.
cpu_seconds() { awk 'NR > 1 { s += ($2 - $1) / 1000 } END { printf "%.0f", s }' "$1/.ninja_log"; }
steps() { awk 'NR > 1' "$1/.ninja_log" | wc -l; }

echo "building '$target' file by file, then as a unity build ($(nproc) jobs)..." >&2
files_s=$(cold_build files -DFEDPAR_UNITY=OFF)
unity_s=$(cold_build unity -DFEDPAR_UNITY=ON)

echo "# Cold build of '$target' ($(date -u +%F), $(git rev-parse --short HEAD), $(nproc) cores)"
echo
echo "Measured by \`bash scripts/build-time.sh --target $target\`: each build configured into a fresh"
echo "folder and built with $(nproc) jobs; CPU seconds are the sum of the steps in ninja's log."
echo
echo "| build | wall s | CPU s | steps |"
echo "|---|---|---|---|"
echo "| file by file (-DFEDPAR_UNITY=OFF) | $files_s | $(cpu_seconds "$work/files") | $(steps "$work/files") |"
echo "| unity, batches of 8 (default) | $unity_s | $(cpu_seconds "$work/unity") | $(steps "$work/unity") |"
echo
echo "Unity build: $(awk -v a="$files_s" -v b="$unity_s" 'BEGIN { printf "%.2f", a / b }')x faster."
echo
echo "Where the unity build's CPU time goes:"
echo
echo "| steps | count | CPU s |"
echo "|---|---|---|"
awk 'NR > 1 {
  d = ($2 - $1) / 1000; f = $4
  g = "links and other steps"
  if (f ~ /\.cu\.o$|kernels/) g = "CUDA and kernel objects"
  else if (f ~ /^tests\/|^fuzz\//) g = "test objects"
  else if (f ~ /^bench\//) g = "benchmark objects"
  else if (f ~ /CMakeFiles\/fedpar\.dir\//) g = "the fedpar command'"'"'s objects"
  else if (f ~ /CMakeFiles\/fedpar_[a-z]+\.dir\//) g = "library objects"
  n[g]++; s[g] += d
} END { for (g in s) printf "| %s | %d | %.0f |\n", g, n[g], s[g] }' "$work/unity/.ninja_log" |
  sort -t'|' -k4 -rn
echo
echo "The slowest steps:"
echo
echo "| step | seconds |"
echo "|---|---|"
awk 'NR > 1 { printf "%.1f %s\n", ($2 - $1) / 1000, $4 }' "$work/unity/.ninja_log" | sort -rn | head -8 |
  awk '{ printf "| `%s` | %s |\n", $2, $1 }'
if ((unity_s >= files_s)); then
  echo "verdict: the unity build is not faster here ($unity_s s against $files_s s)" >&2
  exit 1
fi
