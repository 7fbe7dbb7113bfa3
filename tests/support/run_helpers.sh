# Shell helpers for the tests that run the `axiom` command itself (sourced by
# tests/apps/signals.sh and tests/distributed/lib.sh).

fail() {
  echo "FAILED: $*" >&2
  exit 1
}

# The step of the checkpoint in run directory $1.
step_of() { sed -n 's/^  "step": \([0-9]*\),*$/\1/p' "$1/checkpoint.json"; }
