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
"""
import argparse
import sys

import h5py

CATEGORIES = ("params", "grads", "optimizer", "activations")


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def runs_of(path):
    with h5py.File(path, "r") as f:
        if "runs" not in f or len(f["runs"]) == 0:
            raise SystemExit(f"error: {path} holds no runs (/runs is empty)")
        for run_id, run in f["runs"].items():
            attrs = run.attrs
            if text(attrs.get("status", "")) != "ok":
                yield {"file": path, "run": run_id, "status": text(attrs.get("status", "?"))}
                continue
            if "prediction" not in run:
                raise SystemExit(f"error: {path}: run {run_id} has no /runs/{run_id}/prediction; was it "
                                 "trained by an older scalebench?")
            p = run["prediction"].attrs
            if not int(p.get("feasible", 1)):
                yield {"file": path, "run": run_id, "status": "refused",
                       "reason": text(p.get("reason", ""))}
                continue
            if "error_step_time_pct" not in p:
                raise SystemExit(f"error: {path}: run {run_id} has no stored prediction error "
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
            }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--step-time-pct", type=float, default=15.0)
    parser.add_argument("--memory-pct", type=float, default=5.0)
    args = parser.parse_args()

    rows = [r for path in args.files for r in runs_of(path)]
    failures = []
    header = (f"{'run':40s} {'ranks':>5s} {'thr':>3s} {'predicted':>10s} {'measured':>10s} {'step %':>8s}"
              + "".join(f" {c[:6] + ' %':>9s}" for c in CATEGORIES) + "  note")
    print(header)
    for r in rows:
        if r["status"] == "refused":
            print(f"{r['run']:40s} predicted infeasible on its site, not compared: {r['reason']}")
            continue
        if r["status"] != "ok":
            print(f"{r['run']:40s} status {r['status']}: not compared")
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
        print(f"{r['run']:40s} {r['ranks']:5d} {r['threads']:3d} {r['predicted_s'] * 1e3:8.2f}ms "
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
