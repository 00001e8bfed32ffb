#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Straggler attribution end to end: gpt-tiny under dp 2 and dp 4 with rank 1 slowed by 30% from
step 2 on (SB_INJECT_FAILURE=1:2:slow30: at the end of its backward, before the gradient
exchange, it works 30% of that step's own compute CPU time more, as a slower device would),
each beside its even twin. `inspect --json` at its default threshold (20%) must name rank 1,
and only rank 1, of each slowed run and no rank of either even run; its text says so in a
sentence, with the rank's arrivals at its collectives. The collectives table
(/runs/<id>/collectives) has every rank's calls of every step, and in the slowed runs rank 1
computed longest before the data-parallel all-reduce of every judged step; inspect says the
others' waits there were for it. `report` of the four files names both slowed ranks in its
stragglers table (id="stragglers"). Inspect judges the timeline's compute_cpu_s (each rank's
compute at the share of a CPU it had), step by step against the stage's other ranks.

Every rank of a run runs on the same one CPU (taskset, Open MPI's binding off, and
mpi_yield_when_idle so that a waiting rank gives the CPU up): a host's other tenants slow its
cores unevenly (here, 2026-12-03, one vCPU 10-25% slower than the other for minutes at a time,
in CPU time), and a rank on the faster core slowed by 30% is then only 5-20% slower than a rank
on the slower one - the slowdown and the core's speed cannot be told apart within one run.
Sharing one CPU, every rank's compute runs at the same speed and the CPU time still counts each
rank's own work: slowed runs measured +30% (+27% to +31% step by step), even runs 1.00.
And gpt-tiny (steps of about 230 ms), not gpt-nano (5 ms): a 5 ms step is too short to judge on
shared cores (even gpt-nano dp 2 runs measured +15% to +30%).

Then two copies of the even dp 2 file with timelines set by hand judge the rule with nothing
timed: rank 1 given 30% more compute_cpu_s and 30% less compute_s is named at the default
threshold, by compute_cpu_s; a timeline without compute_cpu_s (a file from before it) is judged
by compute_s.

Run alone (RUN_SERIAL): it reads timings.
Usage: check_stragglers.py SCALEBENCH MPIEXEC CONFIG OUT_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np

scalebench, mpiexec, config, out_dir = sys.argv[1:5]
problems = []


STEPS = 12
ONE_CPU = min(os.sched_getaffinity(0))  # every rank of every run on this one


def inspect(out):
    """The first run of `inspect OUT --json`, judged at the default threshold."""
    answer = json.loads(subprocess.run([scalebench, "inspect", out, "--json"], capture_output=True, text=True,
                                       check=True).stdout)
    return answer["runs"][0]


