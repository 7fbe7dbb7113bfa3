# `kill -9` on one rank of a training job ends the whole job (no hang); resuming from the last
# checkpoint continues exactly: the weights equal, bit for bit, those of a run never killed.
. "$(dirname "$0")/lib.sh"

$launcher -np 2 "$axiom" train $common --steps 100000 --checkpoint-every 2 --eval-every 1000 --out "$work/killed" < /dev/null > "$work/log.txt" 2>&1 &
job=$!
wait_for_checkpoint "$work/killed" 4 "$work/log.txt"
rank=$(pgrep -f "axiom train .*$work/killed" | grep -v "^$job\$" | tail -n 1)
[ -n "$rank" ] || fail "no rank process found"
kill -9 "$rank"
start=$(date +%s)
ends_within_a_minute $job "one rank was killed"
if wait $job; then fail "the job ended with success after a rank was killed"; fi
echo "the job ended $(( $(date +%s) - start )) s after rank process $rank was killed"

resume_step=$(( $(step_of "$work/killed") + 2 ))
$launcher -np 2 "$axiom" train $common --steps $resume_step --resume --out "$work/killed" < /dev/null
$launcher -np 2 "$axiom" train $common --steps $resume_step --out "$work/straight" < /dev/null
model=$(printf 'model-%06d.safetensors' $resume_step)
cmp "$work/killed/$model" "$work/straight/$model" || fail "the resumed run's weights differ from the uninterrupted run's"
echo "resumed at step $((resume_step - 2)), equal to the uninterrupted run at step $resume_step"

# SIGUSR1 to mpirun, which passes it on to every rank, stops the job after the current step with
# a checkpoint (Ctrl-C ends the job at once, as mpirun kills its ranks).
$launcher -np 2 "$axiom" train $common --steps 100000 --eval-every 1000 --out "$work/stopped" < /dev/null > "$work/log.txt" 2>&1 &
job=$!
for i in $(seq 600); do
  grep -q "^step 10/" "$work/log.txt" && break
  sleep 0.1
done
kill -USR1 $job
status=0
ends_within_a_minute $job SIGUSR1
wait $job || status=$?
grep -q "stopped at step .*: asked to stop (SIGUSR1)" "$work/log.txt" || fail "no orderly stop after SIGUSR1: $(cat "$work/log.txt")"
[ "$(step_of "$work/stopped")" -ge 10 ] || fail "no checkpoint of the step it stopped at"
echo "SIGUSR1: stopped at step $(step_of "$work/stopped") with a checkpoint (exit $status)"
