#!/usr/bin/env bash
# Starts a throwaway Slurm cluster on loopback for the Slurm launcher's
# integration tests: its own munged (socket and key in DIR), slurmctld and
# two slurmd (logical nodes n1 and n2 on this host), each node with four
# fake GPUs (File= symlinks to /dev/null) and 400 shards (100 per GPU), in
# partition `gpu`. n1's GPUs are pinned (each GPU and its shards its own
# GRES type idx<N>, so a job can ask for GPU N itself); n2's are untyped
# (Slurm picks the GPU), the two set-ups docs/slurm.md describes. No cgroups, no accounting (`scontrol show job` keeps
# finished jobs for MinJobAge).
#
#   bash tests/slurm/slurm_up.sh DIR      # prints nothing; DIR/env has SLURM_CONF
#   bash tests/slurm/slurm_down.sh DIR    # stops every daemon and removes DIR
#
# Exit status: 0 up; 77 cannot run here (not root, Slurm or munge missing),
# with the reason in DIR/skip; 1 a daemon did not come up (logs printed).
set -uo pipefail

DIR=${1:?usage: slurm_up.sh DIR}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
# A cluster a crashed run left in DIR goes first (its daemons, state, jobs).
bash "$(dirname "$0")/slurm_down.sh" "$DIR"
mkdir -p "$DIR"

# Not up: stop what did start (the logs have been printed), exit 1.
give_up() {
  bash "$(dirname "$0")/slurm_down.sh" "$DIR"
  exit 1
}

skip() {
  echo "$1" >"$DIR/skip"
  if [ "${TESSERA_REQUIRE_SLURM:-0}" = 1 ]; then
    echo "slurm_up: cannot run Slurm here, and TESSERA_REQUIRE_SLURM=1: $1" >&2
    exit 1
  fi
  echo "slurm_up: SKIP: $1" >&2
  exit 77
}

[ "$(id -u)" -eq 0 ] ||
  skip "not root (slurmd must run as root; CI runs as root)"
for tool in munged slurmctld slurmd sbatch squeue scontrol scancel sinfo srun; do
  command -v "$tool" >/dev/null 2>&1 ||
    skip "'$tool' not found (install slurm-wlm and munge: scripts/setup.sh)"
done

# Three consecutive free TCP ports: controller, n1, n2.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
base=""
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 30000))
  if port_free "$p" && port_free $((p + 1)) && port_free $((p + 2)); then
    base=$p
    break
  fi
done
[ -n "$base" ] || { echo "slurm_up: no free ports" >&2; exit 1; }

HOST=$(hostname)
mkdir -p "$DIR"/{etc,munge,state,log,run,dev,spool/n1,spool/n2}
chmod 700 "$DIR/munge"
for i in 0 1 2 3; do ln -sfn /dev/null "$DIR/dev/nvidia$i"; done

# munged: its own key, socket, pid, seed and log, all in DIR.
dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$DIR/munge/munge.key"
munged --force --socket="$DIR/munge/munge.socket" \
  --key-file="$DIR/munge/munge.key" --pid-file="$DIR/run/munged.pid" \
  --seed-file="$DIR/munge/munged.seed" --log-file="$DIR/log/munged.log" \
  >"$DIR/log/munged.start" 2>&1 ||
  { cat "$DIR/log/munged.start" "$DIR/log/munged.log" >&2; give_up; }

cat >"$DIR/etc/slurm.conf" <<CONF
ClusterName=tessera-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
# Heterogeneous jobs start only in backfill passes (default every 30 s).
SchedulerParameters=bf_interval=1,sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu,shard
ReturnToService=2
MinJobAge=86400
KillWait=2
InactiveLimit=0
MessageTimeout=5
SlurmctldTimeout=10
SlurmdTimeout=30
NodeName=n1 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((base + 1)) CPUs=16 RealMemory=16000 Gres=gpu:idx0:1,gpu:idx1:1,gpu:idx2:1,gpu:idx3:1,shard:idx0:100,shard:idx1:100,shard:idx2:100,shard:idx3:100 State=UNKNOWN
NodeName=n2 NodeHostname=$HOST NodeAddr=127.0.0.1 Port=$((base + 2)) CPUs=16 RealMemory=16000 Gres=gpu:4,shard:400 State=UNKNOWN
PartitionName=gpu Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP
CONF

{
  echo "AutoDetect=off"
  for i in 0 1 2 3; do
    echo "NodeName=n1 Name=gpu Type=idx$i File=$DIR/dev/nvidia$i"
  done
  for i in 0 1 2 3; do
    echo "NodeName=n1 Name=shard Type=idx$i Count=100 File=$DIR/dev/nvidia$i"
  done
  echo "NodeName=n2 Name=gpu File=$DIR/dev/nvidia[0-3]"
  echo "NodeName=n2 Name=shard Count=400"
} >"$DIR/etc/gres.conf"

export SLURM_CONF="$DIR/etc/slurm.conf"
echo "SLURM_CONF=$SLURM_CONF" >"$DIR/env"

slurmctld -i -f "$SLURM_CONF" >"$DIR/log/slurmctld.start" 2>&1
for n in n1 n2; do
  slurmd -N "$n" -f "$SLURM_CONF" >"$DIR/log/slurmd-$n.start" 2>&1
done

# Up when both nodes are idle (-N and %N: node names; %n is the host).
for _ in $(seq 1 150); do
  idle=$(timeout 5 sinfo -N --noheader --states=idle --format=%N 2>/dev/null | sort | tr '\n' ' ')
  [ "$idle" = "n1 n2 " ] && exit 0
  sleep 0.2
done
echo "slurm_up: the nodes did not come up idle within 30 s; sinfo says:" >&2
timeout 5 sinfo -N -l >&2
tail -n 30 "$DIR"/log/*.log "$DIR"/log/*.start >&2
give_up
