# tests/distributed/measure_links.sh AXIOM [RATES]: data parallelism over links of a given speed, on
# a cluster of 2 hosts made on this machine (cluster.sh; as root, after sh apps/install-deps.sh
# --cluster). A measurement, not a test: for each rate (default "1gbit 10gbit 25gbit unlimited"),
# each host's link is limited both ways by tc's token bucket filter (tbf), and
#   mpirun ... axiom bench allreduce                    (1 to 64 MiB: time, bus bandwidth)
#   mpirun ... axiom bench train --config small --batch 32    (step, communication in flight and exposed)
# print one JSON object per figure, each with its "rate". The two hosts share this machine's cores,
# so a step's compute does not scale here: what is measured is the communication and its overlap.
set -eu
axiom=$1
rates=${2:-1gbit 10gbit 25gbit unlimited}
here=$(dirname "$0")
. "$here/cluster.sh"
cluster_up 2

# Limits host $1's link to $rate both ways: its eth0 (what it sends) and the bridge's end of its
# pair (what it receives).
limit_link() {
  outside="axv-$cluster_tag-$1"
  cluster_exec "$1" tc qdisc del dev eth0 root 2>/dev/null || true
  tc qdisc del dev "$outside" root 2>/dev/null || true
  [ "$rate" = unlimited ] && return 0
  cluster_exec "$1" tc qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 50ms
  tc qdisc add dev "$outside" root tbf rate "$rate" burst "$burst" latency 50ms
}

for rate in $rates; do
  # a bucket of at least rate / HZ (250 here) plus a jumbo frame, as tbf needs to reach its rate
  case "$rate" in
    1gbit) burst=1mb ;;
    10gbit) burst=8mb ;;
    25gbit) burst=16mb ;;
    *) burst=16mb ;;
  esac
  for host in 1 2; do limit_link "$host"; done
  for bench in "allreduce" "train --config small --batch 32 --steps 4"; do
    timeout 600 $cluster_mpirun -np 2 "$axiom" bench --json $bench </dev/null 2>/dev/null | grep '^{' | sed "s/^{/{\"rate\": \"$rate\", /"
  done
done
