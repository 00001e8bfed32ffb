#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""analysis/strategy_memory.py on result files written here with h5py, in the layout `train`
writes (only the fields the script reads; the figures are set by hand): Korthikanti et al.'s
activation bytes for none/selective/full recomputation (fp32: twice their 16-bit count); every
rank of a dp 3 run holding exactly the ZeRO formulas' bytes passes (exit 0), with the last rank's
shorter part of the optimizer state; one rank a byte off fails (exit 1).

Usage: check_strategy_memory.py SCRIPT OUT_DIR
"""
import os
import subprocess
import sys

import h5py
import numpy as np

script, out_dir = sys.argv[1:3]
os.makedirs(out_dir, exist_ok=True)
problems = []
PSI = 1001  # parameters: 334 a shard at dp 3, the last rank's part 333

MEMORY = np.dtype([("rank", "<i8"), ("params", "<i8"), ("grads", "<i8"), ("optimizer", "<i8"), ("activations", "<i8")])
STEPS = np.dtype([("step", "<i8"), ("step_time_s", "<f8")])


def write(name, dp, zero, rows, recompute="none", activations=0):
    path = os.path.join(out_dir, f"{name}.h5")
    with h5py.File(path, "w") as f:
        run = f.create_group("runs/run")
        run.attrs.update({"status": "ok", "dp": np.int64(dp), "tp": np.int64(1), "pp": np.int64(1),
                          "zero": np.int64(zero), "precision": "fp32", "recompute": recompute,
                          "seq_len": np.int64(64), "micro_batch": np.int64(2)})
        run.create_group("summary").attrs["parameters"] = np.int64(PSI)
        run.create_group("prediction").attrs["memory_activations"] = float(activations)
        run["memory"] = np.array([(r, *row, activations) for r, row in enumerate(rows)], dtype=MEMORY)
        run["steps"] = np.array([(1, 0.5), (2, 0.2), (3, 0.3)], dtype=STEPS)
    return path


def zero_rows(dp, zero):
    shard = -(-PSI // dp)
    rows = []
    for r in range(dp):
        own = min(shard, PSI - shard * r)
        rows.append((4 * shard if zero == 3 else 4 * PSI, 4 * shard if zero >= 2 else 4 * PSI,
                     8 * own if zero >= 1 else 8 * PSI))
    return rows


def run(paths):
    r = subprocess.run(["/usr/bin/python3", script, "--layers", "2", "--hidden", "32", "--heads", "4", *paths],
                       capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


exact = [write(f"dp3-zero{z}", 3, z, zero_rows(3, z)) for z in range(4)]
recompute = [write(f"recompute-{m}", 1, 0, [(4 * PSI, 4 * PSI, 8 * PSI)], m, 1_000_000)
             for m in ("none", "selective", "full")]
code, text = run(exact + recompute)
if code != 0:
    problems.append(f"exact ZeRO bytes: exit {code}, expected 0:\n{text}")
if "largest difference from the ZeRO formulas over every rank and category: 0 B" not in text:
    problems.append(f"exact ZeRO bytes: no 0 B verdict:\n{text}")
# s 64, b 2, h 32, a 4: sbh 4096; per layer none sbh(34 + 5as/h) = 4096 * 74, selective 34 sbh,
# full 2 sbh; two layers, fp32 twice the 16-bit bytes
for mode, per_layer in (("none", 4096 * 74), ("selective", 4096 * 34), ("full", 4096 * 2)):
    want = f"{2 * per_layer * 2 / 1e6:.1f}"
    line = next((l for l in text.splitlines() if l.startswith(f"recompute-{mode}")), "")
    if want not in line.split():
        problems.append(f"recompute {mode}: Korthikanti {want} MB expected in '{line}'")
# the step time: the median of the steps after the first (0.2, 0.3 -> 250 ms)
if not any(l.startswith("dp3-zero1") and l.split()[-1] == "250" for l in text.splitlines()):
    problems.append(f"step time: 250 ms expected for dp3-zero1:\n{text}")

off = zero_rows(3, 2)
off[2] = (off[2][0], off[2][1], off[2][2] + 1)
code, text = run([write("dp3-zero2-off", 3, 2, off)])
if code != 1 or "largest difference from the ZeRO formulas over every rank and category: 1 B" not in text:
    problems.append(f"a rank one byte off: exit {code}, expected 1 and a 1 B verdict:\n{text}")

if problems:
    print("\n".join(problems))
    sys.exit(1)
print("strategy_memory.py: exact ZeRO bytes pass at dp 3 (stages 0-3), Korthikanti none/selective/full as "
      "the formula, one byte off on the last rank fails")
