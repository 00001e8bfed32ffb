# SPDX-License-Identifier: Apache-2.0
"""Checks a scalebench result file the way users' scripts read it: h5py and pandas.

Exits non-zero on any mismatch with the schema of shared/DESIGN.md (results/README.md).
Leaves out value checks beyond types; the C++ tests compare every value.
"""
import math
import sys

import h5py
import numpy as np
import pandas as pd

RUN_ATTRS = ["config_yaml", "model", "dataset", "device", "precision", "dp", "tp", "pp",
             "micro_batches", "schedule", "zero", "world_size", "global_batch", "seq_len",
             "status", "error", "started_utc", "finished_utc", "git_sha"]
INT_ATTRS = {"dp", "tp", "pp", "micro_batches", "zero", "world_size", "global_batch", "seq_len"}
TABLES = {
    "steps": ["step", "loss", "lr", "grad_norm", "loss_scale", "step_time_s", "compute_s",
              "comm_s", "bubble_s", "optimizer_s", "samples", "tokens", "flops"],
    "eval": ["step", "split", "loss", "accuracy"],
    "memory": ["rank", "params", "grads", "optimizer", "activations", "workspace", "comm",
               "peak_tracked", "peak_rss"],
    "ranks": ["rank", "dp_rank", "tp_rank", "pp_rank", "step_time_s", "compute_s", "comm_s",
              "bubble_s", "idle_s"],
    "timeline": ["step", "rank", "step_time_s", "compute_s", "tp_comm_s", "p2p_s", "bubble_s",
                 "dp_comm_s", "optimizer_s", "compute_cpu_s"],
    "collectives": ["step", "rank", "group", "group_root", "index", "collective", "bytes", "blocking", "arrive_s",
                    "compute_before_s", "wait_s", "seconds"],
}
TEXT_FIELDS = {"split", "group", "collective"}
INT_FIELDS = {"step", "samples", "tokens", "rank", "dp_rank", "tp_rank", "pp_rank", "params",
              "grads", "optimizer", "activations", "workspace", "comm", "peak_tracked",
              "peak_rss", "group_root", "index", "bytes", "blocking"}

failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)


def check_run(run_id, run):
    for name in RUN_ATTRS:
        expect(name in run.attrs, f"run {run_id}: attribute {name} missing")
        if name not in run.attrs:
            continue
        value = run.attrs[name]
        if name in INT_ATTRS:
            expect(isinstance(value, (int, np.integer)), f"{run_id}.{name} is {type(value)}")
        else:
            expect(isinstance(value, str), f"{run_id}.{name} reads as {type(value)}, not str")
    expect(run.attrs.get("status") in ("ok", "failed", "interrupted"), f"{run_id}: bad status")
    for table, fields in TABLES.items():
        expect(table in run, f"run {run_id}: table {table} missing")
        if table not in run:
            continue
        data = run[table]
        expect(list(data.dtype.names) == fields,
               f"{run_id}/{table} fields {data.dtype.names} != {fields}")
        expect(data.ndim == 1 and data.maxshape == (None,), f"{run_id}/{table} not appendable")
        for field in (f for f in fields if f in data.dtype.names):
            kind = data.dtype[field].kind
            wanted = "S" if field in TEXT_FIELDS else ("i" if field in INT_FIELDS else "f")
            expect(kind == wanted, f"{run_id}/{table}.{field} has dtype kind {kind}, not {wanted}")
        frame = pd.DataFrame(data[()])
        expect(list(frame.columns) == fields, f"{run_id}/{table}: pandas columns {frame.columns}")
    return run


SUMMARY_ATTRS = ["step_time_median_s", "step_time_p5_s", "step_time_p95_s", "step_time_mad_s", "samples_per_s",
                 "tokens_per_s", "achieved_tflops", "mfu", "final_loss", "final_accuracy", "peak_bytes", "weight_bytes"]


