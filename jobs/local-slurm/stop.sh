#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stops the cluster start.sh started from a state folder: slurmd, slurmctld and, when
# start.sh started it, munged; each by its PID file, never by process name. Idempotent.
#   usage: stop.sh [STATE_DIR]      (default $SB_SLURM_DIR, else /tmp/sb-slurm)
set -uo pipefail

dir=${1:-${SB_SLURM_DIR:-/tmp/sb-slurm}}
log() { printf '[local-slurm] %s\n' "$*" >&2; }
[ -d "$dir" ] || { log "nothing to stop: $dir does not exist"; exit 0; }

stop_pid_file() {  # stop_pid_file NAME FILE
  local name=$1 file=$2 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name did not stop within 10 s; killing it"
      kill -KILL "$pid" 2>/dev/null
    fi
  fi
  rm -f "$file"
}

stop_pid_file slurmd "$dir/run/slurmd.pid"
stop_pid_file slurmctld "$dir/run/slurmctld.pid"
if [ -f "$dir/run/munged.started-here" ]; then
  stop_pid_file munged /run/munge/munged.pid
  rm -f "$dir/run/munged.started-here"
fi
log "stopped"
