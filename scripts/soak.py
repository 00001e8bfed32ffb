#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Soak: the quickstart suite (shortened: --steps steps a case, 2 evaluation batches, checkpoints every --every steps)
run again and again for --minutes with a fault injected into each pass (each kind once a round,
in random order), then requeued
(the same `scalebench run` again, which resumes every case from its checkpoint), checked from the
HDF5 files (h5py):

  kill       SB_INJECT_FAILURE=R:S:kill: rank R of every case with that rank is SIGKILLed at step S
  term       SB_INJECT_FAILURE=R:S:term: SIGTERM at step S (one rank: checkpoint and exit 75, the
             requeue status; several: the job ends, the last periodic checkpoint is resumed)
  full_disk  the suite's folder is a tmpfs of a random 3..10 MiB (a private mount namespace, as
             root) that fills during the pass; the requeue runs after it is grown to 512 MiB

Checks: every run of a faulty pass ends `ok`, `failed` or `interrupted` with its reason (the file
readable, never left saying interrupted with no reason), `scalebench run` itself never ends by a
signal; after the requeue the suite file holds every case with status ok (no result lost), and
each case's losses equal its uninterrupted twin's (the first, fault-free pass) bit for bit, from
the step it resumed from. Writes OUT/summary.md and OUT/summary.json; exit 1 on any problem.

Usage: scripts/soak.py [--minutes N] [--out DIR] [--scalebench PATH] [--cases a,b] [--steps S]
                       [--every K] [--seed N] [--ci]
--ci: what ctest runs (soak_short, label mpi): three cases (gpt-nano, gpt-nano-dp2,
resnet-mini-dp1), 8 steps, one pass of each fault kind (rank 0 after the first checkpoint, a
3 MiB disk), which must fill the disk and resume every case; about a minute and a half on 2 cores.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time

import h5py
import numpy as np
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ("kill", "term", "full_disk")
CI_CASES = "gpt-nano,gpt-nano-dp2,resnet-mini-dp1"

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--minutes", type=float, default=20.0)
p.add_argument("--out", default=os.path.join(ROOT, "build", "soak"))
p.add_argument("--scalebench", default=os.path.join(ROOT, "build", "scalebench"))
p.add_argument("--cases", default="", help="comma-separated case names of quickstart (default: all)")
p.add_argument("--steps", type=int, default=12)
p.add_argument("--every", type=int, default=4, help="checkpoint.every")
p.add_argument("--seed", type=int, default=None)
p.add_argument("--ci", action="store_true")
a = p.parse_args()
if a.ci:
    a.cases, a.steps, a.minutes = a.cases or CI_CASES, 8, 0.0  # one pass per kind, whatever the time

if os.environ.get("SB_SOAK_NAMESPACE") != "1":  # the tmpfs mounts stay private to this process tree
    os.execvpe("unshare", ["unshare", "-m", "--propagation", "private", sys.executable] + sys.argv,
               dict(os.environ, SB_SOAK_NAMESPACE="1"))

seed = a.seed if a.seed is not None else int(time.time())
rng = random.Random(seed)
for key, value in {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                   "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "self,vader",
                   "OMP_PROC_BIND": "false", "SB_DATA_DIR": os.path.join(ROOT, "data")}.items():
    os.environ.setdefault(key, value)
shutil.rmtree(a.out, ignore_errors=True)
os.makedirs(a.out)

# the shortened suite: quickstart's cases (or those named), every one `steps` steps long
with open(os.path.join(ROOT, "suites", "quickstart.yaml")) as f:
    suite = yaml.safe_load(f)
if a.cases:
    wanted = a.cases.split(",")
    unknown = set(wanted) - {c["name"] for c in suite["cases"]}
    if unknown:
        sys.exit(f"soak.py: --cases names {sorted(unknown)}, which suites/quickstart.yaml does not hold")
    suite["cases"] = [c for c in suite["cases"] if c["name"] in wanted]
suite["suite"] = "soak"
suite_path = os.path.join(a.out, "soak.yaml")
with open(suite_path, "w") as f:
    yaml.safe_dump(suite, f, sort_keys=False)
case_names = [c["name"] for c in suite["cases"]]
case_ranks = {c["name"]: int(c.get("strategy", {}).get("dp", 1)) for c in suite["cases"]}
overrides = [f"steps={a.steps}", "epochs=0", "warmup_steps=0", "eval_batches=2", f"checkpoint.every={a.every}"]

