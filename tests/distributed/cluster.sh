# A small cluster on this machine, for the multihost tests (sourced; needs root, iproute2 and
# openssh-server). Each "host" is a network namespace with its own network stack and address,
# joined to the others by a bridge through a veth pair, and runs an ssh daemon that accepts a
# throw-away key, so that Open MPI starts its ranks there as on a cluster (mpirun over ssh) and
# can move data between them only over TCP.
#
#   cluster_up N      makes hosts 1..N: namespaces axiom-PID-hI, addresses 10.77.0.I/24, and sets
#                     cluster_mpirun: mpirun inside host 1, ssh as its remote launcher, TCP only
#   cluster_exec I    runs a command on host I:  cluster_exec 2 ip addr
#   cluster_start_sshd I   starts host I's ssh daemon again (after a test killed the host)
#   cluster_down      removes what cluster_up made (a trap calls it however the script ends)
#
# cluster_down removes only what this script made: it keeps a list as it goes, and every name on
# it carries this process's id (axiom-PID-..., axb-PID, axv-PID-...), checked before anything is
# deleted. Where namespaces cannot be made (not root, no CAP_SYS_ADMIN), cluster_up prints one line
# and exits with 77, which ctest reports as skipped.

cluster_tag=$$
cluster_subnet=10.77.0
cluster_dir=$(mktemp -d)
cluster_made="$cluster_dir/made"  # "kind name" per line, in the order made
: >"$cluster_made"

cluster_ns() { echo "axiom-$cluster_tag-h$1"; }
cluster_address() { echo "$cluster_subnet.$1"; }
cluster_exec() {
  host=$1
  shift
  ip netns exec "$(cluster_ns "$host")" "$@"
}

cluster_skip() {
  echo "multihost: skipped: $1"
  exit 77
}

# Removes what cluster_up made, newest first, refusing any name without this process's tag.
cluster_down() {
  [ -f "$cluster_made" ] || return 0
  tac "$cluster_made" | while read -r kind name; do
    case "$name" in
      *"-$cluster_tag"*) ;;
      *) echo "cluster_down: refusing to remove $kind $name: not made by this script" >&2; continue ;;
    esac
    case "$kind" in
      sshd) [ -f "$name" ] && kill "$(cat "$name")" 2>/dev/null || true ;;
      netns) ip netns pids "$name" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
             ip netns delete "$name" 2>/dev/null || true ;;
      link) ip link delete "$name" 2>/dev/null || true ;;
    esac
  done
  rm -rf "$cluster_dir"
}
trap 'cluster_down' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cluster_record() { echo "$1 $2" >>"$cluster_made"; }

# The ssh daemons' configuration and keys: a host key and a client key made for this cluster only.
cluster_keys() {
  ssh-keygen -q -t ed25519 -N '' -f "$cluster_dir/host_key"
  ssh-keygen -q -t ed25519 -N '' -f "$cluster_dir/client_key"
  cp "$cluster_dir/client_key.pub" "$cluster_dir/authorized_keys"
  cat >"$cluster_dir/sshd_config" <<EOF
HostKey $cluster_dir/host_key
AuthorizedKeysFile $cluster_dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel ERROR
EOF
  echo "$cluster_subnet.* $(cut -d' ' -f1,2 "$cluster_dir/host_key.pub")" >"$cluster_dir/known_hosts"
  # Open MPI's remote launcher: ssh with that key, knowing the hosts' key; a host that stops
  # answering for 6 s ends the connection ("Timeout, server ... not responding"), and with it the
  # job (mpirun has lost that host's daemon)
  cat >"$cluster_dir/ssh" <<EOF
#!/bin/sh
exec ssh -F none -i "$cluster_dir/client_key" -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$cluster_dir/known_hosts" \
  -o BatchMode=yes -o ConnectTimeout=5 -o ServerAliveInterval=2 -o ServerAliveCountMax=3 "\$@"
EOF
  chmod +x "$cluster_dir/ssh"
}

