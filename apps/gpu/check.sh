#!/usr/bin/env bash
# apps/gpu/check.sh [RESULTS]: the GPU check, in one call on a machine with a GPU, CUDA, CMake and a
# C++ compiler but no network and none of axiom's Debian packages (apps/gpu/bundle.sh gathered them
# into .gpu-bundle/debs beforehand, on a machine with apt).
#
#   1. unpacks the bundle into $TMPDIR/axiom-gpu-bundle (/tmp by default) and points CMake and
#      pkg-config at it;
#   2. configures and builds axiom for the GPU in this machine (Release, ninja, every core);
#   3. runs the device tests (ctest -L cuda-emulated): every op, backward rule, training step,
#      evaluation and sampler on the emulated GPU and on the real one, against the CPU;
#   4. times `axiom bench train` (tiny, small) and `axiom bench sample` (tiny) on cuda and on the CPU,
#      `small` on cuda with --precision tf32 too, and the same model in PyTorch on the GPU
#      (apps/bench/torch_reference.py --device cuda, float32);
#   5. runs compute-sanitizer's memcheck and racecheck on short device tests;
#   6. profiles the kernels of a few tiny training steps with Nsight Compute (ncu).
#
# Without a GPU (or without nvcc) it does 1 to 3 only, on the emulated GPU: that is how a machine
# without one tests this script. Results go to RESULTS (default: $OUT where that is set, else
# gpu-check-results/): summary.txt (each step and the figures), environment.txt, build.log,
# tests.log, bench.jsonl (axiom's and PyTorch's figures, one JSON object a line), bench.log,
# sanitizer.log and profile.csv (one row per kernel launch). Each step has a time limit, and the whole check stops starting steps after
# AXIOM_GPU_CHECK_SECONDS (default 540 on 16 cores or more; longer on fewer, where the build takes
# longer). Exits non-zero when a step failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
root_dir=$PWD
results=${1:-${OUT:-gpu-check-results}}
mkdir -p "$results"
results=$(cd "$results" && pwd)
# Only files of an earlier check are written over: a RESULTS folder holding one of these names
# that no check wrote (its summary.txt would start "axiom GPU check") is refused.
for file in summary.txt environment.txt build.log tests.log bench.jsonl bench.log sanitizer.log profile.csv; do
  [ -e "$results/$file" ] || continue
  if ! head -n1 "$results/summary.txt" 2>/dev/null | grep -q '^axiom GPU check'; then
    echo "check.sh: $results/$file exists and was not written by an earlier GPU check; name another RESULTS folder" >&2
    exit 2
  fi
done
bundle=$root_dir/.gpu-bundle
prefix=${TMPDIR:-/tmp}/axiom-gpu-bundle  # outside the source tree, where CMake allows exported include paths
libdir=$prefix/usr/lib/x86_64-linux-gnu
libdirs=$libdir:$libdir/openblas-pthread:$prefix/lib/x86_64-linux-gnu  # zlib, bzip2 and expat live in /lib
build=$root_dir/build-gpu
jobs=$(nproc)
# The build's limit: 300 s on a GPU machine's 16 cores (52 s measured); a small machine testing this
# script (2 cores: about 10 minutes) gets 80 minutes of core time spread over its cores, and the
# whole check that much longer by default.
build_limit=$((jobs >= 16 ? 300 : 4800 / jobs))
deadline=$(($(date +%s) + ${AXIOM_GPU_CHECK_SECONDS:-$((240 + build_limit))}))
summary=$results/summary.txt
: >"$summary"
failures=0

say() { echo "$*" | tee -a "$summary"; }

# step NAME LIMIT_SECONDS COMMAND...: runs COMMAND with at most LIMIT seconds (fewer when the whole
# check's time is running out), and says how it went in summary.txt.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((deadline - $(date +%s)))
  if [ "$left" -lt 10 ]; then
    say "$(printf '%-34s skipped: the check ran out of time' "$name")"
    failures=$((failures + 1))
    return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local start=$(date +%s)
  timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@"  # "$@" may be one of this script's functions
  local rc=$?
  local verdict=ok
  [ $rc -eq 124 ] && verdict="TIMED OUT after ${limit}s"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && verdict="FAILED (exit $rc)"
  say "$(printf '%-34s %-24s %4ds' "$name" "$verdict" $(($(date +%s) - start)))"
  [ $rc -eq 0 ] || failures=$((failures + 1))
  return $rc
}

