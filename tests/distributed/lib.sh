# Helpers for the distributed scripts (sourced). Each script is run as: sh SCRIPT.sh AXIOM "LAUNCHER"
# where LAUNCHER is the MPI launcher with its flags, to which the script adds -np N.
set -eu
axiom=$1
launcher=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common="--config tiny --batch 8 --eval-images 20 --threads 1"

. "$(dirname "$0")/../support/run_helpers.sh"

# Runs a command that must fail within SECONDS, and whose output must contain TEXT.
# Usage: expect_failure SECONDS TEXT command...
expect_failure() {
  seconds=$1 text=$2
  shift 2
  start=$(date +%s)
  status=0
  timeout "$seconds" "$@" > "$work/out.txt" 2>&1 < /dev/null || status=$?
  [ "$status" -ne 0 ] || fail "succeeded: $*"
  [ "$status" -ne 124 ] || fail "still running after $seconds s (a hang): $*"
  grep -q "$text" "$work/out.txt" || { cat "$work/out.txt"; fail "the output lacks \"$text\""; }
  echo "failed as expected in $(( $(date +%s) - start )) s (exit $status): $(grep -m1 "$text" "$work/out.txt")"
}
