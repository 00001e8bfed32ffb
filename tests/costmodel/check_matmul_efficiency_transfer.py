# SPDX-License-Identifier: Apache-2.0
"""A GEMM efficiency carried between devices by measured matmul efficiency holds on the other
device's published runs: the evidence behind the profiles that have no published set (H200, GH200,
MI250X; validation/README.md, "Devices without a published set").

In a copy of the shipped resources, the A100 profile's e_max is replaced by the H100's fitted one
times the ratio of the two devices' maximum achievable bf16 matmul efficiency
(validation/matmul-efficiency.yaml, table v2), and the H100's e_max and e_max_fp8 by the A100's
fitted e_max times the H100's bf16 and fp8 efficiency over the A100's bf16. So every replayed row
below is predicted with an e_max fitted on the other GPU only. Each set's step-time, TFLOP/s or
tokens figure must stay within the issue's bounds (mean |error| <= 5%, max <= 10%).
Usage: check_matmul_efficiency_transfer.py SCALEBENCH SOURCE_DIR WORK_DIR"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import yaml

import matmul_efficiency

scalebench, source, work = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
A100, H100 = "a100-80gb-dgx", "h100-sxm-dgx"
# the sets replayed on the two profiles whose figure is a time (MPT's and torchtitan's are left
# out: they miss the bounds on the shipped profiles too, see validation/README.md)
SETS = {A100: ["megatron-lm-narayanan2021-table1", "megatron-lm-korthikanti2022"],
        H100: ["nvidia-dgxc-benchmarking-gpt3-175b", "nvidia-dgxc-benchmarking-gpt3-175b-fp8",
               "nvidia-dgxc-benchmarking-nemotron4-15b", "nvidia-dgxc-benchmarking-nemotron4-15b-fp8",
               "nvidia-dgxc-benchmarking-nemotron4-340b", "nvidia-dgxc-benchmarking-nemotron4-340b-fp8",
               "nvidia-megatron-bridge-performance-summary", "nvidia-nemo-24.07-performance-summary"]}

shutil.rmtree(work, ignore_errors=True)
for folder in ("jobs", "validation", "suites"):
    shutil.copytree(source / folder, work / folder)
sites = work / "jobs" / "sites"
profile = {name: yaml.safe_load((sites / f"{name}.yaml").read_text()) for name in (A100, H100)}
efficiency = matmul_efficiency.efficiencies(source)


def eff(name, precision):
    return efficiency[(profile[name]["device"], precision, "v2")]


carried = {
    A100: {"e_max": profile[H100]["gemm"]["e_max"] * eff(A100, "bf16") / eff(H100, "bf16")},
    H100: {"e_max": profile[A100]["gemm"]["e_max"] * eff(H100, "bf16") / eff(A100, "bf16"),
           "e_max_fp8": profile[A100]["gemm"]["e_max"] * eff(H100, "fp8") / eff(A100, "bf16")},
}
for name, constants in carried.items():
    path = sites / f"{name}.yaml"
    text = path.read_text()
    for key, value in constants.items():
        text, count = re.subn(rf"^(  {key}:) [0-9.]+", rf"\g<1> {value:.4f}", text, flags=re.M)
        assert count == 1, f"{path}: no single '{key}:' line to replace"
    path.write_text(text)
    print(f"{name}: " + ", ".join(f"{k} {profile[name]['gemm'][k]} -> {v:.4f}" for k, v in constants.items()))

# the copy's profiles, not a user's SB_SITES_DIR
environment = {k: v for k, v in os.environ.items() if k != "SB_SITES_DIR"} | {"SB_SHARE_DIR": str(work)}
problems = []
for name, sets in SETS.items():
    for name_of_set in sets:
        run = subprocess.run([scalebench, "predict", "--validate", name_of_set, "--json"], capture_output=True,
                             text=True, env=environment)
        assert run.returncode == 0, f"{name_of_set}: scalebench predict --validate failed: {run.stderr}"
        summary = json.loads(run.stdout)["summary"][0]  # the set's first figure: its time, TFLOP/s or tokens
        verdict = summary["mean_abs_error_pct"] <= 5.0 and summary["max_abs_error_pct"] <= 10.0
        print(f"{name_of_set:45s} {summary['figure']:24s} {summary['rows']:3d} rows  mean {summary['mean_abs_error_pct']:4.1f}%"
              f"  max {summary['max_abs_error_pct']:4.1f}%  {'within' if verdict else 'OUTSIDE'} 5/10")
        if not verdict or summary["infeasible"]:
            problems.append(f"{name_of_set} on {name}'s carried e_max: mean {summary['mean_abs_error_pct']:.1f}%, "
                            f"max {summary['max_abs_error_pct']:.1f}%, {summary['infeasible']} infeasible")
assert not problems, "\n".join(problems)
print("an e_max carried between the A100 and the H100 by measured matmul efficiency holds on the other's sets")
