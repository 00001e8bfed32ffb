# SPDX-License-Identifier: Apache-2.0
"""Checks a merged suite file the way users read it (h5py): exactly the expected runs, each
with status ok, its world size, a steps table with finite losses, and the threads its context
recorded equal to the case's `threads` (the job script's --cpus-per-task and OMP_NUM_THREADS
reached the trainer through the scheduler).
usage: check_suite_with_h5py.py FILE --expect RUN=WORLD_SIZE ..."""
import argparse
import math
import sys

import h5py
import yaml


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--expect", nargs="+", required=True, help="RUN=WORLD_SIZE")
    args = parser.parse_args()
    expected = dict((item.split("=")[0], int(item.split("=")[1])) for item in args.expect)
    problems = []
    with h5py.File(args.file, "r") as f:
        runs = sorted(f["runs"].keys())
        if runs != sorted(expected):
            problems.append(f"runs {runs}, expected {sorted(expected)}")
        for run in runs:
            group = f["runs"][run]
            status = text(group.attrs["status"])
            if status != "ok":
                problems.append(f"{run}: status {status}: {text(group.attrs.get('error', ''))}")
            if run in expected and int(group.attrs["world_size"]) != expected[run]:
                problems.append(f"{run}: world_size {int(group.attrs['world_size'])}, expected {expected[run]}")
            wanted_threads = yaml.safe_load(text(group.attrs["config_yaml"])).get("threads")
            threads = int(group["context"].attrs["threads"])
            if wanted_threads is not None and threads != int(wanted_threads):
                problems.append(f"{run}: context threads {threads}, the case asks {wanted_threads} "
                                f"(threads_source {text(group['context'].attrs.get('threads_source', '?'))})")
            losses = group["steps"]["loss"]
            if len(losses) == 0 or not all(math.isfinite(x) for x in losses):
                problems.append(f"{run}: steps.loss is empty or not finite")
            print(f"{run}: status {status}, world_size {int(group.attrs['world_size'])}, "
                  f"{len(losses)} steps, last loss {losses[-1]:.4f}")
    if problems:
        print("FAILED: " + "; ".join(problems))
        return 1
    print(f"{args.file}: {len(runs)} runs, all ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
