#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Starts a one-node Slurm cluster on this machine (root, no systemd, no cgroups): munged,
# slurmctld and slurmd, with every file under one state folder. Idempotent: daemons already
# running from that folder are left alone. Prints `export SLURM_CONF=...` on standard output
# (eval "$(jobs/local-slurm/start.sh)"); progress goes to standard error.
#   usage: start.sh [STATE_DIR]     (default $SB_SLURM_DIR, else /tmp/sb-slurm)
# Stop with stop.sh and the same folder. Recipe: shared/TOOLCHAIN.md, "A one-node Slurm cluster".
set -euo pipefail

dir=${1:-${SB_SLURM_DIR:-/tmp/sb-slurm}}
log() { printf '[local-slurm] %s\n' "$*" >&2; }
fail() { printf 'local-slurm: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "run as root (slurmd and munged need it here)"
for tool in slurmctld slurmd munged sinfo scontrol munge; do
  command -v "$tool" >/dev/null 2>&1 || fail "'$tool' is missing: apt-get install slurm-wlm munge (scripts/setup.sh does)"
done
mkdir -p "$dir"/state "$dir"/spool "$dir"/run "$dir"/log
dir=$(cd "$dir" && pwd)
conf=$dir/slurm.conf
export SLURM_CONF=$conf

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
wait_for() {  # wait_for SECONDS WHAT COMMAND...
  local seconds=$1 what=$2; shift 2
  for _ in $(seq $((seconds * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "$what did not come up within ${seconds} s (logs in $dir/log)"
}

# munge: one key for the machine, one daemon; started here only when none answers.
if ! munge -n >/dev/null 2>&1; then
  if [ ! -f /etc/munge/munge.key ]; then
    log "creating /etc/munge/munge.key"
    mungekey --create
    chown munge:munge /etc/munge/munge.key
    chmod 400 /etc/munge/munge.key
  fi
  mkdir -p /run/munge
  chown munge:munge /run/munge
  chmod 0755 /run/munge
  log "starting munged"
  runuser -u munge -- /usr/sbin/munged
  touch "$dir/run/munged.started-here"
  wait_for 10 munged munge -n
fi

# The node as slurmd sees it (CPUs, sockets, cores, threads), with 80% of its memory.
node=$(slurmd -C | head -1)
cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
boards=$(sed -n 's/.* Boards=\([0-9]*\).*/\1/p' <<<"$node")
sockets=$(sed -n 's/.* SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$node")
cores=$(sed -n 's/.* CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$node")
threads=$(sed -n 's/.* ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$node")
memory=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
[ -n "$cpus" ] && [ -n "$memory" ] || fail "cannot read this node's shape from 'slurmd -C': $node"

if ! alive "$dir/run/slurmctld.pid" || ! alive "$dir/run/slurmd.pid"; then
  cat > "$conf" <<CONF
# Written by jobs/local-slurm/start.sh: a one-node cluster on localhost.
ClusterName=local
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=pmix
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
MinJobAge=3600
MaxArraySize=1001
NodeName=localhost NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus Boards=${boards:-1} SocketsPerBoard=${sockets:-1} CoresPerSocket=${cores:-$cpus} ThreadsPerCore=${threads:-1} RealMemory=$((memory * 8 / 10)) State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
fi

if alive "$dir/run/slurmctld.pid"; then
  log "slurmctld already running (pid $(cat "$dir/run/slurmctld.pid"))"
else
  log "starting slurmctld"
  slurmctld -f "$conf"
fi
wait_for 20 slurmctld sh -c 'scontrol ping | grep -q UP'
if alive "$dir/run/slurmd.pid"; then
  log "slurmd already running (pid $(cat "$dir/run/slurmd.pid"))"
else
  log "starting slurmd"
  slurmd -f "$conf" -N localhost
fi
wait_for 30 "the node" sh -c 'sinfo --noheader --format=%T | grep -Eq "^(idle|mixed|allocated)"'
log "up: $(sinfo --noheader --format='%P %D %T %C')"
printf 'export SLURM_CONF=%q\n' "$conf"
