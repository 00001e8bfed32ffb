#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Mixed precision side by side: each run's held-out loss, tracked memory, loss scale and
throughput beside the fp32 run of the same model and data-parallel size, from a results file
(`scalebench run suites/precision.yaml` writes results/precision.h5; `train` files work too).

Exits 1 when a 16-bit GPT run's final held-out loss is more than --max-loss-gap nats/char from
its fp32 peer (default 0.05), a 16-bit ResNet run's final test accuracy more than
--max-accuracy-gap points below its peer's (default 0.3), or its tracked activations are not
half of fp32's within 5% (the issue's acceptance); 2 on a file without an fp32 peer for some run.

Usage: /usr/bin/python3 analysis/precision_report.py RESULTS.h5 [--max-loss-gap 0.05] [--max-accuracy-gap 0.3]
"""
import argparse
import sys

import h5py
import numpy as np


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def final_heldout(run):
    """(loss, accuracy, step) of the last held-out (text) or test (images) evaluation."""
    e = run["eval"][:]
    rows = [r for r in e if text(r["split"]) in ("heldout", "test")]
    last = max(r["step"] for r in rows)
    row = next(r for r in rows if r["step"] == last)
    return float(row["loss"]), float(row["accuracy"]), int(last)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--max-loss-gap", type=float, default=0.05)
    parser.add_argument("--max-accuracy-gap", type=float, default=0.3, help="points")
    args = parser.parse_args()
    rows = []
    with h5py.File(args.results, "r") as f:
        for name, run in f["runs"].items():
            if text(run.attrs["status"]) != "ok":
                print(f"{name}: status {text(run.attrs['status'])}, left out")
                continue
            loss, accuracy, step = final_heldout(run)
            memory = run["memory"][:]
            steps = run["steps"][:]
            rows.append({"name": name, "model": text(run.attrs["model"]), "dp": int(run.attrs["dp"]),
                         "tp": int(run.attrs["tp"]), "precision": text(run.attrs["precision"]), "loss": loss, "accuracy": accuracy,
                         "step": step, "activations": int(memory["activations"].max()),
                         "params": int(memory["params"].max()), "optimizer": int(memory["optimizer"].max()),
                         "samples_per_s": float(run["summary"].attrs["samples_per_s"]),
                         "loss_scale": float(steps["loss_scale"][-1]),
                         "skipped": int(run["summary"].attrs.get("skipped_steps", 0))})
    failures, missing = [], []
    print(f"{'run':36} {'prec':5} {'dp':>2} {'tp':>2} {'held-out':>9} {'gap':>8} {'acc %':>6} {'gap pt':>7} "
          f"{'act MiB':>8} {'act/fp32':>8} "
          f"{'params MiB':>10} {'opt MiB':>8} {'samples/s':>10} {'speed/fp32':>10} {'scale':>8} {'skipped':>7}")
    for r in sorted(rows, key=lambda r: (r["model"], r["dp"], r["tp"], r["precision"] != "fp32", r["precision"])):
        peer = next((p for p in rows if p["precision"] == "fp32" and
                     (p["model"], p["dp"], p["tp"]) == (r["model"], r["dp"], r["tp"])), None)
        if peer is None:
            missing.append(r["name"])
            continue
        gap = r["loss"] - peer["loss"]
        accuracy_gap = 100 * (r["accuracy"] - peer["accuracy"])
        ratio = r["activations"] / peer["activations"]
        print(f"{r['name'][:36]:36} {r['precision']:5} {r['dp']:>2} {r['tp']:>2} {r['loss']:9.4f} {gap:+8.4f} "
              f"{100 * r['accuracy']:6.2f} {accuracy_gap:+7.2f} "
              f"{r['activations'] / 2**20:8.2f} {ratio:8.4f} {r['params'] / 2**20:10.2f} {r['optimizer'] / 2**20:8.2f} "
              f"{r['samples_per_s']:10.1f} {r['samples_per_s'] / peer['samples_per_s']:10.3f} {r['loss_scale']:8.0f} "
              f"{r['skipped']:7d}")
        if r["precision"] != "fp32":
            images = r["model"].startswith("resnet")
            if images and accuracy_gap < -args.max_accuracy_gap:
                failures.append(f"{r['name']}: test accuracy {100 * r['accuracy']:.2f}% is {accuracy_gap:+.2f} points "
                                f"from fp32's (more than {args.max_accuracy_gap} below)")
            if not images and abs(gap) > args.max_loss_gap:
                failures.append(f"{r['name']}: held-out loss {r['loss']:.4f} is {gap:+.4f} from fp32's "
                                f"(> {args.max_loss_gap})")
            if not 0.5 <= ratio <= 0.525:
                failures.append(f"{r['name']}: tracked activations {ratio:.4f} of fp32's, not half within 5%")
    if missing:
        print("no fp32 run of the same model, dp and tp for: " + ", ".join(missing), file=sys.stderr)
        sys.exit(2)
    if failures:
        print("FAIL: " + "; ".join(failures), file=sys.stderr)
        sys.exit(1)
    print(f"PASS: every 16-bit run within {args.max_loss_gap:.2f} nats/char (text) or {args.max_accuracy_gap} "
          "points (images) of fp32, activations half")


if __name__ == "__main__":
    main()
