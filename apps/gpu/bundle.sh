#!/bin/sh
# apps/gpu/bundle.sh: gathers, on a Debian 12 machine with apt, the Debian packages that axiom builds
# with and that a GPU machine without network lacks, into .gpu-bundle/debs/ at the repository's root
# (ignored by git; at most 64 MiB, what a device machine is sent). apps/gpu/check.sh unpacks them
# there into a prefix of their own and builds against it.
#
# Left out: Open MPI and oneDNN (the GPU check builds without them), Fashion-MNIST (it needs no
# data), and what every machine with a C++ compiler already has: the C library, libstdc++, GCC's
# runtimes and headers. Everything else a package needs comes along, down to its last dependency,
# as apt resolves it on a machine where nothing is installed, so that axiom's programs load one
# consistent set of Debian 12 libraries there (through their RPATH; see check.sh).
set -eu
cd "$(dirname "$0")/../.."
bundle=.gpu-bundle
packages="libopenblas-dev libtbb-dev libhwy-dev doctest-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libzip-dev libstb-dev giza-dev libboost-dev libboost-context-dev pkgconf"
toolchain='^(debconf|gcc-12-base|libc6|libc6-dev|libc-dev-bin|linux-libc-dev|libcrypt1|libcrypt-dev|libnsl2|libnsl-dev|libtirpc3|libtirpc-dev|libtirpc-common|rpcsvc-proto|libstdc\+\+6|libstdc\+\+-12-dev|libgcc-s1|libgcc-12-dev|libasan8|liblsan0|libtsan2|libubsan1|libitm1|libatomic1|fonts-dejavu-core)_'
limit_mib=64

if [ -e "$bundle" ] && [ ! -e "$bundle/.made-by-axiom" ]; then
  echo "bundle.sh: $bundle exists and was not made by this script; move it away first" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then as_root=""; else as_root="sudo"; fi
$as_root apt-get update -qq

# apt resolves the packages against an empty package database, so the whole dependency tree comes
# down, whatever this machine has installed.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debs/partial"
: >"$work/status"
$as_root apt-get install --download-only -y -qq --no-install-recommends \
  -o Dir::State::status="$work/status" -o Dir::Cache::archives="$work/debs" -o Debug::NoLocking=1 \
  $packages >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; exit 1; }

rm -rf "$bundle/debs"
mkdir -p "$bundle/debs"
touch "$bundle/.made-by-axiom"
for deb in "$work"/debs/*.deb; do
  basename "$deb" | grep -qE "$toolchain" || cp "$deb" "$bundle/debs/"
done
count=$(ls "$bundle/debs" | wc -l)
size_kib=$(du -sk "$bundle/debs" | cut -f1)
echo "bundle.sh: $count packages, $((size_kib / 1024)) MiB in $bundle/debs"
if [ "$size_kib" -gt $((limit_mib * 1024)) ]; then
  echo "bundle.sh: the bundle is larger than the $limit_mib MiB a device machine is sent" >&2
  exit 1
fi
