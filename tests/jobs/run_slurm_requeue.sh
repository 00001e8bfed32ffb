#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The `slurm` ctest of preemption and requeue: starts the local one-node Slurm cluster
# (jobs/local-slurm), submits tests/jobs/slurm_requeue_suite.yaml with `scalebench submit`,
# waits until the job has trained some steps, delivers the scheduler's notice the way
# `--signal=USR1@T` does (scancel --signal=USR1: every task of the job's steps), and waits.
# The trainer checkpoints at its next step boundary and exits 75, the generated script runs
# `scontrol requeue`, Slurm starts the job again with the same command, which resumes from the
# checkpoint and finishes (the test moves the requeued job's BeginTime, which Slurm sets a
# while ahead, to now). Checked with h5py: the job restarted once, the result file says
# status ok and resumed_from_step > 0, its steps table starts after that step, and its final
# loss equals that of the same case trained without interruption (outside Slurm).
#   usage: run_slurm_requeue.sh SCALEBENCH WORK_DIR [TIMEOUT_S]
set -euo pipefail
exe=$1 work=$2 timeout_s=${3:-100}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
state=$work/slurm-state out=$work/slurm-requeue
mkdir -p "$work"
rm -rf "$state"  # no jobs recovered from an earlier run of this test
trap '"$root/jobs/local-slurm/stop.sh" "$state"' EXIT
eval "$("$root/jobs/local-slurm/start.sh" "$state")"
rm -rf "$out"
"$exe" submit "$root/tests/jobs/slurm_requeue_suite.yaml" --site this-machine --out "$out"
result=$out/runs/nano-requeue.h5
job=$(squeue -h -o %i | head -1)
[ -n "$job" ] || { echo "slurm requeue test: no job in the queue after submit" >&2; exit 1; }

steps_done() {  # rows of the steps table so far (the writer flushes every step)
  HDF5_USE_FILE_LOCKING=FALSE /usr/bin/python3 -c '
import sys, h5py
try:
    with h5py.File(sys.argv[1], "r") as f:
        print(len(f["runs"]["nano-requeue"]["steps"]))
except Exception:
    print(0)' "$result" 2>/dev/null || echo 0
}
deadline=$((SECONDS + timeout_s))
until [ "$(steps_done)" -ge 20 ]; do
  if [ "$SECONDS" -ge "$deadline" ]; then echo "slurm requeue test: the job never reached step 20" >&2; exit 1; fi
  sleep 0.2
done
echo "signalling job $job (USR1) after $(steps_done) steps"
scancel --signal=USR1 "$job"

while :; do
  line=$(scontrol show job "$job" -o)
  state_now=$(sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' <<<"$line")
  restarts=$(sed -n 's/.*Restarts=\([0-9]*\).*/\1/p' <<<"$line")
  if [ "$restarts" -ge 1 ] && [[ "$state_now" =~ ^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)$ ]]; then
    break
  fi
  # Slurm holds a requeued batch job back (BeginTime a while ahead, Reason=BeginTime) before it
  # may start again; the test does not wait for that: it lets the job start now.
  if [ "$restarts" -ge 1 ] && [ "$state_now" = PENDING ] && [ -z "${nudged:-}" ]; then
    echo "requeued: $(grep -o 'Reason=[^ ]*' <<<"$line") $(grep -o 'BeginTime=[^ ]*' <<<"$line"); starting it now"
    scontrol update JobId="$job" StartTime=now
    nudged=1
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "slurm requeue test: job $job is $state_now with $restarts restart(s) after ${timeout_s} s" >&2
    tail -20 "$out"/jobs/*.out >&2 || true
    exit 1
  fi
  sleep 1
done
echo "job $job: $state_now after $restarts restart(s)"
tail -5 "$out"/jobs/*.out || true

# the same case without interruption, outside Slurm (train never replaces a result file: the
# one of an earlier run of this test goes first)
rm -f "$work/uninterrupted.h5"
"$exe" train --config "$out/jobs/nano-requeue.yaml" --out "$work/uninterrupted.h5" --run-id nano-requeue \
  --set checkpoint.resume=never >/dev/null
/usr/bin/python3 - "$result" "$work/uninterrupted.h5" "$state_now" "$restarts" <<'PY'
import sys, h5py
result, reference, state, restarts = sys.argv[1:5]
problems = []
text = lambda v: v.decode() if isinstance(v, bytes) else str(v)
with h5py.File(result, "r") as f, h5py.File(reference, "r") as g:
    run, ref = f["runs"]["nano-requeue"], g["runs"]["nano-requeue"]
    resumed = int(run.attrs["resumed_from_step"])
    steps = run["steps"]["step"]
    final, ref_final = run["summary"].attrs["final_loss"], ref["summary"].attrs["final_loss"]
    print(f"job {state}, restarts {restarts}; resumed_from_step {resumed}; steps {steps[0]}..{steps[-1]}; "
          f"final loss {final!r} (uninterrupted {ref_final!r})")
    if restarts != "1":
        problems.append(f"the job restarted {restarts} times, not once")
    if state != "COMPLETED":
        problems.append(f"the job ended {state}")
    if text(run.attrs["status"]) != "ok":
        problems.append(f"status {text(run.attrs['status'])}: {text(run.attrs['error'])}")
    if resumed <= 0:
        problems.append("the requeued run did not resume from a checkpoint (resumed_from_step 0)")
    elif steps[0] != resumed + 1 or steps[-1] != len(ref["steps"]):
        problems.append(f"the steps table holds {steps[0]}..{steps[-1]}, not {resumed + 1}..{len(ref['steps'])}")
    if final != ref_final:
        problems.append(f"final loss {final!r} differs from the uninterrupted run's {ref_final!r}")
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")
PY
