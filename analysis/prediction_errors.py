#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every run's prediction error, from the result files: step time and each tracked memory
category, (predicted - measured) / measured as `train` stored them under /runs/<id>/prediction.

    analysis/prediction_errors.py RESULTS.h5 [RESULTS.h5 ...] [--step-time-pct 15] [--memory-pct 5]

Fails (exit 1) when a run that has one rank per core (ranks x threads <= the cores of its
hosts) is off by more than --step-time-pct, or any run's memory category by more than
--memory-pct. Oversubscribed runs are printed and marked, not held to the step-time bound:
their ranks share cores the prediction gives them whole. Exit 2: a file without runs or a run
without a stored prediction error. A run whose site refused its configuration (a reason instead of
a number, e.g. tp beyond a node) is listed with the reason, not compared.

Runs are named by their id, or file/id where several files hold the same id (one file per case,
as bench/strategies_closed_loop.sh writes them). Files named CASE.rK.h5 are repeats K of one case
(the closed loop runs every case once per round, round after round, so that a slow spell of the
machine lands on one round of many cases rather than every round of one): a case's runs of one id
are judged by the median of their step-time errors, each run against the prediction stored with
it (the closed loop calibrates again every round, so a run's prediction comes from minutes before
it), with the spread of the errors noted; memory by the largest error of its repeats. A run whose ranks computed unevenly (a rank's
median compute_cpu_s in /runs/<id>/timeline more than --uneven-pct above the median of its
pipeline stage's other ranks) is noted: the prediction assumes even ranks, so a slow core or a
busy neighbour shows up as step-time error there (`scalebench inspect` names such a rank).
"""
import argparse
import os
import re
import sys

import h5py
import numpy as np

CATEGORIES = ("params", "grads", "optimizer", "activations")


def bad_input(message):
    """Exit 2 (not 1, which means a run outside the bounds), the message on stderr."""
    print(message, file=sys.stderr)
    sys.exit(2)


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def uneven_ranks(run):
    """(rank, excess %) of the rank whose median compute per step (steps after the first) is
    furthest above the median of its stage's other ranks; None for one rank per stage or without
    a timeline."""
    if "timeline" not in run or "ranks" not in run or run["timeline"].shape[0] == 0:
        return None
    t, ranks = run["timeline"][()], run["ranks"][()]
    field = "compute_cpu_s" if "compute_cpu_s" in t.dtype.names else "compute_s"
    t = t[t["step"] > t["step"].min()] if len(set(t["step"].tolist())) > 1 else t
    stage = {int(r["rank"]): int(r["pp_rank"]) for r in ranks}
    median = {k: float(np.median(t[t["rank"] == k][field])) for k in stage if (t["rank"] == k).any()}
    worst = None
    for k, own in median.items():
        others = [v for o, v in median.items() if o != k and stage[o] == stage[k]]
        if others and np.median(others) > 0:
            excess = 100.0 * (own / float(np.median(others)) - 1.0)
            if worst is None or excess > worst[1]:
                worst = (k, excess)
    return worst


def runs_of(path):
    with h5py.File(path, "r") as f:
        if "runs" not in f or len(f["runs"]) == 0:
            bad_input(f"error: {path} holds no runs (/runs is empty)")
        for run_id, run in f["runs"].items():
            attrs = run.attrs
            if text(attrs.get("status", "")) != "ok":
                yield {"file": path, "run": run_id, "status": text(attrs.get("status", "?"))}
                continue
            if "prediction" not in run:
                bad_input(f"error: {path}: run {run_id} has no /runs/{run_id}/prediction; was it "
                                 "trained by an older scalebench?")
            p = run["prediction"].attrs
            if not int(p.get("feasible", 1)):
                yield {"file": path, "run": run_id, "status": "refused",
                       "reason": text(p.get("reason", ""))}
                continue
            if "error_step_time_pct" not in p:
                bad_input(f"error: {path}: run {run_id} has no stored prediction error "
                                 f"(/runs/{run_id}/prediction.error_step_time_pct)")
            context = run["context"].attrs
            ranks = int(attrs["world_size"])
            threads = int(context["threads"])
            cores = int(context["cores"]) * int(context.get("host_count", 1))
            yield {
                "file": path, "run": run_id, "status": "ok",
                "ranks": ranks, "threads": threads, "cores": cores,
                "oversubscribed": ranks * threads > cores,
                "kernel_timed": bool(p.get("kernel_timed", 0)),
                "predicted_s": float(p["step_time_s"]),
                "measured_s": float(run["summary"].attrs["step_time_median_s"]),
                "step": float(p["error_step_time_pct"]),
                **{c: float(p[f"error_{c}_pct"]) for c in CATEGORIES},
                "uneven": uneven_ranks(run),
            }


def merge_repeats(rows):
    """Rows of files CASE.rK.h5 with one run id become one row per case and id: the median of the
    repeats' step-time errors (each against its own prediction), the median measured and predicted
    times beside it, the largest memory errors, the errors' spread in a note."""
    groups, merged = {}, []
    for r in rows:
        base = os.path.splitext(os.path.basename(r["file"]))[0]
        m = re.fullmatch(r"(.+)\.r(\d+)", base)
        if not m or r["status"] != "ok":
            merged.append(r)
            continue
        key = (os.path.join(os.path.dirname(r["file"]), m.group(1) + ".h5"), r["run"])
        if key not in groups:
            groups[key] = []
            merged.append(key)
        groups[key].append(r)
    out = []
    for item in merged:
        if isinstance(item, dict):
            out.append(item)
            continue
        repeats = groups[item]
        measured = [r["measured_s"] for r in repeats]
        r = dict(repeats[0], file=item[0])
        r["measured_s"] = float(np.median(measured))
        r["predicted_s"] = float(np.median([x["predicted_s"] for x in repeats]))
        errors = [x["step"] for x in repeats]
        r["step"] = float(np.median(errors))
        for c in CATEGORIES:
            r[c] = max((x[c] for x in repeats), key=abs)
        unevens = [x["uneven"] for x in repeats if x["uneven"]]
        r["uneven"] = sorted(unevens, key=lambda u: u[1])[len(unevens) // 2] if unevens else None
        r["repeats"] = (len(repeats), min(errors), max(errors))
        out.append(r)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--step-time-pct", type=float, default=15.0)
    parser.add_argument("--memory-pct", type=float, default=5.0)
    parser.add_argument("--uneven-pct", type=float, default=10.0,
                        help="note a run whose slowest rank computes this much longer than its stage's others")
    args = parser.parse_args()

    rows = merge_repeats([r for path in args.files for r in runs_of(path)])
    ids = [r["run"] for r in rows]
    for r in rows:  # one file per case often means one run id in every file: name the file too
        if ids.count(r["run"]) > 1:
            r["run"] = f"{os.path.splitext(os.path.basename(r['file']))[0]}/{r['run']}"
    failures = []
    width = max([40] + [len(r["run"]) for r in rows])
    header = (f"{'run':{width}s} {'ranks':>5s} {'thr':>3s} {'predicted':>10s} {'measured':>10s} {'step %':>8s}"
              + "".join(f" {c[:6] + ' %':>9s}" for c in CATEGORIES) + "  note")
    print(header)
    for r in rows:
        if r["status"] == "refused":
            print(f"{r['run']:{width}s} predicted infeasible on its site, not compared: {r['reason']}")
            continue
        if r["status"] != "ok":
            print(f"{r['run']:{width}s} status {r['status']}: not compared")
            continue
        notes = []
        if r["oversubscribed"]:
            notes.append(f"oversubscribed ({r['ranks']}x{r['threads']} on {r['cores']} cores): reported, not held")
        elif abs(r["step"]) > args.step_time_pct:
            notes.append(f"STEP TIME OFF BY MORE THAN {args.step_time_pct:g}%")
            failures.append(r["run"])
        for c in CATEGORIES:
            if abs(r[c]) > args.memory_pct:
                notes.append(f"{c.upper()} OFF BY MORE THAN {args.memory_pct:g}%")
                failures.append(r["run"])
        if not r["kernel_timed"]:
            notes.append("from FLOPs (no kernel times)")
        if "repeats" in r:
            count, lowest, highest = r["repeats"]
            notes.append(f"median of {count} repeats' errors ({lowest:+.1f} to {highest:+.1f}%)")
        if r["uneven"] and r["uneven"][1] > args.uneven_pct:
            notes.append(f"ranks uneven: rank {r['uneven'][0]} computed {r['uneven'][1]:+.0f}% against its stage's "
                         "others (predicted even)")
        print(f"{r['run']:{width}s} {r['ranks']:5d} {r['threads']:3d} {r['predicted_s'] * 1e3:8.2f}ms "
              f"{r['measured_s'] * 1e3:8.2f}ms {r['step']:+8.1f}"
              + "".join(f" {r[c]:+9.2f}" for c in CATEGORIES) + ("  " + "; ".join(notes) if notes else ""))
    held = [r for r in rows if r["status"] == "ok" and not r["oversubscribed"]]
    if held:
        worst = max(held, key=lambda r: abs(r["step"]))
        print(f"\n{len(held)} run(s) with one rank per core: worst step-time error {worst['step']:+.1f}% "
              f"({worst['run']}); bound {args.step_time_pct:g}%, memory bound {args.memory_pct:g}%")
    if failures:
        print(f"FAIL: {len(set(failures))} run(s) outside the bounds: {', '.join(sorted(set(failures)))}")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
