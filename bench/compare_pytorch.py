#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Side-by-side training-step times: scalebench (bench_train) and PyTorch eager
# (pytorch_peer.py) on the same model, batch and threads, alternated round by round so both
# see the same machine load; prints medians and the ratio torch/ours (> 1: ours is faster).
# A -bf16 case (gpt-tiny-bf16, resnet-mini-64-bf16, ...): our bf16 storage against PyTorch's
# autocast bf16. A -fp16 case: our fp16 storage against our own fp32 step of the same model in the
# same round (PyTorch's CPU autocast has no fp16), so the ratio says whether fp16 pays here.
"""Usage: /usr/bin/python3 bench/compare_pytorch.py [--rounds 3] [--threads 1 2] [--models gpt-tiny resnet-mini-128 ...] [--torch-steps 25] [--min-time 2]"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[1]
# name -> (benchmark filter in bench_train.cpp, batch as registered there); a -bf16 case is bf16
# storage for us and torch.autocast bf16 for PyTorch.
FP32_CASES = {"gpt-nano": ("gpt_nano/16", 16), "gpt-tiny": ("gpt_tiny/16", 16), "gpt-small": ("gpt_small/8", 8),
              "resnet-mini-64": ("resnet_mini/64", 64), "resnet-mini-128": ("resnet_mini/128", 128)}


def sixteen_bit_case(model, precision):
    name, batch = FP32_CASES[model]
    family, _, rest = name.partition("/")
    return f"{family}_{precision}/{rest}", batch


CASES = dict(FP32_CASES)
for _model in FP32_CASES:
    for _precision in ("bf16", "fp16"):
        CASES[f"{_model}-{_precision}"] = sixteen_bit_case(_model, _precision)
DEFAULT_MODELS = [m for m in CASES if not m.endswith("-fp16")]
OPENMP_BLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp"


def ours(model, threads, build, min_time):
    env = dict(os.environ, SB_THREADS=str(threads), OMP_PROC_BIND="spread", OMP_PLACES="threads")
    out = subprocess.run([str(build / "bench" / "bench_train"), f"--benchmark_filter={CASES[model][0]}",
                          "--benchmark_format=json", f"--benchmark_min_time={min_time}"],
                         env=env, check=True, capture_output=True, text=True).stdout
    bench = json.loads(out)["benchmarks"][0]
    return bench["real_time"] / 1e3  # ms -> s


def torch_peer(model, threads, steps):
    # Debian's OpenMP OpenBLAS, when present, is PyTorch's best configuration here.
    env = dict(os.environ)
    if pathlib.Path(OPENMP_BLAS).is_dir():
        env["LD_LIBRARY_PATH"] = OPENMP_BLAS + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    precision = "bf16" if model.endswith("-bf16") else "fp32"
    peer_model = model.removesuffix("-bf16")
    peer_model = "resnet-mini" if peer_model.startswith("resnet-mini") else peer_model
    out = subprocess.run(["/usr/bin/python3", str(REPO / "bench" / "pytorch_peer.py"), "time", "--model", peer_model,
                          "--batch", str(CASES[model][1]), "--threads", str(threads), "--steps", str(steps),
                          "--precision", precision],
                         env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["step_time_median_s"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS, choices=list(CASES))
    parser.add_argument("--build", default=str(REPO / "build"))
    parser.add_argument("--torch-steps", type=int, default=25, help="PyTorch steps per round (the first 3 are dropped)")
    parser.add_argument("--min-time", type=float, default=2.0, help="seconds of our steps per round (bench_train)")
    args = parser.parse_args()
    build = pathlib.Path(args.build)
    print(f"{'model':<20} {'batch':>5} {'threads':>7} {'ours ms':>9} {'peer ms':>9} {'peer/ours':>10}  "
          "(peer: PyTorch eager; for -fp16, our fp32 step)")
    rows = []
    for threads in args.threads:
        # Each round runs every model once, ours then torch, so all cases of one thread count
        # (fp32 beside bf16 too) see the same stretch of machine load.
        a, b = {m: [] for m in args.models}, {m: [] for m in args.models}
        for _ in range(args.rounds):
            for model in args.models:
                a[model].append(ours(model, threads, build, args.min_time))
                if model.endswith("-fp16"):
                    b[model].append(ours(model.removesuffix("-fp16"), threads, build, args.min_time))
                else:
                    b[model].append(torch_peer(model, threads, args.torch_steps))
        for model in args.models:
            row = dict(model=model, batch=CASES[model][1], threads=threads, ours_s=statistics.median(a[model]),
                       torch_s=statistics.median(b[model]))
            row["ratio"] = row["torch_s"] / row["ours_s"]
            rows.append(row)
            print(f"{model:<20} {row['batch']:>5} {threads:>7} {1e3 * row['ours_s']:>9.1f} "
                  f"{1e3 * row['torch_s']:>9.1f} {row['ratio']:>10.2f}", flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
