# Shell helpers for the tests that run the `axiom` command itself (sourced by
# tests/apps/signals.sh, tests/distributed/lib.sh, multihost.sh and slurm.sh).

fail() {
  echo "FAILED: $*" >&2
  exit 1
}

# The step of the checkpoint in run directory $1.
step_of() { sed -n 's/^  "step": \([0-9]*\),*$/\1/p' "$1/checkpoint.json"; }

# The numbers of field KEY in a JSON-lines file, one per line ("train_bits_per_dim" -> 7.99...).
numbers() { sed -n "s/.*\"$2\": *\([-0-9.eE+]*\).*/\1/p" "$1"; }

# Fails unless A and B agree to a relative TOLERANCE.
close_enough() {
  awk -v a="$1" -v b="$2" -v tol="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(d <= tol * m) }' ||
    fail "$4: $1 and $2 differ by more than $3 (relative)"
}

# Waits up to a minute for a checkpoint of step $2 or later in run directory $1; fails with the
# log $3 otherwise.
wait_for_checkpoint() {
  for i in $(seq 600); do
    [ -f "$1/checkpoint.json" ] && [ "$(step_of "$1")" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "no checkpoint at step $2 after a minute: $(cat "$3")"
}

# Waits up to a minute for process $1 to end; otherwise kills it (and any further pids) and fails,
# saying it still ran after $2.
ends_within_a_minute() {
  job=$1 what=$2
  shift 2
  timeout 60 sh -c "while kill -0 $job 2>/dev/null; do sleep 0.2; done" || { kill -9 "$job" "$@" 2>/dev/null || true; fail "the job still runs a minute after $what"; }
}

# Fails unless every value of each KEY in run directory $1's metrics.jsonl is within a relative 1e-5
# of the same value in run directory $2's (N processes against one); $3 names the comparison.
# Usage: metrics_match DIR_N DIR_ONE WHAT KEY...
metrics_match() {
  many=$1 one=$2 what=$3
  shift 3
  values_many=$(mktemp) values_one=$(mktemp)
  for key in "$@"; do
    numbers "$many/metrics.jsonl" "$key" >"$values_many"
    numbers "$one/metrics.jsonl" "$key" >"$values_one"
    [ -s "$values_one" ] || { rm -f "$values_many" "$values_one"; fail "no $key in $one/metrics.jsonl"; }
    paste "$values_many" "$values_one" | while read -r a b; do close_enough "$a" "$b" 1e-5 "$what $key"; done ||
      { rm -f "$values_many" "$values_one"; exit 1; }
  done
  rm -f "$values_many" "$values_one"
}
