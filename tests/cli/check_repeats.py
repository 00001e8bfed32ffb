#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`repeats:` in a suite, read back with h5py: every case runs that many times (a case's own
`repeats` overriding the suite's), the repeats interleaved across cases (each case's first run
before any second one: the runs' suite_order), each run carrying its case and repeat, and /repeats/<case> holding the
spread of the repeats' median step times (median, mean, Student's 95% interval, range, the noise
flag) as numpy computes it from the runs' summaries. `run --repeat 1` runs each case once under
its plain id; a bad `repeats` is exit 2 with one sentence and no file.

Usage: check_repeats.py SCALEBENCH OUT_DIR
"""
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

scalebench, out_dir = sys.argv[1:3]
work = os.path.join(out_dir, "repeats")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
problems = []
T975 = {1: 12.706, 2: 4.303}  # Student's t(0.975, df)

suite = os.path.join(work, "rep.yaml")
with open(suite, "w") as f:
    f.write("suite: rep\nrepeats: 3\n"
            "base: {model: gpt-nano, data: sotu, steps: 4, eval_every: 0, eval_batches: 1, batch: 4, threads: 1}\n"
            "cases:\n  - {name: a}\n  - {name: b, repeats: 2, seed: 7}\n")
r = subprocess.run([scalebench, "run", suite, "--out", os.path.join(work, "res"), "--progress", "off"],
                   capture_output=True, text=True)
if r.returncode != 0:
    sys.exit(f"FAIL: run exited {r.returncode}: {r.stderr[-1500:]}")
with h5py.File(os.path.join(work, "res", "rep.h5"), "r") as f:
    runs = sorted(f["runs"])
    if runs != ["a.r1", "a.r2", "a.r3", "b.r1", "b.r2"]:
        problems.append(f"runs {runs}")
    order = sorted(runs, key=lambda rid: int(f["runs"][rid].attrs["suite_order"]))
    if order != ["a.r1", "b.r1", "a.r2", "b.r2", "a.r3"]:
        problems.append(f"repeats not interleaved: {order}")
    for rid in runs:
        a = f["runs"][rid].attrs
        case, repeat = rid.split(".r")
        if a["case"] != case or int(a["repeat"]) != int(repeat) or int(a["repeats"]) != (3 if case == "a" else 2):
            problems.append(f"{rid}: case {a.get('case')}, repeat {a.get('repeat')}, repeats {a.get('repeats')}")
        if a["status"] != "ok":
            problems.append(f"{rid} status {a['status']}")
    for case, n in (("a", 3), ("b", 2)):
        medians = np.array([f["runs"][f"{case}.r{k}/summary"].attrs["step_time_median_s"] for k in range(1, n + 1)])
        g = f["repeats"][case].attrs
        half = T975[n - 1] * medians.std(ddof=1) / np.sqrt(n)
        wanted = {"repeats": n, "finished": n, "step_time_median_s": np.median(medians),
                  "step_time_mean_s": medians.mean(), "step_time_ci95_low_s": medians.mean() - half,
                  "step_time_ci95_high_s": medians.mean() + half,
                  "step_time_range_pct": np.ptp(medians) / np.median(medians) * 100}
        for key, value in wanted.items():
            if not np.isclose(g[key], value, rtol=1e-9, atol=1e-15):
                problems.append(f"/repeats/{case}.{key} = {g[key]}, numpy says {value}")
        if int(g["noisy"]) != int(wanted["step_time_range_pct"] > g["noise_bound_pct"]):
            problems.append(f"/repeats/{case}: noisy {g['noisy']} with range {wanted['step_time_range_pct']:.1f}%")
        print(f"{case}: {n} repeats, median {1e3 * g['step_time_median_s']:.2f} ms, 95% CI "
              f"[{1e3 * g['step_time_ci95_low_s']:.2f}, {1e3 * g['step_time_ci95_high_s']:.2f}] ms, "
              f"range {g['step_time_range_pct']:.1f}%, noisy {int(g['noisy'])}")
if "of 3 repeats: median" not in r.stdout:
    problems.append(f"stdout does not summarise the repeats: {r.stdout[-500:]!r}")

rep = os.path.join(work, "res", "rep.h5")
c = subprocess.run([scalebench, "compare", rep, rep, "--json"], capture_output=True, text=True)
cases = {ch["run"] for ch in json.loads(c.stdout)["changes"]} if c.returncode == 0 else set()
if c.returncode != 0 or not {"a (repeats)", "b (repeats)"} <= cases:
    problems.append(f"compare of the repeats file with itself: exit {c.returncode}, rows {sorted(cases)}")

once = subprocess.run([scalebench, "run", suite, "--out", os.path.join(work, "once"), "--repeat", "1",
                       "--progress", "off"], capture_output=True, text=True)
if once.returncode != 0:
    problems.append(f"--repeat 1 exited {once.returncode}: {once.stderr[-500:]}")
else:
    with h5py.File(os.path.join(work, "once", "rep.h5"), "r") as f:
        if sorted(f["runs"]) != ["a", "b"]:
            problems.append(f"--repeat 1 runs {sorted(f['runs'])}")

bad = os.path.join(work, "bad.yaml")
with open(bad, "w") as f:
    f.write("suite: bad\nrepeats: 0\nbase: {model: gpt-nano, data: sotu, steps: 1}\n")
r = subprocess.run([scalebench, "run", bad, "--out", os.path.join(work, "bad")], capture_output=True, text=True)
if r.returncode != 2 or "'repeats' must be 1 to 100, got 0" not in r.stderr or os.path.exists(os.path.join(work, "bad")):
    problems.append(f"repeats 0: exit {r.returncode}, stderr {r.stderr[-300:]!r}")

if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")
