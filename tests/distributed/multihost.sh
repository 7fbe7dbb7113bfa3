# tests/distributed/multihost.sh CHECK AXIOM DISTRIBUTED_TESTS: data parallelism across the hosts of
# a cluster made on this machine (cluster.sh: network namespaces, ssh, TCP only). CHECK is one of
#   equivalence  the communicator's and training's checks (N ranks against one process, float64 and
#                float32, saved at N and resumed at another N) on 2 and 3 hosts, then `axiom train`,
#                `eval` and `classify` on 2 hosts against one process (train_and_eval.sh)
#   lost_host    every process of one host of 3 killed mid-run: the job ends on every host within
#                seconds, its output naming the lost host; --resume on the 2 hosts left goes on from
#                the last checkpoint, to the weights of a run that was never interrupted and went
#                from 3 hosts to 2 at that step
#   cut_link     the same, with the host's link set down instead (no connection is closed)
set -eu
check=$1 axiom=$2 distributed_tests=$3
here=$(dirname "$0")
. "$here/cluster.sh"
. "$here/../support/run_helpers.sh"
work="$cluster_dir/work"
mkdir -p "$work"
common="--config tiny --batch 12 --eval-images 20 --threads 1"

# Fails unless the ranks of `-np N` run on N different hosts (their eth0 addresses).
ranks_on_distinct_hosts() {
  n=$1
  $cluster_mpirun -np "$n" sh -c 'ip -4 -o addr show eth0' | grep -o 'inet [0-9.]*' | sort -u >"$work/addresses"
  [ "$(wc -l <"$work/addresses")" -eq "$n" ] || fail "the $n ranks do not run on $n hosts: $(cat "$work/addresses")"
  echo "$n ranks on $n hosts:" $(cut -d' ' -f2 "$work/addresses")
}

equivalence() {
  cluster_up 3
  for n in 2 3; do
    ranks_on_distinct_hosts "$n"
    $cluster_mpirun -np "$n" "$distributed_tests" </dev/null
  done
  sh "$here/train_and_eval.sh" "$axiom" "$cluster_mpirun"
}

# lost_host HOW: host 3 of 3 lost mid-run, HOW = kill (every process of the host killed) or cut
# (its link set down: nothing tells the others, no connection closes)
lost_host() {
  cluster_up 3
  # the hosts cut off from the others end their ranks after 8 s (the collectives' watchdog)
  $cluster_mpirun -x AXIOM_COLLECTIVE_TIMEOUT=8 -np 3 "$axiom" train $common --steps 100000 --checkpoint-every 2 --eval-every 1000 \
    --out "$work/lost" </dev/null >"$work/log.txt" 2>&1 &
  job=$!
  wait_for_checkpoint "$work/lost" 4 "$work/log.txt"
  if [ "$1" = kill ]; then
    what="the $(ip netns pids "$(cluster_ns 3)" | wc -l) processes of host 3 were killed"
    ip netns pids "$(cluster_ns 3)" | xargs -r kill -9  # the host is gone: its ranks, its daemons
  else
    what="host 3's link was cut"
    ip link set "axv-$cluster_tag-3" down
  fi
  start=$(date +%s)
  ends_within_a_minute $job "$what"
  if wait $job; then fail "the job ended with success after $what"; fi
  echo "the job ended $(( $(date +%s) - start )) s after $what; its output:"
  grep -v '^step\|^eval' "$work/log.txt" | grep -v '^---' | grep .
  grep -q "$(cluster_address 3)" "$work/log.txt" || fail "nothing in the job's output names the lost host $(cluster_address 3)"
  # every host's ranks are gone too, the lost host's within 30 s (when it still runs, cut off)
  for i in 1 2 3; do
    for wait in $(seq 150); do
      [ -n "$(ip netns pids "$(cluster_ns "$i")" | xargs -r ps -o comm= -p | grep -x axiom)" ] || break
      sleep 0.2
    done
    [ -z "$(ip netns pids "$(cluster_ns "$i")" | xargs -r ps -o comm= -p | grep -x axiom)" ] || fail "a rank still runs on host $i"
  done

  at=$(step_of "$work/lost")
  end=$((at + 2))
  two=$(echo "$cluster_mpirun" | sed "s/,$(cluster_address 3):1//")  # the hosts that are left
  $two -np 2 "$axiom" train $common --steps $end --resume --out "$work/lost" </dev/null >/dev/null
  # host 3 is back, for the run that was never interrupted
  if [ "$1" = kill ]; then cluster_start_sshd 3; else ip link set "axv-$cluster_tag-3" up; fi
  cluster_wait_for_ssh 3
  $cluster_mpirun -np 3 "$axiom" train $common --steps $at --out "$work/straight" </dev/null >/dev/null
  $two -np 2 "$axiom" train $common --steps $end --resume --out "$work/straight" </dev/null >/dev/null
  model=$(printf 'model-%06d.safetensors' $end)
  cmp "$work/lost/$model" "$work/straight/$model" || fail "the resumed run's weights differ from the uninterrupted run's"
  echo "resumed on 2 hosts at step $at: at step $end, the weights of the run never interrupted"
}

case "$check" in
  equivalence) equivalence ;;
  lost_host) lost_host kill ;;
  cut_link) lost_host cut ;;
  *) fail "unknown check $check" ;;
esac
