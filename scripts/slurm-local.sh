#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for halu's tests and for
# trying `halu slurm` before a lab's cluster: munged, slurmctld and slurmd
# from Debian's packages (apt-get install slurmctld slurmd slurm-client
# munge), run as root, with their own configuration, key, state, logs and
# free loopback ports in DIR — nothing under /etc is touched.
#
#   scripts/slurm-local.sh start DIR   # prints the SLURM_CONF to export
#   scripts/slurm-local.sh stop DIR    # cancels its jobs, stops the daemons
#
# One node (this machine, its CPUs), one partition (debug), no accounting
# (sacct says so), ProctrackType=proctrack/linuxproc and TaskPlugin=task/none:
# no cgroups needed. A requeued job waits cred_expire before it starts again:
# 10 s here (Slurm's default is 120 s), so tests of tasks that requeue
# themselves near their time limit finish in minutes.
set -euo pipefail
cmd="${1:-}" dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
case "$cmd" in
start)
  for b in munged slurmctld slurmd sbatch sinfo; do
    command -v "$b" >/dev/null || { echo "slurm-local: $b not installed (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 3; }
  done
  [ "$(id -u)" = 0 ] || { echo "slurm-local: slurmd starts jobs as their user, which needs root" >&2; exit 3; }
  mkdir -p "$dir"/{state,spool,log}
  dir=$(cd "$dir" && pwd)
  [ -e "$dir/munge.key" ] || { head -c 1024 /dev/urandom >"$dir/munge.key"; chmod 0400 "$dir/munge.key"; }
  port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
  host=$(hostname -s)
  cat >"$dir/slurm.conf" <<EOF
ClusterName=halu
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=$(port)
SlurmdPort=$(port)
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock,cred_expire=10
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$dir/slurm.conf"
  munged --force --socket="$dir/munge.sock" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/munge.seed"
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"
  for _ in $(seq 300); do
    [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && { echo "export SLURM_CONF=$SLURM_CONF"; exit 0; }
    sleep 0.2
  done
  echo "slurm-local: the node never became idle; logs in $dir/log" >&2
  tail -n 20 "$dir"/log/*.log >&2
  exit 1
  ;;
stop)
  dir=$(cd "$dir" && pwd)
  export SLURM_CONF="$dir/slurm.conf"
  scancel --user="$(id -un)" 2>/dev/null || true
  scontrol shutdown 2>/dev/null || true
  for p in slurmd slurmctld munged; do
    [ -f "$dir/$p.pid" ] && kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
  done
  # Wait for the daemons to go, so the directory can be removed.
  for _ in $(seq 50); do
    alive=0
    for p in slurmd slurmctld munged; do
      [ -f "$dir/$p.pid" ] && kill -0 "$(cat "$dir/$p.pid")" 2>/dev/null && alive=1
    done
    [ $alive = 0 ] && exit 0
    sleep 0.2
  done
  ;;
*)
  echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
