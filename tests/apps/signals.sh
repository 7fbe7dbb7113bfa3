# `axiom train` and signals: SIGTERM (what `timeout`, job schedulers and `docker stop` send)
# finishes the step, writes a checkpoint of it and exits with 143, as Ctrl-C does with 130; a
# second signal quits at once, and the last checkpoint is whole and resumes.
# Run as: sh signals.sh AXIOM (on Debian's Fashion-MNIST, a tiny model).
set -eu
axiom=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common="--config tiny --batch 8 --eval-images 20 --threads 1 --eval-every 100000 --checkpoint-every 100000"
. "$(dirname "$0")/../support/run_helpers.sh"
trained_lines() { grep -c train_bits_per_dim "$1/metrics.jsonl" 2> /dev/null || true; }
wait_for_lines() {  # up to a minute for N training lines in metrics.jsonl
  for i in $(seq 600); do
    [ "$(trained_lines "$1")" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "fewer than $2 steps after a minute"
}

"$axiom" train $common --steps 100000 --out "$work/term" < /dev/null > "$work/log.txt" 2>&1 &
job=$!
wait_for_lines "$work/term" 3
kill -TERM $job
status=0
wait $job || status=$?
[ "$status" -eq 143 ] || fail "exit status $status after SIGTERM, not 143: $(cat "$work/log.txt")"
grep -q "terminated (SIGTERM)" "$work/log.txt" || fail "no orderly stop: $(cat "$work/log.txt")"
[ "$(step_of "$work/term")" -eq "$(trained_lines "$work/term")" ] || fail "the checkpoint is not of the last step"
echo "SIGTERM: stopped at step $(step_of "$work/term") with its checkpoint, exit 143"

"$axiom" train $common --steps 100000 --out "$work/twice" < /dev/null > "$work/log.txt" 2>&1 &
job=$!
wait_for_lines "$work/twice" 2
kill -TERM $job
kill -TERM $job
status=0
wait $job || status=$?
[ "$status" -ne 0 ] || fail "exit status 0 after two signals"
"$axiom" train $common --steps "$(( $(step_of "$work/twice") + 1 ))" --resume --out "$work/twice" < /dev/null > /dev/null 2>&1 ||
  fail "the last checkpoint does not resume after two signals"
echo "two SIGTERMs: exit $status, the last checkpoint resumes"
