#!/usr/bin/env bash
# Packs what fedpar needs from Debian's packages into .gpu-deps/ (git-ignored), for a machine that
# has CUDA, CMake and PyTorch but none of them (scripts/gpu-check.sh builds against it with
# -DFEDPAR_DEPS, each with that machine's own compiler):
#   include/    the headers of Eigen, fmt, nlohmann-json, toml++, CLI11, ZeroMQ and cppzmq, and of
#               the Boost headers fedpar's sources include (only the files they reach: the
#               compiler's dependency list, not all 160 MB of Boost)
#   lib/        libzmq and Boost.Filesystem with every shared object they load that is not the C
#               and C++ runtime (libsodium, Kerberos, ...); the binaries' rpath points here
#   googletest/ GoogleTest's sources
#   mnist/      MNIST's four IDX files, xz-compressed (9 MB: the GPU machine has no npm and no
#               network; gpu-check.sh unpacks them and scripts/fetch-mnist.sh checks their SHA-256)
# --check: then builds the whole tree (runtime, tests) against the bundle into build-deps/ and
# fails when a header or shared object of a bundled dependency came from the system instead.
# Carry it: device run, carry [".gpu-deps"], command "bash scripts/gpu-check.sh"
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
for arg in "$@"; do
  case $arg in
    --check) check=1 ;;
    *) echo "gpu-bundle: unknown argument '$arg' (--check)" >&2; exit 2 ;;
  esac
done
bash scripts/setup.sh --packages-only
bash scripts/fetch-mnist.sh
out=.gpu-deps
rm -rf "$out"
mkdir -p "$out/include" "$out/lib"
for h in eigen3 fmt nlohmann toml++ CLI zmq.h zmq_utils.h zmq.hpp zmq_addon.hpp; do
  cp -a "/usr/include/$h" "$out/include/"
done
cp -a /usr/src/googletest "$out/googletest"

# The Boost headers that fedpar's own includes of Boost reach, as the compiler lists them.
git ls-files '*.cc' '*.h' | xargs grep -ho '#include <boost/[^>]*>' | sort -u >"$out/boost-probe.cc"
g++ -std=c++20 -M "$out/boost-probe.cc" | tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u |
  while read -r f; do mkdir -p "$out/include/$(dirname "${f#/usr/include/}")" && cp -p "$f" "$out/include/${f#/usr/include/}"; done
rm "$out/boost-probe.cc"

# libzmq and Boost.Filesystem, and what they load beyond the C and C++ runtime.
# (glibc's own libraries must be the GPU machine's, matching its libc)
runtime='^(linux-vdso|ld-linux|libc|libm|libpthread|libdl|librt|libresolv|libutil|libnsl|libanl|libstdc\+\+|libgcc_s)\.'
for lib in libzmq.so.5 libboost_filesystem.so.1.74.0; do
  path=/usr/lib/x86_64-linux-gnu/$lib
  cp -Lp "$path" "$out/lib/$lib"
  ldd "$path" | awk '$3 ~ /^\// { print $1, $3 }' | while read -r name file; do
    [[ $name =~ $runtime ]] || cp -Lp "$file" "$out/lib/$name"
  done
done
mkdir -p "$out/mnist"
for f in "${FEDPAR_DATA_DIR:-data}"/mnist/*-ubyte; do xz -6 -T0 -c "$f" >"$out/mnist/$(basename "$f").xz"; done
echo "gpu-bundle: $(du -sh "$out" | cut -f1) in $out: $(find "$out/include/boost" -type f | wc -l) Boost headers, $(ls "$out/lib" | wc -l) shared objects"
((check)) || exit 0

# Build everything against the bundle, then ask ninja which headers each object read and ldd
# which shared objects the program loads.
bash scripts/build.sh -B build-deps -DFEDPAR_DEPS="$PWD/$out" -DFEDPAR_OPENBLAS=OFF -DFEDPAR_ONEDNN=OFF
bundled='^/usr/include/(eigen3|fmt|nlohmann|toml\+\+|CLI|boost|zmq)'
leaks=$(ninja -C build-deps -t deps | grep -E "$bundled" | sort -u || true)
if [[ -n $leaks ]]; then
  echo "gpu-bundle: these headers came from the system, not the bundle:" >&2
  echo "$leaks" | head -20 >&2
  exit 1
fi
# every shared object the program loads that the bundle has must come from the bundle
system=$(ldd build-deps/fedpar | awk '$3 ~ /^\// { print $1, $3 }' | while read -r name file; do
  [[ -e $out/lib/$name && $file != "$PWD/$out/lib/$name" ]] && echo "$name => $file"
done || true)
if [[ -n $system ]]; then
  echo "gpu-bundle: these shared objects came from the system, not the bundle:" >&2
  echo "$system" >&2
  exit 1
fi
echo "gpu-bundle: the whole tree built against $out; every bundled header and library came from it"