def train(name, dp, slow):
    # the share of the waits at collectives that must have been for the slowed rank (see check_collectives)
    waited_for_pct = 80 if dp == 2 else 50
    out = os.path.join(out_dir, f"straggler_{name}.h5")
    env = dict(os.environ)
    env.pop("SB_INJECT_FAILURE", None)
    if slow:
        env["SB_INJECT_FAILURE"] = "1:2:slow30"
    env["OMPI_MCA_mpi_yield_when_idle"] = "1"
    subprocess.run([mpiexec, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(dp),
                    "taskset", "-c", str(ONE_CPU), scalebench, "train",
                    "--config", config, "--out", out, "--force", "--run-id", name, "--progress", "off",
                    "--set", "model=gpt-tiny", "--set", f"strategy.dp={dp}", "--set", "threads=1", "--set", f"steps={STEPS}",
                    "--set", "eval_every=0",
                    "--set", "eval_batches=1", "--set", f"batch.global={8 * dp}"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    with h5py.File(out, "r") as f:
        t = f[f"runs/{name}/timeline"][:]
    for field in ("compute_s", "compute_cpu_s"):
        medians = [float(np.median(t[(t["rank"] == r) & (t["step"] > 1)][field])) * 1e3 for r in range(dp)]
        print(f"{name}: median {field} per step by rank (ms): {' '.join(f'{m:.2f}' for m in medians)}")
    check_collectives(name, out, dp, slow)
    run = inspect(out)
    if run["straggler_threshold_pct"] != 20:
        problems.append(f"{name}: straggler_threshold_pct {run['straggler_threshold_pct']}, not the default 20")
    for s in run["stragglers"]:
        print(f"{name}: inspect names rank {s['rank']}: {s['excess_pct']:+.1f}% step by step "
              f"(spread {s['spread_pct']:.1f}%, by {s['basis']}); arrivals {s['arrivals']}")
        if s["basis"] != "compute_cpu_s":
            problems.append(f"{name}: judged by {s['basis']}, not compute_cpu_s")
        arrivals = s["arrivals"] or {}
        if arrivals.get("groups") != "dp" or not arrivals.get("waited_for_pct", 0) > waited_for_pct:
            problems.append(f"{name}: rank {s['rank']}'s arrivals {arrivals}: not over {waited_for_pct}% of the waits on dp")
    text = subprocess.run([scalebench, "inspect", out], capture_output=True, text=True, check=True).stdout
    return out, [s["rank"] for s in run["stragglers"]], text


def check_collectives(name, out, dp, slow):
    """Every rank's calls of every step are in the table; in a slowed run rank 1 computed longest
    before the data-parallel gradient all-reduce (each step's largest dp call) in most of the
    steps it was slowed in (arrivals are wall-clock: at dp 4 on two cores the scheduler moves
    them too)."""
    with h5py.File(out, "r") as f:
        c = f[f"runs/{name}/collectives"][:]
    steps = sorted(set(c["step"].tolist()))
    if steps != list(range(1, STEPS + 1)) or sorted(set(c["rank"].tolist())) != list(range(dp)):
        problems.append(f"{name}: collectives cover steps {steps} and ranks {sorted(set(c['rank'].tolist()))}")
        return
    if set(c["group"].tolist()) != {b"dp"} or not (c["wait_s"] >= 0).all() or not (c["compute_before_s"] >= 0).all():
        problems.append(f"{name}: collectives groups {set(c['group'].tolist())}, or a negative wait or compute")
    late_steps = []
    for step in steps[1:]:
        rows = c[(c["step"] == step) & (c["group"] == b"dp") & (c["collective"] == b"all_reduce")]
        biggest = rows[rows["bytes"] == rows["bytes"].max()]
        if sorted(biggest["rank"].tolist()) != list(range(dp)) or len(set(biggest["index"].tolist())) != 1:
            problems.append(f"{name}: step {step}'s gradient all-reduce is not one call of every rank: {biggest}")
            return
        late_steps.append(int(biggest["rank"][biggest["compute_before_s"].argmax()]))
    print(f"{name}: last to the gradient all-reduce, steps 2-{STEPS}: ranks {late_steps}")
    if slow and late_steps.count(1) <= len(late_steps) // 2:
        problems.append(f"{name}: rank 1 was not the last at most gradient all-reduces: {late_steps}")


def judge(name, dp, slow):
    out, named, text = train(name, dp, slow)
    wanted = [1] if slow else []
    if named != wanted:
        problems.append(f"{name}: stragglers {named}, not {wanted}")
    if slow and (f"run {name}: rank 1 is a straggler" not in text or "beyond 20%" not in text or
                 "ranks' waits there were for it" not in text):
        problems.append(f"{name}: inspect's text does not name rank 1: {text[-400:]!r}")
    return out


# A pair (slowed, even) is timed again once when its verdicts fail: the host's other tenants can
# move a run's ranks apart for minutes (even ranks measured +14% while the host was busy); both
# attempts are printed, and the second one's verdicts stand.
files = []
for dp in (2, 4):
    for attempt in (1, 2):
        before = len(problems)
        pair = [judge(f"dp{dp}_slow", dp, True), judge(f"dp{dp}_even", dp, False)]
        if len(problems) == before:
            break
        if attempt == 1:
            print(f"dp {dp}, attempt 1 failed: {'; '.join(problems[before:])}; timing the pair again")
            del problems[before:]
    files += pair



def derived(name, source, change):
    """A copy of a real result file whose timeline change() rewrote (a numpy structured array in,
    one out): the rule judged on figures set by hand, with nothing timed."""
    out = os.path.join(out_dir, f"straggler_{name}.h5")
    shutil.copyfile(source, out)
    with h5py.File(out, "r+") as f:
        run = next(iter(f["runs"]))
        table = change(f[f"runs/{run}/timeline"][:])
        del f[f"runs/{run}/timeline"]
        f[f"runs/{run}"].create_dataset("timeline", data=table, maxshape=(None,), chunks=True)
    return inspect(out)["stragglers"]


def steady(t, base_s):
    # every step of every rank base_s, give or take 1% (a pattern, not noise)
    return base_s * (1 + 0.01 * np.sin(t["step"] + 3 * t["rank"]))


def cpu_heavier_wall_lighter(t):
    # rank 1 does 30% more CPU work every step while the scheduler served it better (wall 30% less)
    t = t.copy()
    t["compute_cpu_s"] = steady(t, 0.006) * np.where(t["rank"] == 1, 1.3, 1.0)
    t["compute_s"] = steady(t, 0.02) * np.where(t["rank"] == 1, 0.7, 1.0)
    return t


def wall_only(t):
    # a file written before compute_cpu_s: judged by compute_s, rank 0 40% longer in wall time
    t = t.copy()
    t["compute_s"] = steady(t, 0.01) * np.where(t["rank"] == 0, 1.4, 1.0)
    keep = [n for n in t.dtype.names if n != "compute_cpu_s"]
    return np.array(t[keep].tolist(), dtype=[(n, t.dtype[n]) for n in keep])


even = files[1]  # dp2_even: its layout and attributes, its timings replaced
found = derived("cpu_named", even, cpu_heavier_wall_lighter)  # at the default threshold
if [(s["rank"], s["basis"]) for s in found] != [(1, "compute_cpu_s")]:
    problems.append(f"30% more CPU work on rank 1 (its wall time 30% less): named {found}, not rank 1 by compute_cpu_s")
found = derived("wall_named", even, wall_only)
if [(s["rank"], s["basis"]) for s in found] != [(0, "compute_s")]:
    problems.append(f"a timeline without compute_cpu_s, rank 0 40% longer: named {found}, not rank 0 by compute_s")

# the report names the same ranks, by the same rule, and no other
page_path = os.path.join(out_dir, "straggler_report.html")
r = subprocess.run([scalebench, "report", *files, "-o", page_path, "--static"], capture_output=True, text=True)
if r.returncode != 0:
    problems.append(f"report exited {r.returncode}: {r.stderr[-400:]}")
else:
    page = open(page_path, encoding="utf-8").read()
    table = re.search(r'<table id="stragglers">(.*?)</table>', page, re.S)
    named = set(re.findall(r"<tr data-run='([^']*)' data-rank='(\d+)'>", table.group(1))) if table else set()
    # the slowed ranks at the report's (inspect's default) 20%, and no other
    if named != {("dp2_slow", "1"), ("dp4_slow", "1")}:
        problems.append(f"the report's stragglers table names {sorted(named)}, not rank 1 of dp2_slow and dp4_slow")
    if "<h2>Stragglers</h2>" not in page or "dp2_slow: rank 1" not in page:
        problems.append("the report has no Stragglers section naming dp2_slow's rank 1")

if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")