problems, passes = [], []
tally = {"runs": 0, "faults": {k: 0 for k in KINDS}, "outcomes": {}, "exit_codes": {}, "bitwise_checks": 0,
         "bitwise_equal": 0, "resumed_runs": 0, "resumed_bitwise_equal": 0, "cases_recovered": 0, "disk_filled": 0}


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def run_suite(out, inject=None):
    env = dict(os.environ)
    env.pop("SB_INJECT_FAILURE", None)
    if inject:
        env["SB_INJECT_FAILURE"] = inject
    cmd = [a.scalebench, "run", suite_path, "--out", out, "--progress", "off"]
    for s in overrides:
        cmd += ["--set", s]
    job = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    tally["exit_codes"][str(job.returncode)] = tally["exit_codes"].get(str(job.returncode), 0) + 1
    if job.returncode < 0 or job.returncode >= 128:
        problems.append(f"`scalebench run` ({inject or 'no fault'}) ended by a signal: exit {job.returncode}: "
                        f"{job.stderr[-800:]}")
    for crash in ("Segmentation", "Traceback", "terminate called", "core dumped"):
        if crash in job.stderr:
            problems.append(f"`scalebench run` ({inject or 'no fault'}) printed '{crash}': {job.stderr[-800:]}")
    return job


def runs_of(h5):
    """{run id: (status, error, resumed_from_step, losses)} of a result file."""
    with h5py.File(h5, "r") as f:
        return {rid: (text(g.attrs["status"]), text(g.attrs["error"]), int(g.attrs["resumed_from_step"]),
                      g["steps"]["loss"][()]) for rid, g in f["runs"].items()}


def check_faulty_pass(out, label):
    """Every case that left a result file: readable, and ok or failed/interrupted with a reason."""
    cases = os.path.join(out, "soak.cases")
    files = sorted(n for n in os.listdir(cases) if n.endswith(".h5") and ".ckpt." not in n) if os.path.isdir(cases) else []
    for name in files:
        try:
            found = runs_of(os.path.join(cases, name))
        except Exception as e:  # noqa: BLE001 - an unreadable result file is the finding
            problems.append(f"{label}: {name} is not readable: {e}")
            continue
        for rid, (status, error, _, _) in found.items():
            tally["runs"] += 1
            tally["outcomes"][status] = tally["outcomes"].get(status, 0) + 1
            if status not in ("ok", "failed", "interrupted") or (status != "ok" and not error):
                problems.append(f"{label}: run {rid} ended '{status}' with error '{error}'")


def check_requeued(out, twin, label):
    """After the requeue: every case in the suite file, ok, its losses the twin's bit for bit."""
    try:
        found = runs_of(os.path.join(out, "soak.h5"))
    except Exception as e:  # noqa: BLE001
        problems.append(f"{label}: the suite file after the requeue is not readable: {e}")
        return
    for case in case_names:
        tally["runs"] += 1
        if case not in found:
            problems.append(f"{label}: case {case} is missing from the suite file after the requeue (result lost)")
            continue
        status, error, resumed, losses = found[case]
        tally["outcomes"][status] = tally["outcomes"].get(status, 0) + 1
        if status != "ok":
            problems.append(f"{label}: case {case} ended '{status}' after the requeue: {error}")
            continue
        tally["cases_recovered"] += 1
        reference = twin[case][3][resumed:]
        equal = len(losses) == len(reference) and np.array_equal(losses.view(np.uint64), reference.view(np.uint64))
        tally["bitwise_checks"] += 1
        tally["bitwise_equal"] += int(equal)
        if resumed > 0:
            tally["resumed_runs"] += 1
            tally["resumed_bitwise_equal"] += int(equal)
        if not equal:
            problems.append(f"{label}: case {case} (resumed from step {resumed}): losses {list(losses)} differ from "
                            f"the uninterrupted twin's {list(reference)}")


