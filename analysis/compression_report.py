#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Pruning and transfer side by side, from a results file (`scalebench run
suites/compression.yaml` writes results/compression.h5, suites/transfer.yaml results/transfer.h5):
per run its data set and training subset, what it started from, its pruning pattern and target,
the sparsity its weight matrices reached, the test accuracy at step 0 (a fine-tuned run: right
after loading and pruning, before any step) and after its last step, and throughput; then each
int8-quantised run's size, accuracy (or held-out loss) and inference speed against fp32; then each
distilled student's final accuracy beside the same model trained alone, averaged over seeds.

Exits 1 when a pruned run's sparsity reached is below its target (2:4: half of the matrices whose
rows divide into groups of four) by more than 0.5 points, or (--transfer) when fully fine-tuned
runs do not beat the from-scratch runs on the same data subset and steps (a frozen backbone is
printed beside them, not held to it), or when a distilled student does
not beat the same student trained alone for the same steps (each a mean over seeds).

The collection (run_rows, int8_rows) and the comparisons (transfer_comparisons,
distillation_comparisons) are also what analysis/report.py's "Compression and transfer" section shows.

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
    rows = [r for r in run["eval"][:] if text(r["split"]) in ("test", "heldout")] if "eval" in run else []
    if not rows:
        return float("nan"), -1
    row = min(rows, key=lambda r: r["step"]) if first else max(rows, key=lambda r: r["step"])
    return float(row["accuracy"]), int(row["step"])


def run_rows(path):
    """One row per finished run of a results file (its data, start, pruning, accuracy at step 0 and
    final, steps, throughput), and a sentence for each run left out as not finished."""
    rows, left_out = [], []
    with h5py.File(path, "r") as f:
        for name, run in f["runs"].items():
            if text(run.attrs["status"]) != "ok":
                left_out.append(f"{name}: status {text(run.attrs['status'])}, left out")
                continue
            config = yaml.safe_load(text(run.attrs["config_yaml"]))
            data = config.get("data", {})
            data = data if isinstance(data, dict) else {"dataset": data}
            prune = config.get("prune") or {}
            finetune = config.get("finetune") or {}
            summary = run["summary"].attrs if "summary" in run else {}  # the report reads any result file
            start, start_step = accuracy_at(run, first=True)
            final, final_step = accuracy_at(run, first=False)
            rows.append({"name": name, "dataset": text(run.attrs["dataset"]), "model": text(run.attrs["model"]),
                         "seed": int(config.get("seed", 0)), "distilled": bool(config.get("distill")),
                         "subset": int(data.get("train_samples", 0)),
                         "from": "checkpoint" if finetune.get("from") else "scratch",
                         "freeze": finetune.get("freeze", "none"),
                         "pattern": pattern_text(prune.get("pattern", "")), "target": float(prune.get("sparsity", 0.5 if prune else 0)),
                         "sparsity": float(summary.get("sparsity", float("nan"))),
                         "start": start if start_step == 0 else float("nan"), "final": final,
                         "steps": int(summary.get("steps", 0)),
                         "samples_per_s": float(summary.get("samples_per_s", float("nan")))})
    return rows, left_out


def int8_rows(path):
    """One row per run with a /runs/<id>/compression group: weight bytes fp32 and int8 and their
    ratio, the metric (accuracy, else held-out loss; scale 100 prints accuracy in %) in both, and
    inference samples/s in both."""
    rows = []
    with h5py.File(path, "r") as f:
        for name, run in f["runs"].items():
            if "compression" not in run:
                continue
            c = run["compression"].attrs
            metric = "accuracy" if "accuracy_fp32" in c else "heldout_loss"
            rows.append({"name": name, "quantize": text(c["quantize"]),
                         "bytes_fp32": int(c["weight_bytes_fp32"]), "bytes_int8": int(c["weight_bytes_int8"]),
                         "ratio": float(c["weight_bytes_ratio"]), "metric": metric,
                         "scale": 100 if metric == "accuracy" else 1,
                         "fp32": float(c[metric + "_fp32"]), "int8": float(c[metric + "_int8"]),
                         "samples_per_s_fp32": float(c["samples_per_s_fp32"]),
                         "samples_per_s_int8": float(c["samples_per_s_int8"])})
    return rows


def speed_ratio(r):
    """int8 inference samples/s over fp32's."""
    return r["samples_per_s_int8"] / r["samples_per_s_fp32"]


def int8_text(r):
    return (f"{r['name']}: {r['quantize']} weights {r['bytes_int8']} bytes vs fp32 {r['bytes_fp32']} "
            f"({r['ratio']:.2f}x smaller); {r['metric']} fp32 {r['scale'] * r['fp32']:.4g}, "
            f"int8 {r['scale'] * r['int8']:.4g}; inference {speed_ratio(r):.2f}x fp32's samples/s")


def pattern_text(pattern):
    """Files written before config_yaml quoted it hold `pattern: 2:4` plain, which PyYAML (YAML
    1.1) reads as the base-60 integer 124: read it back as the pattern."""
    return f"{pattern // 60}:{pattern % 60}" if isinstance(pattern, int) else pattern


def mean_over_seeds(group):
    """The group's mean final accuracy, and its text with every seed's figure."""
    mean = sum(r["final"] for r in group) / len(group)
    seeds = ", ".join(f"seed {r['seed']} {100 * r['final']:.2f}" for r in sorted(group, key=lambda r: r["seed"]))
    return mean, f"{100 * mean:.2f}% ({seeds})"


def comparison(label, reference, treated, reference_name, missing):
    """A treated group (fine-tuned, distilled) against its reference group (from scratch, alone),
    both as means over seeds: their texts and the points gained, and the failure (the missing
    sentence when there is no reference; the treated mean not above the reference's) or None."""
    treated_mean, treated_text = mean_over_seeds(treated)
    c = {"label": label, "reference_name": reference_name, "treated_mean": treated_mean, "treated_text": treated_text,
         "failure": f"{label}: {missing}"}
    if reference:
        c["reference_mean"], c["reference_text"] = mean_over_seeds(reference)
        c["gain_points"] = 100 * (treated_mean - c["reference_mean"])
        c["failure"] = None if treated_mean > c["reference_mean"] else (
            f"{label}: {100 * treated_mean:.2f}% does not beat {reference_name} ({100 * c['reference_mean']:.2f}%)")
    return c


def transfer_comparisons(rows):
    """Each fine-tuned configuration (its checkpoint and freeze) against the from-scratch runs on
    the same data subset for the same steps, both averaged over their seeds."""
    same = lambda a, b: (a["dataset"], a["subset"], a["steps"]) == (b["dataset"], b["subset"], b["steps"])
    tuned = [r for r in rows if r["from"] == "checkpoint" and not r["pattern"]]
    comparisons = []
    for key in sorted({(r["dataset"], r["subset"], r["steps"], r["freeze"]) for r in tuned}):
        group = [r for r in tuned if (r["dataset"], r["subset"], r["steps"], r["freeze"]) == key]
        scratch = [s for s in rows if s["from"] == "scratch" and same(s, group[0])]
        label = f"{key[0]}, {key[1] or 'all'} samples, {key[2]} steps, fine-tuned (freeze {key[3]})"
        c = comparison(label, scratch, group, "from scratch", "no from-scratch run on the same data and steps")
        # Full fine-tuning is held to beating scratch; a frozen backbone (a feature extractor
        # from another task) is reported beside it but not held to it.
        c["held"] = key[3] == "none"
        comparisons.append(c)
    return comparisons


def distillation_comparisons(rows):
    """Each distilled student against the same model trained from scratch alone for the same
    steps (neither pruned nor fine-tuned), both averaged over their seeds."""
    plain = [r for r in rows if r["from"] == "scratch" and not r["pattern"]]
    comparisons = []
    for model, steps in sorted({(r["model"], r["steps"]) for r in plain if r["distilled"]}):
        alone = [r for r in plain if (r["model"], r["steps"]) == (model, steps) and not r["distilled"]]
        taught = [r for r in plain if (r["model"], r["steps"]) == (model, steps) and r["distilled"]]
        comparisons.append(comparison(f"distilled {model}, {steps} steps", alone, taught, "alone",
                                      f"no run of it alone for {steps} steps to compare with"))
    return comparisons


def transfer(rows):
    """Prints each fine-tuned configuration beside the from-scratch runs; returns failures where
    full fine-tuning does not beat scratch (a frozen backbone is printed, not held to it)."""
    comparisons = transfer_comparisons(rows)
    for c in comparisons:
        if "reference_mean" in c:
            print(f"transfer {c['label']}: {c['treated_text']}; from scratch {c['reference_text']}; "
                  f"{c['gain_points']:+.2f} points{'' if c['held'] else ' (frozen backbone: reported, not held to beating scratch)'}")
    return [c["failure"] for c in comparisons if c["failure"] and c["held"]]


def distillation(rows):
    """Prints each distilled student beside the same model trained alone; returns failures."""
    comparisons = distillation_comparisons(rows)
    for c in comparisons:
        if "reference_mean" in c:
            print(f"distillation {c['label'].removeprefix('distilled ')}: alone {c['reference_text']}; "
                  f"with the teacher {c['treated_text']}; {c['gain_points']:+.2f} points")
    return [c["failure"] for c in comparisons if c["failure"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--transfer", action="store_true", help="hold fine-tuned runs to beating from-scratch")
    args = parser.parse_args()
    rows, left_out = run_rows(args.results)
    for sentence in left_out:
        print(sentence)
    failures = []
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
    for r in int8_rows(args.results):
        print(int8_text(r))
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
