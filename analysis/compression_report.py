#!/usr/bin/python3
"""Pruning and transfer side by side, from a results file (`scalebench run
suites/compression.yaml` writes results/compression.h5, suites/transfer.yaml results/transfer.h5):
per run its data set and training subset, what it started from, its pruning pattern and target,
the sparsity its weight matrices reached, the test accuracy at step 0 (a fine-tuned run: right
after loading and pruning, before any step) and after its last step, and throughput; then each
int8-quantised run's size, accuracy (or held-out loss) and inference speed against fp32; then each
distilled student's final accuracy beside the same model trained alone, averaged over seeds.

Exits 1 when a pruned run's sparsity reached is below its target (2:4: half of the matrices whose
rows divide into groups of four) by more than 0.5 points, or (--transfer) when fine-tuned runs do
not beat the from-scratch runs on the same data subset and steps, or when a distilled student does
not beat the same student trained alone for the same steps (each a mean over seeds).

Usage: /usr/bin/python3 analysis/compression_report.py RESULTS.h5 [--transfer]
"""
import argparse
import sys

import h5py
import yaml


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def accuracy_at(run, first):
    """Test accuracy of the first or last test-split evaluation, and its step."""
    rows = [r for r in run["eval"][:] if text(r["split"]) in ("test", "heldout")]
    if not rows:
        return float("nan"), -1
    row = min(rows, key=lambda r: r["step"]) if first else max(rows, key=lambda r: r["step"])
    return float(row["accuracy"]), int(row["step"])


def mean_over_seeds(group):
    """The group's mean final accuracy, and its text with every seed's figure."""
    mean = sum(r["final"] for r in group) / len(group)
    seeds = ", ".join(f"seed {r['seed']} {100 * r['final']:.2f}" for r in sorted(group, key=lambda r: r["seed"]))
    return mean, f"{100 * mean:.2f}% ({seeds})"


def transfer(rows):
    """Prints each fine-tuned configuration (its checkpoint and freeze) beside the from-scratch
    runs on the same data subset for the same steps, both averaged over their seeds; returns
    failures where fine-tuning does not beat scratch."""
    failures = []
    same = lambda a, b: (a["dataset"], a["subset"], a["steps"]) == (b["dataset"], b["subset"], b["steps"])
    tuned = [r for r in rows if r["from"] == "checkpoint" and not r["pattern"]]
    for key in sorted({(r["dataset"], r["subset"], r["steps"], r["freeze"]) for r in tuned}):
        group = [r for r in tuned if (r["dataset"], r["subset"], r["steps"], r["freeze"]) == key]
        scratch = [s for s in rows if s["from"] == "scratch" and same(s, group[0])]
        label = f"{key[0]}, {key[1] or 'all'} samples, {key[2]} steps, fine-tuned (freeze {key[3]})"
        if not scratch:
            failures.append(f"{label}: no from-scratch run on the same data and steps")
            continue
        tuned_mean, tuned_text = mean_over_seeds(group)
        scratch_mean, scratch_text = mean_over_seeds(scratch)
        print(f"transfer {label}: {tuned_text}; from scratch {scratch_text}; "
              f"{100 * (tuned_mean - scratch_mean):+.2f} points")
        if tuned_mean <= scratch_mean:
            failures.append(f"{label}: {100 * tuned_mean:.2f}% does not beat from scratch ({100 * scratch_mean:.2f}%)")
    return failures


