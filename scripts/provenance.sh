# Sourced by the scripts that write evidence into docs/results/: what made it and where.
#   source_commit: the commit, with "+ uncommitted changes" when the code differs from it (docs and
#                  README do not count: they are what these scripts write)
#   machine:       cores, CPU (with or without AVX-512: the bytes of a run depend on it), OS
source_commit() {
  local commit
  commit=$(git rev-parse --short HEAD)
  git diff --quiet HEAD -- . ':!docs' ':!README.md' || commit="$commit + uncommitted changes"
  echo "$commit"
}

machine() {
  echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" \
    "($(grep -o -m1 'avx512f' /proc/cpuinfo || echo 'no AVX-512')), $(. /etc/os-release && echo "$PRETTY_NAME")"
}
