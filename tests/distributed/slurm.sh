# tests/distributed/slurm.sh AXIOM: the README's Slurm job script, submitted with `sbatch --wait` to
# a single-node Slurm started here for the test (munged, slurmctld and slurmd, each with its own
# files in a temporary directory, on ports of its own; stopped, and the directory removed, however
# the script ends). Two tasks train a few steps; their losses and held-out figures match one
# process's. Needs root and Debian's slurm-wlm and munge (sh apps/install-deps.sh --cluster);
# otherwise one line and exit 77 (skipped).
set -eu
axiom=$1
here=$(dirname "$0")
. "$here/../support/run_helpers.sh"

[ "$(id -u)" -eq 0 ] || { echo "slurm: skipped: the test's daemons run as root (uid $(id -u))"; exit 77; }
for program in munged mungekey slurmctld slurmd sbatch sinfo ss; do
  command -v "$program" >/dev/null || { echo "slurm: skipped: no $program (sh apps/install-deps.sh --cluster)"; exit 77; }
done

dir=$(mktemp -d)
pids=""
stop_daemons() {
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  for i in $(seq 50); do  # up to 5 s to shut down, then SIGKILL
    alive=""
    for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap stop_daemons EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Two free TCP ports above 20000 for slurmctld and slurmd (none listening on them now).
free_port() {
  port=$1
  while ss -ltn "( sport = :$port )" | grep -q ":$port"; do port=$((port + 1)); done
  echo "$port"
}
controller_port=$(free_port $((20000 + $$ % 20000)))
node_port=$(free_port $((controller_port + 1)))

mkdir -p "$dir/state" "$dir/spool" "$dir/runs"
mungekey -c -k "$dir/munge.key" 2>/dev/null
munged --force --key-file "$dir/munge.key" --socket "$dir/munge.socket" --pid-file "$dir/munged.pid" \
  --log-file "$dir/munged.log" --seed-file "$dir/munged.seed"
pids="$(cat "$dir/munged.pid")"

node=$(hostname)
cat >"$dir/slurm.conf" <<EOF
ClusterName=axiomtest
SlurmctldHost=$node
SlurmctldPort=$controller_port
SlurmdPort=$node_port
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$node CPUs=$(nproc) State=UNKNOWN
PartitionName=axiom Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF="$dir/slurm.conf"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # the test runs as root; sbatch passes the environment on
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for i in $(seq 100); do
  [ -f "$dir/slurmctld.pid" ] && [ -f "$dir/slurmd.pid" ] && break
  sleep 0.1
done
pids="$(cat "$dir/slurmd.pid" "$dir/slurmctld.pid" 2>/dev/null | tr '\n' ' ') $pids"
for i in $(seq 150); do  # up to 30 s for the node to come up
  sinfo -h -o '%t' 2>/dev/null | grep -q idle && break
  sleep 0.2
done
sinfo -h -o '%t' | grep -q idle || fail "the node did not come up: $(sinfo 2>&1; tail -5 "$dir/slurmctld.log" "$dir/slurmd.log")"

common="--config tiny --batch 8 --eval-images 20 --steps 4 --eval-every 2 --threads 1"
sed -e "s|^axiom=.*|axiom=$axiom|" -e "s|^out=.*|out=$dir/runs/two|" -e "s|^flags=.*|flags=\"$common\"|" \
  "$here/../../apps/slurm/train.sbatch" >"$dir/job.sbatch"
timeout 240 sbatch --wait --output="$dir/job.log" "$dir/job.sbatch" >/dev/null || fail "the job failed: $(cat "$dir/job.log")"
cat "$dir/job.log"
grep -q "axiom: 2 processes" "$dir/job.log" || fail "the job did not run 2 processes"
"$axiom" train $common --out "$dir/runs/one" </dev/null >/dev/null
metrics_match "$dir/runs/two" "$dir/runs/one" "under Slurm against one process:" train_bits_per_dim held_out_bits_per_dim
echo "sbatch --wait: 2 tasks under Slurm match one process (every logged loss and held-out figure)"