[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
has_gpu=no
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null && has_gpu=yes

describe_machine() {
  uname -srm
  grep PRETTY_NAME /etc/os-release
  echo "cores: $jobs"
  grep -m1 'model name' /proc/cpuinfo
  c++ --version | head -1
  cmake --version | head -1
  command -v ninja >/dev/null && echo "ninja $(ninja --version)"
  command -v nvcc >/dev/null && nvcc --version | tail -2
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  command -v python3 >/dev/null && python3 -c 'import torch; print("PyTorch", torch.__version__, "CUDA", torch.version.cuda)' 2>&1
  return 0
}

# The bundle's packages, unpacked into one prefix. Their CMake and pkg-config files name /usr; they
# are rewritten to name the prefix instead. Nothing is installed into the machine's own folders.
unpack_bundle() {
  [ -d "$bundle/debs" ] || { echo "no $bundle/debs: run apps/gpu/bundle.sh on a machine with apt first" >&2; return 1; }
  if [ -e "$prefix" ] && [ ! -e "$prefix/.made-by-axiom" ]; then
    echo "$prefix exists and was not made by this script; move it away or set TMPDIR" >&2
    return 1
  fi
  rm -rf "$prefix"
  mkdir -p "$prefix"
  touch "$prefix/.made-by-axiom"
  for deb in "$bundle"/debs/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$prefix" || return 1
    else  # a machine without dpkg: a .deb is an ar archive holding data.tar.xz
      ar p "$deb" data.tar.xz | tar -xJf - -C "$prefix" || return 1
    fi
  done
  find "$prefix/usr" -type f \( -name '*.cmake' -o -name '*.pc' \) -print0 |
    xargs -0 -r sed -i -E "s#(^|[^[:alnum:]_./-])/usr(/|\$)#\1$prefix/usr\2#g"
  # the links Debian's update-alternatives makes when OpenBLAS is installed: its CMake package and
  # pkg-config file under the usual names
  mkdir -p "$libdir/cmake/openblas"
  for file in OpenBLASConfig.cmake OpenBLASConfigVersion.cmake; do
    ln -sf ../../openblas-pthread/cmake/openblas/$file "$libdir/cmake/openblas/$file"
  done
  ln -sfn ../openblas-pthread/pkgconfig/openblas.pc "$libdir/pkgconfig/openblas.pc"
  # pkg-config from the bundle, with its own library
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libdir" "$prefix/usr/bin/pkgconf" >"$prefix/pkg-config"
  chmod +x "$prefix/pkg-config"
  echo "unpacked $(ls "$bundle"/debs/*.deb | wc -l) packages into $prefix"
}

configure() {
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  local cuda=()
  [ $has_gpu = yes ] && cuda=(-DCMAKE_CUDA_ARCHITECTURES=native)
  export PKG_CONFIG_PATH=$libdir/pkgconfig:$prefix/usr/share/pkgconfig
  # The bundle's libraries are found at run time through the executables' RPATH (DT_RPATH, which
  # also serves their own dependencies), never through LD_LIBRARY_PATH: the compiler, CMake and
  # Python keep the machine's own libraries.
  cmake -S "$root_dir" -B "$build" "${generator[@]}" "${cuda[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix/usr" -DPKG_CONFIG_EXECUTABLE="$prefix/pkg-config" \
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,--disable-new-dtags -Wl,-rpath,$libdirs -Wl,-rpath-link,$libdirs" \
    -DAXIOM_MPI=OFF -DAXIOM_ONEDNN=OFF -DAXIOM_PYTHON=OFF
}

build_targets() {
  cmake --build "$build" -j "$jobs" --target axiom axiom_core_tests axiom_autograd_tests axiom_models_tests
}

device_tests() {
  ctest --test-dir "$build" -L cuda-emulated -j "$jobs" --output-on-failure --timeout 300
}

axiom_bench() {  # axiom_bench WHAT CONFIG DEVICE [MORE FLAGS]
  "$build/apps/axiom" bench "$1" --config "$2" --device "$3" --threads "$jobs" --json "${@:4}"
}

torch_bench() {  # torch_bench WHAT CONFIG
  python3 "$root_dir/apps/bench/torch_reference.py" "$1" --config "$2" --device cuda --threads "$jobs" --json
}

# a bench's JSON lines go to bench.jsonl, each tagged with the program and device; the rest to bench.log
record() {  # record PROGRAM DEVICE COMMAND...
  local program=$1 device=$2
  shift 2
  echo "== $program $device: $*" >>"$results/bench.log"
  "$@" 2>>"$results/bench.log" | while IFS= read -r line; do
    case $line in
      '{'*) echo "{\"program\": \"$program\", \"device\": \"$device\", ${line#\{}" >>"$results/bench.jsonl" ;;
      *) echo "$line" >>"$results/bench.log" ;;
    esac
  done
  return "${PIPESTATUS[0]}"  # the bench's own exit status
}

