#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The `slurm` ctest: starts the local one-node Slurm cluster (jobs/local-slurm), submits
# tests/jobs/slurm_suite.yaml with `scalebench submit`, polls `scalebench status` until no job
# is pending or running (timeout), collects, checks the merged file with h5py, and stops the
# cluster on every exit path.
#   usage: run_slurm_suite.sh SCALEBENCH WORK_DIR [TIMEOUT_S]
set -euo pipefail
exe=$1 work=$2 timeout_s=${3:-150}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
state=$work/slurm-state out=$work/slurm-suite
mkdir -p "$work"
trap '"$root/jobs/local-slurm/stop.sh" "$state"' EXIT
eval "$("$root/jobs/local-slurm/start.sh" "$state")"
rm -rf "$out"
"$exe" submit "$root/tests/jobs/slurm_suite.yaml" --site this-machine --out "$out"

deadline=$((SECONDS + timeout_s))
while :; do
  table=$("$exe" status "$out")
  if ! grep -Eq 'PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED' <<<"$table"; then break; fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "$table"
    echo "slurm test: jobs still queued or running after ${timeout_s} s" >&2
    for log in "$out"/jobs/*.out; do echo "== $log"; tail -5 "$log"; done
    exit 1
  fi
  sleep 2
done
echo "$table"
for log in "$out"/jobs/*.out; do echo "== $log"; tail -3 "$log"; done
"$exe" collect "$out"
/usr/bin/python3 "$root/tests/jobs/check_suite_with_h5py.py" "$out/slurm-smoke.h5" \
  --expect nano-seed1=1 nano-seed2=1 nano-dp2=2
