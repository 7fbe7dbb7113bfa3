#!/bin/sh
# Installs the Debian packages that axiom builds with, when any is missing (Debian 12 or newer):
# the libraries, the dataset, and Python's headers, pybind11, NumPy, pytest and PyTorch for the
# Python module, its comparison with PyTorch (apps/python, tests/python), and matplotlib and
# Jupyter (nbconvert, ipykernel) for the tutorial notebook that the suite executes (apps/notebooks),
# Graphviz (its `dot`, and its Python module) to draw and check the graphs of autograd/graph.h,
# and python3-venv, for `pip install .` into a virtual environment (tests/python/test_pip_install.py).
# Works as root, or as a user with sudo. Does nothing when everything is there.
# With --fuzz, also clang and its runtime with libFuzzer, for the build with the sanitizers and the
# fuzzers (tests/fuzz; CI): clang 15 or newer, for std::source_location, so clang-16 on Debian 12,
# whose default clang is 14; and clang's OpenMP, without which that build has no oneDNN; and
# clang-format, for CI's check of the changed files' style (tests/docs/format_check.sh).
# With --cluster, also iproute2, OpenSSH's client and server, Slurm and munge, for the multihost
# tests (tests/distributed: cluster.sh, slurm.sh; CI). Where an init system runs, Debian's
# openssh-server, slurm-wlm and munge packages start and enable the machine's own daemons: hence a
# flag, not the default. The tests start daemons of their own and skip, with one line, where a
# package is missing.
set -e
packages="build-essential cmake git pkgconf libopenblas-dev libdnnl-dev ocl-icd-opencl-dev libtbb-dev libhwy-dev doctest-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libzip-dev libstb-dev giza-dev libboost-dev libboost-context-dev libopenmpi-dev openmpi-bin dataset-fashion-mnist pybind11-dev python3-dev python3-numpy python3-pytest python3-torch python3-matplotlib python3-nbconvert python3-ipykernel python3-venv graphviz python3-graphviz"
if [ "${1:-}" = "--fuzz" ]; then
  if grep -q '^VERSION_ID="12"' /etc/os-release 2>/dev/null; then
    packages="$packages clang-16 libclang-rt-16-dev libomp-16-dev clang-format"
  else
    packages="$packages clang libclang-rt-dev libomp-dev clang-format"
  fi
fi
[ "${1:-}" = "--cluster" ] && packages="$packages iproute2 openssh-client openssh-server slurm-wlm munge"
missing=""
for package in $packages; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing="$missing $package"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then as_root=""; else as_root="sudo"; fi
echo "axiom: installing$missing"
$as_root apt-get update -qq
$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
