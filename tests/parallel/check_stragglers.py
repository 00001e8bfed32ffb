#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Straggler attribution end to end, at a 30% slowdown on an oversubscribed machine: gpt-nano
under dp 2 and dp 4 with rank 1 slowed by 30% from step 2 on (SB_INJECT_FAILURE=1:2:slow30: it
does 30% more CPU work before its first collective, as a slower device would), each beside its
even twin. `inspect --json` at its default threshold (20%) must name rank 1, and only rank 1, of
each slowed run, and no rank of either even run; its text says so in a sentence. Then `report`
of the four files names the same ranks in its stragglers table (id="stragglers") and says that
nothing else is.

Why this holds on a shared two-core machine where even ranks' wall-clock compute has been seen
36% apart: inspect judges each rank's compute at the share of a CPU it had (the timeline's
compute_cpu_s), step by step against the stage's other ranks in the same step, so what the
scheduler gives a rank cancels; its per-rank medians of both fields are printed beside the verdict.

Run alone (RUN_SERIAL): it reads timings.
Usage: check_stragglers.py SCALEBENCH MPIEXEC CONFIG OUT_DIR
"""
import json
import os
import re
import subprocess
import sys

import h5py
import numpy as np

scalebench, mpiexec, config, out_dir = sys.argv[1:5]
problems = []


def train(name, dp, slow):
    out = os.path.join(out_dir, f"straggler_{name}.h5")
    env = dict(os.environ)
    env.pop("SB_INJECT_FAILURE", None)
    if slow:
        env["SB_INJECT_FAILURE"] = "1:2:slow30"
    subprocess.run([mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", str(dp), scalebench, "train",
                    "--config", config, "--out", out, "--force", "--run-id", name, "--progress", "off",
                    "--set", f"strategy.dp={dp}", "--set", "threads=1", "--set", "steps=30", "--set", "eval_every=0",
                    "--set", "eval_batches=1", "--set", f"batch.global={8 * dp}"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    with h5py.File(out, "r") as f:
        t = f[f"runs/{name}/timeline"][:]
    for field in ("compute_s", "compute_cpu_s"):
        medians = [float(np.median(t[(t["rank"] == r) & (t["step"] > 1)][field])) * 1e3 for r in range(dp)]
        print(f"{name}: median {field} per step by rank (ms): {' '.join(f'{m:.2f}' for m in medians)}")
    answer = json.loads(subprocess.run([scalebench, "inspect", out, "--json"], capture_output=True,
                                       text=True, check=True).stdout)
    run = answer["runs"][0]
    if run["straggler_threshold_pct"] != 20:
        problems.append(f"{name}: default straggler_threshold_pct {run['straggler_threshold_pct']}, not 20")
    for s in run["stragglers"]:
        print(f"{name}: inspect names rank {s['rank']}: {s['excess_pct']:+.1f}% step by step "
              f"(spread {s['spread_pct']:.1f}%, by {s['basis']})")
        if s["basis"] != "compute_cpu_s":
            problems.append(f"{name}: judged by {s['basis']}, not compute_cpu_s")
    text = subprocess.run([scalebench, "inspect", out], capture_output=True, text=True, check=True).stdout
    return out, [s["rank"] for s in run["stragglers"]], text


files = []
for name, dp, slow in (("dp2_slow", 2, True), ("dp2_even", 2, False), ("dp4_slow", 4, True), ("dp4_even", 4, False)):
    out, named, text = train(name, dp, slow)
    files.append(out)
    wanted = [1] if slow else []
    if named != wanted:
        problems.append(f"{name}: stragglers {named}, not {wanted}")
    if slow and (f"run {name}: rank 1 is a straggler" not in text or "beyond 20%" not in text):
        problems.append(f"{name}: inspect's text does not name rank 1: {text[-400:]!r}")

# the report names the same ranks, by the same rule, and no other
page_path = os.path.join(out_dir, "straggler_report.html")
r = subprocess.run([scalebench, "report", *files, "-o", page_path, "--static"], capture_output=True, text=True)
if r.returncode != 0:
    problems.append(f"report exited {r.returncode}: {r.stderr[-400:]}")
else:
    page = open(page_path, encoding="utf-8").read()
    table = re.search(r'<table id="stragglers">(.*?)</table>', page, re.S)
    named = sorted(re.findall(r"<tr data-run='([^']*)' data-rank='(\d+)'>", table.group(1))) if table else None
    if named != [("dp2_slow", "1"), ("dp4_slow", "1")]:
        problems.append(f"the report's stragglers table names {named}, not rank 1 of dp2_slow and dp4_slow")
    if "<h2>Stragglers</h2>" not in page or "dp2_slow: rank 1" not in page:
        problems.append("the report has no Stragglers section naming dp2_slow's rank 1")

if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")
