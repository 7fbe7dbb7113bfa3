#!/bin/sh
# tests/apps/gpu_bundle_packages.sh SOURCE_DIR: every package apps/install-deps.sh installs for the
# build is also in the GPU check's bundle (apps/gpu/bundle.sh), except those the bundle leaves out
# on purpose: the toolchain (a GPU machine has its own), Open MPI, oneDNN and the Python module's
# packages (the check builds without them: -DAXIOM_MPI=OFF -DAXIOM_ONEDNN=OFF -DAXIOM_PYTHON=OFF),
# the dataset, and Graphviz (the graph tests' `dot`; the check runs the device tests only). A dependency added to one list and not the other fails here,
# rather than at the GPU check's configure step on a machine without network.
set -eu
source_dir=$1
packages_of() { sed -n 's/^packages="\([^"]*\)".*/\1/p' "$1" | head -n1; }
installed=$(packages_of "$source_dir/apps/install-deps.sh")
bundled=$(packages_of "$source_dir/apps/gpu/bundle.sh")
left_out="build-essential cmake git libopenmpi-dev openmpi-bin libdnnl-dev ocl-icd-opencl-dev dataset-fashion-mnist"
left_out="$left_out pybind11-dev python3-dev python3-numpy python3-pytest python3-torch python3-matplotlib python3-nbconvert python3-ipykernel python3-venv"
left_out="$left_out graphviz python3-graphviz"
[ -n "$installed" ] && [ -n "$bundled" ] || { echo "no package list found in install-deps.sh or bundle.sh"; exit 1; }
missing=""
for package in $installed; do
  case " $left_out $bundled " in
    *" $package "*) ;;
    *) missing="$missing $package" ;;
  esac
done
if [ -n "$missing" ]; then
  echo "apps/gpu/bundle.sh lacks what apps/install-deps.sh installs:$missing"
  exit 1
fi
echo "the bundle holds every build dependency ($(echo $bundled | wc -w) packages named)"
