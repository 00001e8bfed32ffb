# SPDX-License-Identifier: Apache-2.0
"""Checks a merged suite file the way users read it (h5py): exactly the expected runs, each
with status ok, its world size, and a steps table with finite losses.
usage: check_suite_with_h5py.py FILE --expect RUN=WORLD_SIZE ..."""
import argparse
import math
import sys

import h5py


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
