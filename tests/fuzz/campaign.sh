# A fuzzing campaign: every fuzzer for SECONDS (default 600), two at a time, from its corpus; new
# inputs go to OUT/found/NAME, findings to OUT/NAME-crash-*, and a line of figures per fuzzer to
# OUT/summary.txt (executions, coverage, features, corpus, new units, findings).
# Run as: sh tests/fuzz/campaign.sh BUILD_FUZZ_DIR OUT [SECONDS]   (a -DAXIOM_FUZZ=ON build)
set -eu
build=$1 out=$2 seconds=${3:-600}
corpus=$(dirname "$0")/corpus
mkdir -p "$out"
run() {
  mkdir -p "$out/found/$1"
  "$build/tests/fuzz/fuzz_$1" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$out/$1-" "$out/found/$1" "$corpus/$1" > "$out/$1.log" 2>&1 || true
  done_line=$(grep -E "^#[0-9]+[[:space:]]+DONE" "$out/$1.log" | tail -1)
  findings=$(ls "$out" | grep -c "^$1-" || true)
  echo "$1: $(sed -n 's/stat::number_of_executed_units: *//p' "$out/$1.log") executions in $seconds s;" \
    "$(echo "$done_line" | grep -o 'cov: [0-9]*') edges, $(echo "$done_line" | grep -o 'ft: [0-9]*') features," \
    "$(echo "$done_line" | grep -o 'corp: [0-9]*/[0-9a-zA-Z]*') corpus; $(sed -n 's/stat::new_units_added: *//p' "$out/$1.log") new units;" \
    "$findings findings" >> "$out/summary.txt"
}
: > "$out/summary.txt"
set -- idx npy npz cifar safetensors config checkpoint optimizer_state metrics
while [ $# -gt 0 ]; do
  run "$1" &
  if [ $# -gt 1 ]; then run "$2" & fi
  wait
  shift
  if [ $# -gt 0 ]; then shift; fi
done
cat "$out/summary.txt"