def check_example(f):
    """The file write_example_results.cpp writes: values known in advance."""
    runs = sorted(f["runs"])
    expect(runs == ["gpt-nano-dp2", "resnet-mini-dp1"], f"runs are {runs}")
    done = f["runs/gpt-nano-dp2"]
    expect(done.attrs["status"] == "ok", "finished run is not ok")
    expect(f["runs/resnet-mini-dp1"].attrs["status"] == "interrupted",
           "unfinished run is not interrupted")
    loss = f["runs/gpt-nano-dp2/steps"]["loss"]
    expect(loss.shape == (5,) and all(isinstance(x, float) for x in loss.tolist()),
           f"steps loss is {loss!r}")
    expect(math.isclose(loss[-1], 4.5), f"last loss {loss[-1]}")
    steps = pd.DataFrame(f["runs/gpt-nano-dp2/steps"][()])
    expect(len(steps) == 5 and steps["tokens"].sum() == 5 * 512, "steps frame wrong")
    evals = pd.DataFrame(f["runs/gpt-nano-dp2/eval"][()])
    splits = evals["split"].str.decode("utf-8").tolist()
    expect(splits == ["train", "heldout", "heldout", "test"], f"splits {splits}")
    expect(math.isnan(evals["accuracy"][0]), "train accuracy is not NaN")
    for group in ("context", "summary", "prediction"):
        expect(group in done, f"group {group} missing")
    check_context(done)
    expect(math.isclose(done["summary"].attrs["mfu"], 0.1), "summary.mfu")


def check_context(run):
    context = dict(run["context"].attrs)
    for key in ("hostnames", "cpu_model", "cores", "mpi_library", "hdf5", "kokkos", "blas",
                "compiler", "build_type", "git_sha"):
        expect(key in context, f"context.{key} missing")
    expect(isinstance(context.get("cpu_model"), str), "context strings are not str")


def check_finished_runs(f):
    """A file `scalebench train` or `run` wrote: every run finished with measurements."""
    runs = sorted(f["runs"])
    expect(len(runs) > 0, "no runs")
    for run_id in runs:
        run = f["runs"][run_id]
        expect(run.attrs.get("status") == "ok", f"{run_id}: status {run.attrs.get('status')}")
        steps = pd.DataFrame(run["steps"][()])
        expect(len(steps) > 0 and steps["loss"].notna().all(), f"{run_id}: no finite step losses")
        evals = pd.DataFrame(run["eval"][()])
        splits = set(evals["split"].str.decode("utf-8"))
        expect("heldout" in splits, f"{run_id}: no held-out evaluation")
        check_context(run)
        for key in SUMMARY_ATTRS:
            expect(key in run["summary"].attrs, f"{run_id}: summary.{key} missing")
        s = run["summary"].attrs
        steady = run["steps"]["step_time_s"][1:]  # every step but the first, as the summary counts them
        expect(math.isclose(s["step_time_p5_s"], float(np.quantile(steady, 0.05)), rel_tol=1e-9) and
               math.isclose(s["step_time_p95_s"], float(np.quantile(steady, 0.95)), rel_tol=1e-9),
               f"{run_id}: step-time percentiles {s['step_time_p5_s']}, {s['step_time_p95_s']} are not numpy's")
        expect(math.isclose(s["step_time_mad_s"], float(np.median(np.abs(steady - np.median(steady)))), rel_tol=1e-9,
                            abs_tol=1e-15), f"{run_id}: step_time_mad_s {s['step_time_mad_s']}")


def main(path, example):
    with h5py.File(path, "r") as f:
        expect(f.attrs.get("schema_version") == 1, "schema_version is not 1")
        expect(isinstance(f.attrs.get("generator"), str) and
               f.attrs["generator"].startswith("scalebench "), "generator missing or not str")
        for run_id in sorted(f["runs"]):
            check_run(run_id, f["runs"][run_id])
        if example:
            check_example(f)
        else:
            check_finished_runs(f)
    if failures:
        print("\n".join(f"FAIL: {message}" for message in failures))
        return 1
    print(f"ok: {path} reads as the schema says with h5py {h5py.__version__}, "
          f"pandas {pd.__version__}")
    return 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--example"]
    if len(args) != 1:
        print("usage: check_results_with_h5py.py [--example] RESULTS.h5")
        sys.exit(2)
    sys.exit(main(args[0], "--example" in sys.argv[1:]))
