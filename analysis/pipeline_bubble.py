#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The measured pipeline bubble of every pp > 1 run in result files, beside the ideal.

For each run and stage: bubble fraction = median over the steps after the first of
bubble_s / (compute_s + tp_comm_s + p2p_s + bubble_s) from the `timeline` table (the pipeline
phase of the step, without the optimizer and data-parallel exchange), and bubble ratio = median
of bubble_s / compute_s (the bubble per unit of work); then the means over stages. Beside them
the ideal with balanced stages and free messages for v = run.attrs interleave model chunks per
rank (Narayanan et al. 2021 §2.2): the fraction ((p − 1)/v)/(m + (p − 1)/v) and the ratio
(p − 1)/(v·m); v = 1 gives (p − 1)/(m + p − 1) and (p − 1)/m. Reads HDF5 only.

Usage: /usr/bin/python3 analysis/pipeline_bubble.py RESULTS.h5 [...]
"""
import sys

import h5py
import numpy as np


def main(paths):
    print(f"{'run':<34} {'p':>2} {'v':>2} {'m':>2} {'schedule':>8} {'ideal':>6} {'measured':>8} "
          f"{'(p-1)/m':>8} {'(p-1)/vm':>8} {'bubble/compute':>14} {'per stage':>20}")
    for path in paths:
        with h5py.File(path, "r") as f:
            for run_id, run in f["runs"].items():
                p, m = int(run.attrs["pp"]), int(run.attrs["micro_batches"])
                v = int(run.attrs.get("interleave", 1))  # runs recorded before interleaving trained
                if p < 2 or run.attrs["status"] != "ok":
                    continue
                t, ranks = run["timeline"][:], run["ranks"][:]
                stage_of = dict(zip(ranks["rank"], ranks["pp_rank"]))
                steps = sorted(set(t["step"]))[1:]  # the first step pays page faults
                fractions, ratios = [], []
                for stage in range(p):
                    rows = t[np.isin(t["step"], steps) & np.array([stage_of[r] == stage for r in t["rank"]])]
                    pipeline = rows["compute_s"] + rows["tp_comm_s"] + rows["p2p_s"] + rows["bubble_s"]
                    fractions.append(float(np.median(rows["bubble_s"] / pipeline)))
                    ratios.append(float(np.median(rows["bubble_s"] / rows["compute_s"])))
                shrunk = (p - 1) / v
                ideal = shrunk / (m + shrunk)
                print(f"{run_id:<34} {p:>2} {v:>2} {m:>2} {run.attrs['schedule']:>8} {ideal:>6.3f} "
                      f"{np.mean(fractions):>8.3f} {(p - 1) / m:>8.3f} {(p - 1) / (v * m):>8.3f} "
                      f"{np.mean(ratios):>14.3f} {' '.join(f'{x:.3f}' for x in fractions):>20}")


if __name__ == "__main__":
    main(sys.argv[1:])
