#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A rank that fails (an exception, or SIGKILL of its process) ends the whole data-parallel job
within 30 s, and the result file stays readable with status `failed` and the reason.

Usage: check_failed_rank.py SCALEBENCH MPIEXEC CONFIG OUT.h5 error|kill
"""
import os
import subprocess
import sys
import time

import h5py

scalebench, mpiexec, config, out, mode = sys.argv[1:6]
if os.path.exists(out):
    os.remove(out)
env = dict(os.environ, SB_INJECT_FAILURE=f"1:3:{mode}", SB_PROGRESS="lines")
start = time.monotonic()
try:
    job = subprocess.run([mpiexec, "-np", "2", scalebench, "train", "--config", config, "--out", out,
                          "--set", "steps=400", "--set", "strategy.dp=2", "--set", "batch.global=8",
                          "--set", "threads=1"], env=env, capture_output=True, text=True, timeout=60)
except subprocess.TimeoutExpired:
    sys.exit("FAIL: the job with a failed rank was still running after 60 s (a hang)")
elapsed = time.monotonic() - start
print(job.stdout[-2000:], job.stderr[-2000:], sep="\n")
problems = []
if job.returncode == 0:
    problems.append("mpirun exited 0 although rank 1 failed")
if elapsed > 30:
    problems.append(f"the job took {elapsed:.1f} s to end (limit 30 s)")
with h5py.File(out, "r") as f:
    run = f["runs"][list(f["runs"])[0]]
    status, error = run.attrs["status"], run.attrs["error"]
    steps = len(run["steps"])
    if isinstance(status, bytes):
        status, error = status.decode(), error.decode()
if status != "failed":
    problems.append(f"status is '{status}', not 'failed'")
expected = "rank 1" if mode == "error" else "signal"
if expected not in error:
    problems.append(f"the error '{error}' does not mention '{expected}'")
if steps != 2:
    problems.append(f"the steps table holds {steps} rows; the two steps before the failure should be kept")
print(f"mode {mode}: ended after {elapsed:.1f} s, exit {job.returncode}, status {status}, error: {error}")
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")
