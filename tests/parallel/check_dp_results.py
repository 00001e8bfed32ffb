#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`scalebench train` with dp=2 writes one row per rank into `ranks` and `memory`, the per-step
compute/comm split, the per-rank per-step `timeline`, the exchange figures, and (--trace) a Chrome trace with both ranks'
timelines. Reads the HDF5 file and the JSON, never stdout.

Usage: check_dp_results.py SCALEBENCH MPIEXEC CONFIG OUT_DIR
"""
import json
import os
import subprocess
import sys

import h5py

scalebench, mpiexec, config, out_dir = sys.argv[1:5]
out, trace = os.path.join(out_dir, "dp_results.h5"), os.path.join(out_dir, "dp_trace.json")
for path in (out, trace):
    if os.path.exists(path):
        os.remove(path)
subprocess.run([mpiexec, "-np", "2", scalebench, "train", "--config", config, "--out", out, "--trace", trace,
                "--set", "steps=6", "--set", "strategy.dp=2", "--set", "batch.global=8", "--set", "threads=1",
                "--set", "strategy.bucket_mb=0.1"], check=True, env=dict(os.environ, SB_PROGRESS="lines"))
problems = []
with h5py.File(out, "r") as f:
    run = f["runs"][list(f["runs"])[0]]
    ranks, memory, steps, timeline = run["ranks"][:], run["memory"][:], run["steps"][:], run["timeline"][:]
    summary = dict(run["summary"].attrs)
    if list(ranks["rank"]) != [0, 1] or list(ranks["dp_rank"]) != [0, 1]:
        problems.append(f"ranks table rows {list(ranks['rank'])}, dp ranks {list(ranks['dp_rank'])}")
    if list(memory["rank"]) != [0, 1]:
        problems.append(f"memory table rows {list(memory['rank'])}")
    if not (memory["comm"] > 0).all() or not (memory["optimizer"] > 0).all():
        problems.append("every rank should track comm buffers and optimizer state")
    if not (ranks["idle_s"] >= 0).all() or (ranks["idle_s"] > 0).sum() == 0 and (ranks["comm_s"] <= 0).all():
        problems.append("idle and comm should be measured per rank")
    if len(steps) != 6 or not (steps["comm_s"] > 0).all() or not (steps["compute_s"] > 0).all():
        problems.append("each step needs a positive compute_s and comm_s")
    if list(timeline["step"]) != [s for s in range(1, 7) for _ in (0, 1)] or list(timeline["rank"]) != [0, 1] * 6:
        problems.append(f"timeline rows: steps {list(timeline['step'])}, ranks {list(timeline['rank'])}")
    if not (timeline["compute_s"] > 0).all() or not (timeline["dp_comm_s"] > 0).all() \
            or not (timeline["optimizer_s"] > 0).all():
        problems.append("every timeline row needs positive compute_s, dp_comm_s and optimizer_s")
    if (timeline["tp_comm_s"] != 0).any() or (timeline["p2p_s"] != 0).any() or (timeline["bubble_s"] != 0).any():
        problems.append("data parallelism alone has no tp, p2p or bubble time")
    parts = timeline["compute_s"] + timeline["dp_comm_s"] + timeline["optimizer_s"]
    if (parts > timeline["step_time_s"] * 1.0001).any():
        problems.append("a timeline row's parts exceed its step time")
    parameters = int(summary["parameters"])
    if int(summary["dp_exchange_bytes"]) != 4 * parameters:
        problems.append(f"dp_exchange_bytes {summary['dp_exchange_bytes']} != 4 x {parameters} parameters")
    if not 0 <= summary["overlap_fraction"] <= 1:
        problems.append(f"overlap_fraction {summary['overlap_fraction']} outside [0, 1]")
with open(trace) as f:
    events = json.load(f)["traceEvents"]
complete = [e for e in events if e.get("ph") == "X"]
for rank in (0, 1):
    mine = [e for e in complete if e["pid"] == rank]
    categories = {e["cat"] for e in mine}
    if not {"step", "compute", "comm", "optimizer"} <= categories:
        problems.append(f"rank {rank}'s trace has categories {sorted(categories)}")
    if any(e["dur"] < 0 or e["ts"] < 0 for e in mine):
        problems.append(f"rank {rank}'s trace has negative times")
    if len([e for e in mine if e["cat"] == "comm" and e["name"].startswith("dp all_reduce")]) < 6:
        problems.append(f"rank {rank}'s trace lacks the gradient all-reduces")
print(f"ranks idle_s {list(ranks['idle_s'])} comm_s {list(ranks['comm_s'])}, overlap {summary['overlap_fraction']}, "
      f"{len(complete)} trace events")
if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")
