#!/usr/bin/env bash
# Fails, listing the files, when a tracked C++ or CUDA file departs from .clang-format.
# Fix with: clang-format -i $(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is missing (bash scripts/setup.sh installs it)"; exit 2; }
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} of ${#files[@]} files are not clang-formatted:"
  printf '  %s\n' "${bad[@]}"
  echo "fix: clang-format -i \$(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')"
  exit 1
fi
echo "check-format: all ${#files[@]} files are clang-formatted ($(clang-format --version | head -1))"
