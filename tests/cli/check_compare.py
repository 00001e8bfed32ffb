#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`scalebench compare` end to end on real runs: the same gpt-tiny case under one run id, trained
with two threads (A), with one, and with one and its compute slowed by 100% (B, SB_INJECT_FAILURE
slow100). A file against itself: every figure "same", exit 0. One thread against two: never
"better". A against B: the step time and throughput worse beyond the tolerance and the spread,
exit 1, in the table and in --json; B against A: better, exit 0. Bad input (a missing file, files without a common run, a
negative tolerance): exit 2, one sentence. Reads the verdicts from --json, the runs from HDF5.

Run alone (RUN_SERIAL): it compares timings.
Usage: check_compare.py SCALEBENCH CONFIG OUT_DIR
"""
import json
import os
import subprocess
import sys

import h5py

scalebench, config, out_dir = sys.argv[1:4]
problems = []
COMMON = ["--set", "model=gpt-tiny", "--set", "steps=12", "--set", "batch.global=8", "--set", "eval_every=0",
          "--set", "eval_batches=1", "--run-id", "gpt-tiny", "--force", "--progress", "off"]


def train(name, threads, slow=None):
    out = os.path.join(out_dir, f"compare_{name}.h5")
    env = dict(os.environ)
    env.pop("SB_INJECT_FAILURE", None)
    if slow:
        env["SB_INJECT_FAILURE"] = slow
    subprocess.run([scalebench, "train", "--config", config, "--out", out, "--set", f"threads={threads}", *COMMON],
                   check=True, stdout=subprocess.DEVNULL, env=env)
    with h5py.File(out, "r") as f:
        assert int(f["runs/gpt-tiny/context"].attrs["threads"]) == threads, dict(f["runs/gpt-tiny/context"].attrs)
    return out


def compare(a, b, *extra):
    r = subprocess.run([scalebench, "compare", a, b, "--json", *extra], capture_output=True, text=True)
    return r.returncode, (json.loads(r.stdout) if r.returncode in (0, 1) else None), r.stderr


two, one = train("two_threads", 2), train("one_thread", 1)
# B made slower for certain: one thread, and its compute slowed by 100% from step 2 on
slow = train("one_thread_slowed", 1, "0:2:slow100")

rc, same, _ = compare(two, two)
if rc != 0 or same["regression"] or any(c["verdict"] != "same" for c in same["changes"]):
    problems.append(f"a file against itself: exit {rc}, verdicts {[c['verdict'] for c in same['changes']]}")
figures = {c["figure"] for c in same["changes"]}
for wanted in ("step time", "throughput", "peak memory", "held-out loss"):
    if wanted not in figures:
        problems.append(f"no '{wanted}' figure in {sorted(figures)}")


def step_of(answer):
    return {c["figure"]: c for c in answer["changes"]} if answer else {}


# one thread against two: printed as measured; never judged better than two threads
rc, threads, _ = compare(two, one, "--tolerance", "10")
step = step_of(threads).get("step time", {})
print(f"two threads -> one: step time {step.get('a'):.1f} -> {step.get('b'):.1f} ms ({step.get('change_pct'):+.1f}%, "
      f"spread {step.get('spread_pct'):.1f}%), verdict {step.get('verdict')}, exit {rc}")
if step.get("verdict") == "better":
    problems.append(f"one thread judged faster than two: {step}")

rc, slower, _ = compare(two, slow, "--tolerance", "10")
verdict = step_of(slower)
step = verdict.get("step time", {})
print(f"two threads -> one thread slowed: step time {step.get('a'):.1f} -> {step.get('b'):.1f} ms "
      f"({step.get('change_pct'):+.1f}%, spread {step.get('spread_pct'):.1f}%), verdict {step.get('verdict')}, exit {rc}")
if rc != 1 or not slower["regression"] or step.get("verdict") != "worse":
    problems.append(f"the slowed run against two threads: exit {rc}, step time {step}")
if verdict.get("throughput", {}).get("verdict") != "worse":
    problems.append(f"throughput of the slowed run: {verdict.get('throughput')}")
if verdict.get("held-out loss", {}).get("verdict") != "same":  # the same model trained: speed changes no loss
    problems.append(f"held-out loss moved with the speed: {verdict.get('held-out loss')}")
table = subprocess.run([scalebench, "compare", two, slow, "--tolerance", "10"], capture_output=True, text=True)
if table.returncode != 1 or "regression(s) beyond 10%" not in table.stdout or "gpt-tiny step time +" not in table.stdout:
    problems.append(f"the table does not name the regression: {table.stdout[-600:]!r}")

rc, faster, _ = compare(slow, two, "--tolerance", "10")
step = step_of(faster).get("step time", {})
if rc != 0 or step.get("verdict") != "better":
    problems.append(f"two threads against the slowed run: exit {rc}, step time {step}")

# bad input: exit 2 with one sentence, nothing on stdout
other = os.path.join(out_dir, "compare_other_id.h5")
subprocess.run([scalebench, "train", "--config", config, "--out", other, "--set", "threads=1",
                *[a if a != "gpt-tiny" else "another-id" for a in COMMON]], check=True, stdout=subprocess.DEVNULL)
for name, args, sentence in [("missing", [os.path.join(out_dir, "absent.h5"), two], "does not exist"),
                             ("no common run", [two, other], "share no run id"),
                             ("negative tolerance", [two, one, "--tolerance", "-1"], "--tolerance must be")]:
    r = subprocess.run([scalebench, "compare", *args], capture_output=True, text=True)
    if r.returncode != 2 or sentence not in r.stderr or r.stdout:
        problems.append(f"{name}: exit {r.returncode}, stderr {r.stderr[-300:]!r}")

if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")