def distillation(rows):
    """Prints each distilled student's mean final accuracy over its seeds beside the same model
    trained from scratch alone for the same steps (neither pruned nor fine-tuned); returns failures."""
    failures = []
    plain = [r for r in rows if r["from"] == "scratch" and not r["pattern"]]
    for model, steps in sorted({(r["model"], r["steps"]) for r in plain if r["distilled"]}):
        alone = [r for r in plain if (r["model"], r["steps"]) == (model, steps) and not r["distilled"]]
        taught = [r for r in plain if (r["model"], r["steps"]) == (model, steps) and r["distilled"]]
        taught_mean, taught_text = mean_over_seeds(taught)
        if not alone:
            failures.append(f"distilled {model}: no run of it alone for {steps} steps to compare with")
            continue
        alone_mean, alone_text = mean_over_seeds(alone)
        print(f"distillation {model}, {steps} steps: alone {alone_text}; with the teacher {taught_text}; "
              f"{100 * (taught_mean - alone_mean):+.2f} points")
        if taught_mean <= alone_mean:
            failures.append(f"distilled {model}: {100 * taught_mean:.2f}% does not beat alone ({100 * alone_mean:.2f}%)")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--transfer", action="store_true", help="hold fine-tuned runs to beating from-scratch")
    args = parser.parse_args()
    rows, failures = [], []
    with h5py.File(args.results, "r") as f:
        for name, run in f["runs"].items():
            if text(run.attrs["status"]) != "ok":
                print(f"{name}: status {text(run.attrs['status'])}, left out")
                continue
            config = yaml.safe_load(text(run.attrs["config_yaml"]))
            data = config.get("data", {})
            data = data if isinstance(data, dict) else {"dataset": data}
            prune = config.get("prune") or {}
            finetune = config.get("finetune") or {}
            summary = run["summary"].attrs
            start, start_step = accuracy_at(run, first=True)
            final, final_step = accuracy_at(run, first=False)
            rows.append({"name": name, "dataset": text(run.attrs["dataset"]), "model": text(run.attrs["model"]),
                         "seed": int(config.get("seed", 0)), "distilled": bool(config.get("distill")),
                         "subset": int(data.get("train_samples", 0)),
                         "from": "checkpoint" if finetune.get("from") else "scratch",
                         "freeze": finetune.get("freeze", "none"),
                         "pattern": prune.get("pattern", ""), "target": float(prune.get("sparsity", 0.5 if prune else 0)),
                         "sparsity": float(summary.get("sparsity", float("nan"))),
                         "start": start if start_step == 0 else float("nan"), "final": final,
                         "steps": int(summary["steps"]), "samples_per_s": float(summary["samples_per_s"])})
    print(f"{'run':30} {'data':14} {'subset':>6} {'from':10} {'freeze':8} {'prune':12} {'target':>6} {'reached':>7} "
          f"{'acc@0 %':>7} {'final %':>7} {'steps':>5} {'samples/s':>9}")
    for r in rows:
        prune = r["pattern"] or "-"
        print(f"{r['name'][:30]:30} {r['dataset']:14} {r['subset'] or 'all':>6} {r['from']:10} {r['freeze']:8} "
              f"{prune:12} {r['target']:6.2f} {r['sparsity']:7.4f} {100 * r['start']:7.2f} {100 * r['final']:7.2f} "
              f"{r['steps']:5d} {r['samples_per_s']:9.1f}")
        if r["pattern"] == "unstructured" and r["sparsity"] < r["target"] - 0.005:
            failures.append(f"{r['name']}: sparsity reached {r['sparsity']:.4f}, target {r['target']}")
    if args.transfer:
        failures += transfer(rows)
    failures += distillation(rows)
    with h5py.File(args.results, "r") as f:
        for name, run in f["runs"].items():
            if "compression" not in run:
                continue
            c = run["compression"].attrs
            metric = ("accuracy", 100) if "accuracy_fp32" in c else ("heldout_loss", 1)
            print(f"{name}: {text(c['quantize'])} weights {int(c['weight_bytes_int8'])} bytes vs fp32 "
                  f"{int(c['weight_bytes_fp32'])} ({float(c['weight_bytes_ratio']):.2f}x smaller); {metric[0]} "
                  f"fp32 {metric[1] * float(c[metric[0] + '_fp32']):.4g}, int8 {metric[1] * float(c[metric[0] + '_int8']):.4g}; "
                  f"inference {float(c['samples_per_s_int8']) / float(c['samples_per_s_fp32']):.2f}x fp32's samples/s")
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
