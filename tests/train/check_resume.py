#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checkpoint and resume through `scalebench train`, read back from the HDF5 files.

Reference run R: trains n steps (its checkpoint at step n holds the weights). Interrupted run I:
the same command gets SIGUSR1 during step k (SB_INJECT_FAILURE=0:k:usr1), so it checkpoints at
the step boundary, marks its result file `interrupted` and exits 75; then the same command again
(nothing else changed but, with --resume-ranks, the data-parallel size) resumes from the
checkpoint and trains to step n. Same layout: the parameters and the optimizer state at step n
must equal R's bit for bit, and so must the step-n loss. Another dp size: the ZeRO-1 state is
re-sharded, and the weights agree with R's up to reduction order.

--stop-at-end: both R and the resumed run are stopped by SIGUSR1 at step n of a longer run (the
checkpoint is what is compared; skips the end-of-run evaluation, for ResNet's 10,000 test images).

Usage: check_resume.py SCALEBENCH MPIEXEC CONFIG WORKDIR --ranks DP [--resume-ranks DP2]
       [--model-parallel TPxPP] --n N --k K [--stop-at-end] [--set key=value]...
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("scalebench")
p.add_argument("mpiexec")
p.add_argument("config")
p.add_argument("work")
p.add_argument("--ranks", type=int, default=1)
p.add_argument("--resume-ranks", type=int, default=0)
p.add_argument("--model-parallel", type=int, default=1, help="tp x pp ranks per replica (set tp/pp with --set)")
p.add_argument("--n", type=int, required=True)
p.add_argument("--k", type=int, required=True)
p.add_argument("--stop-at-end", action="store_true")
p.add_argument("--set", action="append", default=[])
a = p.parse_args()
resume_ranks = a.resume_ranks or a.ranks
shutil.rmtree(a.work, ignore_errors=True)
os.makedirs(a.work)
total = a.n + 10 if a.stop_at_end else a.n
problems = []


def train(name, ranks, signal_step=None):
    env = dict(os.environ, SB_PROGRESS="lines")
    env.pop("SB_INJECT_FAILURE", None)
    if signal_step:
        env["SB_INJECT_FAILURE"] = f"0:{signal_step}:usr1"
    sets = [f"steps={total}", f"strategy.dp={ranks}", "threads=1", "log_every=1000", f"checkpoint.every={a.n}"] + a.set
    world = ranks * a.model_parallel
    cmd = ([a.mpiexec, "-np", str(world)] if world > 1 else []) + [
        a.scalebench, "train", "--config", a.config, "--out", os.path.join(a.work, name + ".h5")]
    for s in sets:
        cmd += ["--set", s]
    job = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    print(f"$ {' '.join(cmd)}  [SB_INJECT_FAILURE={env.get('SB_INJECT_FAILURE', '')}] -> {job.returncode}")
    if job.returncode not in (0, 75):
        print(job.stdout[-3000:], job.stderr[-3000:], sep="\n")
    return job.returncode


def run_of(name):
    f = h5py.File(os.path.join(a.work, name + ".h5"), "r")
    return f, f["runs"][list(f["runs"])[0]]


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def checkpoint(name):
    found = glob.glob(os.path.join(a.work, name + ".*.ckpt.h5"))
    if len(found) != 1:
        sys.exit(f"FAIL: expected one checkpoint {name}.<run id>.ckpt.h5 in {a.work}, found {found}")
    f = h5py.File(found[0], "r")
    ranks = {int(r): f["ranks"][r] for r in f["ranks"]}
    return f, ranks


def flat_state(ranks, per_rank):
    """Parameters of dp rank 0 per (tp, pp), each optimizer tensor laid over them, and (per_rank)
    every rank's BatchNorm running statistics."""
    out = {}
    for g in ranks.values():
        key = (int(g.attrs["tp_rank"]), int(g.attrs["pp_rank"]))
        if int(g.attrs["dp_rank"]) == 0:
            out[key + ("parameters",)] = g["parameters"][()]
        if per_rank and len(g["untrained_state"]):
            out[key + (f"running statistics of dp rank {int(g.attrs['dp_rank'])}",)] = g["untrained_state"][()]
    for g in ranks.values():
        key = (int(g.attrs["tp_rank"]), int(g.attrs["pp_rank"]))
        n = len(out[key + ("parameters",)])
        begin = int(g.attrs["optimizer_begin"])
        for name, d in g["optimizer"].items():
            full = out.setdefault(key + (name,), np.full(n, np.nan, dtype=np.float32))
            full[begin:begin + len(d)] = d[()]
    return out


# R: the uninterrupted reference
rc = train("reference", a.ranks, a.n if a.stop_at_end else None)
if rc != (75 if a.stop_at_end else 0):
    sys.exit(f"FAIL: the reference run exited {rc}")

# I: interrupted at step k
rc = train("resumed", a.ranks, a.k)
if rc != 75:
    problems.append(f"the interrupted run exited {rc}, not 75 (the requeue status)")
f, run = run_of("resumed")
if text(run.attrs["status"]) != "interrupted":
    problems.append(f"the interrupted run's status is {text(run.attrs['status'])}")
if len(run["steps"]) != a.k:
    problems.append(f"the interrupted run recorded {len(run['steps'])} steps, not {a.k}")
f.close()
ck, ranks = checkpoint("resumed")
if int(ck.attrs["step"]) != a.k:
    problems.append(f"the interruption's checkpoint holds step {int(ck.attrs['step'])}, not {a.k}")
if len(ranks) != a.ranks * a.model_parallel:
    problems.append(f"the checkpoint holds {len(ranks)} ranks, not {a.ranks * a.model_parallel}")
ck.close()

# the same command again: resumes automatically from the checkpoint beside the result file
rc = train("resumed", resume_ranks, a.n if a.stop_at_end else None)
if rc != (75 if a.stop_at_end else 0):
    problems.append(f"the resumed run exited {rc}")
f, run = run_of("resumed")
rf, ref = run_of("reference")
steps, ref_steps = run["steps"][()], ref["steps"][()]
if int(run.attrs["resumed_from_step"]) != a.k or int(ref.attrs["resumed_from_step"]) != 0:
    problems.append(f"resumed_from_step is {int(run.attrs['resumed_from_step'])} (resumed) and "
                    f"{int(ref.attrs['resumed_from_step'])} (reference), not {a.k} and 0")
if list(steps["step"]) != list(range(a.k + 1, a.n + 1)):
    problems.append(f"the resumed run's steps table holds steps {list(steps['step'])}, not {a.k + 1}..{a.n}")
expected_status = "interrupted" if a.stop_at_end else "ok"
if text(run.attrs["status"]) != expected_status:
    problems.append(f"the resumed run's status is {text(run.attrs['status'])}: {text(run.attrs['error'])}")
scales, ref_scales = list(steps["loss_scale"]), list(ref_steps["loss_scale"][a.k:a.n])
if scales != ref_scales:
    problems.append(f"loss scales of steps {a.k + 1}..{a.n}: {scales}, the reference's {ref_scales}")
print(f"loss scales of steps {a.k + 1}..{a.n}: {scales}")
loss, ref_loss = steps["loss"][-1], ref_steps["loss"][a.n - 1]
same_layout = resume_ranks == a.ranks
print(f"step {a.n} loss: reference {ref_loss!r}, resumed {loss!r}")
if same_layout and loss != ref_loss:
    problems.append(f"step {a.n} loss {loss!r} differs from the reference's {ref_loss!r}")
if not same_layout and abs(loss - ref_loss) > 1e-4 * abs(ref_loss):
    problems.append(f"step {a.n} loss {loss!r} is not within 1e-4 of the reference's {ref_loss!r}")
if not a.stop_at_end and same_layout:
    final, ref_final = run["summary"].attrs["final_loss"], ref["summary"].attrs["final_loss"]
    if final != ref_final:
        problems.append(f"summary final_loss {final!r} differs from the reference's {ref_final!r}")
f.close()
rf.close()

ck, ranks = checkpoint("resumed")
rck, ref_ranks = checkpoint("reference")
if int(ck.attrs["step"]) != a.n or int(rck.attrs["step"]) != a.n:
    problems.append(f"final checkpoints hold steps {int(ck.attrs['step'])} and {int(rck.attrs['step'])}, not {a.n}")
mine, theirs = flat_state(ranks, same_layout), flat_state(ref_ranks, same_layout)
if sorted(mine) != sorted(theirs):
    problems.append(f"the checkpoints hold different tensors: {sorted(mine)} vs {sorted(theirs)}")
for key in sorted(set(mine) & set(theirs)):
    x, y = mine[key], theirs[key]
    if np.isnan(x).any() or np.isnan(y).any():
        problems.append(f"{key}: not every element is covered")
        continue
    diff = float(np.max(np.abs(x.astype(np.float64) - y))) if len(x) else 0.0
    print(f"{key}: {len(x)} values, max |difference| {diff:.3g}")
    if same_layout and not np.array_equal(x.view(np.uint32), y.view(np.uint32)):
        problems.append(f"{key} differs from the uninterrupted run's (max {diff:.3g}); expected bitwise equality")
    if not same_layout and diff > 1e-4 * max(1.0, float(np.max(np.abs(y)))):
        problems.append(f"{key} differs from the uninterrupted run's by {diff:.3g} after re-sharding")
if int(ck.attrs["optimizer_step"]) != int(rck.attrs["optimizer_step"]):
    problems.append("optimizer step counts differ")
ck.close()
rck.close()

# a checkpoint of another configuration is refused with one sentence, before any training
if a.ranks * a.model_parallel == 1:
    cmd = [a.scalebench, "train", "--config", a.config, "--out", os.path.join(a.work, "resumed.h5")]
    for s in [f"steps={total + 5}", "threads=1", f"checkpoint.every={a.n}", "seed=12345"] + a.set:
        cmd += ["--set", s]
    job = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    print(f"another seed: exit {job.returncode}: {job.stderr.strip()}")
    if job.returncode != 2 or "is of another run (seed 1 there, 12345 in" not in job.stderr:
        problems.append(f"a checkpoint of seed 1 was not refused for seed 12345 (exit {job.returncode})")

if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")
