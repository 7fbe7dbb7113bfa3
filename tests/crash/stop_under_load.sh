# Every way a training run is asked to stop, many times, while a second training keeps the cores
# busy: SIGTERM, SIGINT, the time budget (--minutes) and SIGUSR1 to mpirun (two ranks), in turn,
# each at a random moment of a step. Each run must end as it promises: the exit status of its
# stop (143, 130, 0, the ranks' 138), the line that says why, and a whole checkpoint of the last
# step it finished (one metrics line for each step before it), with nothing left over. A run that
# crashes or hangs is counted, its log shown, and the script fails once all runs are done.
#
# Run as: sh stop_under_load.sh AXIOM "LAUNCHER" [RUNS] (RUNS defaults to 8; a stress run of 200:
# sh tests/crash/stop_under_load.sh build/apps/axiom "mpirun --oversubscribe" 200). With an empty
# LAUNCHER (a build without MPI), the runs under mpirun are left out.
# It trains the `tiny` preset: its products (k = 256 in the feed-forward layers) are those of the
# runs where a signal used to corrupt the heap (core/cpu/onednn_gemm.cpp: SignalsHeldBack).
. "$(dirname "$0")/lib.sh"
launcher=$2
runs=${3:-8}
tiny="--config tiny --batch 8 --eval-images 20 --threads 1 --eval-every 100000 --checkpoint-every 100000"
ways="SIGTERM SIGINT minutes SIGUSR1"
[ -n "$launcher" ] || ways="SIGTERM SIGINT minutes"

"$axiom" train --config tiny --batch 8 --threads 2 --steps 1000000 --eval-every 1000000 --out "$work/load" < /dev/null > /dev/null 2>&1 &
load=$!
trap 'kill $load 2> /dev/null || true; wait $load 2> /dev/null || true; rm -rf "$work"' EXIT

trained_lines() {
  lines=$(grep -c train_bits_per_dim "$1/metrics.jsonl" 2> /dev/null || true)
  echo "${lines:-0}"
}

# Waits up to a minute for N training lines in run $1's metrics.jsonl (false if there are not).
wait_for_lines() {
  for i in $(seq 600); do
    [ "$(trained_lines "$1")" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}

# A random number from 0 to $1 - 1.
random_below() { echo $(( $(od -An -N2 -tu2 /dev/urandom) % $1 )); }

# Starts run $2 stopped by way $1 (in the background: its pid in $job).
start_run() {
  case $1 in
    minutes) "$axiom" train $tiny --steps 100000 --minutes "0.0$(( 2 + $(random_below 3) ))" --out "$2" ;;
    SIGUSR1) $launcher -np 2 "$axiom" train $tiny --steps 100000 --out "$2" ;;
    *) "$axiom" train $tiny --steps 100000 --out "$2" ;;
  esac < /dev/null > "$2.log" 2>&1 &
  job=$!
}

# What a run stopped by way $1 must exit with, and say.
expected_status() { case $1 in SIGTERM) echo 143 ;; SIGINT) echo 130 ;; minutes) echo 0 ;; SIGUSR1) echo 138 ;; esac; }
expected_reason() {
  case $1 in
    SIGTERM) echo "terminated (SIGTERM)" ;; SIGINT) echo ": interrupted" ;;
    minutes) echo "the time budget (--minutes) is spent" ;; SIGUSR1) echo "asked to stop (SIGUSR1)" ;;
  esac
}

# One run, stopped by way $1 after 1 to 4 steps and a random part of the next (a subshell: a
# failure ends it alone).
one_run() (
  way=$1 run=$2
  start_run "$way" "$run"
  if [ "$way" != minutes ]; then
    steps=$(( 1 + $(random_below 4) ))
    wait_for_lines "$run" $steps || { pkill -9 -f "$run" || true; fail "fewer than $steps steps after a minute: $(cat "$run.log")"; }
    sleep "0.$(printf '%03d' "$(random_below 200)")"
    kill "-${way#SIG}" $job
  fi
  ends_within_a_minute $job "it was asked to stop"
  status=0
  wait $job || status=$?
  [ "$status" -eq "$(expected_status "$way")" ] || fail "exit status $status, not $(expected_status "$way"): $(tail -n 5 "$run.log")"
  grep -q "$(expected_reason "$way")" "$run.log" || fail "no orderly stop: $(tail -n 5 "$run.log")"
  check_whole_run "$run" "$(trained_lines "$run")"
)

failures=0
for i in $(seq "$runs"); do
  way=$(echo $ways | cut -d' ' -f$(( (i - 1) % $(echo $ways | wc -w) + 1 )))
  if ! one_run "$way" "$work/run$i"; then
    failures=$((failures + 1))
    echo "run $i ($way) failed"
  fi
  rm -rf "$work/run$i" "$work/run$i.log"
done
kill -0 $load 2> /dev/null || fail "the training that made the load has ended: the runs were not under load"
[ "$failures" -eq 0 ] || fail "$failures of $runs stopped runs failed"
echo "$runs runs under load ($ways in turn): each stopped as asked, with a whole checkpoint of its last step"
