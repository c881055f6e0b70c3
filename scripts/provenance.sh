# Sourced by the scripts that write evidence into docs/results/: what made it and where.
#   source_commit: the commit, with "+ uncommitted changes" when the code differs from it (docs and
#                  README do not count: they are what these scripts write)
#   machine:       cores, CPU (its family and model, with or without AVX-512: the bytes of a run
#                  depend on them), OS
source_commit() {
  local commit
  commit=$(git rev-parse --short HEAD)
  git diff --quiet HEAD -- . ':!docs' ':!README.md' || commit="$commit + uncommitted changes"
  echo "$commit"
}

machine() {
  local field
  field() { grep -m1 "^$1\s*:" /proc/cpuinfo | cut -d: -f2 | xargs; }
  echo "$(nproc) cores, $(field 'model name')" \
    "(family $(field 'cpu family') model $(field model)," \
    "$(grep -o -m1 'avx512f' /proc/cpuinfo || echo 'no AVX-512')), $(. /etc/os-release && echo "$PRETTY_NAME")"
}
