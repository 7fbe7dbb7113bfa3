# kill -9 at random moments: a training killed six times (during steps, checkpoint writes, the
# loss curve, start-up), resumed after each, ends bitwise equal to a run never killed, with a whole
# checkpoint and one metrics line per step. The moments are printed, to replay a failure.
. "$(dirname "$0")/lib.sh"
steps=60
"$axiom" train $common --steps $steps --checkpoint-every 3 --eval-every 7 --out "$work/straight" < /dev/null > /dev/null 2>&1 ||
  fail "the run that is never killed failed"

for kill in 1 2 3 4 5 6; do
  delay=$(( 300 + $(od -An -N2 -tu2 /dev/urandom) % 1500 ))
  "$axiom" train $common --steps $steps --checkpoint-every 3 --eval-every 7 --resume --out "$work/killed" < /dev/null > "$work/log.txt" 2>&1 &
  job=$!
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  kill -9 $job 2> /dev/null || true
  status=0
  wait $job || status=$?
  [ "$status" -eq 0 ] || [ "$status" -eq 137 ] || fail "exit status $status (not killed, not done): $(cat "$work/log.txt")"
  at=$( [ -f "$work/killed/checkpoint.json" ] && step_of "$work/killed" || echo "none")
  echo "kill $kill after $delay ms: exit $status, last checkpoint at step $at"
done
"$axiom" train $common --steps $steps --checkpoint-every 3 --eval-every 7 --resume --out "$work/killed" < /dev/null > "$work/log.txt" 2>&1 ||
  fail "the last resume failed: $(cat "$work/log.txt")"
check_whole_run "$work/killed" $steps
check_same_weights "$work/killed" "$work/straight" $steps
echo "after six kills: step $steps, equal to the run never killed"
