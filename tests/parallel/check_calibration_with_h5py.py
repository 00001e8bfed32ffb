# SPDX-License-Identifier: Apache-2.0
"""Reads the tables of `scalebench calibrate` the way users' scripts do (h5py, pandas) and
checks the contract: /calibration/<collective> with the schema's columns, one row per size and
path, positive bandwidths; with --gemm-sizes, /calibration/gemm: one row per precision and size,
tflops = 2·m·n·k / time_s / 1e12.
Usage: check_calibration_with_h5py.py FILE --ranks N --min-bytes A --max-bytes B [--gemm-sizes S...]"""
import argparse
import sys

import h5py
import pandas as pd

COLUMNS = ["size_bytes", "ranks", "path", "iterations", "time_s", "algbw_gbps", "busbw_gbps"]
GEMM_COLUMNS = ["precision", "path", "m", "n", "k", "ranks", "threads", "iterations", "time_s", "tflops"]


def check_gemm(group, ranks, sizes):
    """The /calibration/gemm contract; returns failure messages."""
    if "gemm" not in group:
        return ["/calibration/gemm is missing"]
    table = group["gemm"]
    names = list(table.dtype.names)
    if names != GEMM_COLUMNS:
        return [f"gemm: columns {names}, expected {GEMM_COLUMNS}"]
    frame = pd.DataFrame(table[()])
    for column in ("precision", "path"):
        frame[column] = frame[column].str.decode("ascii")
    failures = []
    expected = [(p, s) for s in sizes for p in ("fp32", "bf16", "fp16")]
    if list(zip(frame["precision"], frame["m"])) != expected:
        failures.append(f"gemm: rows {list(zip(frame['precision'], frame['m']))}, expected {expected}")
    if not ((frame["m"] == frame["n"]) & (frame["n"] == frame["k"])).all():
        failures.append("gemm: sizes are not square")
    if not ((frame["path"] == "cpu") & (frame["ranks"] == ranks) & (frame["threads"] >= 1)).all():
        failures.append("gemm: path, ranks or threads wrong")
    if not ((frame["time_s"] > 0) & (frame["iterations"] >= 1)).all():
        failures.append("gemm: a time or iteration count is not positive")
    tflops = 2.0 * frame["m"] * frame["n"] * frame["k"] / frame["time_s"] / 1e12
    if not ((tflops - frame["tflops"]).abs() <= 1e-9 * tflops).all():
        failures.append("gemm: tflops is not 2·m·n·k / time_s / 1e12")
    return failures


def expected_sizes(collective, ranks, min_bytes, max_bytes):
    smallest = max(min_bytes, 4 * ranks if collective in ("reduce_scatter", "all_gather") else 4)
    sizes, size = [], 1
    while size <= max_bytes:
        if size >= smallest:
            sizes.append(size)
        size *= 2
    return sizes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--min-bytes", type=int, default=4)
    parser.add_argument("--max-bytes", type=int, required=True)
    parser.add_argument("--gemm-sizes", type=int, nargs="*", default=None)
    args = parser.parse_args()
    failures = []
    with h5py.File(args.file, "r") as f:
        if f.attrs.get("schema_version") != 1:
            failures.append("root attribute schema_version is not 1")
        group = f["calibration"]
        for key in ("hostnames", "mpi_library", "build_type", "ranks", "max_bytes"):
            if key not in group.attrs:
                failures.append(f"/calibration lacks attribute {key}")
        for collective in ("all_reduce", "reduce_scatter", "all_gather", "p2p"):
            table = group[collective]
            names = list(table.dtype.names)
            if names != COLUMNS:
                failures.append(f"{collective}: columns {names}, expected {COLUMNS}")
                continue
            frame = pd.DataFrame(table[()])
            frame["path"] = frame["path"].str.decode("ascii")
            sizes = expected_sizes(collective, args.ranks, args.min_bytes, args.max_bytes)
            paths = ("mpi", "scalebench") if collective == "p2p" else ("mpi", "scalebench", "ring")
            for path in paths:
                rows = frame[frame["path"] == path]
                if list(rows["size_bytes"]) != sizes:
                    failures.append(f"{collective}/{path}: sizes {list(rows['size_bytes'])}, expected {sizes}")
            if len(frame) != len(paths) * len(sizes):
                failures.append(f"{collective}: {len(frame)} rows, expected {len(paths) * len(sizes)}")
            want_ranks = 2 if collective == "p2p" else args.ranks
            if not (frame["ranks"] == want_ranks).all():
                failures.append(f"{collective}: ranks column is not {want_ranks}")
            for column in ("time_s", "algbw_gbps", "busbw_gbps"):
                if not (frame[column] > 0).all():
                    failures.append(f"{collective}: {column} has values <= 0")
            if not (frame["iterations"] >= 1).all():
                failures.append(f"{collective}: no timed iteration")
            # busbw = algbw × the nccl-tests factor
            n = want_ranks
            factor = {"all_reduce": 2 * (n - 1) / n, "reduce_scatter": (n - 1) / n,
                      "all_gather": (n - 1) / n, "p2p": 1.0}[collective]
            ratio = frame["busbw_gbps"] / frame["algbw_gbps"]
            if not ((ratio - factor).abs() < 1e-9).all():
                failures.append(f"{collective}: busbw/algbw is not {factor}")
            algbw = frame["size_bytes"] / frame["time_s"] / 1e9
            if not ((algbw - frame["algbw_gbps"]).abs() <= 1e-9 * algbw).all():
                failures.append(f"{collective}: algbw is not size/time")
        if args.gemm_sizes is not None:
            failures += check_gemm(group, args.ranks, args.gemm_sizes)
    for failure in failures:
        print("FAIL:", failure)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