def fault_pass(number, kind):
    out = os.path.join(a.out, f"pass{number:03d}-{kind}")
    os.makedirs(out)
    inject, detail = None, ""
    if kind == "full_disk":
        size = 3 if a.ci else rng.randint(3, 10)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}m", "tmpfs", out], check=True)
        detail = f"tmpfs {size} MiB"
    else:
        # --ci: rank 0 (every case) after the first checkpoint, so that every case resumes
        rank = 0 if a.ci else rng.randrange(max(case_ranks.values()))
        inject = f"{rank}:{rng.randint(a.every + 1 if a.ci else 2, a.steps - 1)}:{kind}"
        detail = f"SB_INJECT_FAILURE={inject}"
    try:
        start = time.monotonic()
        faulty = run_suite(out, inject)
        check_faulty_pass(out, f"pass {number} ({kind}, {detail})")
        if kind == "full_disk":
            tally["disk_filled"] += int("no space left on device" in faulty.stderr.lower())
            subprocess.run(["mount", "-o", "remount,size=512m", out], check=True)  # space freed
        requeued = run_suite(out)
        check_requeued(out, twin, f"pass {number} ({kind}, {detail}) requeued")
        passes.append({"pass": number, "kind": kind, "detail": detail, "exit": faulty.returncode,
                       "requeue_exit": requeued.returncode, "seconds": round(time.monotonic() - start, 1)})
        print(f"pass {number}: {kind} ({detail}): exit {faulty.returncode}, requeue exit {requeued.returncode}, "
              f"{passes[-1]['seconds']} s, problems so far {len(problems)}", flush=True)
    finally:
        if kind == "full_disk":
            subprocess.run(["umount", out])
    tally["faults"][kind] += 1


started = time.monotonic()
twin_out = os.path.join(a.out, "twin")
job = run_suite(twin_out)
if job.returncode != 0:
    sys.exit(f"soak.py: the fault-free twin pass failed (exit {job.returncode}): {job.stderr[-2000:]}")
twin = runs_of(os.path.join(twin_out, "soak.h5"))
tally["runs"] += len(twin)
number = 0
order = list(KINDS) if a.ci else []
while (a.ci and order) or (not a.ci and time.monotonic() - started < 60 * a.minutes):
    number += 1
    if not order:  # each kind once per round, in a random order: none is left out by chance
        order = rng.sample(KINDS, len(KINDS))
    fault_pass(number, order.pop(0))
    if not a.ci:
        shutil.rmtree(os.path.join(a.out, f"pass{number:03d}-{passes[-1]['kind']}"), ignore_errors=True)

if a.ci and (tally["disk_filled"] < tally["faults"]["full_disk"] or tally["resumed_runs"] < 2 * len(case_names)):
    problems.append(f"--ci: the disk filled in {tally['disk_filled']} full-disk pass(es) and {tally['resumed_runs']} "
                    f"run(s) resumed from a checkpoint; every case of the kill and term passes should have resumed")
summary = dict(tally, seed=seed, minutes=round((time.monotonic() - started) / 60, 2), cases=case_names,
               steps=a.steps, checkpoint_every=a.every, passes=passes, problems=problems)
with open(os.path.join(a.out, "summary.json"), "w") as f:
    json.dump(summary, f, indent=2)
lines = [f"# scalebench soak ({summary['minutes']} min, seed {seed}, cases {', '.join(case_names)}, "
         f"{a.steps} steps, checkpoint every {a.every})", "",
         f"- train runs checked: {tally['runs']} (twin pass, {len(passes)} faulty passes and their requeues)",
         "- faults injected: " + ", ".join(f"{k} {v}" for k, v in tally["faults"].items()) +
         f" (the disk filled, said in one sentence, in {tally['disk_filled']} of the {tally['faults']['full_disk']} "
         "full-disk passes)",
         "- run outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(tally["outcomes"].items())),
         "- `scalebench run` exit codes: " + ", ".join(f"{k}: {v}" for k, v in sorted(tally["exit_codes"].items())),
         f"- cases recovered by the requeue: {tally['cases_recovered']} of {len(passes) * len(case_names)}",
         f"- bitwise against the uninterrupted twin: {tally['bitwise_equal']} of {tally['bitwise_checks']} equal "
         f"({tally['resumed_bitwise_equal']} of {tally['resumed_runs']} resumed from a checkpoint)",
         f"- problems: {len(problems)}"] + [f"  - {x}" for x in problems[:50]]
with open(os.path.join(a.out, "summary.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
print("\n".join(lines))
sys.exit(1 if problems else 0)