# Every kernel of a few tiny training steps (batch 4) under Nsight Compute, one CSV row per launch
# with its name and GPU time: what a step launches and where its time goes.
profile_kernels() {
  ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    "$build/apps/axiom" bench train --config tiny --batch 4 --steps 1 --device cuda --threads "$jobs"
}

sanitize() {  # sanitize TOOL TEST_PROGRAM TEST_CASE
  compute-sanitizer --tool "$1" --error-exitcode 1 "$build/tests/$2" -tc="$3"
}

# axiom's and PyTorch's figures side by side: the step and the sampler on the GPU.
figures() {
  python3 - "$results/bench.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
value = {(r["program"], r["device"], r["case"]): r["value"] for r in rows}
print(f"{'figure':<34} {'axiom cuda':>12} {'PyTorch cuda':>13} {'ratio':>7} {'axiom cpu':>11} {'axiom tf32':>11}")
cases = sorted({r["case"] for r in rows if r["case"].endswith(("_step", "_batch1", "_batch16", "_peak_tensor_memory"))})
for case in cases:
    a, t, c, tf = (value.get((p, d, case)) for p, d in (("axiom", "cuda"), ("torch", "cuda"), ("axiom", "cpu"), ("axiom-tf32", "cuda")))
    fmt = lambda v: "-" if v is None else f"{v:.4g}"
    ratio = f"{a / t:.2f}" if a and t else "-"
    print(f"{case:<34} {fmt(a):>12} {fmt(t):>13} {ratio:>7} {fmt(c):>11} {fmt(tf):>11}")
PY
}

export root_dir results bundle prefix libdir libdirs build jobs has_gpu
export -f unpack_bundle configure build_targets device_tests axiom_bench torch_bench record sanitize profile_kernels
say "axiom GPU check: $(date -u '+%Y-%m-%d %H:%M UTC'), GPU: $has_gpu"
describe_machine >"$results/environment.txt" 2>&1
step "unpack the bundle" 120 unpack_bundle >"$results/build.log" 2>&1 || exit 1
step "configure" 120 configure >>"$results/build.log" 2>&1 || exit 1
step "build" $build_limit build_targets >>"$results/build.log" 2>&1 || { tail -40 "$results/build.log"; exit 1; }
step "device tests (cuda-emulated)" 240 device_tests >"$results/tests.log" 2>&1
grep -E "tests passed|tests failed|real CUDA backend is skipped" "$results/tests.log" | sort -u | tee -a "$summary"

if [ $has_gpu = yes ]; then
  : >"$results/bench.jsonl"
  : >"$results/bench.log"
  for config in tiny small; do
    step "axiom bench train $config cuda" 60 record axiom cuda axiom_bench train $config cuda
    step "torch train $config cuda" 90 record torch cuda torch_bench train $config
    step "axiom bench train $config cpu" 60 record axiom cpu axiom_bench train $config cpu
  done
  step "axiom bench train small cuda tf32" 60 record axiom-tf32 cuda axiom_bench train small cuda --precision tf32
  step "axiom bench sample tiny cuda" 90 record axiom cuda axiom_bench sample tiny cuda
  step "torch sample tiny cuda" 90 record torch cuda torch_bench sample tiny
  step "axiom bench sample tiny cpu" 60 record axiom cpu axiom_bench sample tiny cpu
  : >"$results/sanitizer.log"
  for tool in memcheck racecheck; do
    step "compute-sanitizer $tool" 90 sanitize $tool models/axiom_models_tests "evaluation on the device gives the CPU's likelihood" \
      >>"$results/sanitizer.log" 2>&1
  done
  step "compute-sanitizer memcheck: ops" 150 sanitize memcheck core/axiom_core_tests "every op on every device*" \
    >>"$results/sanitizer.log" 2>&1
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$results/sanitizer.log" | tee -a "$summary"
  step "kernel profile (ncu)" 150 profile_kernels >"$results/profile.csv" 2>&1
  figures >>"$summary" 2>&1
else
  say "no GPU here (or no nvcc): the real-GPU steps are skipped; the device tests ran on the emulated GPU"
fi
say "$failures step(s) failed"
[ $failures -eq 0 ]
