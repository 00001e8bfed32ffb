#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A disk that fills during `scalebench train`, on a 4 MiB tmpfs (8 with dp 2) in a private mount namespace
(root: `unshare -m`, then `mount -t tmpfs`; unmounted at the end, whatever happens).

0. The disk is full before the result file is made, or holds only its failure record's reserve:
   the same sentence, naming the file, and nothing left behind.
1. The result file fills the disk (a filler file leaves the result file's reserve and a little
   more): the run ends with exit status 2 or 3 and one sentence naming the file and "no space
   left on device", never a signal or a traceback; the file opens with h5py and `scalebench
   inspect`, with status `failed`, the reason, and the steps recorded before it.
2. The trace fills it (`--trace` on the tmpfs, the result file elsewhere): the same sentence
   naming the trace, the result file failed with the reason, no partial trace left.
3. A checkpoint fills the disk (checkpoint.every 2: the first fits, the second does not): the
   same, the sentence naming the checkpoint; the checkpoint of step 2 is intact and no temporary
   is left. Then the test frees the space (removes the filler) and runs the same command again:
   it resumes from step 2, and its losses and final checkpoint equal an uninterrupted twin's
   bit for bit.

Usage: check_full_disk.py SCALEBENCH MPIEXEC CONFIG WORKDIR --ranks DP
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
a = p.parse_args()

if os.environ.get("SB_FULL_DISK_NAMESPACE") != "1":
    # the mount is private to this namespace: nothing outside sees it, and it goes with the process
    env = dict(os.environ, SB_FULL_DISK_NAMESPACE="1")
    os.execvpe("unshare", ["unshare", "-m", "--propagation", "private", sys.executable] + sys.argv, env)

MIB = 1 << 20
RESERVE = MIB  # SpaceReserve::kResultFileBytes
shutil.rmtree(a.work, ignore_errors=True)
mount = os.path.join(a.work, "disk")
os.makedirs(mount)
# 4 MiB, 8 with dp 2: two of its checkpoints (one rank's optimizer state more) must fit once the
# space is freed, the old one and its successor's temporary
subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={4 * a.ranks}m", "tmpfs", mount], check=True)
problems = []


def train(out, steps, extra=()):
    env = dict(os.environ, SB_PROGRESS="lines")
    env.pop("SB_INJECT_FAILURE", None)
    cmd = ([a.mpiexec, "-np", str(a.ranks)] if a.ranks > 1 else []) + [
        a.scalebench, "train", "--config", a.config, "--out", out, "--set", f"steps={steps}",
        "--set", f"strategy.dp={a.ranks}", "--set", "threads=1", "--set", "log_every=1000"] + list(extra)
    job = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    print(f"$ {' '.join(cmd)} -> {job.returncode}")
    return job


def free_bytes():
    s = os.statvfs(mount)
    return s.f_bavail * s.f_frsize


def fill_leaving(bytes_left):
    with open(os.path.join(mount, "filler"), "wb") as f:
        f.write(b"\0" * max(0, free_bytes() - bytes_left))


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def check_full_disk_exit(job, path, label):
    """Exit 2 or 3, one sentence naming `path` and the full disk; no signal, no traceback."""
    err = job.stderr
    if job.returncode not in (2, 3):
        problems.append(f"{label}: exit status {job.returncode}, not 2 or 3")
    if "no space left on device" not in err.lower() or path not in err:
        problems.append(f"{label}: stderr does not name {path} and 'no space left on device': {err[-1500:]}")
    for crash in ("Segmentation", "signal 11", "Traceback", "terminate called", "core dumped", "HDF5-DIAG"):
        if crash in err:
            problems.append(f"{label}: stderr shows '{crash}': {err[-1500:]}")
    line = next((l for l in err.splitlines() if "no space left on device" in l.lower()), "")
    print(f"{label}: exit {job.returncode}: {line}")


def check_failed_file(out, label, reason_names):
    """Readable by h5py and by `scalebench inspect`, status failed, the reason; its steps."""
    try:
        with h5py.File(out, "r") as f:
            run = f["runs"][list(f["runs"])[0]]
            status, error, steps = text(run.attrs["status"]), text(run.attrs["error"]), len(run["steps"])
            losses = run["steps"]["loss"][()]
    except Exception as e:  # noqa: BLE001 - any failure to read is the finding
        problems.append(f"{label}: h5py cannot read {out}: {e}")
        return 0
    if status != "failed" or "no space left on device" not in error.lower() or reason_names not in error:
        problems.append(f"{label}: status '{status}', error '{error}'; expected failed, naming {reason_names} and "
                        "'no space left on device'")
    if steps == 0 or not np.isfinite(losses).all():
        problems.append(f"{label}: {steps} steps recorded, losses {losses[:4]}...")
    inspect = subprocess.run([a.scalebench, "inspect", out], capture_output=True, text=True, timeout=60)
    if inspect.returncode != 0:
        problems.append(f"{label}: scalebench inspect {out} exited {inspect.returncode}: {inspect.stderr[-500:]}")
    leftovers = [n for n in os.listdir(os.path.dirname(out)) if ".tmp-" in n or n.endswith((".reserve", ".partial"))]
    if leftovers:
        problems.append(f"{label}: left behind {leftovers}")
    print(f"{label}: {out}: status {status}, {steps} steps, inspect exit {inspect.returncode}")
    return steps


try:
    # 0. the disk is full before the result file exists: the same sentence, and no file left
    # (H5Fcreate on a full disk can leave a file without a superblock, which nothing can read)
    # room for nothing, then for the failure record's reserve alone (the file itself does not fit)
    for room, label in ((0, "result file created on a full disk"),
                        (RESERVE, "result file created beside only its reserve")):
        out = os.path.join(mount, "never.h5")
        fill_leaving(room)
        job = train(out, 2)
        check_full_disk_exit(job, out, label)
        left = [n for n in os.listdir(mount) if n != "filler"]
        if left:
            problems.append(f"{label}: left behind {left}")
        for name in os.listdir(mount):
            os.remove(os.path.join(mount, name))

    # 1. the result file fills the disk
    out = os.path.join(mount, "results.h5")
    fill_leaving(RESERVE + 48 * 1024)  # fills within the first few hundred steps
    job = train(out, 2000)
    check_full_disk_exit(job, out, "result file on a full disk")
    check_failed_file(out, "result file on a full disk", out)
    for name in os.listdir(mount):
        os.remove(os.path.join(mount, name))

    # 2. the trace fills the disk (the result file elsewhere): its partial file is removed
    trace = os.path.join(mount, "trace.json")
    fill_leaving(4096)
    traced = os.path.join(a.work, "traced.h5")
    job = train(traced, 20, ["--trace", trace])
    check_full_disk_exit(job, trace, "trace on a full disk")
    check_failed_file(traced, "trace on a full disk", trace)
    if os.path.exists(trace) or os.path.exists(trace + ".partial"):
        problems.append(f"trace on a full disk: {trace} or its partial file was left behind")
    for name in os.listdir(mount):
        os.remove(os.path.join(mount, name))

    # 3. a checkpoint fills the disk; the twin trains the same steps uninterrupted off the tmpfs
    n = 8
    twin = os.path.join(a.work, "twin.h5")
    job = train(twin, n, ["--set", "checkpoint.every=2"])
    if job.returncode != 0:
        sys.exit(f"FAIL: the uninterrupted twin exited {job.returncode}: {job.stderr[-2000:]}")
    out = os.path.join(mount, "resumed.h5")
    checkpoint = os.path.join(mount, "resumed.gpt-nano.ckpt.h5")
    # room for the reserve, the result file and one checkpoint, not for the next one beside it
    twin_checkpoint = os.path.getsize(os.path.join(a.work, "twin.gpt-nano.ckpt.h5"))
    fill_leaving(RESERVE + 256 * 1024 + int(1.5 * twin_checkpoint))
    job = train(out, n, ["--set", "checkpoint.every=2"])
    check_full_disk_exit(job, checkpoint, "checkpoint on a full disk")
    check_failed_file(out, "checkpoint on a full disk", checkpoint)
    try:
        with h5py.File(checkpoint, "r") as ck:
            kept = int(ck.attrs["step"])
    except Exception as e:  # noqa: BLE001
        problems.append(f"the previous checkpoint {checkpoint} is not readable: {e}")
        kept = -1
    if kept != 2:
        problems.append(f"the checkpoint left on the full disk holds step {kept}, not 2")

    # space freed: the same command resumes from step 2
    os.remove(os.path.join(mount, "filler"))
    job = train(out, n, ["--set", "checkpoint.every=2"])
    if job.returncode != 0:
        problems.append(f"the resumed run exited {job.returncode}: {job.stderr[-1500:]}")
    with h5py.File(out, "r") as f, h5py.File(twin, "r") as t:
        run, ref = f["runs"][list(f["runs"])[0]], t["runs"][list(t["runs"])[0]]
        if int(run.attrs["resumed_from_step"]) != 2 or text(run.attrs["status"]) != "ok":
            problems.append(f"the run after freeing space: resumed_from_step {int(run.attrs['resumed_from_step'])}, "
                            f"status {text(run.attrs['status'])}")
        steps, losses, ref_losses = list(run["steps"]["step"]), run["steps"]["loss"][()], ref["steps"]["loss"][2:n]
        if steps != list(range(3, n + 1)) or not np.array_equal(losses.view(np.uint64), ref_losses.view(np.uint64)):
            problems.append(f"losses of steps {steps}: {list(losses)}, the uninterrupted twin's {list(ref_losses)}")
        print(f"steps {steps}: losses equal the twin's bit for bit: {np.array_equal(losses, ref_losses)}")
    with h5py.File(checkpoint, "r") as ck, h5py.File(os.path.join(a.work, "twin.gpt-nano.ckpt.h5"), "r") as tk:
        for r in tk["ranks"]:
            for name in ["parameters"] + [f"optimizer/{o}" for o in tk["ranks"][r]["optimizer"]]:
                x, y = ck["ranks"][r][name][()], tk["ranks"][r][name][()]
                if not np.array_equal(x.view(np.uint32), y.view(np.uint32)):
                    problems.append(f"final checkpoint rank {r} {name} differs from the twin's")
finally:
    subprocess.run(["umount", mount])
    shutil.rmtree(a.work, ignore_errors=True)

if problems:
    sys.exit("FAIL: " + "; ".join(problems))
print("PASS")
