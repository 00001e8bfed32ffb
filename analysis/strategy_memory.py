#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Each run's memory per rank against the published formulas, beside its step time.

Activation recomputation (GPT, one rank, tp 1): the tracked activation bytes of rank 0 against
the trainer's own prediction (/runs/*/prediction) and against Korthikanti et al. 2022 (Reducing
Activation Recomputation in Large Transformer Models, Table 2), per layer at 16 bits:
sbh(34 + 5as/h) without recomputation, 34sbh selective, 2sbh full (each block's input), times
the layers and doubled for fp32 storage (4 bytes an element); src/costmodel/closed_forms.hpp states the
same count for the cost model (with tp and sequence parallelism), which this script cannot call. Their count includes dropout masks
and leaves out the embedding and head; the trainer has no dropout, so the ratio is not 1.

ZeRO (fp32 model state, AdamW; Rajbhandari et al. 2020 §5 with K = 8 and 4-byte weights and
gradients): every rank's params 4Ψ (stage 3: 4⌈Ψ/N⌉), grads 4Ψ (stages 2, 3: 4⌈Ψ/N⌉), optimizer 8Ψ
(stages 1-3: 8 × the rank's part of ⌈Ψ/N⌉), Ψ the run's summary.parameters, N its dp.

Step time: summary.step_time_median_s; and the median of the steps after the first from the
`steps` table. Reads HDF5 only.

Usage: /usr/bin/python3 analysis/strategy_memory.py --layers L --hidden H --heads A RESULTS.h5 [...]
"""
import argparse

import h5py
import numpy as np

MB = 1e6


def korthikanti_bytes(recompute, layers, s, b, h, a, element_bytes):
    """Korthikanti et al.'s activation bytes of `layers` transformer layers, scaled from their
    16-bit count to element_bytes per element."""
    sbh = s * b * h
    per_layer = {"none": sbh * (34 + 5 * a * s / h), "selective": 34 * sbh, "full": 2 * sbh}[recompute]
    return layers * per_layer * element_bytes / 2


def step_median_s(run):
    steps = run["steps"][:]
    later = steps[steps["step"] > steps["step"].min()]
    return float(np.median((later if len(later) else steps)["step_time_s"]))


def zero_formula(zero, psi, dp, rank):
    shard = -(-psi // dp)
    own = max(0, min(shard, psi - shard * rank))
    return {"params": 4 * shard if zero == 3 else 4 * psi,
            "grads": 4 * shard if zero >= 2 else 4 * psi,
            "optimizer": 8 * own if zero >= 1 else 8 * psi}


def recompute_row(name, run, args):
    a = run.attrs
    if int(a["tp"]) != 1 or int(a["pp"]) != 1 or int(a["dp"]) != 1:
        return None
    element = 4 if a["precision"] == "fp32" else 2
    measured = int(run["memory"]["activations"][0])
    predicted = float(run["prediction"].attrs["memory_activations"])
    formula = korthikanti_bytes(a["recompute"], args.layers, int(a["seq_len"]), int(a["micro_batch"]),
                                args.hidden, args.heads, element)
    return (f"{name:<28} {a['recompute']:>9} {measured / MB:>10.1f} {predicted / MB:>10.1f} {formula / MB:>12.1f} "
            f"{measured / formula:>7.2f} {step_median_s(run) * 1e3:>10.0f}")


def zero_row(name, run):
    """Rank 0's model state beside the formulas, and the largest difference over every rank."""
    a = run.attrs
    zero, dp = int(a["zero"]), int(a["dp"])
    psi = int(run["summary"].attrs["parameters"])
    memory = run["memory"][:]
    worst = max(abs(int(row[part]) - bytes_) for row in memory
                for part, bytes_ in zero_formula(zero, psi, dp, int(row["rank"])).items())
    first = memory[memory["rank"] == 0][0]
    want = zero_formula(zero, psi, dp, 0)
    row = (f"{name:<28} {dp:>3} {zero:>5} " +
           " ".join(f"{int(first[p]) / MB:>8.2f} ({bytes_ / MB:>6.2f})" for p, bytes_ in want.items()) +
           f" {step_median_s(run) * 1e3:>9.0f}")
    return row, worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, required=True)
    parser.add_argument("--hidden", type=int, required=True)
    parser.add_argument("--heads", type=int, required=True)
    parser.add_argument("results", nargs="+")
    args = parser.parse_args()
    recompute, zero, worst = [], [], 0
    for path in args.results:
        with h5py.File(path, "r") as f:
            for run in f["runs"].values():
                if run.attrs["status"] != "ok":
                    continue
                name = path.rsplit("/", 1)[-1].removesuffix(".h5")
                if int(run.attrs["dp"]) > 1 and run.attrs["precision"] == "fp32":
                    row, off = zero_row(name, run)
                    zero.append(row)
                    worst = max(worst, off)
                elif (row := recompute_row(name, run, args)) is not None:
                    recompute.append(row)
    if recompute:
        print(f"{'run':<28} {'recompute':>9} {'act. MB':>10} {'predicted':>10} {'Korthikanti':>12} "
              f"{'ratio':>7} {'step ms':>10}")
        print("\n".join(recompute))
    if zero:
        print(f"\n{'run':<28} {'dp':>3} {'zero':>5} {'params MB (formula)':>19} {'grads MB (formula)':>19} "
              f"{'optimizer MB (formula)':>19} {'step ms':>9}")
        print("\n".join(zero))
        print(f"largest difference from the ZeRO formulas over every rank and category: {worst} B")
    return 1 if worst else 0


if __name__ == "__main__":
    raise SystemExit(main())