# Host I: its namespace, a veth pair (one end on the bridge, the other its eth0), its address, sshd.
cluster_add_host() {
  i=$1 ns=$(cluster_ns "$1") outside="axv-$cluster_tag-$1"
  ip netns add "$ns" && cluster_record netns "$ns"
  ip link add "$outside" type veth peer name "axi-$cluster_tag-$i" && cluster_record link "$outside"
  ip link set "$outside" master "axb-$cluster_tag" up
  ip link set "axi-$cluster_tag-$i" netns "$ns"
  cluster_exec "$i" ip link set "axi-$cluster_tag-$i" name eth0
  cluster_exec "$i" ip addr add "$(cluster_address "$i")/24" dev eth0
  cluster_exec "$i" ip link set eth0 up
  cluster_exec "$i" ip link set lo up
  cluster_start_sshd "$i"
  cluster_record sshd "$cluster_dir/sshd-$cluster_tag-$i.pid"
}

# Starts host I's ssh daemon (again, after a test killed the host's processes).
cluster_start_sshd() {
  cluster_exec "$1" /usr/sbin/sshd -f "$cluster_dir/sshd_config" -o "ListenAddress=$(cluster_address "$1")" \
    -o "PidFile=$cluster_dir/sshd-$cluster_tag-$1.pid"
}

# Waits until host 1 reaches every host's ssh daemon (each within 10 s).
cluster_wait_for_ssh() {
  for i in $(seq 1 "$1"); do
    tries=0
    until cluster_exec 1 "$cluster_dir/ssh" "$(cluster_address "$i")" true 2>/dev/null; do
      tries=$((tries + 1))
      [ "$tries" -lt 50 ] || { echo "cluster: host $i's ssh daemon does not answer" >&2; exit 1; }
      sleep 0.2
    done
  done
}

cluster_up() {
  n=$1
  [ "$(id -u)" -eq 0 ] || cluster_skip "network namespaces need root (uid $(id -u))"
  command -v ip >/dev/null && command -v ssh-keygen >/dev/null && [ -x /usr/sbin/sshd ] ||
    cluster_skip "needs iproute2 and OpenSSH (sh apps/install-deps.sh --cluster)"
  # ip netns exec remounts / as a slave mount, which a chroot (whose / is no mount point) refuses
  mountpoint -q / || cluster_skip "/ is no mount point (a chroot?): ip netns exec cannot enter a namespace here"
  ip netns add "axiom-$cluster_tag-probe" 2>/dev/null || cluster_skip "this machine forbids network namespaces"
  cluster_record netns "axiom-$cluster_tag-probe"
  ip netns exec "axiom-$cluster_tag-probe" true 2>/dev/null || cluster_skip "ip netns exec cannot enter a namespace here"
  ip netns delete "axiom-$cluster_tag-probe"
  mkdir -p /run/sshd  # sshd's privilege separation directory (Debian's, kept)
  cluster_keys
  ip link add "axb-$cluster_tag" type bridge && cluster_record link "axb-$cluster_tag"
  ip link set "axb-$cluster_tag" up
  for i in $(seq 1 "$n"); do cluster_add_host "$i"; done
  cluster_wait_for_ssh "$n"
  hosts=""
  for i in $(seq 1 "$n"); do hosts="$hosts${hosts:+,}$(cluster_address "$i"):1"; done
  # Shared memory ruled out (btl tcp,self); Open MPI's own traffic on the cluster's subnet too.
  cluster_mpirun="ip netns exec $(cluster_ns 1) mpirun --allow-run-as-root --bind-to none --host $hosts \
--mca plm_rsh_agent $cluster_dir/ssh --mca btl tcp,self --mca btl_tcp_if_include $cluster_subnet.0/24 \
--mca oob_tcp_if_include $cluster_subnet.0/24"
}
