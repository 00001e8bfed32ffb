#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The GPT spam classifier under data parallelism: `scalebench train` with dp=2 (small gradient
buckets, so the head's gradient and the GPT's travel in several all-reduces) trains as one rank
does: the same step losses within float rounding, the same test-set evaluation, and every
parameter, the head's included, exchanged. Reads the HDF5 files, never stdout.

Usage: check_spam_classifier_dp.py SCALEBENCH MPIEXEC CONFIG OUT_DIR
"""
import os
import subprocess
import sys

import h5py

scalebench, mpiexec, config, out_dir = sys.argv[1:5]
common = ["--set", "data.dataset=spam-assassin", "--set", "data.train_samples=64", "--set", "steps=4",
          "--set", "eval_every=4", "--set", "batch.global=16", "--set", "eval_batches=2", "--set", "threads=1",
          "--set", "strategy.bucket_mb=0.05"]
runs = {}
for dp in (1, 2):
    out = os.path.join(out_dir, f"spam_dp{dp}.h5")
    if os.path.exists(out):
        os.remove(out)
    subprocess.run([mpiexec, "-np", str(dp), scalebench, "train", "--config", config, "--out", out,
                    "--set", f"strategy.dp={dp}"] + common, check=True, env=dict(os.environ, SB_PROGRESS="lines"))
    with h5py.File(out, "r") as f:
        run = f["runs"]["gpt-nano"]
        runs[dp] = {"loss": list(run["steps"]["loss"]), "eval": [(r["split"], r["loss"], r["accuracy"])
                                                                 for r in run["eval"][:]],
                    "summary": dict(run["summary"].attrs), "dataset": run.attrs["dataset"]}
problems = []
one, two = runs[1], runs[2]
if len(one["loss"]) != 4 or len(two["loss"]) != 4:
    problems.append(f"step rows: {len(one['loss'])} and {len(two['loss'])}, expected 4")
for step, (a, b) in enumerate(zip(one["loss"], two["loss"]), 1):
    if abs(a - b) > 1e-5 * max(1.0, abs(a)):
        problems.append(f"step {step}: loss {a} on one rank, {b} on two")
for (split_a, loss_a, acc_a), (split_b, loss_b, acc_b) in zip(one["eval"], two["eval"]):
    if split_a != split_b or abs(loss_a - loss_b) > 1e-4 or abs(acc_a - acc_b) > 2.0 / 1209:
        problems.append(f"eval {split_a}: loss {loss_a}, accuracy {acc_a} on one rank; {split_b}: {loss_b}, {acc_b} on two")
parameters = int(two["summary"]["parameters"])
if int(two["summary"]["dp_exchange_bytes"]) != 4 * parameters:
    problems.append(f"dp_exchange_bytes {two['summary']['dp_exchange_bytes']} != 4 x {parameters} parameters")
for problem in problems:
    print("FAIL " + problem)
sys.exit(1 if problems else 0)
