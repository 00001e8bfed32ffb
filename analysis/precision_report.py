#!/usr/bin/python3
"""Mixed precision side by side: each run's held-out loss, tracked memory, loss scale and
throughput beside the fp32 run of the same model and data-parallel size, from a results file
(`scalebench run suites/precision.yaml` writes results/precision.h5; `train` files work too).

Exits 1 when a 16-bit run's final held-out loss is more than --max-loss-gap nats/char from its
fp32 peer (default 0.05, the issue's acceptance) or its tracked activations are not half of
fp32's within 5%; 2 on a file without an fp32 peer for some run.

Usage: /usr/bin/python3 analysis/precision_report.py RESULTS.h5 [--max-loss-gap 0.05]
"""
import argparse
import sys

import h5py
import numpy as np


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def final_heldout(run):
    e = run["eval"][:]
    rows = [r for r in e if text(r["split"]) in ("heldout", "test")]
    last = max(r["step"] for r in rows)
    return float(next(r["loss"] for r in rows if r["step"] == last)), int(last)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--max-loss-gap", type=float, default=0.05)
    args = parser.parse_args()
    rows = []
    with h5py.File(args.results, "r") as f:
        for name, run in f["runs"].items():
            if text(run.attrs["status"]) != "ok":
                print(f"{name}: status {text(run.attrs['status'])}, left out")
                continue
            loss, step = final_heldout(run)
            memory = run["memory"][:]
            steps = run["steps"][:]
            rows.append({"name": name, "model": text(run.attrs["model"]), "dp": int(run.attrs["dp"]),
                         "tp": int(run.attrs["tp"]), "precision": text(run.attrs["precision"]), "loss": loss,
                         "step": step, "activations": int(memory["activations"].max()),
                         "params": int(memory["params"].max()), "optimizer": int(memory["optimizer"].max()),
                         "samples_per_s": float(run["summary"].attrs["samples_per_s"]),
                         "loss_scale": float(steps["loss_scale"][-1]),
                         "skipped": int(run["summary"].attrs.get("skipped_steps", 0))})
    failures, missing = [], []
    print(f"{'run':36} {'prec':5} {'dp':>2} {'tp':>2} {'held-out':>9} {'gap':>8} {'act MiB':>8} {'act/fp32':>8} "
          f"{'params MiB':>10} {'opt MiB':>8} {'samples/s':>10} {'speed/fp32':>10} {'scale':>8} {'skipped':>7}")
    for r in sorted(rows, key=lambda r: (r["model"], r["dp"], r["tp"], r["precision"] != "fp32", r["precision"])):
        peer = next((p for p in rows if p["precision"] == "fp32" and
                     (p["model"], p["dp"], p["tp"]) == (r["model"], r["dp"], r["tp"])), None)
        if peer is None:
            missing.append(r["name"])
            continue
        gap = r["loss"] - peer["loss"]
        ratio = r["activations"] / peer["activations"]
        print(f"{r['name'][:36]:36} {r['precision']:5} {r['dp']:>2} {r['tp']:>2} {r['loss']:9.4f} {gap:+8.4f} "
              f"{r['activations'] / 2**20:8.2f} {ratio:8.4f} {r['params'] / 2**20:10.2f} {r['optimizer'] / 2**20:8.2f} "
              f"{r['samples_per_s']:10.1f} {r['samples_per_s'] / peer['samples_per_s']:10.3f} {r['loss_scale']:8.0f} "
              f"{r['skipped']:7d}")
        if r["precision"] != "fp32":
            if abs(gap) > args.max_loss_gap:
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
    print("PASS: every 16-bit run within {:.2f} nats/char of fp32, activations half".format(args.max_loss_gap))


if __name__ == "__main__":
    main()
