#!/usr/bin/env bash
# Runs the tests whose printed numbers and recorded properties the docs quote (the rounding-floor
# ratios, the equivalence distances, the reduced-precision accuracies, the emulated link against
# the kernel's tbf, the run across three namespaces) and writes what each printed, its recorded
# properties and its verdict to docs/results/test-evidence/<date>.md, with the commit and the
# machine. The netns tests need root (they skip without it, and say so). Exits non-zero when a
# test fails.
#   bash scripts/test-evidence.sh [BUILD_DIR]      (about 2 minutes on 2 cores; run it alone)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
source scripts/provenance.sh
commit=$(source_commit)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dest=docs/results/test-evidence/$(date -u +%Y-%m-%d).md
mkdir -p "$(dirname "$dest")"

# binary | gtest filter | the doc that quotes it
cases=(
  "runtime_tests|Equivalence.*|docs/definitions.md (Randomness), tests/server/equivalence_test.cc"
  "core_tests|Stages.TwentyPipelinedSteps*:TensorShard.*|docs/pipeline.md"
  "core_tests|Precision.TrainingInBf16AndFp16StillLearns|docs/gpu.md"
  "netns_tests|KernelCheck.*:MultiHost.*|docs/network.md"
  "cli_tests|Scale.*:DistributedFaults.KilledClientModel*:DistributedFaults.KilledClientStops*|docs/reliability.md (memory), docs/distributed.md (a killed client)"
)
{
  echo "# Numbers the tests print, $(date -u +%Y-%m-%d)"
  echo
  echo "Made by \`bash scripts/test-evidence.sh\`: commit $commit, $(date -u +%Y-%m-%dT%H:%MZ),"
  echo "$(machine). Each test's own output lines (gtest's markers left out) and the properties"
  echo "it recorded (\`RecordProperty\`); the docs named beside each quote them."
} >"$dest"
status=0
for c in "${cases[@]}"; do
  IFS='|' read -r binary filter doc <<<"$c"
  echo "test-evidence: $binary --gtest_filter='$filter' ..." >&2
  rc=0
  rm -f "$work/out.xml"  # a binary that dies before writing it must not show the last one's
  "$build/tests/$binary" --gtest_filter="$filter" --gtest_output="xml:$work/out.xml" \
    >"$work/out.txt" 2>&1 || rc=$?
  ((rc == 0)) || status=1
  {
    echo
    echo "## \`$build/tests/$binary --gtest_filter='$filter'\`"
    echo
    echo "Quoted in $doc. Exit status $rc."
    echo
    echo '```'
    grep -v -e '^\[' -e '^$' -e '^Running main()' -e '^Note: Google Test filter' "$work/out.txt" || true
    if [[ ! -f $work/out.xml ]]; then
      echo "(no test report: the binary exited $rc before writing one)"
    else
      /usr/bin/python3 - "$work/out.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    verdict = "skipped" if case.get("result") == "skipped" or case.find("skipped") is not None \
        else "FAILED" if case.find("failure") is not None else "passed"
    props = [f'{p.get("name")}={p.get("value")}' for p in case.iter("property")]
    print(f'{case.get("classname")}.{case.get("name")}: {verdict}' + (": " + ", ".join(props) if props else ""))
PY
    fi
    echo '```'
  } >>"$dest"
done
echo "test-evidence: $dest" >&2
exit $status
