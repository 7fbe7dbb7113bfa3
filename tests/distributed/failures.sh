# What goes wrong in a data-parallel job ends it within seconds, with the error printed: ranks
# given different flags; a data file missing on one rank (as on one machine of several); a
# command that runs in one process only; a bad AXIOM_COLLECTIVE_TIMEOUT; a rank that stops
# answering (the collectives' watchdog).
. "$(dirname "$0")/lib.sh"

expect_failure 60 "started with different command lines" \
  $launcher -np 1 "$axiom" train $common --steps 2 --out "$work/a" --lr 0.001 : -np 1 "$axiom" train $common --steps 2 --out "$work/a" --lr 0.002

# The same command line, but run from two directories, one without the data: rank 1 fails alone
# while rank 0 waits for it in a collective; MPI_Abort ends both, the error is printed once.
mkdir -p "$work/has/data" "$work/lacks/data"
ln -s /usr/share/datasets/fashion-mnist/* "$work/has/data/"
expect_failure 60 "rank 1 of 2: \[" \
  $launcher -np 1 -wdir "$work/has" "$axiom" train $common --steps 2 --data-dir data --out "$work/b" : \
            -np 1 -wdir "$work/lacks" "$axiom" train $common --steps 2 --data-dir data --out "$work/b"
[ "$(grep -c "rank 1 of 2: " "$work/out.txt")" -eq 1 ] || fail "the error was not printed once"

expect_failure 60 "this command runs in one process" $launcher -np 2 "$axiom" bench ops

# AXIOM_COLLECTIVE_TIMEOUT that is no number of seconds is refused, naming the variable.
AXIOM_COLLECTIVE_TIMEOUT=soon expect_failure 60 "AXIOM_COLLECTIVE_TIMEOUT must be a number of seconds" \
  $launcher -np 2 "$axiom" train $common --steps 2 --out "$work/c"

# A rank that stops answering with its connections open (SIGSTOP; as a host cut off from the
# others) leaves them waiting in a collective: the watchdog ends them after AXIOM_COLLECTIVE_TIMEOUT
# seconds, saying why, and with them the job.
AXIOM_COLLECTIVE_TIMEOUT=3 $launcher -np 2 "$axiom" train $common --steps 100000 --eval-every 1000 --out "$work/d" \
  < /dev/null > "$work/log.txt" 2>&1 &
job=$!
for i in $(seq 600); do
  grep -q "^step 10/" "$work/log.txt" && break
  sleep 0.1
done
rank=$(pgrep -f "axiom train .*$work/d" | grep -v "^$job\$" | tail -n 1)
[ -n "$rank" ] || fail "no rank process found"
kill -STOP "$rank"
start=$(date +%s)
ends_within_a_minute $job "a rank stopped answering" "$rank"
if wait $job; then fail "the job ended with success after a rank stopped answering"; fi
grep -q "has waited [0-9]* s for the other ranks (AXIOM_COLLECTIVE_TIMEOUT=3)" "$work/log.txt" || fail "no word of the watchdog: $(cat "$work/log.txt")"
kill -9 "$rank" 2> /dev/null || true
echo "a rank stopped: the job ended $(( $(date +%s) - start )) s later: $(grep -m1 'has waited' "$work/log.txt")"
